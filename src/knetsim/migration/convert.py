"""``knetsim migrate ingress``: the Gateway API equivalent of the Ingresses, ingress-nginx semantics made explicit.

For every Ingress the built-in ingress-nginx controller serves (the same claim rules as
``knetsim.ingress``), in the Ingress's namespace:

* one Gateway per namespace (``<class>-gateway``, class ``--gateway-class``, Envoy Gateway's by
  default): an HTTP listener on 80 for every host, and an HTTPS listener on 443 per TLS host with
  the Ingress's Secret (``https-<host>``);
* one HTTPRoute per Ingress and host (``<ingress>[-<host>]``): each path a rule (Exact → Exact,
  Prefix → PathPrefix, ImplementationSpecific → PathPrefix, see below), the backend's named port
  resolved to its number (a backendRef needs one), the Ingress's ``defaultBackend`` as a last
  ``PathPrefix /`` rule of the hosts the Ingress names (ingress-nginx makes it that server's
  default), and an Ingress without rules as a route without hostnames;
* for a TLS host, the HTTP route carries what ingress-nginx does implicitly: a ``308`` redirect to
  https (``ssl-redirect``), while the HTTPS listener gets the routing rules;
* a path another Ingress already defines for the host is dropped, as ingress-nginx keeps the
  first (merge order: oldest, then namespace/name descending).

What HTTPRoute cannot express is reported, not guessed: ImplementationSpecific paths (ingress-nginx
reads them as nginx string prefixes, or regexes with ``use-regex``), ``rewrite-target`` with capture
groups, regex paths, wildcard hosts (an Ingress wildcard covers one DNS label, a Gateway API one any
number), rules without host (ingress-nginx serves them only for hosts no rule names; a route
without hostnames also catches the unmatched paths of named hosts), and every other annotation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..cluster.gatewayinfra import EG_CONTROLLER
from ..cluster.state import ClusterState
from ..ingress import nginx_order, resolve_backend, resolve_class, running_controllers
from ..model.objects import Ingress, IngressBackend

API = "gateway.networking.k8s.io/v1"
NGINX = "nginx.ingress.kubernetes.io/"
# Annotations the conversion makes explicit (or reports as inexpressible on their own).
_HANDLED = {f"{NGINX}rewrite-target", f"{NGINX}use-regex", f"{NGINX}ssl-redirect", "kubernetes.io/ingress.class"}


@dataclass(frozen=True, slots=True)
class Note:
    ingress: str  # namespace/name
    field: str
    severity: str  # "explicit" (an ingress-nginx behaviour now written out) | "inexpressible" | "skipped"
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"ingress": self.ingress, "field": self.field, "severity": self.severity, "message": self.message}


@dataclass(slots=True)
class Conversion:
    objects: list[dict[str, Any]] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)

    @property
    def inexpressible(self) -> list[Note]:
        return [n for n in self.notes if n.severity == "inexpressible"]


def _slug(host: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", host.lower().replace("*", "wildcard")).strip("-")[:40] or "all"


def _port(state: ClusterState, ing: Ingress, backend: IngressBackend) -> int | None:
    if backend.port_number is not None:
        return backend.port_number
    target = resolve_backend(state, ing.namespace, backend)
    return target.port


def _backend_ref(state: ClusterState, ing: Ingress, backend: IngressBackend, where: str,
                 out: Conversion) -> dict[str, Any] | None:
    if backend.resource is not None:
        out.notes.append(Note(ing.key, where, "inexpressible", f"resource backend {backend.describe()}: an HTTPRoute "
                              "backendRef names a Service (ingress-nginx ignores resource backends too)"))
        return None
    port = _port(state, ing, backend)
    ref: dict[str, Any] = {"name": backend.service_name}
    if port is None:
        out.notes.append(Note(ing.key, where, "inexpressible", f"port name {backend.port_name!r} is not a port of "
                              f"Service {ing.namespace}/{backend.service_name}: a backendRef needs the port number"))
        return ref
    if backend.port_name:
        out.notes.append(Note(ing.key, where, "explicit", f"port name {backend.port_name!r} resolved to {port} "
                              "(a backendRef needs the Service port number)"))
    ref["port"] = port
    return ref


def convert(state: ClusterState, gateway_class: str = "eg") -> Conversion:
    out = Conversion()
    controllers = running_controllers(state)
    claimed: list[Ingress] = []
    for key in sorted(state.ingresses):
        ing = state.ingresses[key]
        res = resolve_class(state, ing, controllers)
        if res.claimed and res.controller == "k8s.io/ingress-nginx":
            claimed.append(ing)
        else:
            out.notes.append(Note(key, "spec.ingressClassName", "skipped",
                                  f"not served by ingress-nginx ({res.reason}): not converted"))
    if not claimed:
        return out
    if gateway_class not in state.gateway_classes:
        out.objects.append({"apiVersion": API, "kind": "GatewayClass", "metadata": {"name": gateway_class},
                            "spec": {"controllerName": EG_CONTROLLER}})
    seen: set[tuple[str, str, str, str]] = set()  # (namespace, host, path, type): ingress-nginx keeps the first
    by_namespace: dict[str, list[Ingress]] = {}
    for ing in nginx_order(claimed):
        by_namespace.setdefault(ing.namespace, []).append(ing)
    for ns in sorted(by_namespace):
        ingresses = by_namespace[ns]
        gateway = f"{gateway_class}-gateway"
        tls_hosts = _tls_hosts(ingresses)
        out.objects.append(_gateway(ns, gateway, gateway_class, tls_hosts))
        routes = []
        for ing in ingresses:
            routes.extend(_routes(state, ing, gateway, tls_hosts, seen, out))
        out.objects.extend(sorted(routes, key=lambda r: r["metadata"]["name"]))
    return out


def _tls_hosts(ingresses: list[Ingress]) -> dict[str, str]:
    """host → Secret name, the first Ingress (merge order) listing the host under tls with a secretName."""
    out: dict[str, str] = {}
    for ing in ingresses:
        named = {r.host.lower() for r in ing.rules if r.host}
        for t in ing.tls:
            for h in t.hosts:
                if t.secret_name and h.lower() in named:
                    out.setdefault(h.lower(), t.secret_name)
    return out


def _gateway(ns: str, name: str, gateway_class: str, tls_hosts: dict[str, str]) -> dict[str, Any]:
    listeners: list[dict[str, Any]] = [{"name": "http", "protocol": "HTTP", "port": 80}]
    for host in sorted(tls_hosts):
        tls = {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": tls_hosts[host]}]}
        listeners.append({"name": f"https-{_slug(host)}", "protocol": "HTTPS", "port": 443, "hostname": host,
                          "tls": tls})
    return {"apiVersion": API, "kind": "Gateway", "metadata": {"name": name, "namespace": ns},
            "spec": {"gatewayClassName": gateway_class, "listeners": listeners}}


def _routes(state: ClusterState, ing: Ingress, gateway: str, tls_hosts: dict[str, str],
            seen: set[tuple[str, str, str, str]], out: Conversion) -> list[dict[str, Any]]:
    annotations = ing.meta.annotations
    regex = annotations.get(f"{NGINX}use-regex") == "true"
    rewrite = annotations.get(f"{NGINX}rewrite-target")
    for name in sorted(a for a in annotations if a.startswith(NGINX) and a not in _HANDLED):
        out.notes.append(Note(ing.key, f"metadata.annotations[{name}]", "inexpressible",
                              f"{name}={annotations[name]!r} has no HTTPRoute equivalent here: not converted"))
    hosts: dict[str, list[tuple[int, int]]] = {}
    for r, rule in enumerate(ing.rules):
        hosts.setdefault(rule.host.lower(), []).extend((r, i) for i in range(len(rule.paths)))
    routes = []
    if not ing.rules and ing.default_backend is not None:
        ref = _backend_ref(state, ing, ing.default_backend, "spec.defaultBackend", out)
        if ref is not None:
            out.notes.append(Note(ing.key, "spec.defaultBackend", "explicit", "an Ingress without rules serves every "
                                  "host no rule names: a route without hostnames, PathPrefix /"))
            routes.append(_route(ing, ing.name, gateway, "http", None,
                                 [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": [ref]}]))
    for host, refs in hosts.items():
        rules: list[dict[str, Any]] = []
        for r, i in refs:
            p = ing.rules[r].paths[i]
            path = p.path or "/"
            where = f"spec.rules[{r}].http.paths[{i}]"
            key = (ing.namespace, host, path, p.path_type)
            if key in seen:
                out.notes.append(Note(ing.key, where, "explicit", f"{path} ({p.path_type}) on host {host or '*'} is "
                                      "already defined by an Ingress ingress-nginx merges first: dropped, as "
                                      "ingress-nginx drops it"))
                continue
            seen.add(key)
            match_type = {"Exact": "Exact", "Prefix": "PathPrefix"}.get(p.path_type, "PathPrefix")
            if regex:
                match_type = "RegularExpression"
                out.notes.append(Note(ing.key, where, "inexpressible", f"use-regex: ingress-nginx matches {path!r} "
                                      "as a case-insensitive regex prefix (location ~*); HTTPRoute RegularExpression "
                                      "is implementation-specific and Envoy matches the whole path, case-sensitive"))
            elif p.path_type == "ImplementationSpecific":
                out.notes.append(Note(ing.key, where, "inexpressible", f"ImplementationSpecific {path}: ingress-nginx "
                                      "matches it as a plain string prefix (/foo also matches /foobar); PathPrefix "
                                      "matches whole path elements only"))
            rule: dict[str, Any] = {"matches": [{"path": {"type": match_type, "value": path}}]}
            if rewrite is not None and rewrite != path:
                if re.search(r"\$\d", rewrite) or regex:
                    out.notes.append(Note(ing.key, where, "inexpressible", f"rewrite-target {rewrite!r} uses regex "
                                          "capture groups; URLRewrite replaces a whole path or a path prefix only"))
                else:
                    # nginx's `rewrite "(?i)<path>" <target> break;` replaces the whole URI, not the prefix.
                    rule["filters"] = [{"type": "URLRewrite", "urlRewrite": {"path": {
                        "type": "ReplaceFullPath", "replaceFullPath": rewrite}}}]
                    out.notes.append(Note(ing.key, where, "explicit", f"rewrite-target {rewrite!r}: nginx replaces "
                                          "the whole path (rewrite ... break), so URLRewrite ReplaceFullPath"))
                if not regex:
                    out.notes.append(Note(ing.key, where, "inexpressible", f"rewrite-target makes ingress-nginx match "
                                          f"{path!r} as a case-insensitive regex prefix (location ~*): "
                                          f"{path.rstrip('/')}x and {path.upper()} reach this backend there, not "
                                          "through the HTTPRoute"))
            ref = _backend_ref(state, ing, p.backend, f"{where}.backend", out)
            if ref is None:
                continue  # a resource backend: no HTTPRoute rule can send there (noted)
            rule["backendRefs"] = [ref]
            rules.append(rule)
        if host and ing.default_backend is not None:
            ref = _backend_ref(state, ing, ing.default_backend, "spec.defaultBackend", out)
            if ref is not None:
                rules.append({"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": [ref]})
                out.notes.append(Note(ing.key, "spec.defaultBackend", "explicit", f"the defaultBackend is the default "
                                      f"of host {host}'s server in ingress-nginx: a last rule PathPrefix /"))
        if not rules:
            continue
        if not host:
            out.notes.append(Note(ing.key, "spec.rules", "inexpressible", "rules without host: ingress-nginx serves "
                                  "them only for hosts no rule names; a route without hostnames also receives the "
                                  "unmatched paths of the named hosts"))
        elif host.startswith("*."):
            out.notes.append(Note(ing.key, "spec.rules", "inexpressible", f"wildcard {host}: an Ingress wildcard "
                                  "covers exactly one DNS label, a Gateway API wildcard any number"))
        name = ing.name if len(hosts) == 1 else f"{ing.name}-{_slug(host)}"
        if host in tls_hosts:
            routes.append(_route(ing, name, gateway, f"https-{_slug(host)}", host, rules))
            routes.append(_route(ing, f"{name}-redirect", gateway, "http", host,
                                 [{"filters": [{"type": "RequestRedirect", "requestRedirect": {
                                     "scheme": "https", "statusCode": 308}}]}]))
            out.notes.append(Note(ing.key, "spec.tls", "explicit", f"host {host} has TLS: ingress-nginx redirects "
                                  "http to https with 308 (ssl-redirect): an HTTP route with RequestRedirect"))
        else:
            routes.append(_route(ing, name, gateway, "http", host or None, rules))
    return routes


def _route(ing: Ingress, name: str, gateway: str, section: str, host: str | None,
           rules: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = {"parentRefs": [{"name": gateway, "sectionName": section}]}
    if host:
        spec["hostnames"] = [host]
    spec["rules"] = rules
    return {"apiVersion": API, "kind": "HTTPRoute",
            "metadata": {"name": name, "namespace": ing.namespace,
                         "annotations": {"knetsim.io/converted-from": f"Ingress {ing.key}"}},
            "spec": spec}
