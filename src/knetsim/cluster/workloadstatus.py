"""The status each workload controller writes, from the pods it owns: one computation for the live
controllers (``knetsim.controllers``) and the offline build, so ``knetsim get`` and ``kubectl get`` print
the same READY, UP-TO-DATE and AVAILABLE, and ``-o yaml`` the same fields.

Counts are omitted when zero, as the Go structs' ``omitempty`` marshals them. What needs a clock
(a Deployment's conditions, minReadySeconds, a Job's start time) is the live controllers' own: the
offline build has no clock and writes no times.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..model.corefile import Corefile, CorefileError, parse_corefile, startup_error
from ..model.programs import image_repository
from ..model.timestamps import parse_rfc3339
from .naming import pod_template_hash

TERMINAL = ("Succeeded", "Failed")


def phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_active(pod: Mapping[str, Any]) -> bool:
    """FilterActivePods: not finished and not being deleted."""
    return phase(pod) not in TERMINAL and not (pod.get("metadata") or {}).get("deletionTimestamp")


def is_ready(pod: Mapping[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def observed_generation(owner: Mapping[str, Any]) -> int:
    return int((owner.get("metadata") or {}).get("generation") or 1)


def _nonzero(status: dict[str, Any], counts: Iterable[tuple[str, int]]) -> dict[str, Any]:
    for name, value in counts:
        if value:
            status[name] = value
    return status


def ready_since(pod: Mapping[str, Any]) -> float | None:
    """When the pod became Ready (epoch seconds; 0.0 when the condition has no time), None if it is not."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready" and c.get("status") == "True":
            stamp = c.get("lastTransitionTime")
            return parse_rfc3339(stamp).timestamp() if stamp else 0.0
    return None


def replica_set_status(rs: Mapping[str, Any], pods: list[Mapping[str, Any]], now: float | None = None
                       ) -> tuple[dict[str, Any], float | None]:
    """(ReplicaSetStatus, seconds until a ready pod becomes available under minReadySeconds, or None).
    ``now`` None: no clock (offline), a ready pod counts as available."""
    spec = rs.get("spec") or {}
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    fully = ready = available = 0
    wait: float | None = None
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        # The items views' subset test (in C) settles the usual pod, which carries every template label; the
        # generator decides the rest as before (a None value matches a missing label there).
        if template_labels.items() <= labels.items() or all(labels.get(k) == v for k, v in template_labels.items()):
            fully += 1
        since = ready_since(pod)  # None: not Ready (is_ready's test, in the same pass)
        if since is not None:
            ready += 1
            if now is None or not min_ready or since + min_ready <= now:
                available += 1
            else:
                wait = min(wait if wait is not None else min_ready, since + min_ready - now)
    status = _nonzero({"replicas": len(pods)}, (("fullyLabeledReplicas", fully), ("readyReplicas", ready),
                                                ("availableReplicas", available)))
    status["observedGeneration"] = observed_generation(rs)
    return status, wait


def daemon_set_status(ds: Mapping[str, Any], pods: list[Mapping[str, Any]], scheduled: int) -> dict[str, Any]:
    """DaemonSetStatus: ``scheduled`` is every pod it runs, the ``pods`` it had plus those it just made."""
    ready = sum(1 for p in pods if is_ready(p))
    status: dict[str, Any] = {"currentNumberScheduled": scheduled, "numberMisscheduled": 0,
                              "desiredNumberScheduled": scheduled, "numberReady": ready,
                              "observedGeneration": observed_generation(ds)}
    return _nonzero(status, (("updatedNumberScheduled", scheduled), ("numberAvailable", ready),
                             ("numberUnavailable", scheduled - ready)))


def stateful_set_status(sts: Mapping[str, Any], pods: list[Mapping[str, Any]]) -> dict[str, Any]:
    """StatefulSetStatus of the pods it keeps (all of one revision: template changes are not rolled out)."""
    ready = sum(1 for p in pods if is_ready(p))
    name = str((sts.get("metadata") or {}).get("name") or "")
    revision = f"{name}-{pod_template_hash((sts.get('spec') or {}).get('template') or {})}"
    status = _nonzero({"observedGeneration": observed_generation(sts), "replicas": len(pods)},
                      (("readyReplicas", ready), ("currentReplicas", len(pods)), ("updatedReplicas", len(pods))))
    status.update(currentRevision=revision, updateRevision=revision, collisionCount=0, availableReplicas=ready)
    return status


