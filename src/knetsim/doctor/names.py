"""Names that resolve to nothing: a pod (or an init container waiting in a loop) that looks up a Service which
does not exist, and a StatefulSet whose governing Service is missing, so its pods' DNS names never resolve.

A pod's configuration is full of words; only those in a place that is certainly a lookup are taken as Service
names: an ``nslookup``/``getent hosts``/``dig``/``host``/``nc``/``ping`` argument, a URL's host, a
``host:port`` value, or a name ending in ``.svc`` (or ``.svc.<cluster domain>``) or naming an existing
namespace (``api.backend``). The name must then fail to resolve from the pod (the DNS layer decides), so an
external host the cluster can resolve is never reported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..cluster.state import ClusterState
from ..model.labels import edit_distance
from ..model.objects import Pod
from .checks import Finding, resolution_of

_NAME = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*"
# A lookup tool and its name argument (options skipped); a shell substitution may follow the name
# (`myservice.$(cat .../namespace).svc.cluster.local`, the init-container example of the Kubernetes docs).
# Options are skipped with their values where the tool takes one (`nc -w 2 db 5432`: 2 is the timeout, not a
# host; busybox nc's -w/-i/-p/-q, ping's -c/-W/-w/-i/-s, nslookup's -type=A).
_LOOKUP = re.compile(r"\b(?:nslookup(?:\s+-\S+)*|getent\s+hosts|dig(?:\s+\+\S+)*|host|"
                     r"ping(?:\s+(?:-[a-zA-Z]*[cwWis]\s*\d+|-[a-zA-Z]+))*|"
                     r"nc(?:\s+(?:-[a-zA-Z]*[wipqW]\s*\d+|-[a-zA-Z]+))*)\s+(" + _NAME + r")(\.?\$[({][^\s;]*)?"
                     r"(?=$|[\s;:)'\"])")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://(" + _NAME + r")(?::\d+)?(?=$|[/\s?#;'\"])")
_HOST_PORT = re.compile(r"^(" + _NAME + r"):(\d{1,5})$")


@dataclass(frozen=True, slots=True)
class Lookup:
    name: str  # as written, a shell substitution cut off
    container: str
    where: str  # "command", "args", "env NAME"
    init: bool
    substituted: bool  # the name continued with $(...): only its first label is known


def lookups(pod: Pod) -> Iterator[Lookup]:
    spec = pod.raw.get("spec") or {}
    for init, key in ((True, "initContainers"), (False, "containers")):
        for container in spec.get(key) or []:
            if not isinstance(container, dict):
                continue
            name = str(container.get("name") or "")
            texts: list[tuple[str, str]] = [("command", str(c)) for c in container.get("command") or []]
            texts += [("args", str(a)) for a in container.get("args") or []]
            texts += [(f"env {e.get('name')}", str(e["value"])) for e in container.get("env") or []
                      if isinstance(e, dict) and isinstance(e.get("value"), str)]
            for where, text in texts:
                seen = set()
                for match in _LOOKUP.finditer(text):
                    seen.add(match.group(1))
                    yield Lookup(match.group(1), name, where, init, bool(match.group(2)))
                for match in _URL.finditer(text):
                    if match.group(1) not in seen:
                        seen.add(match.group(1))
                        yield Lookup(match.group(1), name, where, init, False)
                hp = _HOST_PORT.match(text.strip())
                if hp and where.startswith("env") and hp.group(1) not in seen:
                    yield Lookup(hp.group(1), name, where, init, False)


def _service_name(state: ClusterState, pod: Pod, lookup: Lookup) -> tuple[str, str] | None:
    """(namespace, service) a looked-up name means, when it certainly means a Service of this cluster."""
    labels = lookup.name.rstrip(".").split(".")
    if lookup.substituted:
        # The rest is computed at run time; the docs' example computes the pod's own namespace.
        return (pod.namespace, labels[0]) if len(labels) == 1 else None
    domain = state.config.cluster_domain
    if len(labels) == 1:
        return pod.namespace, labels[0]
    rest = ".".join(labels[2:])
    if len(labels) >= 3 and rest in ("svc", f"svc.{domain}"):
        return labels[1], labels[0]
    if len(labels) == 2 and labels[1] in state.namespaces:
        return labels[1], labels[0]
    if len(labels) == 2 and labels[1] == "svc":
        return pod.namespace, labels[0]
    return None


def missing_service_findings(state: ClusterState, pod: Pod) -> list[Finding]:
    out: list[Finding] = []
    reported = set()
    for lookup in lookups(pod):
        target = _service_name(state, pod, lookup)
        if target is None or target in reported:
            continue
        namespace, name = target
        if f"{namespace}/{name}" in state.services:
            continue
        if len(lookup.name.split(".")) == 1 and any(s.name == name for s in state.services.values()):
            continue  # a short name of another namespace's Service: ShortNameOtherNamespace says it
        if name == pod.name or name == pod.hostname or name in ("localhost",):
            continue
        if not lookup.substituted:
            try:
                if resolution_of(state, pod, lookup.name).ok:
                    continue  # a pod's hostname, an external name: it resolves
            except ValueError:
                continue
        reported.add(target)
        who = f"init container {lookup.container!r}" if lookup.init else f"container {lookup.container!r}"
        effect = ("it waits for a name that never resolves, so the pod never starts" if lookup.init
                  else "its lookups fail (NXDOMAIN) and it connects nowhere")
        # An env value is configuration the program may never read (microservices-demo's frontend names its
        # optional shopping assistant, whose Service exists only with that component): knetsim cannot tell,
        # so it warns. A command or argument that looks the name up certainly does: an error.
        configured_only = lookup.where.startswith("env ")
        if configured_only:
            effect = (f"if the program uses {lookup.where.removeprefix('env ')}, its lookups fail (NXDOMAIN) and "
                      "it connects nowhere")
        others = sorted(s.key for s in state.services.values() if s.namespace == namespace)
        close = sorted((edit_distance(name, key.split("/", 1)[1]), key) for key in others)
        hint = (f"; did you mean Service {close[0][1]}?" if close and close[0][0] <= 2 else "")
        fix = (f"create the Service {name} in namespace {namespace} (kubectl -n {namespace} expose deployment "
               f"<its deployment> --name={name} --port=<port>), or point {who} at an existing Service" + hint)
        out.append(Finding(
            "ServiceNotFound", "warning" if configured_only else "error", "dns", f"Pod {pod.key}",
            f"{who} looks up {lookup.name!r} ({lookup.where}), but there is no Service {name} in namespace "
            f"{namespace}: {effect}", fix,
            (f"Services in {namespace}: {', '.join(k.split('/', 1)[1] for k in others[:8]) or 'none'}",)))
    return out


def statefulset_findings(state: ClusterState, namespaces: set[str] | None) -> list[Finding]:
    """A StatefulSet's ``serviceName`` names the headless Service that gives its pods their DNS names
    (``web-0.nginx.<ns>.svc``): missing, or not headless, those names never resolve."""
    out = []
    for (kind, key), obj in state.workloads.items():
        if kind != "StatefulSet" or (namespaces and obj.namespace not in namespaces):
            continue
        spec: dict[str, Any] = obj.raw.get("spec") or {}
        service = str(spec.get("serviceName") or "")
        if not service:
            continue
        svc = state.services.get(f"{obj.namespace}/{service}")
        labels = ((spec.get("selector") or {}).get("matchLabels") or {})
        ports = [p for c in ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
                 for p in c.get("ports") or [] if isinstance(p, dict) and p.get("containerPort")]
        example = f"{obj.name}-0.{service}.{obj.namespace}.svc.{state.config.cluster_domain}"
        # Pods that look up the Service or a pod's name under it: the break is not latent, they fail now.
        users = sorted({pod.key for pod in state.pods_in(obj.namespace) for lookup in lookups(pod)
                        if service in lookup.name.split(".")[:2]})
        used = f"; {', '.join(users[:3])} look(s) these names up" if users else ""
        if svc is None:
            port_lines = "".join(f"\n  - {{name: {p.get('name') or 'port-' + str(p['containerPort'])}, "
                                 f"port: {p['containerPort']}}}" for p in ports[:3]) or "\n  - {port: 80}"
            selector = ", ".join(f"{k}: {v}" for k, v in sorted(labels.items()))
            out.append(Finding(
                "StatefulSetServiceMissing", "error" if users else "warning", "dns", f"StatefulSet {key}",
                f"spec.serviceName is {service!r}, but there is no Service {service} in namespace {obj.namespace}: "
                f"the pods' own DNS names ({example}, ...) do not resolve{used}",
                f"create the headless Service:\napiVersion: v1\nkind: Service\nmetadata: {{name: {service}, "
                f"namespace: {obj.namespace}}}\nspec:\n  clusterIP: None\n  selector: {{{selector}}}\n  ports:"
                + port_lines))
        elif not svc.headless:
            out.append(Finding(
                "StatefulSetServiceNotHeadless", "warning" if users else "info", "dns", f"StatefulSet {key}",
                f"spec.serviceName names Service {svc.key}, which has a cluster IP: CoreDNS gives per-pod names "
                f"({example}) only for a headless Service{used}",
                "a Service's clusterIP cannot be changed: create a headless Service (clusterIP: None) with the same "
                "selector under another name and set spec.serviceName to it (a new StatefulSet: the field is "
                "immutable)"))
    return out
