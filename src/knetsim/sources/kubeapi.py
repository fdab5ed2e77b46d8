"""The Kubernetes API through the official client: a kubeconfig in, JSON objects out.

The ``kubernetes`` package reads the kubeconfig as kubectl does: ``$KUBECONFIG`` (several files
merged) or ``~/.kube/config``, contexts, CA and client certificates as data or files (relative
to the kubeconfig), bearer tokens and token files, ``exec`` credential plugins (the
``gke-gcloud-auth-plugin``, ``aws eks get-token`` or ``kubelogin`` lines cloud clusters write)
and OIDC auth-providers. It also carries the requests (TLS, the token refresh of an exec
credential). Its typed models are not used: every object stays the JSON dict the server sent,
as knetsim reads manifests, which is also much faster than building models for a big list.

Exceptions::

    KubeError            anything that stops a request (the CLI maps it to exit code 2)
      KubeconfigError    the kubeconfig cannot be read, names nothing usable, or its credential plugin failed
      ApiError           the server answered with a Status (``.code``, ``.reason``, ``.message``)
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml

from ..model.jsonvalue import json_copy
from ..model.kinds import BY_KIND, KindInfo

# Bounded requests: connect within this, then every response within the read timeout.
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 30.0
# Big lists come in pages, as kubectl's `--chunk-size` default (500) pages them.
PAGE_SIZE = 500
# Kinds whose spec the API server will not update in place (a lab's reset deletes and re-creates them).
RECREATED = frozenset({"Pod", "Job"})


class KubeError(Exception):
    """A request to the Kubernetes API could not be made or failed."""


class KubeconfigError(KubeError):
    pass


class ApiError(KubeError):
    def __init__(self, code: int, reason: str, message: str, server: str = "") -> None:
        where = f"{server}: " if server else ""
        super().__init__(f"{where}{message} ({code} {reason})")
        self.code, self.reason, self.message = code, reason, message


@dataclass(frozen=True, slots=True)
class Target:
    """What a kubeconfig context points at, for messages and reports."""

    kubeconfig: str  # the file(s) read, as the user would name them
    context: str
    server: str
    namespace: str = "default"
    user: str = ""


class _Undiscovered:
    """DynamicClient without its discovery: knetsim asks ``/apis`` itself, once, and writes no cache file."""

    def __init__(self, client: Any, cache_file: Any) -> None:
        pass


@contextlib.contextmanager
def _client_log() -> Iterator[list[logging.LogRecord]]:
    """The client logs a failed exec plugin or a bad token file and carries on without credentials;
    catch those lines so that the user gets the plugin's own words instead of a later 401."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "kubernetes" in record.pathname:
                records.append(record)

    root = logging.getLogger()
    handler = Keep(logging.WARNING)
    # A root logger with a handler also keeps logging.error() from calling basicConfig(), which would
    # print the lines on stderr before knetsim says the same in its own error.
    root.addHandler(handler)
    try:
        yield records
    finally:
        root.removeHandler(handler)


def _files(kubeconfig: str | None) -> str:
    if kubeconfig:
        return kubeconfig
    return os.environ.get("KUBECONFIG") or str(Path("~/.kube/config"))


def _missing_file(kubeconfig: str | None) -> str | None:
    paths = [p for p in _files(kubeconfig).split(os.pathsep) if p]
    if not any(Path(os.path.expanduser(p)).is_file() for p in paths):
        return _files(kubeconfig)
    return None


