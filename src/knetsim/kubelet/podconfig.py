"""What a container needs from ConfigMaps and Secrets before it can start, as the kubelet resolves it.

Two steps of the kubelet's pod sync can fail on a ConfigMap or Secret that does not exist (or
lacks a key), with the kubelet's own words:

- **Volumes** are set up before any container is created (``pkg/volume/configmap``,
  ``pkg/volume/secret``: ``SetUpAt``). A missing object or item key keeps every container of the
  pod in ``ContainerCreating``; the volume manager records ``Warning FailedMount
  MountVolume.SetUp failed for volume "x" : configmap "cfg" not found`` at each retry.
- **The environment** is computed when a container is created (``kubelet_pods.go``:
  ``makeEnvironmentVariables``). A missing object or key fails that container with
  ``CreateContainerConfigError``: ``Warning Failed  Error: configmap "cfg" not found`` or
  ``couldn't find key mode in ConfigMap default/cfg``.

``optional: true`` references are skipped when absent, as upstream. The error for an object that
does not exist is the kubelet's watch-based cache's NotFound, named by the singular resource
(``configmap "cfg" not found``, ``secret "s" not found``), not the API server's plural.

Pure functions over the pod and a ``lookup(kind, namespace, name)`` of stored objects; the
simulated kubelet and the pod-start controller share them.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
import re
from collections.abc import Callable, Mapping
from typing import Any

from ..dns.hostsfile import hosts_file
from ..dns.resolver import resolv_conf

Lookup = Callable[[str, str, str], Mapping[str, Any] | None]

# kind → (the volume source's field, the singular resource name in NotFound, the words of a missing item key)
_SOURCES = {"ConfigMap": ("configMap", "configmap", "configmap references non-existent config key"),
            "Secret": ("secret", "secret", "references non-existent secret key")}
_REFERENCE = re.compile(r"\$\(([^)]*)\)|\$\$")


class ConfigError(Exception):
    """A reference the kubelet cannot resolve; ``str()`` is the kubelet's message."""


def _data(kind: str, body: Mapping[str, Any]) -> dict[str, str]:
    """A ConfigMap's data (binaryData as text where it decodes), a Secret's data decoded from base64."""
    if kind == "ConfigMap":
        data = {str(k): str(v) for k, v in (body.get("data") or {}).items()}
        for k, v in (body.get("binaryData") or {}).items():
            data.setdefault(str(k), _decode(v))
        return data
    return {str(k): _decode(v) for k, v in (body.get("data") or {}).items()}


def _decode(value: Any) -> str:
    try:
        return base64.b64decode(str(value), validate=True).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return ""


def _fetch(lookup: Lookup, kind: str, namespace: str, name: str) -> dict[str, str]:
    body = lookup(kind, namespace, name)
    if body is None:
        raise ConfigError(f'{_SOURCES[kind][1]} "{name}" not found')
    return _data(kind, body)


