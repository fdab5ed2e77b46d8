"""What a pod's containers do, judged offline from the spec: their probes against the simulated app, and commands
that end at once.

The live kubelet (``kubelet/kubelet.py``, ``kubelet/prober.py``) runs both; the offline build has no clock, so it
gives the state they settle in, and only where knetsim is certain:

* a **readiness** probe that fails keeps the container unready (the pod is no endpoint);
* a **startup** probe that fails, or a **liveness** probe that fails, makes the kubelet kill the container
  (``failureThreshold`` failures in a row) and restart it under the CrashLoopBackOff backoff, for ever: the pod
  reads ``CrashLoopBackOff``, not Ready. A killed server that stops cleanly on SIGTERM (nginx...) exits 0
  (``Completed``), anything else is killed (137, ``Error``), as the live kubelet's ``Container.kill`` records;
* a command that **exits at once** (``sh -c 'exit 1'``, ``echo hello``, ``sleep forever``: busybox's ``invalid
  number``) under ``restartPolicy: Always`` is restarted for ever the same way, whatever its exit code
  (``OnFailure`` only a non-zero one);
* an **init container** whose command fails at once is run again the same way and nothing after it starts
  (``Init:CrashLoopBackOff``, the pod Pending);
* an env reference to a **ConfigMap key that is not there** keeps the container from being created
  (``CreateContainerConfigError``, the pod Pending).

"Certain" means: a probe's port where nothing listens (``model/listeners``: a known image's or program's
listeners; for readiness also an unknown image's declared containerPorts, the older rule every pod's readiness
follows, while a liveness or startup probe of an unknown image on a port it does not declare is not judged), a
path a known app answers outside 200-399 (``model/programs.probe_status``), HTTPS against plain HTTP, an exec probe
whose end ``workloadstatus.exec_probe_verdict`` can tell, a key a ConfigMap of the input lacks. Anything else is
taken as passing (the doctor's notes say so). The prober's rules: kubernetes/kubernetes pkg/kubelet/prober/prober.go
and worker.go (startup gates liveness and readiness; a liveness or startup failure kills the container; an errored
probe's result is thrown away).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..model.listeners import LISTEN_ANNOTATION, container_listeners
from ..model.objects import parse_container
from ..model.programs import image_repository, probe_status
from .workloadstatus import exec_probe_verdict

# Servers that exit 0 on the runtime's stop signal (their images' STOPSIGNAL/handlers): a probe kill reads
# ``Completed`` for them, 137 ``Error`` for anything else. The live kubelet reads this set too.
GRACEFUL_SERVERS = frozenset({"nginx", "httpd", "caddy", "traefik", "envoy", "haproxy"})

# The probes of a container in the order the prober lets them run: startup first, then the others.
PROBE_FIELDS = (("startupProbe", "startup"), ("livenessProbe", "liveness"), ("readinessProbe", "readiness"))
_ACTIONS = ("httpGet", "tcpSocket", "grpc", "exec")

# Images whose shell and tools are busybox's or a distribution's: their commands are what the pod says.
SHELL_IMAGES = frozenset({"busybox", "alpine", "ubuntu", "debian", "fedora", "centos"})
SHELLS = frozenset({"sh", "bash", "ash", "zsh", "dash"})
ONE_SHOT = frozenset({"echo", "true", "false", "date", "env", "printenv", "hostname", "uname", "id", "whoami",
                      "pwd", "ls", "cat", "nslookup", "wget", "curl", "dig", "host"})
# Anything that can keep a script going: knetsim does not try to tell how long it lasts.
WAITS = re.compile(r"\b(while|until|for|sleep|tail|httpd|nc|ncat|socat|wait|read|exec|trap|top|watch|yes|crond|"
                   r"nginx|python\d?|node|java|ruby|perl|php|inotifyd|tini|dumb-init|agnhost|mysqld|redis-server)\b")
EXIT = re.compile(r"\bexit\s+(\d+)")
# busybox sleep's operands (container/applets.py's sleep): N[smhd], or inf/infinity.
_SLEEP_OPERAND = re.compile(r"(\d+(?:\.\d+)?|\.\d+)[smhd]?|inf|infinity")


@dataclass(frozen=True, slots=True)
class ProbeFailure:
    """A probe of a container that fails for certain offline."""

    container: str
    field: str  # readinessProbe | livenessProbe | startupProbe
    action: str  # httpGet | tcpSocket | grpc | exec
    message: str  # "liveness probe of container 'web' failed: HTTP probe failed with statuscode: 404 (...)"
    cause: str  # port (nothing listens, or a named port not declared) | status | scheme | exec

    @property
    def kind(self) -> str:
        return self.field.removesuffix("Probe")


@dataclass(frozen=True, slots=True)
class Restart:
    """A container the kubelet restarts for ever: why, and how its last run ended."""

    container: str
    cause: str  # exits | liveness | startup
    why: str  # what runs and how it ends, or the probe's failure
    exit_code: int | None  # the last run's, when knetsim can tell
    last_words: str = ""  # what the last run printed, when knetsim can tell
    probe: ProbeFailure | None = None

    @property
    def reason(self) -> str:
        """The terminated state's reason, as ``kubectl describe pod`` shows Last State."""
        return "Completed" if self.exit_code == 0 else "Error"


