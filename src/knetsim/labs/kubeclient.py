"""A small Kubernetes API client: kubeconfig in, JSON objects out (stdlib only).

The graders speak only the Kubernetes API, so the same check runs against ``knetsim up``,
kind or minikube. Authentication covers what those write into a kubeconfig: a bearer token
(``token`` / ``tokenFile``), or a client certificate and key (``client-certificate-data`` /
``client-key-data`` as kind writes them, or file paths as minikube does), with the cluster CA
given as data or as a file. ``exec`` and ``auth-provider`` users (cloud logins) are refused
with a message, not half-supported.

Exceptions::

    KubeError                 anything that stops a request (maps to exit code 2)
      KubeconfigError         the kubeconfig cannot be read or names nothing usable
      ApiError                the server answered with a Status (``.code``, ``.reason``)
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


class KubeError(Exception):
    """A request to the Kubernetes API could not be made or failed."""


class KubeconfigError(KubeError):
    pass


class ApiError(KubeError):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(f"{message} ({code} {reason})")
        self.code, self.reason, self.message = code, reason, message


@dataclass(frozen=True, slots=True)
class Kind:
    """Where the API serves a kind: group/version and plural; scope."""

    kind: str
    api_version: str
    plural: str
    namespaced: bool = True

    def path(self, namespace: str | None = None, name: str = "") -> str:
        prefix = f"/apis/{self.api_version}" if "/" in self.api_version else f"/api/{self.api_version}"
        if self.namespaced and namespace:
            prefix += f"/namespaces/{urllib.parse.quote(namespace)}"
        prefix += f"/{self.plural}"
        return prefix + (f"/{urllib.parse.quote(name)}" if name else "")


KINDS: dict[str, Kind] = {k.kind: k for k in (
    Kind("Namespace", "v1", "namespaces", namespaced=False),
    Kind("Node", "v1", "nodes", namespaced=False),
    Kind("Pod", "v1", "pods"),
    Kind("Service", "v1", "services"),
    Kind("ConfigMap", "v1", "configmaps"),
    Kind("Secret", "v1", "secrets"),
    Kind("EndpointSlice", "discovery.k8s.io/v1", "endpointslices"),
    Kind("Deployment", "apps/v1", "deployments"),
    Kind("GatewayClass", "gateway.networking.k8s.io/v1", "gatewayclasses", namespaced=False),
    Kind("Gateway", "gateway.networking.k8s.io/v1", "gateways"),
    Kind("HTTPRoute", "gateway.networking.k8s.io/v1", "httproutes"),
    Kind("ReferenceGrant", "gateway.networking.k8s.io/v1", "referencegrants"),
    Kind("ReplicaSet", "apps/v1", "replicasets"),
    Kind("StatefulSet", "apps/v1", "statefulsets"),
    Kind("DaemonSet", "apps/v1", "daemonsets"),
    Kind("Ingress", "networking.k8s.io/v1", "ingresses"),
    Kind("IngressClass", "networking.k8s.io/v1", "ingressclasses", namespaced=False),
    Kind("NetworkPolicy", "networking.k8s.io/v1", "networkpolicies"),
    Kind("ClusterNetworkPolicy", "policy.networking.k8s.io/v1alpha2", "clusternetworkpolicies", namespaced=False),
    Kind("AdminNetworkPolicy", "policy.networking.k8s.io/v1alpha1", "adminnetworkpolicies", namespaced=False),
    Kind("BaselineAdminNetworkPolicy", "policy.networking.k8s.io/v1alpha1", "baselineadminnetworkpolicies",
         namespaced=False),
)}


@dataclass(frozen=True, slots=True)
class KubeConfig:
    """The parts of one kubeconfig context a client needs."""

    path: str
    context: str
    server: str
    namespace: str = "default"
    token: str | None = None
    ca_data: bytes | None = None
    client_cert_data: bytes | None = None
    client_key_data: bytes | None = None
    insecure: bool = False


def _named(entries: Any, name: str, what: str, path: str) -> Mapping[str, Any]:
    for entry in entries or []:
        if isinstance(entry, Mapping) and entry.get("name") == name:
            return entry.get(what) or {}  # type: ignore[no-any-return]
    raise KubeconfigError(f"{path}: no {what} named {name!r}")


def _data_or_file(section: Mapping[str, Any], key: str, base: Path) -> bytes | None:
    data = section.get(f"{key}-data")
    if data:
        try:
            return base64.b64decode(data)
        except ValueError as exc:
            raise KubeconfigError(f"{key}-data is not valid base64: {exc}") from None
    file = section.get(key)
    if file:
        p = Path(os.path.expanduser(str(file)))
        if not p.is_absolute():
            p = base / p  # kubectl resolves relative paths against the kubeconfig's directory
        try:
            return p.read_bytes()
        except OSError as exc:
            raise KubeconfigError(f"{key} {p}: {exc.strerror}") from None
    return None


def load_kubeconfig(path: str | os.PathLike[str], context: str | None = None) -> KubeConfig:
    """Read one context of a kubeconfig file (``current-context`` unless ``context`` is given)."""
    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text())
    except OSError as exc:
        raise KubeconfigError(f"kubeconfig {p}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"kubeconfig {p}: not valid YAML: {exc}") from None
    if not isinstance(doc, Mapping):
        raise KubeconfigError(f"kubeconfig {p}: not a kubeconfig (expected a mapping)")
    name = context or doc.get("current-context")
    if not name:
        raise KubeconfigError(f"kubeconfig {p}: no current-context set (pass --context)")
    ctx = _named(doc.get("contexts"), name, "context", str(p))
    cluster = _named(doc.get("clusters"), str(ctx.get("cluster")), "cluster", str(p))
    user = _named(doc.get("users"), str(ctx.get("user")), "user", str(p)) if ctx.get("user") else {}
    server = str(cluster.get("server") or "")
    if not server:
        raise KubeconfigError(f"kubeconfig {p}: cluster {ctx.get('cluster')!r} has no server")
    if user.get("exec") or user.get("auth-provider"):
        raise KubeconfigError(f"kubeconfig {p}: user {ctx.get('user')!r} authenticates with an exec plugin or "
                              "auth-provider, which knetsim does not run; use a token or client certificate")
    token = user.get("token")
    if not token and user.get("tokenFile"):
        try:
            token = Path(os.path.expanduser(str(user["tokenFile"]))).read_text().strip()
        except OSError as exc:
            raise KubeconfigError(f"tokenFile {user['tokenFile']}: {exc.strerror}") from None
    base = p.parent
    return KubeConfig(
        path=str(p), context=str(name), server=server.rstrip("/"),
        namespace=str(ctx.get("namespace") or "default"),
        token=str(token) if token else None,
        ca_data=_data_or_file(cluster, "certificate-authority", base),
        client_cert_data=_data_or_file(user, "client-certificate", base),
        client_key_data=_data_or_file(user, "client-key", base),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
    )


def _ssl_context(cfg: KubeConfig) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    if cfg.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif cfg.ca_data:
        ctx.load_verify_locations(cadata=cfg.ca_data.decode("ascii", errors="replace"))
    if cfg.client_cert_data and cfg.client_key_data:
        # ssl only loads a certificate chain from files: write them to a private temp dir.
        with tempfile.TemporaryDirectory(prefix="knetsim-cert-") as tmp:
            cert, key = Path(tmp) / "client.crt", Path(tmp) / "client.key"
            for file, data in ((cert, cfg.client_cert_data), (key, cfg.client_key_data)):
                fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
            ctx.load_cert_chain(str(cert), str(key))
    return ctx


class KubeClient:
    """JSON over HTTPS to one API server; every method returns plain dicts."""

    def __init__(self, config: KubeConfig, timeout: float = 30) -> None:
        self.config = config
        self.timeout = timeout
        self._ctx = _ssl_context(config) if config.server.startswith("https") else None

    def request(self, method: str, path: str, body: Any = None, *, query: Mapping[str, str] | None = None,
                content_type: str = "application/json") -> Any:
        url = self.config.server + path
        if query:
            url += "?" + urllib.parse.urlencode(dict(query))
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", "application/json")
        req.add_header("User-Agent", "knetsim-labs")
        if data is not None:
            req.add_header("Content-Type", content_type)
        if self.config.token:
            req.add_header("Authorization", f"Bearer {self.config.token}")
        try:
            with urllib.request.urlopen(req, context=self._ctx, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                status = json.loads(raw)
            except ValueError:
                status = {}
            if not isinstance(status, Mapping):
                status = {}
            raise ApiError(exc.code, str(status.get("reason") or exc.reason),
                           str(status.get("message") or raw.decode(errors="replace").strip() or exc.reason)) from None
        except urllib.error.URLError as exc:
            raise KubeError(f"cannot reach the API server {self.config.server} (kubeconfig {self.config.path}, "
                            f"context {self.config.context}): {exc.reason}") from None
        except (TimeoutError, ConnectionError) as exc:
            raise KubeError(f"the API server {self.config.server} did not answer: {exc}") from None
        return json.loads(raw) if raw.strip() else None

    # --- kubectl-like verbs -------------------------------------------------------------

    def version(self) -> dict[str, Any]:
        return self.request("GET", "/version")  # type: ignore[no-any-return]

    def list(self, kind: str, namespace: str | None = None, label_selector: str = "") -> list[dict[str, Any]]:
        k = KINDS[kind]
        query = {"labelSelector": label_selector} if label_selector else None
        out = self.request("GET", k.path(namespace), query=query) or {}
        items = out.get("items") or []
        for item in items:  # list items carry no kind/apiVersion
            item.setdefault("kind", k.kind)
            item.setdefault("apiVersion", k.api_version)
        return items  # type: ignore[no-any-return]

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        try:
            return self.request("GET", KINDS[kind].path(namespace, name))  # type: ignore[no-any-return]
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        k, ns, _ = self._where(obj)
        return self.request("POST", k.path(ns), obj)  # type: ignore[no-any-return]

    def apply(self, obj: Mapping[str, Any]) -> str:
        """Create, or replace when it exists (as the lab's starting state): ``created`` or ``replaced``."""
        k, ns, name = self._where(obj)
        current = self.get(k.kind, ns, name)
        if current is None:
            self.create(obj)
            return "created"
        body = json.loads(json.dumps(obj))
        body.setdefault("metadata", {})["resourceVersion"] = current["metadata"].get("resourceVersion")
        if k.kind == "Service":
            # clusterIP is immutable: keep the allocated one unless the lab asks for None.
            spec = body.setdefault("spec", {})
            for f in ("clusterIP", "clusterIPs"):
                if f not in spec and f in (current.get("spec") or {}):
                    spec[f] = current["spec"][f]
        self.request("PUT", k.path(ns, name), body)
        return "replaced"

    def delete(self, kind: str, namespace: str | None, name: str) -> bool:
        try:
            self.request("DELETE", KINDS[kind].path(namespace, name), query={"propagationPolicy": "Background"})
        except ApiError as exc:
            if exc.code == 404:
                return False
            raise
        return True

    def _where(self, obj: Mapping[str, Any]) -> tuple[Kind, str | None, str]:
        kind = str(obj.get("kind"))
        if kind not in KINDS:
            raise KubeError(f"kind {kind!r} is not known to the lab client")
        k = KINDS[kind]
        meta = obj.get("metadata") or {}
        ns = str(meta.get("namespace") or self.config.namespace) if k.namespaced else None
        return k, ns, str(meta.get("name") or "")


def default_kubeconfig(knetsim_state: str | os.PathLike[str] | None = None) -> tuple[str, str]:
    """The kubeconfig a lab command uses, and why: $KUBECONFIG, a running knetsim, ~/.kube/config."""
    env = os.environ.get("KUBECONFIG")
    if env:
        first = next((p for p in env.split(os.pathsep) if p), "")
        if first:
            return first, "$KUBECONFIG"
    if knetsim_state is not None:
        candidate = Path(knetsim_state) / "kubeconfig"
        if candidate.exists() and (Path(knetsim_state) / "ready.json").exists():
            return str(candidate), f"the running knetsim (state dir {knetsim_state})"
    return str(Path.home() / ".kube" / "config"), "~/.kube/config"