class KubeAPI:
    """JSON over HTTPS to one API server, as one kubeconfig context says."""

    def __init__(self, api_client: Any, target: Target, timeout: float = READ_TIMEOUT) -> None:
        from kubernetes.dynamic import DynamicClient

        self.target = target
        self.timeout = timeout
        self._client = api_client
        self._dynamic = DynamicClient(api_client, discoverer=_Undiscovered)

    @property
    def server(self) -> str:
        return self.target.server

    @property
    def context(self) -> str:
        return self.target.context

    @property
    def namespace(self) -> str:
        return self.target.namespace

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._client.close()

    def __enter__(self) -> KubeAPI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- one request ----------------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, *, query: Mapping[str, Any] | None = None,
                accept: str | None = None) -> Any:
        """One request; the JSON answer (None for an empty one). Raises ApiError or KubeError."""
        import urllib3.exceptions
        from kubernetes.client.exceptions import ApiException

        headers = {"Accept": accept} if accept else {}
        try:
            resp = self._dynamic.request(method, path, body=body, query_params=list((query or {}).items()),
                                         header_params=headers, serialize=False,
                                         _request_timeout=(CONNECT_TIMEOUT, self.timeout))
        except ApiException as exc:
            if not exc.status:  # the client's wrapping of a TLS failure: no answer from the server
                reason = (str(exc.reason or "").splitlines() or [str(exc)])[-1]
                raise KubeError(f"cannot reach {self._server_text}: TLS failed: {reason}") from None
            raise self._api_error(exc) from None
        except urllib3.exceptions.MaxRetryError as exc:
            raise self._unreachable(exc.reason or exc) from None
        except urllib3.exceptions.HTTPError as exc:
            raise self._unreachable(exc) from None
        raw = resp.data
        if not raw or not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise KubeError(f"{self.server}{path}: the answer is not JSON: {raw[:120]!r}") from None

    @property
    def _server_text(self) -> str:
        return f"the API server {self.server} (context {self.context}, kubeconfig {self.target.kubeconfig})"

    def _unreachable(self, exc: BaseException) -> KubeError:
        import urllib3.exceptions

        where = self._server_text
        if isinstance(exc, urllib3.exceptions.ReadTimeoutError):
            return KubeError(f"{where} did not answer within {self.timeout:g}s")
        # NewConnectionError is a ConnectTimeoutError too (urllib3 keeps it so): ask it first.
        if isinstance(exc, urllib3.exceptions.NewConnectionError | urllib3.exceptions.NameResolutionError):
            return KubeError(f"cannot reach {where}: {_innermost(exc)}")
        if isinstance(exc, urllib3.exceptions.ConnectTimeoutError):
            return KubeError(f"cannot reach {where}: no connection within {CONNECT_TIMEOUT:g}s")
        if isinstance(exc, urllib3.exceptions.SSLError):
            return KubeError(f"cannot reach {where}: TLS failed: {_innermost(exc)}")
        return KubeError(f"cannot reach {where}: {_innermost(exc)}")

    def _api_error(self, exc: Any) -> ApiError:
        status: Mapping[str, Any] = {}
        with contextlib.suppress(ValueError, TypeError):
            parsed = json.loads(exc.body) if exc.body else {}
            status = parsed if isinstance(parsed, Mapping) else {}
        code = int(exc.status or 0)
        reason = str(status.get("reason") or exc.reason or "")
        message = str(status.get("message") or (exc.body.decode(errors="replace") if isinstance(exc.body, bytes)
                                                else exc.body) or exc.reason or "").strip()
        if code == 401:
            # kubectl: "error: You must be logged in to the server (Unauthorized)"
            message = (f"the server did not accept the credentials of user {self.target.user or '?'} "
                       f"(context {self.context}): {message or 'Unauthorized'}")
        return ApiError(code, reason, message, self.server)

    # --- paths ----------------------------------------------------------------------------

    @staticmethod
    def path(info: KindInfo, namespace: str | None = None, name: str = "", version: str | None = None) -> str:
        group_version = f"{info.group}/{version or info.version}" if info.group else (version or info.version)
        prefix = f"/apis/{group_version}" if info.group else f"/api/{group_version}"
        if info.namespaced and namespace:
            prefix += f"/namespaces/{quote(namespace, safe='')}"
        prefix += f"/{info.plural}"
        return prefix + (f"/{quote(name, safe='')}" if name else "")

    # --- reading --------------------------------------------------------------------------

    def version(self) -> dict[str, Any]:
        return self.request("GET", "/version") or {}

    def served_versions(self) -> dict[str, tuple[str, ...]]:
        """API group → the versions the server serves (discovery's ``/apis``; the core group is ``""``)."""
        out: dict[str, tuple[str, ...]] = {"": ("v1",)}
        for group in (self.request("GET", "/apis") or {}).get("groups") or []:
            out[str(group.get("name"))] = tuple(str(v.get("version")) for v in group.get("versions") or [])
        return out

    def list(self, kind: str | KindInfo, namespace: str | None = None, *, label_selector: str = "",
             version: str | None = None, accept: str | None = None,
             progress: Any = None) -> list[dict[str, Any]]:
        """Every object of a kind (in ``namespace``, or all), page by page; items get kind and apiVersion."""
        info = kind if isinstance(kind, KindInfo) else _info(kind)
        api_version = f"{info.group}/{version or info.version}" if info.group else (version or info.version)
        path = self.path(info, namespace, version=version)
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            query: dict[str, Any] = {"limit": PAGE_SIZE}
            if token:
                query["continue"] = token
            if label_selector:
                query["labelSelector"] = label_selector
            page = self.request("GET", path, query=query, accept=accept) or {}
            for item in page.get("items") or []:
                if isinstance(item, dict):
                    # List items carry no kind/apiVersion; a metadata-only list names them PartialObjectMetadata.
                    item["kind"], item["apiVersion"] = info.kind, api_version
                    items.append(item)
            token = str((page.get("metadata") or {}).get("continue") or "")
            if not token:
                return items
            if progress is not None:
                progress(info.plural, len(items))

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        try:
            return self.request("GET", self.path(_info(kind), namespace, name))  # type: ignore[no-any-return]
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise

    # --- writing (the labs' starting objects) ---------------------------------------------

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        info, ns, _ = self._where(obj)
        return self.request("POST", self.path(info, ns), dict(obj))  # type: ignore[no-any-return]

    def apply(self, obj: Mapping[str, Any]) -> str:
        """Create, or replace when it exists (as a lab's starting state): ``created`` or ``replaced``."""
        info, ns, name = self._where(obj)
        current = self.get(info.kind, ns, name)
        if current is None:
            self.create(obj)
            return "created"
        if info.kind in RECREATED:
            # A Pod's spec and a Job's template cannot be updated: `kubectl replace --force`, as a user would.
            self._recreate(info, ns, name, obj)
            return "replaced"
        body = json_copy(obj)
        body.setdefault("metadata", {})["resourceVersion"] = current["metadata"].get("resourceVersion")
        if info.kind == "Service":
            # clusterIP is immutable: keep the allocated one unless the object asks for one.
            spec = body.setdefault("spec", {})
            for f in ("clusterIP", "clusterIPs"):
                if f not in spec and f in (current.get("spec") or {}):
                    spec[f] = current["spec"][f]
        self.request("PUT", self.path(info, ns, name), body)
        return "replaced"

    def _recreate(self, info: KindInfo, ns: str | None, name: str, obj: Mapping[str, Any],
                  timeout: float = 60.0) -> None:
        self.request("DELETE", self.path(info, ns, name),
                     query={"propagationPolicy": "Background", "gracePeriodSeconds": "0"})
        deadline = time.monotonic() + timeout
        while self.get(info.kind, ns, name) is not None:
            if time.monotonic() > deadline:
                raise KubeError(f"{info.kind} {ns}/{name} was still being deleted after {timeout:.0f} s")
            time.sleep(0.2)
        self.create(obj)

    def delete(self, kind: str, namespace: str | None, name: str) -> bool:
        try:
            self.request("DELETE", self.path(_info(kind), namespace, name), query={"propagationPolicy": "Background"})
        except ApiError as exc:
            if exc.code == 404:
                return False
            raise
        return True

    def _where(self, obj: Mapping[str, Any]) -> tuple[KindInfo, str | None, str]:
        info = _info(str(obj.get("kind")))
        meta = obj.get("metadata") or {}
        ns = str(meta.get("namespace") or self.namespace) if info.namespaced else None
        return info, ns, str(meta.get("name") or "")