# --- a container that exits at start ---------------------------------------------------------------------

ConfigMaps = Mapping[tuple[str, str], Mapping[str, Any]]  # (namespace, name) -> data


def coredns_corefile(pod: Mapping[str, Any], configmaps: ConfigMaps) -> str | None:
    """The Corefile a CoreDNS pod reads: the ``Corefile`` key of a ConfigMap volume of the pod (the coredns
    Deployment mounts ``kube-system/coredns``); None when no such ConfigMap is known (kubeadm's Corefile is then
    assumed)."""
    spec = pod.get("spec") or {}
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    for volume in spec.get("volumes") or []:
        source = volume.get("configMap") if isinstance(volume, Mapping) else None
        if isinstance(source, Mapping):
            data = configmaps.get((namespace, str(source.get("name") or ""))) or {}
            if isinstance(data, Mapping) and isinstance(data.get("Corefile"), str):
                return data["Corefile"]
    # kubeadm's Deployment mounts ConfigMap ``coredns`` of its namespace (volume config-volume); a Deployment read
    # without its volumes (a trimmed manifest) is taken to mount it as kubeadm writes it.
    data = configmaps.get((namespace, "coredns")) or {}
    text = data.get("Corefile") if isinstance(data, Mapping) else None
    return text if isinstance(text, str) else None


def is_coredns(container: Any) -> bool:
    return isinstance(container, Mapping) and image_repository(str(container.get("image") or "")).endswith("coredns")


def coredns_startup_error(pod: Mapping[str, Any], configmaps: ConfigMaps, own: frozenset[str],
                          resolv_conf: tuple[str, ...]) -> tuple[str, str] | None:
    """(container name, the line CoreDNS prints as it exits) for a CoreDNS container of ``pod`` whose
    Corefile (``coredns_corefile``) keeps it from starting; None when it starts or knetsim cannot tell (no such
    ConfigMap in the input: kubeadm's Corefile is assumed, which starts)."""
    # The CoreDNS container first, its Corefile only then: every pod of the offline build comes here, and its
    # volumes and the ConfigMap lookups are most of the cost for the 10,000 that run no CoreDNS.
    container = next((c for c in (pod.get("spec") or {}).get("containers") or [] if is_coredns(c)), None)
    if container is None:
        return None
    text = coredns_corefile(pod, configmaps)
    if text is None:
        return None
    error = startup_error(text, own, resolv_conf)
    return (str(container.get("name")), error) if error else None


# The ports CoreDNS opens for its side plugins, at their default addresses (coredns.io/plugins: ready ":8181",
# health ":8080", prometheus "localhost:9153" in the plugin, ":9153" in kubeadm's Corefile): each only where its
# plugin is in the Corefile.
SIDE_PLUGIN_PORTS = {"ready": 8181, "health": 8080, "prometheus": 9153}


def coredns_closed_port(pod: Mapping[str, Any], container: Mapping[str, Any], port: int,
                        configmaps: ConfigMaps) -> bool:
    """Is ``port`` one of CoreDNS's side-plugin ports that its Corefile does not open? (A Corefile without
    ``ready`` leaves 8181 closed, so kubeadm's readiness probe is refused and the pods stay 0/1.) False for any
    other image or port, and when the Corefile is not known."""
    if not is_coredns(container) or port not in SIDE_PLUGIN_PORTS.values():
        return False
    text = coredns_corefile(pod, configmaps)
    if text is None:
        return False
    try:
        corefile = parse_corefile(text)
    except CorefileError:
        return False  # it does not start at all: coredns_startup_error says so
    return port not in opened_side_ports(corefile)


def opened_side_ports(corefile: Corefile) -> set[int]:
    """The side-plugin ports a Corefile opens: each plugin's address (``ready :8282``) or its default."""
    opened = set()
    for block in corefile.blocks:
        for name, default in SIDE_PLUGIN_PORTS.items():
            directive = block.plugin(name)
            if directive is not None:
                address = directive.args[0] if directive.args else ""  # `ready [ADDRESS]`, `health [ADDRESS]`
                tail = address.rpartition(":")[2]
                opened.add(int(tail) if tail.isdigit() else default)
    return opened