def _probe_action(probe: Mapping[str, Any]) -> str | None:
    return next((a for a in _ACTIONS if isinstance(probe.get(a), Mapping)), None)


def unknown_port(body: Mapping[str, Any], raw_container: Mapping[str, Any], port: int,
                 listening: set[tuple[int, str]]) -> bool:
    """Is "nothing listens on ``port``" only knetsim's assumption? True for an image it does not know (its declared
    containerPorts are assumed, and a process need not declare where it listens) when no annotation says."""
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    return (port, "TCP") not in listening and LISTEN_ANNOTATION not in annotations and \
        not container_listeners(parse_container(raw_container)).known


def probe_failure(body: Mapping[str, Any], raw_container: Mapping[str, Any], field: str,
                  listening: set[tuple[int, str]], judge_exec: bool, kills: bool = False) -> ProbeFailure | None:
    """The failure of the container's ``field`` probe when it fails for certain, else None. ``listening``: the
    pod's (port, protocol) listeners; ``judge_exec``: judge exec probes (offline; live, the prober runs them).
    ``kills``: judged as a liveness or startup probe, whose failure kills the container, so only where knetsim is
    certain: a port nothing listens on fails only where it knows the container's listeners (readiness keeps its
    older rule: the declared ports of an unknown image are where it listens)."""
    probe = raw_container.get(field)
    if not probe or not isinstance(probe, Mapping):  # most containers have none: no ABC check of None
        return None
    action = _probe_action(probe)
    if action is None:
        return None
    container = parse_container(raw_container)
    kind = field.removesuffix("Probe")

    def failed(message: str, cause: str) -> ProbeFailure:
        return ProbeFailure(container.name, field, action, message, cause)

    if action == "exec":
        if not judge_exec:
            return None
        mounts = [str(m.get("mountPath") or "") for m in raw_container.get("volumeMounts") or []]
        passes, output = exec_probe_verdict(raw_container, probe, mounts)
        if passes is False:
            return failed(f"{kind} probe of container {container.name!r} failed: {output.strip() or 'exit status 1'}",
                          "exec")
        return None
    handler = probe[action]
    port: Any = handler.get("port")
    if port is None:
        return None
    if isinstance(port, str) and not port.isdigit():
        resolved = next((p.container_port for p in container.ports if p.name == port), None)
        if resolved is None:
            if kills:
                # The prober cannot resolve the port: the probe errors and its result is thrown away
                # (pkg/kubelet/prober/worker.go doProbe), so it never kills the container.
                return None
            return failed(f"{kind} probe of container {container.name!r} names port {port!r}, "
                          "which the container does not declare", "port")
        port = resolved
    port = int(port)
    scheme = str(handler.get("scheme") or "HTTP").upper() if action == "httpGet" else ""
    if (port, "TCP") in listening and scheme == "HTTPS" and probe_status(container, port, "/") is not None:
        # A known app that speaks plain HTTP there: Go's TLS client gets an HTTP reply to its handshake.
        return failed(f"{kind} probe of container {container.name!r} failed: http: server "
                      f"gave HTTP response to HTTPS client (port {port} speaks plain HTTP)", "scheme")
    if (port, "TCP") in listening and scheme == "HTTP":
        # The kubelet's HTTP prober: 200-399 is success (pkg/probe/http/http.go), anything else a failure.
        path = str(handler.get("path") or "/")
        answered = probe_status(container, port, path)
        if answered is not None and not 200 <= answered[0] < 400:
            return failed(f"{kind} probe of container {container.name!r} failed: HTTP probe failed with statuscode: "
                          f"{answered[0]} (GET {path} on port {port}, answered by {answered[1]})", "status")
    if (port, "TCP") not in listening:
        if kills and unknown_port(body, raw_container, port, listening):
            return None
        meta = body.get("metadata") or {}
        hint = f" (set the annotation {LISTEN_ANNOTATION} if it does)" if LISTEN_ANNOTATION not in (
            meta.get("annotations") or {}) else ""
        return failed(f"{kind} probe {action} of container {container.name!r} targets port {port}, "
                      f"where nothing listens{hint}", "port")
    return None


