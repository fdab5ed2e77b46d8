"""The doctor: the "Debug Services" checklist, run over the whole simulated cluster.

Each check looks at one layer and returns findings with the evidence and a concrete fix (a
command or a YAML fragment). Several checks confirm a static suspicion with a real trace
(an Ingress path that policy blocks, a client whose configured host does not resolve), so a
finding means the traffic actually fails, not that a pattern looks odd.
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ..cluster.build import ManifestError
from ..cluster.endpointslices import find_port
from ..cluster.explain import explain_endpoints
from ..cluster.state import ClusterState
from ..cluster.storage import NODE_CONFLICT, UNBOUND_IMMEDIATE
from ..cluster.workloads import max_pods
from ..model.fielderr import ErrorType, FieldError
from ..model.listeners import LISTEN_ANNOTATION, listeners_known, pod_listens
from ..model.objects import Pod, Service
from .fixes import Patch, verified

SEVERITIES = ("error", "warning", "info")
SYSTEM_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease", "ingress-nginx",
                               "envoy-gateway-system"})


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    severity: str  # error | warning | info
    layer: str  # api | dns | service | endpoints | dataplane | policy | listener | ingress | code | scheduler | storage
    subject: str  # "Service shop/web"
    message: str
    fix: str = ""
    evidence: tuple[str, ...] = field(default=())
    # The fix as the change kubectl applies (its command is ``fix``), tried on a copy of the cluster first.
    patch: Patch | None = None
    # Where the subject was written: ``app.yaml:12`` (findingsources.py); None for objects of no file.
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"code": self.code, "severity": self.severity, "layer": self.layer, "subject": self.subject,
               "source": self.source, "message": self.message, "evidence": list(self.evidence), "fix": self.fix}
        if self.patch is not None:
            out["patch"] = self.patch.to_dict()
        return out


# Findings about many objects show a few of them, never one line each.
EXAMPLES_SHOWN = 3


def examples(items: list[str], total: int | None = None) -> tuple[str, ...]:
    """The first few ``items`` and how many more there are."""
    total = len(items) if total is None else total
    shown = tuple(items[:EXAMPLES_SHOWN])
    return shown + ((f"... and {total - len(shown)} more",) if total > len(shown) else ())


# --- the API server said no ----------------------------------------------------------------


# What an unknown field costs when the object is stored without it (kubectl apply --validate=false,
# or fieldValidation=Ignore): the consequence of the field the user meant, by kind and path.
_LOST_FIELD = (
    ("Service", r"spec\.selector", "this Service would select no Pods: it gets no endpoints, and every connection "
                                  "to it is refused"),
    ("Service", r"spec\.ports\[\d+\]\.targetPort", "traffic would go to the port number itself (targetPort "
                                                   "defaults to port)"),
    ("Service", r"spec\.type", "it would be a ClusterIP Service, unreachable from outside the cluster"),
    ("Service", r"spec\.ports", "a Service without ports is refused by validation"),
    ("", r"spec\.template\.metadata\.labels", "its Pods would carry no labels: no Service or NetworkPolicy would "
                                              "select them"),
    ("", r"spec\.replicas", "it would run 1 replica"),
    ("", r".*containers\[\d+\]\.ports", "its containers would declare no ports: named targetPorts could not "
                                         "resolve"),
    ("NetworkPolicy", r"spec\.(ingress|egress)", "the policy would isolate its Pods and allow nothing in that "
                                                "direction"),
    ("NetworkPolicy", r"spec\.policyTypes", "the policy types would be defaulted from the rules present"),
    ("Ingress", r"spec\.ingressClassName", "the default IngressClass (if any) would serve it"),
    ("Ingress", r"spec\.rules", "only its default backend (if any) would serve"),
)


def lost_field_consequence(kind: str, path: str) -> str:
    for k, pattern, text in _LOST_FIELD:
        if (not k or k == kind) and re.fullmatch(pattern, path):
            return text
    return "the setting would simply be lost"


def _unknown_field_finding(error: ManifestError) -> Finding:
    kind = error.subject.split(" ", 1)[0]
    lines, fixes = [], []
    for unknown, nearest in error.unknown_fields:
        if nearest:
            lines.append(f'unknown field "{unknown}" (did you mean "{nearest}"?): '
                         f"without it, {lost_field_consequence(kind, nearest)}")
            fixes.append(f"rename {unknown} to {nearest}")
        else:
            lines.append(f'unknown field "{unknown}": {kind} has no such field')
            fixes.append(f"remove {unknown} (`kubectl explain {kind.lower()}.{unknown.rsplit('.', 1)[0]}` lists "
                         "the fields)")
    message = ("kubectl apply refuses this object (strict decoding); with --validate=false the API server would "
               "store it without the field. " + "; ".join(lines))
    return Finding("UnknownField", "error", "api", error.subject, message, "; ".join(fixes))


def admission_findings(errors: Iterable[ManifestError]) -> list[Finding]:
    out = []
    for error in errors:
        if error.unknown_fields:
            out.append(_unknown_field_finding(error))
            continue
        fix = ""
        detail = error.error
        if isinstance(detail, FieldError) and re.fullmatch(r"spec\.ports\[\d+\]\.name", detail.path) and \
                detail.type == ErrorType.REQUIRED:
            fix = ("a Service with more than one port needs a name on every port (so Ingresses and "
                   "EndpointSlices can refer to them): add `name: http` (or similar) to each entry of spec.ports")
        elif isinstance(detail, FieldError) and detail.path.endswith("pathType"):
            fix = "set pathType: Prefix (or Exact); `kubectl create ingress --rule=host/path*=svc:port` gives Prefix"
        # Where the object was written is the finding's source (findingsources.py), not evidence.
        out.append(Finding("RejectedByAPIServer", "error", "api", error.subject,
                           f"the API server would reject this object: {detail}", fix))
    return out


# --- Services, endpoints, ports ---------------------------------------------------------


def _selector_patch(state: ClusterState, svc: Service) -> Patch | None:
    """The selector with each label no pod has replaced by the closest one pods do have: a merge patch that
    sets the stale keys to null (a strategic merge would keep them, and the Service would still select nothing)."""
    assert svc.selector is not None
    hints = explain_endpoints(state, svc.namespace, svc.name).hints
    if not hints:
        return None
    selector = dict(svc.selector)
    for hint in hints:
        old_key = hint.wanted.partition("=")[0]
        key, _, value = hint.nearest.partition("=")
        selector.pop(old_key, None)
        selector[key] = value
    body: dict[str, Any] = {k: None for k in sorted(svc.selector) if k not in selector}
    body.update(sorted(selector.items()))
    return Patch("Service", svc.namespace, svc.name, "merge", {"spec": {"selector": body}})


def _still_broken(svc: Service, codes: tuple[str, ...], other_causes: tuple[str, ...] = ()) -> Any:
    """What a fix of ``svc`` leaves broken on a rebuilt cluster: one of ``codes``, or an error of the Service it
    brings (a selector fix that finds pods which do not listen on the targetPort); errors of ``other_causes``
    are other findings' business."""
    def check(fixed: ClusterState) -> str | None:
        again = fixed.services.get(svc.key)
        if again is None:
            return f"Service {svc.key} is gone"
        found = service_findings(fixed, again, verify=False)
        left = [f for f in found if f.code in codes or (f.severity == "error" and f.code not in other_causes)]
        return f"{left[0].code}: {left[0].message}" if left else None
    return check


