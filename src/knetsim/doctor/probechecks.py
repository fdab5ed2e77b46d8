"""Liveness and startup probes that fail for certain: the kubelet kills the container and restarts it for ever.

The prober (kubernetes/kubernetes pkg/kubelet/prober/worker.go) kills a container whose liveness probe fails
``failureThreshold`` times in a row, and one whose startup probe does (which also keeps its liveness and
readiness probes from running); the kubelet restarts it under the CrashLoopBackOff backoff, so the pod is never
lastingly Ready and no lasting endpoint. The offline build gives such pods that status
(``cluster/containerruns.py``); this names the probe, why it fails and a fix, tried on a copy of the cluster first
(``fixes.py``): the probe aimed at the one port the container listens on, at a path its app answers, or at the
scheme it speaks. A probe knetsim cannot judge (an httpGet path of an app it does not know) is said, as a note.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..cluster.containerruns import PROBE_FIELDS, ProbeFailure, probe_failure, restarts, unknown_port
from ..cluster.state import ClusterState
from ..model.listeners import LISTEN_ANNOTATION, pod_listens
from ..model.objects import Pod, parse_container
from ..model.programs import probe_status
from .checks import Finding, _owner_ref, _workload_object
from .fixes import Patch, verified


def _template_spec(obj: Any) -> Mapping[str, Any]:
    raw = obj.raw if obj is not None else {}
    return ((raw.get("spec") or {}).get("template") or {}).get("spec") or {}


def _repair(pod: Pod, index: int, raw: Mapping[str, Any], failure: ProbeFailure) -> tuple[str, Any] | None:
    """(the field under the container's probe, the value that makes it pass) when one change certainly does."""
    probe = raw.get(failure.field) or {}
    handler = probe.get(failure.action) or {}
    tcp = sorted({port for port, proto in pod_listens(pod) if proto == "TCP"})
    if failure.cause == "port":
        return ("port", tcp[0]) if len(tcp) == 1 else None
    if failure.cause == "scheme":
        return "scheme", "HTTP"
    if failure.cause == "status":
        port = handler.get("port")
        if isinstance(port, str) and not port.isdigit():
            port = next((p.get("containerPort") for p in raw.get("ports") or [] if p.get("name") == port), None)
        answered = probe_status(parse_container(raw), int(port), "/") if port is not None else None
        return ("path", "/") if answered is not None and 200 <= answered[0] < 400 else None
    return None


def _still_failing(namespace: str, owner: Any, pod_name: str, container: str, field: str) -> Any:
    """What the fixed cluster still says of the probe (or of the pods' readiness), None when it passes."""
    def check(fixed: ClusterState) -> str | None:
        if owner is not None:
            pods = [p for p in fixed.pods.values() if p.namespace == namespace and p.meta.owner is not None
                    and (getattr(_workload_object(fixed, p), "key", None), getattr(_workload_object(fixed, p),
                                                                                   "kind", None))
                    == (owner.key, owner.kind)]
        else:
            pods = [p for p in [fixed.pods.get(f"{namespace}/{pod_name}")] if p is not None]
        for pod in pods:
            for raw in (pod.raw.get("spec") or {}).get("containers") or []:
                if isinstance(raw, Mapping) and raw.get("name") == container:
                    failure = probe_failure(pod.raw, raw, field, set(pod_listens(pod)), True, kills=True)
                    if failure is not None:
                        return failure.message
            if not pod.ready and pod.node_name:
                return f"pod {pod.key} is still not Ready: {pod.not_ready_reason}"
        return None
    return check


def probe_restart_findings(state: ClusterState, pod: Pod, verify: bool = True) -> list[Finding]:
    """A liveness or startup probe of the pod that fails for certain, with a fix that makes it pass."""
    if not pod.node_name:
        return []
    out = []
    containers = [c for c in (pod.raw.get("spec") or {}).get("containers") or [] if isinstance(c, Mapping)]
    for restart in restarts(pod.raw, set(pod_listens(pod))):
        failure = restart.probe
        if failure is None:
            continue  # a command that exits: podruns' ContainerExits
        index, raw = next((i, c) for i, c in enumerate(containers) if c.get("name") == restart.container)
        probe = raw.get(failure.field) or {}
        threshold = probe.get("failureThreshold") if isinstance(probe.get("failureThreshold"), int) else 3
        gate = (" (until it succeeds, the liveness and readiness probes do not run and the container is not "
                "started)" if failure.field == "startupProbe" else "")
        killed = ("exits 0 on the stop signal: Completed" if restart.exit_code == 0
                  else "is killed: exit code 137")
        message = (f"{failure.message}: after {threshold} failures in a row the kubelet kills the container (it "
                   f"{killed}) and starts it again, for ever{gate}: STATUS CrashLoopBackOff, RESTARTS climbs, and the "
                   "pod is never Ready, so it is no endpoint of any Service")
        owner = _workload_object(state, pod)
        repair = _repair(pod, index, raw, failure)
        where = f"{failure.field}.{failure.action}"
        look = (f"make the probe ask what the container answers (kubectl describe {_owner_ref(state, pod)} shows "
                f"`Unhealthy  {failure.kind.capitalize()} probe failed` events), or fix the container so it does")
        patch = None
        fix = look
        if repair is not None:
            name, value = repair
            base = "/spec/template/spec/containers" if owner is not None else "/spec/containers"
            candidate = Patch(owner.kind if owner is not None else "Pod", pod.namespace,
                              owner.name if owner is not None else pod.name, "json",
                              [{"op": "add", "path": f"{base}/{index}/{failure.field}/{failure.action}/{name}",
                                "value": value}])
            left = verified(state, candidate, _still_failing(pod.namespace, owner, pod.name, restart.container,
                                                             failure.field)) if verify else None
            if left is None and owner is not None:
                patch, fix = candidate, candidate.command
            elif left is None:
                # A Pod's probes cannot be changed in place (only its images can): it is made again.
                fix = (f"re-create pod {pod.name} with {where}.{name}: {value} (a Pod's probes cannot be patched: "
                       f"kubectl delete pod {pod.name} -n {pod.namespace}, then apply the changed manifest)")
            else:
                fix = f"{look} (setting {where}.{name} to {value!r} would still leave: {left})"
        rest = ("error", "kubelet", f"Pod {pod.key}", message, fix,
                (f"{failure.field} of container {restart.container!r}: {_probe_text(probe, failure.action)}",), patch)
        # Each code written out (not looked up): the catalogue test reads the codes from the calls.
        out.append(Finding("StartupProbeFails", *rest) if failure.field == "startupProbe"
                   else Finding("LivenessProbeFails", *rest))
    return out


def _probe_text(probe: Mapping[str, Any], action: str) -> str:
    handler = probe.get(action) or {}
    if action == "httpGet":
        return (f"httpGet {str(handler.get('scheme') or 'HTTP').lower()}://:{handler.get('port')}"
                f"{handler.get('path') or '/'}")
    if action == "exec":
        return "exec " + " ".join(str(a) for a in handler.get("command") or [])
    return f"{action} port {handler.get('port')}"


def probe_caveats(state: ClusterState, pod: Pod) -> list[Finding]:
    """A liveness or startup probe knetsim cannot judge, taken as passing and said so: one on a port an image it
    does not know does not declare (where such a process listens is unknown), or an httpGet of an app whose answers
    it does not know (exec probes have ExecProbeNotJudged)."""
    out = []
    if not pod.node_name:
        return out
    listening = set(pod_listens(pod))
    for raw in (pod.raw.get("spec") or {}).get("containers") or []:
        if not isinstance(raw, Mapping):
            continue
        name = raw.get("name")
        for field, kind in PROBE_FIELDS[:2]:
            probe = raw.get(field)
            action = next((a for a in ("httpGet", "tcpSocket", "grpc") if isinstance(probe, Mapping)
                           and isinstance(probe.get(a), Mapping)), None)
            if action is None or probe_failure(pod.raw, raw, field, listening, True, kills=True) is not None:
                continue
            handler = probe[action]
            port: Any = handler.get("port")
            if isinstance(port, str) and not port.isdigit():
                port = next((p.get("containerPort") for p in raw.get("ports") or [] if p.get("name") == port), None)
            if port is None:
                continue
            path = str(handler.get("path") or "/")
            if unknown_port(pod.raw, raw, int(port), listening):
                message = (f"the {kind} probe of container {name!r} ({action}) targets port {port}, which its image "
                           f"{raw.get('image')!r} does not declare, and knetsim does not know where that image "
                           "listens: the probe is taken as passing (if nothing listens there, the kubelet restarts "
                           "the container for ever)")
                fix = (f"if the process listens on {port}, declare containerPort {port} (or annotate the pod "
                       f"{LISTEN_ANNOTATION}: \"{port}\"); else aim the probe at the port it listens on")
            elif action == "httpGet" and not probe_status(parse_container(raw), int(port), path):
                message = (f"the {kind} probe of container {name!r} asks GET {path} on port {port} of an app knetsim "
                           "does not know the answers of: it is taken as passing (if it fails, the kubelet restarts "
                           "the container for ever)")
                fix = (f"check it where it runs: kubectl exec {_owner_ref(state, pod)} -c {name} -- wget -qO- "
                       f"http://localhost:{port}{path} (or kubectl describe pod: `Unhealthy` events)")
            else:
                continue
            out.append(Finding("ProbeNotJudged", "info", "kubelet", f"Pod {pod.key}", message, fix))
            break
    return out


__all__ = ["probe_caveats", "probe_restart_findings"]