def _info(kind: str) -> KindInfo:
    info = BY_KIND.get(kind)
    if info is None:
        raise KubeError(f"kind {kind!r} is not one knetsim reads or writes")
    return info


def _innermost(exc: BaseException) -> str:
    """The root cause's words ("Connection refused"), not urllib3's wrapping of it."""
    while True:
        inner = exc.__cause__ or exc.__context__ or (exc.args[0] if exc.args and isinstance(exc.args[0], BaseException)
                                                     else None)
        if inner is None or inner is exc:
            break
        exc = inner
    text = str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
    return text.rpartition("]")[2].strip() or text


def _user(kubeconfig: str | None, name: Any) -> Mapping[str, Any]:
    """The ``users`` entry ``name`` of the kubeconfig files (the first file that has it wins, as in kubectl)."""
    for path in _files(kubeconfig).split(os.pathsep):
        with contextlib.suppress(OSError, yaml.YAMLError, AttributeError, TypeError):
            doc = yaml.safe_load(Path(os.path.expanduser(path)).read_text())
            for entry in doc.get("users") or []:
                if entry.get("name") == name:
                    return entry.get("user") or {}
    return {}


def connect(kubeconfig: str | None = None, context: str | None = None, *, timeout: float = READ_TIMEOUT) -> KubeAPI:
    """The API server of ``context`` (default: current-context) in ``kubeconfig`` (default: ``$KUBECONFIG``,
    then ``~/.kube/config``), with its credentials; nothing is requested yet. Raises KubeconfigError."""
    from kubernetes import config as kube_config
    from kubernetes.client import ApiClient, Configuration
    from kubernetes.config.config_exception import ConfigException

    # Named here, not left to the client: it reads $KUBECONFIG once, when it is first imported.
    where = _files(kubeconfig)
    missing = _missing_file(kubeconfig)
    if missing is not None:
        raise KubeconfigError(f"kubeconfig {missing}: No such file or directory")
    configuration = Configuration()
    try:
        contexts, current = kube_config.list_kube_config_contexts(config_file=where)
        with _client_log() as log:
            kube_config.load_kube_config(config_file=where, context=context,
                                         client_configuration=configuration, persist_config=False)
    except ConfigException as exc:
        raise KubeconfigError(f"kubeconfig {where}: {exc}") from None
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"kubeconfig {where}: not valid YAML: {exc}") from None
    except (OSError, ValueError, TypeError, AttributeError, KeyError) as exc:
        chosen = next((c for c in contexts or [] if c.get("name") == (context or (current or {}).get("name"))), {})
        user = (chosen.get("context") or {}).get("user")
        provider = (_user(kubeconfig, user).get("auth-provider") or {}).get("name")
        if provider:
            # kubectl itself dropped the in-tree providers (v1.26): clouds now write exec plugins.
            raise KubeconfigError(f"kubeconfig {where}: user {user!r} authenticates with the auth-provider "
                                  f"{provider!r}, which failed ({exc}); current kubeconfigs use an exec plugin "
                                  "instead (gke-gcloud-auth-plugin, kubelogin, aws eks get-token)") from None
        raise KubeconfigError(f"kubeconfig {where}: not a usable kubeconfig: {exc}") from None
    chosen = next((c for c in contexts or [] if c.get("name") == (context or (current or {}).get("name"))), None)
    ctx = (chosen or {}).get("context") or {}
    name = str((chosen or {}).get("name") or context or "")
    errors = [r.getMessage() for r in log if r.levelno >= logging.ERROR]
    if errors:
        raise KubeconfigError(f"kubeconfig {where}, context {name}: the credentials of user {ctx.get('user')!r} "
                              f"could not be obtained: {'; '.join(errors)}")
    # No retries: an unreachable server is said at once, and a refused request is not sent twice.
    configuration.retries = False
    target = Target(where, name, str(configuration.host).rstrip("/"), str(ctx.get("namespace") or "default"),
                    str(ctx.get("user") or ""))
    return KubeAPI(ApiClient(configuration), target, timeout)
