"""What a pod's own process does, read from its spec: a container whose command runs to its end under
``restartPolicy: Always`` (it crash-loops), and the exec probes knetsim cannot judge offline.

Kubernetes' "Debug Running Pods" (kubernetes.io/docs/tasks/debug/debug-application/debug-running-pod/) lists a
pod that keeps restarting because its program ends: the kubelet restarts every container of a
``restartPolicy: Always`` pod when it exits, whatever its exit code (``Completed`` or ``Error``), under its
CrashLoopBackOff backoff, so the pod is Running but never lastingly Ready and is no lasting endpoint. The live
kubelet shows it by running the command (``kubelet/kubelet.py``); offline, knetsim reads the command: a
one-shot tool (``echo``, ``date``) or a ``sh -c`` script with nothing that waits (no loop, ``sleep``, ``tail
-f``, server...) on a shell-ish image. A shell-ish image without a command is left alone: knetsim keeps it
running as a client pod, live as offline.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..cluster.containerruns import restarts
from ..cluster.state import ClusterState
from ..cluster.workloadstatus import exec_probe_verdict
from ..model.objects import Pod
from .checks import Finding, _owner_ref


def container_exit_findings(state: ClusterState, pod: Pod) -> list[Finding]:
    """Containers whose command ends at once and which the kubelet restarts (restartPolicy Always, or OnFailure
    and a non-zero exit): the same judgement that gave the pod its CrashLoopBackOff status offline."""
    if pod.phase not in ("Running", ""):
        return []
    out = []
    for restart in restarts(pod.raw, set()):
        if restart.cause != "exits":
            continue
        name = restart.container
        said = restart.last_words.strip()
        last = f", its last words: {said!r}" if said else ""
        sleep_fix = "give sleep a duration (`sleep 3600`, `sleep infinity`); " if "sleep: invalid number" in said \
            else ""
        out.append(Finding(
            "ContainerExits", "error", "kubelet", f"Pod {pod.key}",
            f"container {name!r} {restart.why}{last}: with restartPolicy {pod.restart_policy} the kubelet restarts "
            "it again and again (RESTARTS climbs, STATUS CrashLoopBackOff), so the pod is never lastingly Ready",
            f"{sleep_fix}keep a process in the foreground: the server the container is for, or `sleep 3600` after a "
            "one-off task; run a task once as a Job or `kubectl run --restart=Never` (its last run's output: "
            f"`kubectl logs {_owner_ref(state, pod)} -c {name} --previous`)",
            (f"restartPolicy {pod.restart_policy}",)))
    return out


def exec_probe_caveats(state: ClusterState, pod: Pod) -> list[Finding]:
    """An exec readiness/liveness probe offline: its command runs in the container's files, which knetsim
    does not have, so the pod is taken as Ready; said once per container, never silently."""
    out = []
    for c in (pod.raw.get("spec") or {}).get("containers") or []:
        if not isinstance(c, Mapping):
            continue
        for field, kind in (("readinessProbe", "readiness"), ("livenessProbe", "liveness"),
                            ("startupProbe", "startup")):
            probe = c.get(field)
            if not isinstance(probe, Mapping) or not isinstance(probe.get("exec"), Mapping):
                continue
            mounts = [str(m.get("mountPath") or "") for m in c.get("volumeMounts") or []]
            if exec_probe_verdict(c, probe, mounts)[0] is not None:
                continue  # judged: a failing readiness probe is the pod's not-Ready reason
            command = " ".join(str(a) for a in probe["exec"].get("command") or [])
            out.append(Finding(
                "ExecProbeNotJudged", "info", "kubelet", f"Pod {pod.key}",
                f"the {kind} probe of container {c.get('name')!r} runs `{command}` in the container: knetsim "
                "cannot tell offline what it exits with, so the pod is taken as Ready (live, `knetsim up` runs it "
                "in the simulated shell)",
                f"check it where it runs: kubectl exec {_owner_ref(state, pod)} -c {c.get('name')} -- {command}; "
                "the pod's events show `Unhealthy` when it fails"))
            break
    return out