def _offer(finding: Finding, state: ClusterState, check: Any, instead: str, verify: bool) -> Finding:
    """``finding`` with its patch as the fix when the patch clears it on a copy of the cluster; else no patch and
    what to look at instead, with what the patch would have left broken as evidence."""
    if finding.patch is None or not verify:
        return finding
    left = verified(state, finding.patch, check)
    if left is None:
        return replace(finding, fix=finding.patch.command)
    return replace(finding, patch=None, fix=instead,
                   evidence=(*finding.evidence, f"not offered: {finding.patch.command} leaves {left}"))


def service_findings(state: ClusterState, svc: Service, *, verify: bool = True) -> list[Finding]:
    """``verify``: try each patch on a copy of the cluster before offering it (off when that copy is checked)."""
    subject = f"Service {svc.key}"
    if svc.type == "ExternalName":
        return []
    if svc.selector is None:
        if (svc.raw.get("spec") or {}).get("selector") == {} and not state.slices_for(svc):
            # `{}` is stored as no selector: no managed EndpointSlices, and none written by hand.
            return [Finding("EmptySelector", "warning", "endpoints", subject,
                            "spec.selector is empty, which the API server stores as no selector: the EndpointSlice "
                            "controller manages nothing for this Service and connections go nowhere",
                            "set spec.selector to the labels of the pods that should serve it")]
        return []
    out: list[Finding] = []
    why = explain_endpoints(state, svc.namespace, svc.name)
    if not why.pods:
        evidence = tuple(f"selector wants {h.wanted}; closest existing label {h.nearest} ({h.how})" for h in why.hints)
        look = ("make spec.selector match the labels of the pods that serve this Service and listen on its "
                "targetPort (kubectl get pods --show-labels)")
        typo = any("character" in h.how for h in why.hints)
        message = (f"the selector {why.selector} matches no pod in namespace {svc.namespace}: the EndpointSlice "
                   "stays empty and connections are refused" + (" — a typo in a label?" if typo else ""))
        finding = Finding("SelectorMatchesNothing", "error", "endpoints", subject, message, look, evidence,
                          _selector_patch(state, svc))
        out.append(_offer(finding, state, _still_broken(svc, ("SelectorMatchesNothing",)), look, verify))
        return out
    pods = [state.pods[f"{svc.namespace}/{p.pod}"] for p in why.pods]
    out.extend(_readiness_findings(state, svc, why.pods, pods, verify))
    out.extend(_port_findings(state, svc, pods, verify))
    return out