def _echoed(script: str) -> str | None:
    """What a script of ``echo`` and ``exit`` commands prints, or None when it runs anything else."""
    printed = []
    for command in re.split(r"\s*(?:;|&&|\n)\s*", script.strip()):
        if not command:
            continue
        try:
            words = shlex.split(command)
        except ValueError:
            return None
        if words and words[0] == "echo":
            printed.append(" ".join(words[1:]) + "\n")
        elif not words or words[0] != "exit":
            return None
    return "".join(printed)


def _bad_sleep(argv: list[str]) -> str | None:
    """busybox sleep's complaint when an operand is not a duration (``sleep forever``), else None."""
    if not argv or argv[0].rsplit("/", 1)[-1] != "sleep" or len(argv) < 2:
        return None
    bad = next((a for a in argv[1:] if not _SLEEP_OPERAND.fullmatch(a)), None)
    return None if bad is None else f"sleep: invalid number '{bad}'\n"


def exit_of(container: Mapping[str, Any]) -> tuple[str, int | None, str] | None:
    """(what runs, exit code when knetsim can tell it, what it prints when knetsim can tell) for a container whose
    process ends at once, or None when it keeps running or knetsim cannot tell."""
    if container.get("stdin") or container.get("tty"):
        return None  # `kubectl run -it`: the shell waits for its input
    if not container.get("command") and not container.get("args"):
        return None  # the image's own entrypoint (most containers): nothing to judge, as for an empty argv below
    command = [str(a) for a in container.get("command") or []]
    args = [str(a) for a in container.get("args") or []]
    argv = command + args if command else args
    if not argv:
        # busybox's own `sh` with no stdin exits at once on a real node, but knetsim (live too: kubelet.runnable)
        # keeps such a pod running as the client the examples use it as: not judged here, so both agree.
        return None
    image = image_repository(str(container.get("image") or ""))  # after the common case: parsing it is dearer
    if image not in SHELL_IMAGES:
        return None  # its entrypoint may be a server that takes these as arguments
    program = argv[0].rsplit("/", 1)[-1]
    complaint = _bad_sleep(argv)
    if complaint is not None:
        return f"`{' '.join(argv)}`", 1, complaint
    if program in SHELLS:
        if len(argv) < 3 or argv[1] != "-c":
            return None
        script = argv[2]
        try:
            words = shlex.split(script)
        except ValueError:
            words = []
        complaint = _bad_sleep(words) if not re.search(r"[;&|\n$`]", script) else None
        if complaint is not None:
            return f"`sh -c {script!r}`", 1, complaint
        if WAITS.search(script):
            return None
        codes = EXIT.findall(script)
        return f"`sh -c {script!r}`", int(codes[-1]) if codes else None, _echoed(script) or ""
    if program in ONE_SHOT and program not in ("wget", "curl", "nslookup", "dig", "host", "cat", "ls"):
        printed = " ".join(argv[1:]) + "\n" if program == "echo" else ""
        return f"`{' '.join(argv)}`", 1 if program == "false" else 0, printed
    return None


def init_crash(body: Mapping[str, Any]) -> tuple[int, Restart] | None:
    """(its index among the init containers that run to an end, and how it ends) for the first init container
    whose command fails at once for certain: the kubelet runs it again under the CrashLoopBackOff backoff (an init
    container restarts OnFailure unless the pod's policy is Never) and nothing after it starts (STATUS
    Init:CrashLoopBackOff). None otherwise, and with restartPolicy Never (the pod fails instead: ``init_failure``)."""
    spec = body.get("spec") or {}
    if str(spec.get("restartPolicy") or "Always") == "Never":
        return None
    return _first_failing_init(spec)


def init_failure(body: Mapping[str, Any]) -> tuple[int, Restart] | None:
    """The same, for a ``restartPolicy: Never`` pod: its failing init container is never run again, the pod's
    phase is Failed and kubectl's STATUS reads ``Init:Error`` for good (kubernetes/kubernetes
    pkg/kubelet/kubelet_pods.go getPhase: a failed initialization under restartPolicy Never is PodFailed)."""
    spec = body.get("spec") or {}
    if str(spec.get("restartPolicy") or "Always") != "Never":
        return None
    return _first_failing_init(spec)


