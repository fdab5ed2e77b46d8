"""Running every check, confirming with traces, and filtering to what the user asked about."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ..cluster.build import ManifestError
from ..cluster.state import ClusterState
from ..dns import resolve
from ..ingress.probes import is_regex
from ..model.gatewayapi import ROUTE_KINDS
from ..model.loader import CONTROLLER
from ..model.objects import Pod
from ..network.trace import TraceInputError
from ..network.tracer import trace
from .checks import (
    SEVERITIES,
    SYSTEM_NAMESPACES,
    Finding,
    admission_findings,
    dataplane_findings,
    dns_findings,
    examples,
    image_findings,
    service_findings,
    unscheduled_pod_findings,
)
from .dnschecks import client_targets, dns_workload_findings
from .findingsources import with_sources
from .fixes import Patch, verified
from .ingresstls import ingress_tls_findings
from .kubeproxy import kube_proxy_findings
from .listenchecks import listener_caveats
from .names import missing_service_findings, statefulset_findings
from .podruns import config_findings, container_exit_findings, exec_probe_caveats
from .probechecks import probe_caveats, probe_restart_findings
from .storagechecks import storage_class_findings
from .topology import topology_findings

GATEWAY_SUBJECT_KINDS = ("Gateway", *ROUTE_KINDS, "ListenerSet", "BackendTLSPolicy")


class SubjectNotFound(LookupError):
    """The Service or Ingress the user named does not exist (bad input: exit 2)."""


@dataclass(frozen=True, slots=True)
class Report:
    findings: tuple[Finding, ...]
    # The subjects (Services, Ingresses, Gateway API objects) the doctor can be asked about.
    checked: tuple[str, ...] = field(default=())
    # How many objects of each kind the checks read (pods, policies, workloads included).
    counts: tuple[tuple[str, int], ...] = field(default=())

    @property
    def objects(self) -> int:
        return sum(n for _, n in self.counts) if self.counts else len(self.checked)

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == "error")

    def to_dict(self) -> dict[str, Any]:
        return {"checked": list(self.checked), "objectsChecked": dict(self.counts),
                "findings": [f.to_dict() for f in self.findings],
                "summary": {s: sum(1 for f in self.findings if f.severity == s) for s in SEVERITIES}}


def _policy_findings(state: ClusterState) -> list[Finding]:
    from ..policy.lint import lint

    out = []
    for f in lint(state):
        finding = Finding(f.code, _severity(f.code, f.severity, f.message), "policy", f.subject, f.message, f.fix,
                          tuple(f"{k}: {v}" for k, v in f.details))
        kind, _, key = f.subject.partition(" ")
        if f.json_patch and kind == "NetworkPolicy":
            namespace, _, name = key.partition("/")
            patch = Patch(kind, namespace, name, "json", list(f.json_patch))
            left = verified(state, patch, _lint_still_has(f.code, f.subject))
            if left is None:
                finding = replace(finding, fix=f"{patch.command}\n({f.fix})", patch=patch)
            else:
                finding = replace(finding, evidence=(*finding.evidence, f"not offered: {patch.command} leaves {left}"))
        out.append(finding)
    return out


def _lint_still_has(code: str, subject: str) -> Any:
    def check(fixed: ClusterState) -> str | None:
        from ..policy.lint import lint

        left = [f for f in lint(fixed) if f.subject == subject and (f.code == code or f.severity == "error")]
        return f"{left[0].code}: {left[0].message}" if left else None
    return check


def _severity(code: str, severity: str, message: str) -> str:
    # Two adjacent peers (namespaceSelector, then podSelector) that would mean something else as
    # one item are the classic slip — one `-` too many — so the OR shape is a warning. The AND
    # shape is what people write on purpose; its other reading stays a note.
    if code == "AndOrReadingsDiffer" and "read as one item (AND)" in message:
        return "warning"
    return severity


# Other Ingress implementations, by the class name (IngressClass name or kubernetes.io/ingress.class value) and
# the spec.controller their install creates (each project's docs: GKE Ingress, AWS Load Balancer Controller,
# Traefik, HAProxy Kubernetes Ingress Controller, Kong, Istio, Contour, Azure Application Gateway, Cilium, F5
# NGINX Ingress Controller). knetsim simulates ingress-nginx only: an Ingress of these classes is not a mistake.
OTHER_INGRESS_CLASSES = {"gce", "gce-internal", "alb", "traefik", "haproxy", "kong", "istio", "contour",
                         "azure/application-gateway", "cilium"}
OTHER_INGRESS_CONTROLLERS = {"ingress.k8s.aws/alb", "traefik.io/ingress-controller",
                             "haproxy.org/ingress-controller/haproxy", "ingress-controllers.konghq.com/kong",
                             "istio.io/ingress-controller", "projectcontour.io/ingress-controller",
                             "azure/application-gateway", "cilium.io/ingress-controller",
                             "nginx.org/ingress-controller"}
# An IngressClass that exists names its controller; a kubernetes.io/ingress.class value names a class. A
# spec.ingressClassName whose IngressClass does not exist stays IngressClassNotFound: every controller claims
# Ingresses through that object, so none claims this one.
_UNCLAIMED = ("IngressClassNoController", "IngressAnnotationNoController")


def other_implementation(state: ClusterState) -> dict[str, str]:
    """Ingress key → the other implementation's class or controller it asks for (not simulated)."""
    from ..ingress.controllers import resolve_class, running_controllers

    controllers = running_controllers(state)
    out = {}
    for ing in state.ingresses.values():
        res = resolve_class(state, ing, controllers)
        if res.code not in _UNCLAIMED:
            continue
        if res.controller in OTHER_INGRESS_CONTROLLERS:
            out[ing.key] = f"controller {res.controller}"
        elif res.controller is None and res.class_name in OTHER_INGRESS_CLASSES:
            out[ing.key] = f"class {res.class_name}"
    return out


