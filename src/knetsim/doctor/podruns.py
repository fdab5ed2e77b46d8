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

import difflib
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..cluster.containerruns import env_refs, init_crash, init_deadlock, init_failure, restarts
from ..cluster.state import ClusterState
from ..cluster.workloadstatus import exec_probe_verdict
from ..model.objects import Pod
from .checks import Finding, _owner_ref, _workload_object
from .fixes import Patch, verified


def _last_words(output: str) -> str:
    """``, its last words: '...'`` of a container's last output, or nothing when it said nothing."""
    said = output.strip()
    return f", its last words: {said!r}" if said else ""


def container_exit_findings(state: ClusterState, pod: Pod) -> list[Finding]:
    """Containers whose command ends at once and which the kubelet restarts (restartPolicy Always, or OnFailure
    and a non-zero exit): the same judgement that gave the pod its CrashLoopBackOff status offline."""
    crashing_init = init_crash(pod.raw)
    if crashing_init is not None and pod.node_name:
        restart = crashing_init[1]
        last = _last_words(restart.last_words)
        return [Finding(
            "ContainerExits", "error", "kubelet", f"Pod {pod.key}",
            f"init container {restart.container!r} {restart.why}{last}: the kubelet runs it again and again (STATUS "
            "Init:CrashLoopBackOff) and the pod's containers never start, so it is never Ready",
            "make the init container's command succeed (what it waits for or sets up must be there); its last "
            f"run's output: `kubectl logs {_owner_ref(state, pod)} -c {restart.container} --previous`",
            (f"restartPolicy {pod.restart_policy}",))]
    deadlock = init_deadlock(pod.raw)
    if deadlock is not None and pod.node_name:
        inits = [c for c in (pod.raw.get("spec") or {}).get("initContainers") or []
                 if isinstance(c, Mapping) and c.get("restartPolicy") != "Always"]
        writer = f"init container {deadlock.writer!r} writes, and it runs after" if deadlock.writer_is_init else \
            f"the app container {deadlock.writer!r} writes, and it starts only once every init container is through"
        return [Finding(
            "InitContainersDeadlock", "error", "kubelet", f"Pod {pod.key}",
            f"init container {deadlock.waiter!r} ({deadlock.index + 1} of {len(inits)}) waits until "
            f"{deadlock.path} exists, which only {writer}: init containers run one at a time, each to its "
            f"end, so it waits for ever (STATUS Init:{deadlock.index}/{len(inits)}) and the pod is never Ready",
            (f"write {deadlock.path} in an init container listed before {deadlock.waiter!r} (move "
             f"{deadlock.writer!r} up), or drop the wait; initContainers cannot be changed on a running pod: "
             f"edit {_owner_ref(state, pod)}'s manifest and apply it again" if deadlock.writer_is_init else
             "do not wait in an init container for what the app container makes: a readiness probe, or a wait "
             "inside the app container's own command"),
            (f"kubectl logs {_owner_ref(state, pod)} -c {deadlock.waiter}: the wait repeats",))]
    failed_init = init_failure(pod.raw)
    if failed_init is not None and pod.node_name:
        restart = failed_init[1]
        last = _last_words(restart.last_words)
        return [Finding(
            "ContainerExits", "error", "kubelet", f"Pod {pod.key}",
            f"init container {restart.container!r} {restart.why}{last}: with restartPolicy Never the kubelet does not "
            "run it again, the pod has Failed (STATUS Init:Error) and its containers never start",
            "make the init container's command succeed, then re-create the pod (a Failed pod is never retried): "
            f"`kubectl logs {_owner_ref(state, pod)} -c {restart.container}` shows its output",
            ("restartPolicy Never",))]
    if pod.phase not in ("Running", ""):
        return []
    out = []
    for restart in restarts(pod.raw, set()):
        if restart.cause != "exits":
            continue
        name = restart.container
        said = restart.last_words.strip()
        last = _last_words(said)
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


