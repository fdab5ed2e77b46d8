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

import re
from collections.abc import Mapping
from typing import Any

from ..cluster.state import ClusterState
from ..cluster.workloadstatus import exec_probe_verdict
from ..model.objects import Pod
from ..model.programs import image_repository
from .checks import Finding, _owner_ref

# Images whose shell and tools are busybox's or a distribution's: their commands are what the pod says.
SHELL_IMAGES = frozenset({"busybox", "alpine", "ubuntu", "debian", "fedora", "centos"})
SHELLS = frozenset({"sh", "bash", "ash", "zsh", "dash"})
ONE_SHOT = frozenset({"echo", "true", "false", "date", "env", "printenv", "hostname", "uname", "id", "whoami",
                      "pwd", "ls", "cat", "nslookup", "wget", "curl", "dig", "host"})
# Anything that can keep a script going: knetsim does not try to tell how long it lasts.
WAITS = re.compile(r"\b(while|until|for|sleep|tail|httpd|nc|ncat|socat|wait|read|exec|trap|top|watch|yes|crond|"
                   r"nginx|python\d?|node|java|ruby|perl|php|inotifyd|tini|dumb-init|agnhost|mysqld|redis-server)\b")
EXIT = re.compile(r"\bexit\s+(\d+)")


def exit_of(container: Mapping[str, Any]) -> tuple[str, int | None] | None:
    """(what runs, exit code when knetsim can tell it) for a container whose process ends at once, or None
    when it keeps running or knetsim cannot tell."""
    if container.get("stdin") or container.get("tty"):
        return None  # `kubectl run -it`: the shell waits for its input
    command = [str(a) for a in container.get("command") or []]
    args = [str(a) for a in container.get("args") or []]
    image = image_repository(str(container.get("image") or ""))
    argv = command + args if command else args
    if not argv:
        # busybox's own `sh` with no stdin exits at once on a real node, but knetsim (live too: kubelet.runnable)
        # keeps such a pod running as the client the examples use it as: not judged here, so both agree.
        return None
    if image not in SHELL_IMAGES:
        return None  # its entrypoint may be a server that takes these as arguments
    program = argv[0].rsplit("/", 1)[-1]
    if program in SHELLS:
        if len(argv) < 3 or argv[1] != "-c":
            return None
        script = argv[2]
        if WAITS.search(script):
            return None
        codes = EXIT.findall(script)
        return f"`sh -c {script!r}`", int(codes[-1]) if codes else None
    if program in ONE_SHOT and program not in ("wget", "curl", "nslookup", "dig", "host", "cat", "ls"):
        return f"`{' '.join(argv)}`", 1 if program == "false" else 0
    return None


def _restarted(state: ClusterState, pod: Pod) -> bool:
    """Does the kubelet restart the pod's containers when they exit? (Job pods and restartPolicy Never /
    OnFailure-with-success are finished, not crashing.)"""
    owner = pod.meta.owner
    return pod.restart_policy == "Always" and not (owner is not None and owner.kind == "Job")


def container_exit_findings(state: ClusterState, pod: Pod) -> list[Finding]:
    if not _restarted(state, pod) or pod.phase not in ("Running", ""):
        return []
    out = []
    for c in (pod.raw.get("spec") or {}).get("containers") or []:
        if not isinstance(c, Mapping):
            continue
        ends = exit_of(c)
        if ends is None:
            continue
        what, code = ends
        how = ("exits with code 0 (Completed)" if code == 0 else f"exits with code {code} (Error)" if code
               else "runs to its end and exits")
        name = str(c.get("name"))
        out.append(Finding(
            "ContainerExits", "error", "kubelet", f"Pod {pod.key}",
            f"container {name!r} runs {what}, which {how}: with restartPolicy Always the kubelet restarts it "
            "again and again (RESTARTS climbs, STATUS CrashLoopBackOff), so the pod is never lastingly Ready",
            "keep a process in the foreground: the server the container is for, or `sleep 3600` after a one-off "
            f"task; run a task once as a Job or `kubectl run --restart=Never` (its last run's output: `kubectl "
            f"logs {_owner_ref(state, pod)} -c {name} --previous`)",
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