def _ingress_findings(state: ClusterState, namespace: str | None) -> list[Finding]:
    from ..ingress import ingress_findings

    others = other_implementation(state)
    out = []
    for f in ingress_findings(state, namespace):
        key = f.subject.removeprefix("Ingress ")
        if f.code in _UNCLAIMED and key in others:
            out.append(Finding(
                "IngressClassOtherController", "info", f.layer, f.subject,
                f"this Ingress asks for {others[key]}, another implementation than ingress-nginx, which knetsim "
                "does not simulate: its routes are not traced (and it has no effect unless that controller runs)",
                "to have knetsim simulate it, use an ingress-nginx class (kubectl get ingressclass)",
                (f.field,) if f.field else ()))
            continue
        out.append(Finding(f.code, f.severity, f.layer, f.subject, f.message, f.fix, (f.field,) if f.field else ()))
    return out


def _gateway_findings(state: ClusterState, namespace: str | None) -> list[Finding]:
    from ..gateway.findings import gateway_findings

    return [Finding(f.code, f.severity, f.layer, f.subject, f.message, f.fix, (f.field,) if f.field else ())
            for f in gateway_findings(state, namespace)]


def _ingress_traffic(state: ClusterState, namespace: str | None) -> list[Finding]:
    """Trace every routable Ingress path from outside; report the layer that stops it."""
    out = []
    others = other_implementation(state)
    for ing in state.ingresses.values():
        if (namespace and ing.namespace != namespace) or ing.key in others:
            continue  # another implementation's Ingress: ingress-nginx does not serve it, and is not asked
        for rule in ing.rules:
            if not rule.host or "*" in rule.host:
                continue
            for path in rule.paths:
                if path.backend.resource is not None:
                    continue
                if is_regex(path.path or "/"):
                    continue  # a regex names no one URL to request (its text as a URL is no path it serves)
                url = f"http://{rule.host}{path.path or '/'}"
                try:
                    # Through the Ingress controller even where a Gateway names the host too: the question is
                    # whether this Ingress serves its path, not what another entry answers for the host.
                    result = trace(state, "external", url, entry="ingress")
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
                out.append(Finding("IngressPathFails", _traffic_severity(failing), layer, f"Ingress {ing.key}",
                                   f"GET {url} from outside ends {result.outcome}{status} at the {layer} layer: "
                                   f"{failing.detail if failing else ''}", fix))
    return out