def _readiness_findings(state: ClusterState, svc: Service, selected: list[Any], pods: list[Pod],
                        verify: bool = True) -> list[Finding]:
    """Selected pods that are not endpoints, grouped by cause: pods no node takes (the scheduler's
    FailedScheduling), and pods that run but are not Ready."""
    subject = f"Service {svc.key}"
    out = []
    by_name = {p.name: p for p in pods}
    unscheduled = [e for e in selected if not by_name[e.pod].node_name]
    not_ready = [e for e in selected if not e.ready and by_name[e.pod].node_name]
    if unscheduled:
        severity = "error" if len(unscheduled) == len(selected) else "warning"
        first = by_name[unscheduled[0].pod]
        reason = _scheduling_message(first)
        full = "Too many pods" in reason
        owner = _owner_ref(state, first)
        patch = None
        if full:
            capacity = sum(_capacity(n) for n in state.nodes.values())
            fix = (f"the nodes are full (the kubelet's maxPods: {capacity} pods in all on {len(state.nodes)} "
                   f"node(s)): lower the replicas (kubectl scale {owner.split(' ')[0]} --replicas=N "
                   f"{' '.join(owner.split(' ')[1:])}), add nodes, or raise maxPods (nodes / maxPods in the "
                   "cluster config)")
            patch = _scale_patch(state, [by_name[e.pod] for e in selected], [by_name[e.pod] for e in unscheduled])
        else:
            fix = unscheduled_fix(reason, owner)
        finding = Finding(
            "PodsUnschedulable", severity, "scheduler", subject,
            f"{len(unscheduled)} of {len(selected)} selected pod(s) are Pending: no node takes them, so they have no "
            f"IP and are no endpoint. The scheduler says: {reason}", fix,
            examples([e.pod for e in unscheduled]), patch)
        if patch is not None:
            # Offered with the other ways out: fewer replicas is one choice, more room another.
            checked = _offer(finding, state, _still_broken(svc, ("PodsUnschedulable",), (
                "PodsNotReady", "NamedPortMissing", "ProtocolMismatch", "TargetPortNotListening")), fix, verify)
            finding = replace(checked, fix=f"{checked.fix}\n(or add nodes, or raise maxPods: nodes / maxPods in "
                                           "the cluster config)") if checked.patch is not None else checked
        out.append(finding)
    if not_ready:
        severity = "error" if len(not_ready) == len(selected) else "warning"
        reasons: dict[str, list[str]] = {}
        for e in not_ready:
            reasons.setdefault(e.reason or "not Ready", []).append(e.pod)
        evidence = tuple(f"{len(names)} pod(s): {reason} (e.g. {', '.join(names[:EXAMPLES_SHOWN])}"
                         + (f" and {len(names) - EXAMPLES_SHOWN} more)" if len(names) > EXAMPLES_SHOWN else ")")
                         for reason, names in sorted(reasons.items(), key=lambda kv: (-len(kv[1]), kv[0])))
        if len(not_ready) <= EXAMPLES_SHOWN:
            evidence = tuple(f"{e.pod}: {e.reason or 'not Ready'}" for e in not_ready)
        # A container restarted for ever (CrashLoopBackOff) is unready for a reason of its own, named by the pod's
        # finding (ContainerExits, LivenessProbeFails, StartupProbeFails); the rest of these pods wait for an image.
        waiting = {r for e in not_ready for r in by_name[e.pod].waiting_reasons().values()}
        crashing, configless = "CrashLoopBackOff" in waiting, "CreateContainerConfigError" in waiting
        # Containers still waiting for their pod's init containers (STATUS Init:N/M, Init:Error).
        initializing = not crashing and not configless and "PodInitializing" in waiting
        pulling = not crashing and not configless and not initializing and \
            any("containers with unready status" in r for r in reasons)
        fix = ("the pods' containers are restarted for ever (STATUS CrashLoopBackOff): fix what the pod's "
               "ContainerExits, LivenessProbeFails or StartupProbeFails finding names" if crashing else
               "the pods' init containers never finish (STATUS Init:N/M or Init:Error), so their containers never "
               "start: fix what the pod's InitContainerWaitsForName, InitContainersDeadlock or ContainerExits "
               "finding names" if initializing else
               "the pods' containers cannot be created (STATUS CreateContainerConfigError): fix what the pod's "
               "ContainerConfigError finding names" if configless else
               "make the image pullable (the ImagePullError finding of the pod names it)" if pulling else
               "fix the readiness probe or the container so it becomes Ready (kubectl describe pod shows the "
               f"probe); if the container listens on a port knetsim does not know, annotate the pod with "
               f"{LISTEN_ANNOTATION}")
        finding = Finding("PodsNotReady", severity, "endpoints", subject,
                          f"{len(not_ready)} of {len(selected)} selected pod(s) are not Ready: not-ready pods are "
                          "left out of the Service's endpoints", fix, evidence,
                          None if pulling or crashing or configless or initializing else
                          _probe_patch(state, by_name[not_ready[0].pod]))
        out.append(_offer(finding, state, _still_broken(svc, ("PodsNotReady",), (
            "PodsUnschedulable", "NamedPortMissing", "ProtocolMismatch", "TargetPortNotListening")), fix, verify))
    return out


