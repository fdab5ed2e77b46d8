"""Running every check, confirming with traces, and filtering to what the user asked about."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..cluster.build import ManifestError
from ..cluster.state import ClusterState
from ..dns import resolve
from ..model.gatewayapi import ROUTE_KINDS
from ..network.trace import TraceInputError
from ..network.tracer import trace
from .checks import (
    SEVERITIES,
    SYSTEM_NAMESPACES,
    Finding,
    admission_findings,
    dataplane_findings,
    dns_findings,
    image_findings,
    service_findings,
)
from .dnschecks import client_targets, dns_workload_findings
from .listenchecks import listener_caveats
from .topology import topology_findings

GATEWAY_SUBJECT_KINDS = ("Gateway", *ROUTE_KINDS, "ListenerSet", "BackendTLSPolicy")


class SubjectNotFound(LookupError):
    """The Service or Ingress the user named does not exist (bad input: exit 2)."""


@dataclass(frozen=True, slots=True)
class Report:
    findings: tuple[Finding, ...]
    checked: tuple[str, ...] = field(default=())

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == "error")

    def to_dict(self) -> dict[str, Any]:
        return {"checked": list(self.checked), "findings": [f.to_dict() for f in self.findings],
                "summary": {s: sum(1 for f in self.findings if f.severity == s) for s in SEVERITIES}}


def _policy_findings(state: ClusterState) -> list[Finding]:
    from ..policy.lint import lint

    return [Finding(f.code, _severity(f.code, f.severity, f.message), "policy", f.subject, f.message, f.fix,
                    tuple(f"{k}: {v}" for k, v in f.details)) for f in lint(state)]


def _severity(code: str, severity: str, message: str) -> str:
    # Two adjacent peers (namespaceSelector, then podSelector) that would mean something else as
    # one item are the classic slip — one `-` too many — so the OR shape is a warning. The AND
    # shape is what people write on purpose; its other reading stays a note.
    if code == "AndOrReadingsDiffer" and "read as one item (AND)" in message:
        return "warning"
    return severity


def _ingress_findings(state: ClusterState, namespace: str | None) -> list[Finding]:
    from ..ingress import ingress_findings

    return [Finding(f.code, f.severity, f.layer, f.subject, f.message, f.fix, (f.field,) if f.field else ())
            for f in ingress_findings(state, namespace)]


def _gateway_findings(state: ClusterState, namespace: str | None) -> list[Finding]:
    from ..gateway.findings import gateway_findings

    return [Finding(f.code, f.severity, f.layer, f.subject, f.message, f.fix, (f.field,) if f.field else ())
            for f in gateway_findings(state, namespace)]


def _ingress_traffic(state: ClusterState, namespace: str | None) -> list[Finding]:
    """Trace every routable Ingress path from outside; report the layer that stops it."""
    out = []
    for ing in state.ingresses.values():
        if namespace and ing.namespace != namespace:
            continue
        for rule in ing.rules:
            if not rule.host or "*" in rule.host:
                continue
            for path in rule.paths:
                if path.backend.resource is not None:
                    continue
                url = f"http://{rule.host}{path.path or '/'}"
                try:
                    result = trace(state, "external", url)
                except TraceInputError:
                    continue
                failing = result.failing_hop
                if result.connected and failing is None:
                    continue
                layer = failing.layer if failing else "app"
                fix = next((f.fix for f in result.findings if f.fix), "")
                if layer == "policy":
                    fix = ("allow ingress from the ingress controller to the backend pods, e.g. from: "
                           "[{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ingress-nginx}}, "
                           "podSelector: {matchLabels: {app.kubernetes.io/name: ingress-nginx}}}]")
                status = f" (HTTP {result.reply.status})" if result.reply and result.reply.status else ""
                out.append(Finding("IngressPathFails", "error", layer, f"Ingress {ing.key}",
                                   f"GET {url} from outside ends {result.outcome}{status} at the {layer} layer: "
                                   f"{failing.detail if failing else ''}", fix))
    return out


def _client_traffic(state: ClusterState, namespaces: set[str] | None) -> list[Finding]:
    """Pods configured to talk to a Service (env, args): does that connection actually work?"""
    out = []
    seen: set[tuple[str, str, str]] = set()
    service_names = {svc.name for svc in state.services.values()}
    for pod in state.pods.values():
        if pod.namespace in SYSTEM_NAMESPACES or (namespaces and pod.namespace not in namespaces):
            continue
        owner = pod.meta.owner.name if pod.meta.owner else pod.name
        for host, port, where in client_targets(pod):
            if host.split(".")[0] not in service_names:
                continue  # words of a shell command, external hosts: not a Service of this cluster
            resolution = resolve(state, pod, host)
            if not resolution.ok or not resolution.values:
                continue
            svc = state.service_by_ip(resolution.values[0])
            if svc is None or (svc.headless and port is None):
                pass
            ports = [port] if port else ([svc.ports[0].port] if svc is not None and svc.ports else [])
            for number in ports:
                key = (pod.namespace, owner, f"{host}:{number}")
                if key in seen:
                    continue
                seen.add(key)
                result = trace(state, pod.key, f"{host}:{number}")
                if result.connected:
                    continue
                failing = result.failing_hop
                fix = next((f.fix for f in result.findings if f.fix), "")
                out.append(Finding("ClientCannotConnect", "error", failing.layer if failing else "app",
                                   f"Pod {pod.key}",
                                   f"{pod.key} is configured to reach {host}:{number} ({where}); the connection "
                                   f"ends {result.outcome}" + (f" at the {failing.layer} layer: {failing.detail}"
                                                               if failing else ""), fix))
    return out


def diagnose(state: ClusterState, errors: Iterable[ManifestError] = (), *, subject: str | None = None,
             namespace: str | None = None) -> Report:
    """Every finding for the cluster, or for one Service/Ingress (``subject``) in ``namespace``."""
    findings = admission_findings(errors)
    checked = []
    namespaces = {namespace} if namespace else None
    for svc in state.services.values():
        if svc.namespace in SYSTEM_NAMESPACES and not (namespaces and svc.namespace in namespaces):
            continue
        if namespaces and svc.namespace not in namespaces:
            continue
        checked.append(f"Service {svc.key}")
        findings.extend(service_findings(state, svc))
        findings.extend(topology_findings(state, svc))
    for pod in state.pods.values():
        if pod.namespace in SYSTEM_NAMESPACES or (namespaces and pod.namespace not in namespaces):
            continue
        findings.extend(dns_findings(state, pod))
        findings.extend(image_findings(state, pod))
    findings.extend(f for f in _policy_findings(state)
                    if not namespaces or any(f.subject.split(" ", 1)[-1].startswith(ns + "/") for ns in namespaces))
    findings.extend(_ingress_findings(state, namespace))
    findings.extend(_gateway_findings(state, namespace))
    findings.extend(_ingress_traffic(state, namespace))
    findings.extend(_client_traffic(state, namespaces))
    findings.extend(dns_workload_findings(state, namespaces))
    findings.extend(listener_caveats(state, namespaces))
    findings.extend(dataplane_findings(state))
    checked.extend(f"Ingress {i.key}" for i in state.ingresses.values() if not namespaces or i.namespace in namespaces)
    # Every namespaced Gateway API kind the gateway findings speak of (routes of each kind, ListenerSets,
    # BackendTLSPolicies) can be checked and named as the subject.
    gateway_objects = [o for kind in GATEWAY_SUBJECT_KINDS for o in state.objects_of(kind)]
    checked.extend(f"{o.kind} {o.key}" for o in gateway_objects if not namespaces or o.namespace in namespaces)
    if subject:
        ns = namespace or "default"
        key = f"{ns}/{subject}"
        subjects = [*state.services.values(), *state.ingresses.values(), *gateway_objects]
        if not any(o.key == key for o in subjects):
            elsewhere = sorted({o.namespace for o in subjects if o.name == subject})
            hint = f"; it exists in namespace {', '.join(elsewhere)} (use -n)" if elsewhere else ""
            raise SubjectNotFound(f'no Service, Ingress, Gateway or HTTPRoute "{subject}" in namespace "{ns}"{hint}')
        wanted = {f"Service {key}", f"Ingress {key}", *(f"{kind} {key}" for kind in GATEWAY_SUBJECT_KINDS)}
        related_pods = set()
        svc = state.services.get(key)
        if svc is not None and svc.selector:
            related_pods = {f"Pod {p.key}" for p in state.select_pods(svc.namespace, svc.selector_view)}
        findings = [f for f in findings if f.subject in wanted or f.subject in related_pods]
        checked = [c for c in checked if c in wanted]
    unique: dict[tuple[str, str, str], Finding] = {}
    for f in findings:
        unique.setdefault((f.code, f.subject, f.message), f)
    ordered = sorted(unique.values(), key=lambda f: (SEVERITIES.index(f.severity), f.subject, f.code, f.message))
    return Report(tuple(ordered), tuple(sorted(checked)))