def _traffic_severity(failing: Any) -> str:
    """A connection refused only because knetsim assumes an unknown image that declares no port listens on
    nothing is no certain failure (containerPort is optional): a warning; any other stop is an error."""
    detail = failing.detail if failing is not None else ""
    if failing is not None and failing.layer == "listener" and "(it listens on nothing)" in detail \
            and "; assumed:" in detail:
        return "warning"
    if failing is not None and "knetsim does not simulate what answers there" in detail:
        # An endpoint written by hand outside the pod network (an external database behind a selector-less
        # Service): knetsim cannot know whether it answers, so it is a note, never an error.
        return "info"
    return "error"


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
            if _localhost_node_port(state, pod, host, port):
                ports = [port]  # the node's localhost:<NodePort>: kube-proxy's nodePortAddresses decides
            else:
                if host.split(".")[0] not in service_names:
                    continue  # words of a shell command, external hosts: not a Service of this cluster
                resolution = resolve(state, pod, host)
                if not resolution.ok or not resolution.values:
                    continue
                svc = state.service_by_ip(resolution.values[0])
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
                if not fix and failing is not None and failing.layer == "dataplane" and \
                        _localhost_node_port(state, pod, host, number):
                    fix = _localhost_node_port_fix(state, pod, number)
                layer = failing.layer if failing else "app"
                if failing is not None and failing.layer == "endpoints" and "no selector" in failing.detail:
                    # A selector-less Service's endpoints are written by hand: there is no selector to fix.
                    svc_name = host.split(".")[0]
                    fix = (f"Service {svc_name} has no selector, so nothing writes its endpoints: create an "
                           f"EndpointSlice labelled kubernetes.io/service-name: {svc_name} with the addresses "
                           "that serve it, or give the Service a selector matching the serving pods")
                out.append(Finding("ClientCannotConnect", _traffic_severity(failing), layer,
                                   f"Pod {pod.key}",
                                   f"{pod.key} is configured to reach {host}:{number} ({where}); the connection "
                                   f"ends {result.outcome}" + (f" at the {failing.layer} layer: {failing.detail}"
                                                               if failing else ""), fix))
    return out


LOCALHOST_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def _localhost_node_port(state: ClusterState, pod: Pod, host: str, port: int | None) -> bool:
    """A hostNetwork pod (a node agent, a node-local client) configured with ``localhost:<NodePort>``: its localhost
    is the node's, which serves the NodePort or not as kube-proxy's nodePortAddresses and mode say."""
    return bool(pod.host_network and port and host in LOCALHOST_NAMES
                and any(p.node_port == port for svc in state.services.values() for p in svc.ports))


def _localhost_node_port_fix(state: ClusterState, pod: Pod, port: int) -> str:
    """What serves a node-local client's NodePort: the node's own address, or kube-proxy's nodePortAddresses
    taking loopback (iptables mode; nftables mode from 1.38, by its userspace proxy: dataplane/nodeports.py)."""
    from ..model.versions import in_force, parse

    node = state.nodes.get(pod.node_name or "")
    address = f"{node.internal_ip}:{port}" if node is not None and node.internal_ip else f"the node's address:{port}"
    fix = (f"connect to {address} (the node's address, where kube-proxy accepts NodePorts), or add 127.0.0.0/8 to "
           "kube-proxy's nodePortAddresses (nodePortAddresses in the cluster config)")
    if state.config.dataplane == "nftables" and in_force() < parse("1.38"):
        fix += f"; nftables mode serves localhost NodePorts from Kubernetes 1.38 only (this is {in_force()})"
    return fix