def init_failed_status(status: dict[str, Any], index: int, restart: Restart) -> dict[str, Any]:
    """``status`` (a pod's, blocked at init container ``index``) once that container has failed under
    restartPolicy Never: terminated with its exit code, the pod Failed, the app containers never started."""
    status["phase"] = "Failed"
    failing = (status.get("initContainerStatuses") or [])[index]
    failing.update(ready=False, started=False, restartCount=0, state={"terminated": {
        "exitCode": restart.exit_code, "reason": "Error"}})
    for entry in status.get("containerStatuses") or []:
        # The kubelet never starts them: kubectl shows them waiting as it found them.
        entry["state"] = {"waiting": {"reason": "PodInitializing"}}
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Initialized":
            condition["message"] = f"containers with incomplete status: [{restart.container}]"
    return status


def _first_failing_init(spec: Mapping[str, Any]) -> tuple[int, Restart] | None:
    inits = [c for c in spec.get("initContainers") or [] if isinstance(c, Mapping) and c.get("restartPolicy") !=
             "Always"]
    for index, container in enumerate(inits):
        ends = exit_of(container)
        if ends is None:
            return None  # it may run for a while or succeed: what follows is not certain
        what, code, printed = ends
        if code is None or code == 0:
            continue  # done (or not certainly failing): the next one runs
        return index, Restart(str(container.get("name")), "exits", f"runs {what}, which exits with code {code} "
                              "(Error)", code, printed)
    return None


# A script that waits for a file: `until [ -f /work/config ]`, `until test -e F`, `while [ ! -f F ]`.
_WAITS_FOR_FILE = re.compile(r"\buntil\s+(?:\[\s*|test\s+)-[efs]\s+(\S+?)\s*\]?\s*;|"
                             r"\bwhile\s+(?:\[\s*|test\s+)!\s+-[efs]\s+(\S+?)\s*\]?\s*;")
# A script that makes a file: `echo x > F`, `>> F`, `touch F`, `cp SRC F`.
_WRITES_FILE = r"(?:>>?\s*|\btouch\s+(?:-\S+\s+)*|\bcp\s+(?:-\S+\s+)*\S+\s+){}(?=$|[\s;&|)])"


@dataclass(frozen=True, slots=True)
class InitDeadlock:
    """An init container that waits for a file only a container after it writes: never through."""

    index: int  # among the init containers that run to an end
    waiter: str
    path: str
    writer: str
    writer_is_init: bool


def _script(container: Mapping[str, Any]) -> str:
    argv = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
    if len(argv) >= 3 and argv[0].rsplit("/", 1)[-1] in SHELLS and argv[1] == "-c":
        return argv[2]
    return ""


def _writes(container: Mapping[str, Any], path: str) -> bool:
    return bool(re.search(_WRITES_FILE.format(re.escape(path)), _script(container)))


