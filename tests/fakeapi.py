"""A stand-in for a real cluster's API server (kind, a cloud cluster), for what knetsim up cannot play.

A stdlib HTTP server on loopback that answers as kube-apiserver does for reads: ``/version``,
discovery (``/api``, ``/apis``), and lists of the objects it is given, paged with ``limit`` and
``continue``, metadata-only when asked (``as=PartialObjectMetadataList``). It checks a bearer
token (401 with a Status otherwise) and refuses the plurals it is told to (403, worded as
the RBAC authorizer words it). Every request is recorded, so tests can see what the client asked.
It answers the real kubectl too (group-version resource lists for its discovery).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from knetsim import Cluster
from knetsim.model.kinds import KINDS

GROUPS = {"apps": ["v1"], "batch": ["v1"], "discovery.k8s.io": ["v1"], "networking.k8s.io": ["v1"]}


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    authorization: str
    accept: str


@dataclass
class FakeAPI:
    url: str
    requests: list[Request] = field(default_factory=list)

    def lists(self) -> list[str]:
        return [r.path for r in self.requests if r.path.count("/") >= 3]


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


@contextmanager
def fake_api(objects: Iterable[dict[str, Any]], *, token: str = "secret", groups: dict[str, list[str]] | None = None,
             forbidden: Iterable[str] = (), git_commit: str = "a1b2c3") -> Iterator[FakeAPI]:
    items = [json.loads(json.dumps(o)) for o in objects]
    served = GROUPS if groups is None else groups
    refuse = set(forbidden)
    by_plural = {k.plural: k for k in KINDS}
    api = FakeAPI("")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            api.requests.append(Request("GET", url.path, query, self.headers.get("Authorization", ""),
                                        self.headers.get("Accept", "")))
            if token and self.headers.get("Authorization") != f"Bearer {token}":
                return self.answer(401, _status(401, "Unauthorized", "Unauthorized"))
            if url.path == "/version":
                return self.answer(200, {"major": "1", "minor": "35", "gitVersion": "v1.35.0", "gitCommit": git_commit})
            if url.path == "/api":
                return self.answer(200, {"kind": "APIVersions", "versions": ["v1"]})
            if url.path == "/apis":
                return self.answer(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                    {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs]}
                    for g, vs in sorted(served.items())]})
            parts = url.path.strip("/").split("/")
            if parts in (["api", "v1"], ["apis", *parts[1:3]]) and len(parts) == (2 if parts[0] == "api" else 3):
                # A group version's resources, which kubectl asks before it lists anything.
                group, version = ("", "v1") if parts[0] == "api" else (parts[1], parts[2])
                if group and version not in served.get(group, []):
                    return self.answer(404, _status(404, "NotFound", "the server could not find the requested "
                                                    "resource"))
                return self.answer(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                         "groupVersion": f"{group}/{version}" if group else version,
                                         "resources": [{"name": k.plural, "singularName": k.singular,
                                                        "namespaced": k.namespaced, "kind": k.kind,
                                                        "verbs": ["get", "list"], "shortNames": list(k.short_names)}
                                                       for k in KINDS if k.group == group]})
            if parts[0] == "apis" and len(parts) == 5 and parts[3] in by_plural:
                # One cluster-scoped object by name (the CRDs knetsim reads by name).
                kind = by_plural[parts[3]].kind
                if parts[3] in refuse:
                    return self.answer(403, _status(403, "Forbidden", f'{parts[3]}.{parts[1]} "{parts[4]}" is '
                                                    f'forbidden: User "alice" cannot get resource "{parts[3]}" in API '
                                                    f'group "{parts[1]}" at the cluster scope'))
                found = [o for o in items
                         if o.get("kind") == kind and (o.get("metadata") or {}).get("name") == parts[4]]
                if not found:
                    return self.answer(404, _status(404, "NotFound", f'{parts[3]}.{parts[1]} "{parts[4]}" not found'))
                return self.answer(200, found[0])
            at = 2 if parts[0] == "api" else 3
            if len(parts) == at + 4 and parts[at] == "namespaces" and parts[at + 2] in by_plural:
                # One namespaced object by name (kube-system's kube-proxy ConfigMap).
                plural, namespace, name = parts[at + 2], parts[at + 1], parts[at + 3]
                found = [o for o in items if o.get("kind") == by_plural[plural].kind
                         and (o.get("metadata") or {}).get("namespace") == namespace
                         and (o.get("metadata") or {}).get("name") == name]
                if not found:
                    return self.answer(404, _status(404, "NotFound", f'{plural} "{name}" not found'))
                return self.answer(200, found[0])
            info = by_plural.get(parts[-1])
            group = "" if parts[0] == "api" else parts[1]
            if info is None or info.group != group or (group and parts[2] not in served.get(group, [])):
                return self.answer(404, _status(404, "NotFound", "the server could not find the requested resource"))
            if info.plural in refuse:
                where = f'in API group "{group}" at the cluster scope'
                return self.answer(403, _status(403, "Forbidden", f'{info.plural} is forbidden: User "alice" cannot '
                                                f'list resource "{info.plural}" {where}'))
            mine = [o for o in items if o.get("kind") == info.kind]
            start = int(query.get("continue") or 0)
            limit = int(query.get("limit") or 0) or len(mine)
            page = mine[start:start + limit]
            meta: dict[str, Any] = {"resourceVersion": "100"}
            if start + limit < len(mine):
                meta["continue"] = str(start + limit)
            if "as=PartialObjectMetadataList" in self.headers.get("Accept", ""):
                page = [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}
                        for o in page]
                return self.answer(200, {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                                         "metadata": meta, "items": page})
            page = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in page]
            return self.answer(200, {"kind": f"{info.kind}List", "apiVersion": info.api_version, "metadata": meta,
                                     "items": page})

        def answer(self, code: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    api.url = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def kubeconfig_for(url: str, user: dict[str, Any], namespace: str = "default", context: str = "kind-kind",
                   cluster: dict[str, Any] | None = None) -> dict[str, Any]:
    """A kubeconfig as kind writes one: one cluster, one user, one context (current)."""
    return {"apiVersion": "v1", "kind": "Config", "current-context": context,
            "clusters": [{"name": context, "cluster": {"server": url, **(cluster or {})}}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}],
            "users": [{"name": context, "user": user}]}


def snapshot_of(paths: list[str]) -> list[dict[str, Any]]:
    """What a real API server holds for these manifests: knetsim's objects, with uids."""
    state = Cluster.from_paths(paths).state
    objects: list[Any] = [*state.namespaces.values(), *state.nodes.values(), *state.ingress_classes.values(),
                          *state.workloads.values(), *state.others.values()]
    for coll in (state.pods, state.services, state.endpoint_slices, state.ingresses, state.network_policies):
        objects += coll.values()
    out = json.loads(json.dumps([o.raw for o in objects]))
    for o, body in zip(objects, out, strict=True):
        body["metadata"].setdefault("uid", o.meta.uid or f"uid-{o.kind}-{o.name}")  # the uid the slices refer to
    return out  # type: ignore[no-any-return]