def _meta(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("metadata") or {}


# --- volumes --------------------------------------------------------------------------------


def _volume_source(volume: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    for kind, (field, _, _) in _SOURCES.items():
        source = volume.get(field)
        if isinstance(source, Mapping):
            return kind, source
    return None


def _source_name(kind: str, source: Mapping[str, Any]) -> str:
    return str(source.get("name") if kind == "ConfigMap" else source.get("secretName") or "")


def volume_contents(pod: Mapping[str, Any], volume: Mapping[str, Any], lookup: Lookup) -> dict[str, str] | None:
    """The files of a ConfigMap or Secret volume (path relative to the mount → text); None for any other
    volume or an optional one whose object is absent. ``ConfigError`` when SetUp would fail."""
    found = _volume_source(volume)
    if found is None:
        return None
    kind, source = found
    name = _source_name(kind, source)
    try:
        data = _fetch(lookup, kind, str(_meta(pod).get("namespace") or ""), name)
    except ConfigError:
        if source.get("optional"):
            return {}
        raise
    items = source.get("items") or []
    if not items:
        return dict(sorted(data.items()))
    files: dict[str, str] = {}
    for item in items:
        key = str(item.get("key") or "")
        if key not in data:
            if source.get("optional"):
                continue
            raise ConfigError(f"{_SOURCES[kind][2]}: {key}")
        files[str(item.get("path") or key)] = data[key]
    return files


def mount_error(pod: Mapping[str, Any], lookup: Lookup) -> tuple[str, str] | None:
    """(volume name, the SetUp error) for the first ConfigMap/Secret volume that cannot be set up."""
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        if not isinstance(volume, Mapping):
            continue
        try:
            volume_contents(pod, volume, lookup)
        except ConfigError as exc:
            return str(volume.get("name")), str(exc)
    return None


def mount_message(volume: str, error: str) -> str:
    return f'MountVolume.SetUp failed for volume "{volume}" : {error}'


def mounted_files(pod: Mapping[str, Any], container: Mapping[str, Any], lookup: Lookup) -> dict[str, str]:
    """The files the container's ConfigMap/Secret volume mounts show (absolute path → text); a
    ``subPath`` mount is the one file it names."""
    volumes = {str(v.get("name")): v for v in (pod.get("spec") or {}).get("volumes") or [] if isinstance(v, Mapping)}
    files: dict[str, str] = {}
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(str(mount.get("name")))
        if volume is None:
            continue
        try:
            contents = volume_contents(pod, volume, lookup)
        except ConfigError:
            continue
        if contents is None:
            continue
        path = posixpath.normpath(str(mount.get("mountPath") or "/"))
        sub = mount.get("subPath")
        if sub:
            if str(sub) in contents:
                files[path] = contents[str(sub)]
            continue
        for rel, text in contents.items():
            files[posixpath.join(path, rel)] = text
    return files


# --- environment --------------------------------------------------------------------------


def _field_value(pod: Mapping[str, Any], path: str) -> str:
    """The downward API's values for the fields a container's env may name (``fieldRef.fieldPath``)."""
    meta, spec, status = _meta(pod), pod.get("spec") or {}, pod.get("status") or {}
    subscript = re.fullmatch(r"metadata\.(labels|annotations)\['(.*)'\]", path)
    if subscript:
        return str((meta.get(subscript.group(1)) or {}).get(subscript.group(2), ""))
    simple = {"metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"),
              "metadata.uid": meta.get("uid"), "spec.nodeName": spec.get("nodeName"),
              "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
              "status.podIP": status.get("podIP"), "status.hostIP": status.get("hostIP"),
              "status.podIPs": ",".join(str(p.get("ip")) for p in status.get("podIPs") or []),
              "status.hostIPs": ",".join(str(p.get("ip")) for p in status.get("hostIPs") or [])}
    return str(simple.get(path) or "")


def expand(value: str, variables: Mapping[str, str]) -> str:
    """``$(VAR)`` references as the kubelet expands them: a known name is replaced, an unknown one is
    left as written, ``$$`` is a literal ``$``."""
    def one(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return variables.get(m.group(1), m.group(0))
    return _REFERENCE.sub(one, value)


def container_env(pod: Mapping[str, Any], container: Mapping[str, Any], lookup: Lookup,
                  service_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables the kubelet gives the container from its ``envFrom`` and ``env`` (envFrom first,
    env overriding it, values expanded against both and the service links); ``ConfigError`` for a
    reference that is neither resolvable nor optional."""
    namespace = str(_meta(pod).get("namespace") or "")
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        for kind, field in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            ref = source.get(field)
            if not isinstance(ref, Mapping):
                continue
            try:
                data = _fetch(lookup, kind, namespace, str(ref.get("name") or ""))
            except ConfigError:
                if ref.get("optional"):
                    continue
                raise
            prefix = str(source.get("prefix") or "")
            env.update({prefix + k: v for k, v in sorted(data.items())})
    for var in container.get("env") or []:
        name = str(var.get("name") or "")
        value_from = var.get("valueFrom")
        if var.get("value") or not isinstance(value_from, Mapping):
            env[name] = expand(str(var.get("value") or ""), {**(service_env or {}), **env})
            continue
        field_ref = value_from.get("fieldRef")
        if isinstance(field_ref, Mapping):
            env[name] = _field_value(pod, str(field_ref.get("fieldPath") or ""))
            continue
        for kind, field in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
            ref = value_from.get(field)
            if not isinstance(ref, Mapping):
                continue
            optional, source_name, key = bool(ref.get("optional")), str(ref.get("name") or ""), str(ref.get("key"))
            try:
                data = _fetch(lookup, kind, namespace, source_name)
            except ConfigError:
                if optional:
                    break
                raise
            if key not in data:
                if optional:
                    break
                raise ConfigError(f"couldn't find key {key} in {kind} {namespace}/{source_name}")
            env[name] = data[key]
    return env


def config_error(pod: Mapping[str, Any], container: Mapping[str, Any], lookup: Lookup) -> str | None:
    """The kubelet's CreateContainerConfigError message for this container, or None when it can be created."""
    try:
        container_env(pod, container, lookup)
    except ConfigError as exc:
        return str(exc)
    return None


def waiting_states(pod: Mapping[str, Any], lookup: Lookup) -> dict[str, dict[str, Any]]:
    """Container name → the waiting state the kubelet reports for a container its config keeps from
    starting: every container ``ContainerCreating`` while a volume cannot be set up, otherwise
    ``CreateContainerConfigError`` for those whose environment cannot be resolved."""
    containers = [c for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, Mapping)]
    if mount_error(pod, lookup) is not None:
        return {str(c.get("name")): {"reason": "ContainerCreating"} for c in containers}
    states = {}
    for c in containers:
        error = config_error(pod, c, lookup)
        if error is not None:
            states[str(c.get("name"))] = {"reason": "CreateContainerConfigError", "message": error}
    return states


def references(pod: Mapping[str, Any]) -> set[tuple[str, str]]:
    """Every (kind, name) of a ConfigMap or Secret the pod's volumes and containers refer to."""
    refs: set[tuple[str, str]] = set()
    spec = pod.get("spec") or {}
    for volume in spec.get("volumes") or []:
        found = _volume_source(volume) if isinstance(volume, Mapping) else None
        if found is not None:
            refs.add((found[0], _source_name(*found)))
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for source in c.get("envFrom") or []:
            for kind, field in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
                if isinstance(source.get(field), Mapping):
                    refs.add((kind, str(source[field].get("name") or "")))
        for var in c.get("env") or []:
            value_from = var.get("valueFrom") or {}
            for kind, field in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
                if isinstance(value_from.get(field), Mapping):
                    refs.add((kind, str(value_from[field].get("name") or "")))
    return refs


def pod_env(state: Any, pod: Any, container: str) -> dict[str, str]:
    """The environment every process of the container starts with: the image's basics, the kubelet's
    service links and the container's literal ``env`` values."""
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME": pod.name,
           "HOME": "/root", "SHLVL": "1", "PWD": "/"}
    if pod.raw.get("spec", {}).get("enableServiceLinks", True):
        # The kubelet's service links: every Service of the pod's namespace, then `kubernetes`.
        services = [s for s in state.services.values() if s.namespace == pod.namespace]
        for svc in sorted(services, key=lambda s: s.name):
            ip = svc.raw.get("spec", {}).get("clusterIP")
            if not ip or ip == "None":
                continue
            prefix = svc.name.upper().replace("-", "_")
            ports = svc.raw.get("spec", {}).get("ports") or []
            if not ports:
                continue
            env[f"{prefix}_SERVICE_HOST"] = ip
            env[f"{prefix}_SERVICE_PORT"] = str(ports[0]["port"])
            for p in ports:
                proto = p.get("protocol", "TCP")
                if p.get("name"):
                    env[f"{prefix}_SERVICE_PORT_{p['name'].upper().replace('-', '_')}"] = str(p["port"])
                env[f"{prefix}_PORT_{p['port']}_{proto}"] = f"{proto.lower()}://{ip}:{p['port']}"
            env[f"{prefix}_PORT"] = f"{ports[0].get('protocol', 'TCP').lower()}://{ip}:{ports[0]['port']}"
    env.setdefault("KUBERNETES_SERVICE_HOST", state.config.kubernetes_service_ip)
    env.setdefault("KUBERNETES_SERVICE_PORT", "443")
    for c in pod.raw.get("spec", {}).get("containers") or []:
        if c.get("name") == container:
            for e in c.get("env") or []:
                if "value" in e:
                    env[e["name"]] = str(e["value"])
    return env


SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def pod_files(state: Any, pod: Any) -> dict[str, str]:
    """The files the kubelet writes into every container (``state`` None: before the cluster is built)."""
    spec = pod.raw.get("spec", {})
    # A hostNetwork pod shares the node's UTS namespace: its hostname is the node's.
    hostname = (pod.node_name if spec.get("hostNetwork") and pod.node_name else None) or spec.get("hostname") \
        or pod.name
    files = {"/etc/hostname": hostname + "\n"}
    if spec.get("automountServiceAccountToken") is not False:
        # The service account volume (kube-api-access-*) holds the pod's namespace, without a newline: scripts
        # read it with $(cat ...), the Init Containers page's example among them. Its ca.crt is the namespace's
        # kube-root-ca.crt (the projected volume's configMap source), so `curl --cacert` verifies the API
        # server; the token is not simulated.
        files[f"{SERVICE_ACCOUNT_DIR}/namespace"] = pod.namespace
        bundle = state.others.get(("ConfigMap", f"{pod.namespace}/kube-root-ca.crt")) if state is not None else None
        ca = ((bundle.raw.get("data") or {}).get("ca.crt") if bundle is not None else None)
        if isinstance(ca, str):
            files[f"{SERVICE_ACCOUNT_DIR}/ca.crt"] = ca
    if state is not None:
        files["/etc/hosts"] = hosts_file(state, pod)
        files["/etc/resolv.conf"] = resolv_conf(state, pod).text()
    return files