def diagnose(state: ClusterState, errors: Iterable[ManifestError] = (), *, subject: str | None = None,
             namespace: str | None = None) -> Report:
    """Every finding for the cluster, or for one Service/Ingress (``subject``) in ``namespace``."""
    errors = list(errors)  # read twice: for their findings, and for where each refused object was written
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
    pods_checked = 0
    # The pods of one ReplicaSet (DaemonSet, Job) share their template: what their configuration looks up and
    # pulls is checked once and said of each (then grouped), so 100,000 replicas cost one check, not 100,000.
    by_template: dict[tuple[str, str, str], tuple[Pod, list[Finding]]] = {}
    for pod in state.pods.values():
        if pod.namespace in SYSTEM_NAMESPACES or (namespaces and pod.namespace not in namespaces):
            continue
        pods_checked += 1
        owner = pod.meta.owner
        key = (pod.namespace, owner.kind, owner.name) if owner is not None and owner.kind in (
            "ReplicaSet", "DaemonSet", "Job") else None
        if key is not None and key in by_template:
            model, found = by_template[key]
            findings.extend(replace(f, subject=f"Pod {pod.key}",
                                    message=f.message.replace(model.key, pod.key).replace(model.name, pod.name))
                            for f in found)
            continue
        found = [*dns_findings(state, pod), *missing_service_findings(state, pod), *image_findings(state, pod),
                 *container_exit_findings(state, pod), *exec_probe_caveats(state, pod),
                 *probe_restart_findings(state, pod), *probe_caveats(state, pod), *config_findings(state, pod)]
        if key is not None:
            by_template[key] = (pod, found)
        findings.extend(found)
    # Pending pods no Service selects (one a Service selects is named by that Service's check): asked per pod,
    # not per template, as some of a ReplicaSet's pods may have found a node and others not.
    selectors = [(svc.namespace, svc.selector) for svc in state.services.values() if svc.selector]
    for pod in state.pods.values():
        if pod.node_name or pod.namespace in SYSTEM_NAMESPACES or (namespaces and pod.namespace not in namespaces):
            continue
        selected = any(ns == pod.namespace and all(pod.labels.get(k) == v for k, v in sel.items())
                       for ns, sel in selectors)
        findings.extend(unscheduled_pod_findings(state, pod, selected))
    findings.extend(statefulset_findings(state, namespaces))
    findings.extend(storage_class_findings(state, namespaces))
    # A policy finding is about a policy (its namespace/name) or a whole namespace ("Namespace shop"): -n keeps
    # the namespace's errors and warnings (a DNS egress block); its notes (pods no policy isolates) are hygiene,
    # shown by the run over every namespace.
    findings.extend(f for f in _policy_findings(state)
                    if not namespaces or any(f.subject.split(" ", 1)[-1].startswith(ns + "/")
                                             or (f.subject == f"Namespace {ns}" and f.severity != "info")
                                             for ns in namespaces))
    findings.extend(_ingress_findings(state, namespace))
    findings.extend(ingress_tls_findings(state, namespace))
    findings.extend(_gateway_findings(state, namespace))
    findings.extend(_ingress_traffic(state, namespace))
    findings.extend(_client_traffic(state, namespaces))
    findings.extend(dns_workload_findings(state, namespaces))
    findings.extend(listener_caveats(state, namespaces))
    findings.extend(dataplane_findings(state))
    findings.extend(kube_proxy_findings(state))
    checked.extend(f"Ingress {i.key}" for i in state.ingresses.values() if not namespaces or i.namespace in namespaces)
    # Every namespaced Gateway API kind the gateway findings speak of (routes of each kind, ListenerSets,
    # BackendTLSPolicies) can be checked and named as the subject.
    gateway_objects = [o for kind in GATEWAY_SUBJECT_KINDS for o in state.objects_of(kind)]
    checked.extend(f"{o.kind} {o.key}" for o in gateway_objects if not namespaces or o.namespace in namespaces)
    counts = _counts(state, namespaces, pods_checked, checked)
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
    findings = _traced_fixes(_one_finding_per_lookup(findings))
    unique: dict[tuple[str, str, str], Finding] = {}
    for f in findings:
        unique.setdefault((f.code, f.subject, f.message), f)
    grouped = group_by_owner(state, list(unique.values()))
    ordered = sorted(grouped, key=lambda f: (SEVERITIES.index(f.severity), f.subject, f.code, f.message))
    return Report(tuple(with_sources(state, ordered, errors)), tuple(sorted(checked)), counts)


# The DNS checks' own findings on a pod's lookups (doctor/dnschecks.py, where present): said once, by them.
_LOOKUP_CODES = ("NameDoesNotResolve", "InitContainerWaitsForName")