def config_findings(state: ClusterState, pod: Pod) -> list[Finding]:
    """A container the kubelet cannot create because its environment names a ConfigMap, or a key of one, that is
    not there (CreateContainerConfigError: the pod stays Pending, no endpoint). A key that is a near miss of one
    the ConfigMap has is repaired by a JSON patch of the workload, tried on a copy of the cluster first."""
    out = []
    statuses = {cs.get("name"): cs for cs in (pod.raw.get("status") or {}).get("containerStatuses") or []}
    containers = [c for c in (pod.raw.get("spec") or {}).get("containers") or [] if isinstance(c, Mapping)]
    for index, c in enumerate(containers):
        waiting = ((statuses.get(c.get("name")) or {}).get("state") or {}).get("waiting") or {}
        if waiting.get("reason") != "CreateContainerConfigError":
            continue
        message = str(waiting.get("message") or "")
        name = str(c.get("name"))
        what = "secret generic" if re.search(r"in Secret |^secret ", message) else "configmap"
        fix = (f"create what the container's environment names (kubectl create {what} ... -n {pod.namespace}), "
               "or mark the reference `optional: true` if the program can do without it")
        patch = _key_patch(state, pod, index, c, message)
        finding = Finding(
            "ContainerConfigError", "error", "kubelet", f"Pod {pod.key}",
            f"container {name!r} cannot be created: CreateContainerConfigError: {message}: the pod stays Pending "
            "and is no endpoint until it is there (the kubelet retries)", fix,
            (f"kubectl describe {_owner_ref(state, pod)}: Warning Failed  Error: {message}",), patch)
        if patch is not None:
            left = verified(state, patch, _config_still_missing(pod.namespace, patch.name, index))
            finding = replace(finding, fix=patch.command) if left is None else replace(finding, patch=None)
        out.append(finding)
    out += _not_read(state, pod, containers, "ConfigMap", code="ConfigMapNotRead")
    out += _not_read(state, pod, containers, "Secret", code="SecretNotRead")
    return out


def _not_read(state: ClusterState, pod: Pod, containers: list[Mapping[str, Any]], kind: str, *,
              code: str) -> list[Finding]:
    """A note per container whose environment names a ConfigMap or Secret (``kind``) that is not among the objects
    read: it may be made out of band (`kubectl create secret`, a kustomize generator), so it is not judged."""
    read = {(o.namespace, o.name) for o in state.objects_of(kind)}
    waiting = pod.waiting_reasons()
    out = []
    for c in containers:
        if waiting.get(str(c.get("name"))) == "CreateContainerConfigError":
            continue  # the kubelet has said it is missing (a live cluster): ContainerConfigError names it
        unread = sorted({name for _, name, _ in env_refs(c, (kind,)) if (pod.namespace, name) not in read})
        if unread:
            out.append(Finding(
                code, "info", "kubelet", f"Pod {pod.key}",
                f"container {c.get('name')!r} takes its environment from {kind} {', '.join(unread)}, which is "
                "not among the objects read: knetsim takes the container as created (a cluster without it "
                "reports CreateContainerConfigError)",
                f"give knetsim the {kind} too (-f its manifest), or check the cluster: kubectl get "
                f"{kind.lower()} {' '.join(unread)} -n {pod.namespace}"))
    return out


def _key_patch(state: ClusterState, pod: Pod, index: int, container: Mapping[str, Any], message: str) -> Any:
    """The env key renamed to the ConfigMap's key it misspells (``DB_HOTS`` → ``DB_HOST``), for a workload's pods."""
    owner = _workload_object(state, pod)
    found = re.fullmatch(r"couldn't find key (.+) in (ConfigMap|Secret) ([^/]+)/(.+)", message)
    if owner is None or found is None:
        return None
    key, kind, namespace, name = found.groups()
    source = next((o for o in state.objects_of(kind) if o.namespace == namespace and o.name == name), None)
    keys = sorted({**(source.raw.get("data") or {}), **(source.raw.get("stringData") or {})}) if source else []
    ref_field = "configMapKeyRef" if kind == "ConfigMap" else "secretKeyRef"
    close = difflib.get_close_matches(key, keys, n=1)
    if not close:
        return None
    template = (((owner.raw.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    env = (template[index] if index < len(template) else {}).get("env") or []
    at = next((i for i, var in enumerate(env) if ((var.get("valueFrom") or {}).get(ref_field) or {}).get(
        "key") == key), None)
    if at is None:
        return None
    return Patch(owner.kind, owner.namespace, owner.name, "json", [{
        "op": "replace", "path": f"/spec/template/spec/containers/{index}/env/{at}/valueFrom/{ref_field}/key",
        "value": close[0]}])


def _config_still_missing(namespace: str, owner: str, index: int) -> Any:
    def check(fixed: ClusterState) -> str | None:
        for p in fixed.pods.values():
            workload = _workload_object(fixed, p) if p.namespace == namespace else None
            if workload is None or workload.name != owner:
                continue
            for cs in (p.raw.get("status") or {}).get("containerStatuses") or []:
                waiting = (cs.get("state") or {}).get("waiting") or {}
                if waiting.get("reason") == "CreateContainerConfigError":
                    return str(waiting.get("message"))
        return None
    return check


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