def init_deadlock(body: Mapping[str, Any]) -> InitDeadlock | None:
    """The first init container whose script loops until a file exists that no container before it writes and a
    container after it does (an init container later in the list, or an app container): init containers run one
    at a time, each to its end before the next starts (kubernetes/kubernetes pkg/kubelet/kuberuntime
    computeInitContainerActions), so it waits for ever and the pod stays Init:N/M. A file nobody here writes is
    not judged (a volume may bring it)."""
    spec = body.get("spec") or {}
    inits = [c for c in spec.get("initContainers") or [] if isinstance(c, Mapping) and c.get("restartPolicy") !=
             "Always"]
    apps = [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    for index, container in enumerate(inits):
        for match in _WAITS_FOR_FILE.finditer(_script(container)):
            path = (match.group(1) or match.group(2)).strip("'\"")
            if any(_writes(c, path) for c in inits[:index]):
                continue
            later = [(c, True) for c in inits[index + 1:]] + [(c, False) for c in apps]
            writer = next(((c, is_init) for c, is_init in later if _writes(c, path)), None)
            if writer is not None:
                return InitDeadlock(index, str(container.get("name")), path, str(writer[0].get("name")), writer[1])
    return None


# The env fields that name a ConfigMap or a Secret: kind -> (envFrom's field, valueFrom's field).
_ENV_SOURCES = {"ConfigMap": ("configMapRef", "configMapKeyRef"), "Secret": ("secretRef", "secretKeyRef")}


def env_refs(container: Mapping[str, Any], kinds: tuple[str, ...] = ("ConfigMap",)
             ) -> list[tuple[str, str, str | None]]:
    """(kind, name, key or None for a whole ``envFrom``) of each reference to a ConfigMap or Secret (of ``kinds``)
    of the container's environment that is not ``optional``, ``envFrom`` first, then ``env``, each in spec order:
    the order the kubelet resolves them in."""
    out: list[tuple[str, str, str | None]] = []
    for source in container.get("envFrom") or []:
        for kind in kinds:
            ref = source.get(_ENV_SOURCES[kind][0]) if isinstance(source, Mapping) else None
            if isinstance(ref, Mapping) and not ref.get("optional"):
                out.append((kind, str(ref.get("name") or ""), None))
    for var in container.get("env") or []:
        value_from = var.get("valueFrom") if isinstance(var, Mapping) else None
        if var.get("value") or not isinstance(value_from, Mapping):
            continue
        for kind in kinds:
            ref = value_from.get(_ENV_SOURCES[kind][1])
            if isinstance(ref, Mapping) and not ref.get("optional"):
                out.append((kind, str(ref.get("name") or ""), str(ref.get("key"))))
    return out


def configmap_refs(container: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """(ConfigMap name, key or None) of each non-optional ConfigMap reference of the container's environment."""
    return [(name, key) for _, name, key in env_refs(container)]


def config_error(body: Mapping[str, Any], container: Mapping[str, Any],
                 configmaps: Mapping[tuple[str, str], Mapping[str, Any]],
                 secrets: Mapping[tuple[str, str], Mapping[str, Any]] | None = None) -> str | None:
    """The kubelet's CreateContainerConfigError message for a container whose environment names a key that a
    ConfigMap (or a Secret: ``secrets``, their keys) of the input does not have and is not ``optional``
    (kubernetes/kubernetes pkg/kubelet/kubelet_pods.go makeEnvironmentVariables: "couldn't find key K in Secret
    NS/NAME"; the live kubelet's words are kubelet/podconfig.py's, which tests/doctor/test_probe_restarts.py
    holds these to).

    Not judged (None): a ConfigMap or Secret that is not among the objects read at all (made by a kustomize
    overlay, by `kubectl create secret` out of band: the doctor notes it), a pod whose ConfigMap or Secret volume
    cannot be set up first (it waits in ContainerCreating)."""
    namespace = str((body.get("metadata") or {}).get("namespace") or "default")
    sources = {"ConfigMap": configmaps, "Secret": secrets if secrets is not None else {}}
    for volume in (body.get("spec") or {}).get("volumes") or []:
        if not isinstance(volume, Mapping):
            continue
        for kind, field, name_field in (("ConfigMap", "configMap", "name"), ("Secret", "secret", "secretName")):
            source = volume.get(field)
            if isinstance(source, Mapping) and not source.get("optional") and (
                    namespace, str(source.get(name_field) or "")) not in sources[kind]:
                return None
    for kind, name, key in env_refs(container, ("ConfigMap", "Secret") if secrets is not None else ("ConfigMap",)):
        data = sources[kind].get((namespace, name))
        if data is None:
            continue  # not read: knetsim cannot tell the cluster lacks it (a later reference may still fail)
        if key is not None and key not in data:
            return f"couldn't find key {key} in {kind} {namespace}/{name}"
    return None


def restarts(body: Mapping[str, Any], listening: set[tuple[int, str]], judge_exec: bool = True) -> list[Restart]:
    """The containers of the pod the kubelet restarts for ever (CrashLoopBackOff), in spec order."""
    spec = body.get("spec") or {}
    policy = str(spec.get("restartPolicy") or "Always")
    if policy == "Never":
        return []
    out = []
    for raw in spec.get("containers") or []:
        if not isinstance(raw, Mapping):
            continue
        name = str(raw.get("name"))
        ends = exit_of(raw)
        if ends is not None:
            what, code, printed = ends
            if policy == "OnFailure" and code == 0:
                continue  # done: the pod Succeeds
            how = ("exits with code 0 (Completed)" if code == 0 else f"exits with code {code} (Error)" if code
                   else "runs to its end and exits")
            out.append(Restart(name, "exits", f"runs {what}, which {how}", code, printed))
            continue
        for field, kind in PROBE_FIELDS[:2]:
            failure = probe_failure(body, raw, field, listening, judge_exec, kills=True)
            if failure is not None:
                graceful = image_repository(str(raw.get("image") or "")) in GRACEFUL_SERVERS
                out.append(Restart(name, kind, failure.message, 0 if graceful else 137, probe=failure))
                break  # a failing startup probe keeps the liveness probe from running
    return out


__all__ = [
    "GRACEFUL_SERVERS",
    "PROBE_FIELDS",
    "InitDeadlock",
    "ProbeFailure",
    "Restart",
    "config_error",
    "configmap_refs",
    "env_refs",
    "exit_of",
    "init_crash",
    "init_deadlock",
    "init_failed_status",
    "init_failure",
    "probe_failure",
    "restarts",
    "unknown_port",
]