def crash_loop_status(status: dict[str, Any], container: str, pod_name: str, namespace: str,
                      exit_code: int | None = 1) -> dict[str, Any]:
    """``status`` (a Running pod's) with ``container`` restarted for ever: waiting in CrashLoopBackOff after its
    first restart, its last run ``exit_code`` (``Completed`` for 0, else ``Error``; None: knetsim cannot tell, no
    Last State), as ``kubectl get pods`` shows it, and the pod not Ready. The offline build has no clock: one
    restart and the first back-off (10 s) stand for "it keeps crashing". Called once per crashing container."""
    for entry in status.get("containerStatuses") or []:
        if entry.get("name") == container:
            entry.update(ready=False, started=False, restartCount=1,
                         state={"waiting": {"reason": "CrashLoopBackOff", "message": (
                             f"back-off 10s restarting failed container={container} pod={pod_name}_{namespace}")}})
            if exit_code is not None:
                entry["lastState"] = {"terminated": {"exitCode": exit_code,
                                                     "reason": "Completed" if exit_code == 0 else "Error"}}
    unready = [str(e.get("name")) for e in status.get("containerStatuses") or [] if not e.get("ready")]
    message = f"containers with unready status: [{' '.join(unready)}]"
    for condition in status.get("conditions") or []:
        if condition.get("type") in ("Ready", "ContainersReady"):
            condition.update(status="False", reason="ContainersNotReady", message=message)
    return status


# --- exec probes ---------------------------------------------------------------------------------------------

# The images whose files and tools the live kubelet's exec probe runs in (kubelet.kubelet.SHELL_IMAGES): elsewhere
# it takes an exec probe as passing, and so does the offline build.
EXEC_IMAGES = frozenset({"agnhost", "busybox", "alpine", "curl", "netshoot", "network-multitool", "ubuntu", "debian",
                         "dnsutils", "jessie-dnsutils", "dnstools", "fedora", "centos", "toolbox"})


def exec_probe_verdict(container: Mapping[str, Any], probe: Mapping[str, Any],
                       volume_paths: Iterable[str] = ()) -> tuple[bool | None, str]:
    """(passes, output) of an exec probe, as the live kubelet's run of it in the simulated shell ends; passes
    None when knetsim cannot tell offline (the pod is then taken as Ready, and the doctor says so).

    Judged: ``true``/``false``, and a file test (``cat F``, ``test -f F``, ``test -e F``, ``[ -f F ]``, ``ls F``)
    of a path under ``/tmp`` (empty in these images) that no volume mounts and the container's own command does
    not mention (the "touch /tmp/healthy" idiom of Kubernetes' liveness example: then it depends on time)."""
    argv = [str(a) for a in ((probe.get("exec") or {}).get("command") or [])]
    if image_repository(str(container.get("image") or "")) not in EXEC_IMAGES or not argv:
        return None, ""
    if len(argv) >= 3 and argv[0].rsplit("/", 1)[-1] in ("sh", "bash", "ash") and argv[1] == "-c":
        argv = argv[2].split()
    program, rest = argv[0].rsplit("/", 1)[-1], argv[1:]
    if program == "true" and not rest:
        return True, ""
    if program == "false" and not rest:
        return False, ""
    path = ""
    if program in ("cat", "ls") and len(rest) == 1:
        path = rest[0]
    elif program in ("test", "[") and len(rest) >= 2 and rest[0] in ("-f", "-e"):
        path = rest[1]
    if not path.startswith("/tmp/"):
        return None, ""
    own = " ".join(str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])])
    if path in own or any(path.startswith(p.rstrip("/") + "/") for p in volume_paths if p.startswith("/tmp")):
        return None, ""
    # busybox's messages (container/applets.py): cat and ls say why, test says nothing.
    output = {"cat": f"cat: can't open '{path}': No such file or directory\n",
              "ls": f"ls: {path}: No such file or directory\n"}.get(program, "")
    return False, output