def _probe_patch(state: ClusterState, pod: Pod) -> Patch | None:
    """A readiness probe aimed at a port the container does not listen on, when it listens on one TCP port only:
    a JSON patch of the workload's template that aims the probe there."""
    owner = _workload_object(state, pod)
    if owner is None:
        return None
    tcp = sorted({port for port, proto in pod_listens(pod) if proto == "TCP"})
    if len(tcp) != 1:
        return None
    containers = (((owner.raw.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    for index, container in enumerate(containers):
        probe = container.get("readinessProbe") or {}
        for action in ("httpGet", "tcpSocket", "grpc"):
            port = (probe.get(action) or {}).get("port")
            if port is None:
                continue
            if isinstance(port, str) and not port.isdigit():
                port = next((p.get("containerPort") for p in container.get("ports") or [] if p.get("name") == port),
                            None)
            if port is not None and int(port) != tcp[0]:
                return Patch(owner.kind, owner.namespace, owner.name, "json", [
                    {"op": "replace", "path": f"/spec/template/spec/containers/{index}/readinessProbe/{action}/port",
                     "value": tcp[0]}])
    return None


def _scale_patch(state: ClusterState, pods: list[Pod], unscheduled: list[Pod]) -> Patch | None:
    """The replicas that fit, when the pods left Pending all belong to one workload: `kubectl scale` to them."""
    owners = {_workload_key(state, p) for p in unscheduled}
    if len(owners) != 1 or None in owners:
        return None
    owner = _workload_object(state, unscheduled[0])
    if owner is None or owner.kind not in ("Deployment", "StatefulSet", "ReplicaSet"):
        return None
    placed = sum(1 for p in pods if p.node_name and _workload_key(state, p) == _workload_key(state, unscheduled[0]))
    if placed < 1:
        return None
    return Patch(owner.kind, owner.namespace, owner.name, "merge", {"spec": {"replicas": placed}},
                 shown=f"kubectl -n {owner.namespace} scale {owner.kind.lower()} {owner.name} --replicas={placed}")


def _workload_key(state: ClusterState, pod: Pod) -> str | None:
    owner = _workload_object(state, pod)
    return f"{owner.kind} {owner.key}" if owner is not None else None


def unscheduled_fix(reason: str, owner: str) -> str:
    """What lets a node take pods the scheduler refused for ``reason`` (its FailedScheduling message), besides
    the full nodes (which the caller answers with a checked scale)."""
    if "Insufficient cpu" in reason:
        return ("the pods request more CPU than a node has (kubectl describe nodes: Allocatable cpu): lower "
                f"resources.requests.cpu (kubectl set resources {owner} --requests=cpu=100m), or add bigger "
                "nodes (nodes[].cpu in the cluster config)")
    claim = re.search(r'persistentvolumeclaim "([^"]+)" (not found|is being deleted)', reason)
    if claim is not None and claim.group(2) == "not found":
        return (f"create the PersistentVolumeClaim {claim.group(1)} the pods mount, in their namespace (kubectl get "
                "pvc), or make the pods' volumes[].persistentVolumeClaim.claimName name a claim that exists")
    if claim is not None:
        return (f"the PersistentVolumeClaim {claim.group(1)} is being deleted (it waits for the pods using it to go: "
                "finalizer kubernetes.io/pvc-protection): give the pods a claim that stays")
    if UNBOUND_IMMEDIATE in reason:
        return ("the pods' PersistentVolumeClaims are not bound and will not be (kubectl describe pvc shows why: a "
                "StorageClass that does not exist, or no PersistentVolume that fits): fix the claim, as its "
                "StorageClassNotFound finding says where there is one")
    if NODE_CONFLICT in reason:
        return ("the pods' volumes live on nodes the pods cannot run on (kubectl get pv -o yaml: spec.nodeAffinity; "
                "a local-path volume stays on the node it was made on): let the pods run on that node (nodeSelector, "
                "tolerations), or give them a new claim")
    if "didn't have free ports for the requested pod ports" in reason:
        # The scheduler's NodePorts filter: one pod per node for each hostIP/protocol/hostPort.
        return ("another pod on the node already holds the hostPort (one pod per node may publish a host address, "
                "protocol and port: kubectl get pods -A -o wide, and each pod's ports[].hostPort): drop hostPort "
                "(a Service reaches the pods without it), give the pods another hostPort or hostIP, or let them "
                "spread over nodes (nodeSelector, more nodes)")
    return ("let a node take the pods: their nodeSelector, node affinity and tolerations must match a node "
            "(kubectl get nodes --show-labels; kubectl describe node shows its taints)")


def unscheduled_pod_findings(state: ClusterState, pod: Pod, selected_by_service: bool) -> list[Finding]:
    """A pod no node takes that no Service selects (a Service's own check names those it selects, with what they
    cost it): the scheduler's words and the way out, for a pod that never runs at all."""
    if pod.node_name or selected_by_service or pod.phase in ("Succeeded", "Failed"):
        return []
    reason = _scheduling_message(pod)
    return [Finding("PodsUnschedulable", "warning", "scheduler", f"Pod {pod.key}",
                    f"the pod is Pending: no node takes it, so it never runs. The scheduler says: {reason}",
                    unscheduled_fix(reason, _owner_ref(state, pod)))]


def _scheduling_message(pod: Pod) -> str:
    why = pod.unschedulable()
    return "the pod has no node" if why is None else why or "Unschedulable"


def _capacity(node: Any) -> int:
    return max_pods(node)


def image_findings(state: ClusterState, pod: Pod) -> list[Finding]:
    """A container that waits for an image the nodes cannot pull (the registry model of
    ``knetsim.cluster.images``): the pod never runs, so it never becomes an endpoint."""
    from ..cluster.images import pull_error

    out = []
    statuses = {cs.get("name"): cs for cs in (pod.raw.get("status") or {}).get("containerStatuses") or []}
    for c in (pod.raw.get("spec") or {}).get("containers") or []:
        waiting = ((statuses.get(c.get("name")) or {}).get("state") or {}).get("waiting") or {}
        reason = waiting.get("reason")
        if reason not in ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"):
            continue
        image = str(c.get("image") or "")
        err = pull_error(image, state.config, str(c.get("imagePullPolicy") or "IfNotPresent"))
        cause = err.cause if err is not None else f"the kubelet reports {reason}"
        suggestion = re.search(r"did you mean '([^']+)'", cause)
        target = _owner_ref(state, pod)
        if suggestion:
            fixed = (image.rsplit(":", 1)[0] + ":" + suggestion.group(1) if "has no tag" in cause
                     else image.replace(image.split(":", 1)[0].rsplit("/", 1)[-1], suggestion.group(1), 1))
            fix = f"kubectl set image {target} {c.get('name')}={fixed}"
        else:
            fix = (f"use an image the nodes can pull (kubectl set image {target} {c.get('name')}=IMAGE:TAG); a "
                   "private image needs imagePullSecrets, a local one `kind load docker-image` (images.preloaded "
                   "in the cluster config)")
        out.append(Finding("ImagePullError", "error", "kubelet", f"Pod {pod.key}",
                           f"container {c.get('name')!r} cannot start: {reason}: {cause}", fix,
                           (str(waiting.get("message") or ""),)))
    return out


def _owner_ref(state: ClusterState, pod: Pod) -> str:
    owner = pod.meta.owner
    if owner is not None and owner.kind == "ReplicaSet":
        rs = state.workloads.get(("ReplicaSet", f"{pod.namespace}/{owner.name}"))
        if rs is not None and rs.meta.owner is not None:
            return f"deployment/{rs.meta.owner.name} -n {pod.namespace}"
    if owner is not None:
        return f"{owner.kind.lower()}/{owner.name} -n {pod.namespace}"
    return f"pod/{pod.name} -n {pod.namespace}"


def _port_findings(state: ClusterState, svc: Service, pods: list[Pod], verify: bool = True) -> list[Finding]:
    out = []
    subject = f"Service {svc.key}"
    # Only pods with a node run a process; a Pending pod is the scheduler's finding, not a listener's.
    pods = [p for p in pods if p.node_name]
    for i, sp in enumerate(svc.ports):
        where = f"spec.ports[{i}]" + (f" ({sp.name})" if sp.name else "")
        missing = [p for p in pods if find_port(p, sp) is None]
        if missing and isinstance(sp.target_port, str) and not sp.target_port.isdigit():
            declared = sorted({f"{cp.name}={cp.container_port}/{cp.protocol}" for p in missing for c in p.containers
                               for cp in c.ports if cp.name})
            # The one port name every pod declares with this protocol: the targetPort likely meant.
            shared = set.intersection(*({cp.name for c in p.containers for cp in c.ports
                                         if cp.name and cp.protocol == sp.protocol} for p in pods))
            look = (f"name the container port {sp.target_port!r} in the pod template, or set targetPort to one of: "
                    f"{', '.join(declared) or 'the port number the container listens on'}")
            finding = Finding(
                "NamedPortMissing", "error" if len(missing) == len(pods) else "warning", "endpoints", subject,
                f"{where}.targetPort {sp.target_port!r} is not a {sp.protocol} containerPort name on "
                f"{len(missing)} of {len(pods)} pod(s); those pods get no endpoint port for it",
                look, examples([p.key for p in missing]),
                Patch("Service", svc.namespace, svc.name, "json",
                      [{"op": "replace", "path": f"/spec/ports/{i}/targetPort", "value": next(iter(shared))}])
                if len(shared) == 1 else None)
            out.append(_offer(finding, state, _still_broken(svc, ("NamedPortMissing",), (
                "PodsNotReady", "PodsUnschedulable", "ProtocolMismatch")), look, verify))
        deaf, wrong_protocol = [], []
        listening: dict[str, set[tuple[int, str]]] = {}
        for pod in pods:
            number = find_port(pod, sp)
            if number is None:
                continue
            listens = listening[pod.key] = set(pod_listens(pod))
            if (number, sp.protocol) in listens:
                continue
            if any(port == number for port, _ in listens):
                wrong_protocol.append((pod, number))
            else:
                deaf.append((pod, number, sorted(listens)))
        if wrong_protocol:
            pod, number = wrong_protocol[0]
            other = sorted({proto for port, proto in listening[pod.key] if port == number})
            out.append(Finding(
                "ProtocolMismatch", "error", "listener", subject,
                f"{where} uses {sp.protocol}, but {pod.key} listens on {number} with {'/'.join(other)}",
                f"set {where}.protocol: {other[0]}", examples([p.key for p, _ in wrong_protocol])))
        if deaf:
            # The one port every deaf pod listens on with this protocol, if there is exactly one.
            common = set.intersection(*({port for port, proto in ls if proto == sp.protocol} for _, _, ls in deaf))
            pod, number, listens = deaf[0]
            ports = sorted({port for port, proto in listens if proto == sp.protocol})
            look = ("nothing the pods run listens on a single " + sp.protocol + " port they share"
                    + (f" (the first listens on {', '.join(map(str, ports))})" if ports else "")
                    + ": look at the container's command and args (what it serves on), or the Service's targetPort")
            patch = None
            if len(common) == 1:
                patch = Patch("Service", svc.namespace, svc.name, "json",
                              [{"op": "replace", "path": f"/spec/ports/{i}/targetPort", "value": next(iter(common))}])
            evidence = [f"{p.key} listens on {', '.join(f'{a}/{b}' for a, b in ls) or 'nothing'}"
                        for p, _, ls in deaf[:EXAMPLES_SHOWN]]
            # No evidence at all: images knetsim does not know that declare no port of this protocol (a
            # containerPort is optional). That nothing listens is then no finding of fact, so not an error.
            unknown = all(not listeners_known(p) and not any(proto == sp.protocol for _, proto in ls)
                          for p, _, ls in deaf)
            severity = "warning" if unknown else "error" if len(deaf) == len(pods) else "warning"
            said = ("knetsim does not know the image and the pods declare no containerPort: if nothing listens "
                    "there, connections are refused" if unknown else "connections are refused")
            finding = Finding(
                "TargetPortNotListening", severity, "listener", subject,
                f"{where} sends to port {number}/{sp.protocol} (targetPort {sp.target_port}), where nothing in "
                f"{len(deaf)} of {len(pods)} pod(s) is known to listen: {said}" if unknown else
                f"{where} sends to port {number}/{sp.protocol} (targetPort {sp.target_port}), where nothing in "
                f"{len(deaf)} of {len(pods)} pod(s) listens: {said}",
                look, examples(evidence, len(deaf)), patch)
            out.append(_offer(finding, state, _still_broken(svc, ("TargetPortNotListening",), (
                "PodsNotReady", "PodsUnschedulable", "NamedPortMissing", "ProtocolMismatch")), look, verify))
    return out


# --- DNS names that point at the wrong namespace ------------------------------------------

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
# A host name at the start of a value or after "://", "@", "=" or a space, with an optional port.
_HOST = re.compile(r"(?:^|[/@=\s])(" + _LABEL + r"(\." + _LABEL + r")*)(?::(\d+))?(?=$|[/\s?;,'\"])")


def referenced_hosts(pod: Pod) -> list[tuple[str, int | None, str]]:
    """Host names a pod is configured to talk to: env values, args and commands that look like hosts/URLs."""
    out = []
    for container in pod.containers:
        texts = [(f"env {k}", v) for k, v in sorted(container.env.items())]
        texts += [("args", a) for a in container.args] + [("command", c) for c in container.command]
        for where, text in texts:
            for match in _HOST.finditer(text):
                host, port = match.group(1), match.group(5)
                if host.replace(".", "").isdigit() or len(host) < 2:
                    continue
                out.append((host, int(port) if port else None, f"container {container.name} {where}={text!r}"))
    return out


# (namespace, dnsPolicy, dnsConfig, hostNetwork, name) → did it resolve, per state: the pods of one workload ask
# the same question with the same resolv.conf, and 100,000 replicas must not ask it 100,000 times.
_RESOLVED: weakref.WeakKeyDictionary[ClusterState, dict[tuple[Any, ...], Any]] = weakref.WeakKeyDictionary()


def resolution_of(state: ClusterState, pod: Pod, name: str) -> Any:
    """``dns.resolve`` of ``name`` from ``pod``, shared by the pods whose resolv.conf is the same."""
    from ..dns import resolve

    key = (pod.namespace, pod.dns_policy, json.dumps(pod.dns_config, sort_keys=True, default=str), pod.host_network,
           name)
    cache = _RESOLVED.setdefault(state, {})
    if key not in cache:
        cache[key] = resolve(state, pod, name)
    return cache[key]


def dns_findings(state: ClusterState, pod: Pod, *, verify: bool = True) -> list[Finding]:

    out: list[Finding] = []
    hosts = referenced_hosts(pod)
    if not hosts:
        return out  # most pods name no host: no index of every Service for them
    services_by_name: dict[str, list[Service]] = {}
    for svc in state.services.values():
        services_by_name.setdefault(svc.name, []).append(svc)
    for host, _port, where in hosts:
        first, *rest = host.split(".")
        candidates = [s for s in services_by_name.get(first, []) if s.namespace != pod.namespace]
        if not candidates:
            continue
        if rest and rest[0] in state.namespaces:
            continue  # already qualified with a namespace
        if f"{pod.namespace}/{first}" in state.services:
            continue
        resolution = resolution_of(state, pod, host)
        if resolution.ok:
            continue
        target = candidates[0]
        fqdn = f"{first}.{target.namespace}.svc.{state.config.cluster_domain}"
        look = f"use {first}.{target.namespace} or {fqdn}"
        finding = Finding(
            "ShortNameOtherNamespace", "error", "dns", f"Pod {pod.key}",
            f"{host!r} is resolved in the pod's own namespace ({pod.namespace}) and does not exist there "
            f"({resolution.outcome}); the Service {target.key} lives in namespace {target.namespace}",
            look, (where,), _host_patch(state, pod, where, host, f"{first}.{target.namespace}"))
        if verify and finding.patch is not None:
            def fixed_dns(fixed: ClusterState, host: str = host) -> str | None:
                again = [f for p in fixed.pods.values() if p.namespace == pod.namespace
                         for f in dns_findings(fixed, p, verify=False) if host in f.message]
                return f"{again[0].code}: {again[0].message}" if again else None
            finding = _offer(finding, state, fixed_dns, look, verify)
        elif finding.patch is not None:
            finding = replace(finding, fix=finding.patch.command)
        out.append(finding)
    return out


_WHERE = re.compile(r"container (\S+) (env (\S+)|args|command)=")


def _host_patch(state: ClusterState, pod: Pod, where: str, host: str, new_host: str) -> Patch | None:
    """A JSON patch of the pod's workload template that writes ``new_host`` where ``host`` was configured (a
    pod's own spec cannot be changed: a bare pod is re-created, which no patch does)."""
    match = _WHERE.match(where)
    owner = _workload_object(state, pod)
    if match is None or owner is None:
        return None
    containers = (((owner.raw.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    index = next((i for i, c in enumerate(containers) if c.get("name") == match.group(1)), None)
    if index is None:
        return None
    container = containers[index]
    base = f"/spec/template/spec/containers/{index}"
    pattern = re.compile(r"(?<![-a-z0-9.])" + re.escape(host) + r"(?![-a-z0-9])")
    if match.group(3):
        env = container.get("env") or []
        at = next((i for i, e in enumerate(env) if e.get("name") == match.group(3) and "value" in e), None)
        if at is None:
            return None
        path, text = f"{base}/env/{at}/value", str(env[at]["value"])
    else:
        items = [str(x) for x in container.get(match.group(2)) or []]
        at = next((i for i, x in enumerate(items) if pattern.search(x)), None)
        if at is None:
            return None
        path, text = f"{base}/{match.group(2)}/{at}", items[at]
    return Patch(owner.kind, owner.namespace, owner.name, "json",
                 [{"op": "replace", "path": path, "value": pattern.sub(new_host, text)}])


def _workload_object(state: ClusterState, pod: Pod) -> Any:
    """The object whose template made ``pod`` (a Deployment through its ReplicaSet), if it is the user's."""
    owner = pod.meta.owner
    if owner is None:
        return None
    obj = state.workloads.get((owner.kind, f"{pod.namespace}/{owner.name}"))
    if obj is not None and owner.kind == "ReplicaSet" and obj.meta.owner is not None:
        obj = state.workloads.get((obj.meta.owner.kind, f"{pod.namespace}/{obj.meta.owner.name}"))
    if obj is None or obj.kind not in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"):
        return None
    return obj


# --- the data plane ----------------------------------------------------------------------------


def dataplane_findings(state: ClusterState) -> list[Finding]:
    from ..dataplane import ebpf_bootstrap_finding

    found = ebpf_bootstrap_finding(state.config)
    if found is None:
        return []
    return [Finding(found.code, found.severity, found.layer, found.subject, found.message, found.fix)]