def _one_finding_per_lookup(findings: list[Finding]) -> list[Finding]:
    """ServiceNotFound (names.py) and the DNS checks may both see one pod look up a missing Service; the pod
    gets one finding for it."""
    told = {f.subject for f in findings if f.code in _LOOKUP_CODES}
    return [f for f in findings if not (f.code == "ServiceNotFound" and f.subject in told)]


_SERVICE_NAMED = re.compile(r"Service ([a-z0-9][-a-z0-9]*/[a-z0-9][-a-z0-9]*)")


def _traced_fixes(findings: list[Finding]) -> list[Finding]:
    """A traced connection's fix that is a patch of a Service (the trace's own, unverified, strategic merge) is
    replaced by that Service's verified fix, or by a pointer to its finding: only checked patches are printed."""
    verified_fix = {f.subject: f for f in findings if f.subject.startswith("Service ") and f.severity == "error"}
    out = []
    for f in findings:
        if f.code in ("ClientCannotConnect", "IngressPathFails") and "kubectl" in f.fix and " patch " in f.fix:
            named = [m for m in _SERVICE_NAMED.findall(f.message) if f"Service {m}" in verified_fix]
            if named:
                cause = verified_fix[f"Service {named[0]}"]
                f = replace(f, fix=cause.fix if cause.patch is not None else
                            f"see the {cause.code} finding of Service {named[0]}: {cause.fix}")
            elif "--type=" not in f.fix:
                f = replace(f, fix="see the findings of the Service it connects to")
        out.append(f)
    return out


def _counts(state: ClusterState, namespaces: set[str] | None, pods: int, checked: list[str]) -> tuple[
        tuple[str, int], ...]:
    def mine(obj: Any) -> bool:
        return obj.namespace not in SYSTEM_NAMESPACES and (not namespaces or obj.namespace in namespaces)

    by_kind: dict[str, int] = {}
    for entry in checked:
        kind = entry.split(" ", 1)[0]
        by_kind[kind] = by_kind.get(kind, 0) + 1
    by_kind["Pod"] = pods
    by_kind["NetworkPolicy"] = sum(1 for p in state.network_policies.values() if mine(p))
    for (kind, _), obj in state.workloads.items():
        if kind in ("Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet") and mine(obj) and \
                obj.source is not CONTROLLER:
            by_kind[kind] = by_kind.get(kind, 0) + 1
    return tuple(sorted((k, n) for k, n in by_kind.items() if n))


def group_by_owner(state: ClusterState, findings: list[Finding]) -> list[Finding]:
    """One finding per workload for what its pods share (the same code and message but for the pod's name):
    a Deployment of 100,000 replicas gives one finding with a count and a few examples, not 100,000."""
    groups: dict[tuple[str, ...], list[tuple[Finding, Pod]]] = {}
    out = []
    for f in findings:
        pod = state.pods.get(f.subject[4:]) if f.subject.startswith("Pod ") else None
        owner = _workload_of(state, pod) if pod is not None else None
        if pod is None or owner is None:
            out.append(f)
            continue
        key = (f.code, f.severity, f.layer, owner, f.message.replace(pod.key, "\0").replace(pod.name, "\0"),
               f.fix.replace(pod.name, "\0"))
        groups.setdefault(key, []).append((f, pod))
    for (_, _, _, owner, _, _), members in groups.items():
        first, pod = members[0]
        if len(members) == 1:
            out.append(first)
            continue
        out.append(replace(first, subject=owner,
                           message=f"{len(members)} pods of {owner}, e.g. {pod.key}: {first.message}",
                           evidence=(*first.evidence, *examples([p.key for _, p in members]))))
    return out


def _workload_of(state: ClusterState, pod: Pod) -> str | None:
    """``Deployment ns/name`` (through its ReplicaSet), ``StatefulSet ns/name``...: the object a user edits."""
    owner = pod.meta.owner
    if owner is None:
        return None
    if owner.kind == "ReplicaSet":
        rs = state.workloads.get(("ReplicaSet", f"{pod.namespace}/{owner.name}"))
        if rs is not None and rs.meta.owner is not None and rs.meta.owner.kind == "Deployment":
            return f"Deployment {pod.namespace}/{rs.meta.owner.name}"
    return f"{owner.kind} {pod.namespace}/{owner.name}"
