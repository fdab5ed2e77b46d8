"""The kubelet's probes (``pkg/kubelet/prober``): when they run, what they find, what follows.

Each running container with probes gets one task that keeps every probe's schedule: the first
run at ``initialDelaySeconds`` after the container started, then one each ``periodSeconds``
(defaults: 0 s, 10 s; timeout 1 s; thresholds 1 success, 3 failures). While a ``startupProbe``
has not succeeded, liveness and readiness are not run and the container is neither started nor
ready; ``failureThreshold`` startup failures kill it. A failed probe records ``Warning
Unhealthy  <Type> probe failed: <output>`` with the prober's output:

- httpGet: Go's client error, ``Get "http://10.244.2.4:8080/": dial tcp 10.244.2.4:8080: connect:
  connection refused`` where nothing listens (``knetsim.model.listeners``), or ``HTTP probe failed
  with statuscode: 403`` for an answer outside 200-399 (the simulated app's, as exec's wget gets it);
- tcpSocket: ``dial tcp 10.244.2.4:8080: connect: connection refused``;
- grpc: ``timeout: failed to connect service "10.244.2.4:9090" within 1s: context deadline exceeded``;
- exec: the command's combined output, run by the simulated shell in the container's files
  (``command "X" timed out`` past ``timeoutSeconds``). Only on the shell-ish images whose commands
  the kubelet runs (busybox, alpine...): elsewhere, or for a command the shell cannot run to the
  end, the probe passes, as knetsim cannot tell what the image's files and tools would say.

Readiness follows the results (``failureThreshold`` failures make the container unready,
``successThreshold`` successes ready again; before its first success it is not ready). Liveness
(or startup) failures reaching the threshold kill the container: ``Normal Killing  Container X
failed liveness probe, will be restarted``; the kubelet restarts it under its CrashLoopBackOff
backoff and the probes start over with the new container.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..model.objects import Pod, parse_container
from ..model.programs import probe_status
from .worker import Worker

KINDS = (("startupProbe", "Startup"), ("livenessProbe", "Liveness"), ("readinessProbe", "Readiness"))


@dataclass
class Schedule:
    """One probe's settings and the consecutive results so far."""

    kind: str  # Startup | Liveness | Readiness
    spec: Mapping[str, Any]
    initial_delay: float
    period: float
    timeout: float
    success_threshold: int
    failure_threshold: int
    due: float = 0.0  # seconds after the container started
    last: bool | None = None
    run: int = 0
    succeeded: bool = False  # before its first success, a readiness probe's result is Failure

    @classmethod
    def of(cls, kind: str, spec: Mapping[str, Any]) -> Schedule:
        def number(name: str, default: int) -> int:
            value = spec.get(name)
            return int(value) if isinstance(value, int) and value > 0 else default
        delay = spec.get("initialDelaySeconds")
        initial = float(delay) if isinstance(delay, int) and delay > 0 else 0.0
        return cls(kind, spec, initial, float(number("periodSeconds", 10)), float(number("timeoutSeconds", 1)),
                   number("successThreshold", 1), number("failureThreshold", 3), due=initial)

    def record(self, ok: bool) -> None:
        self.run = self.run + 1 if self.last == ok else 1
        self.last = ok

    @property
    def settled_success(self) -> bool:
        return self.last is True and self.run >= self.success_threshold

    @property
    def settled_failure(self) -> bool:
        return self.last is False and self.run >= self.failure_threshold


def schedules(container: Mapping[str, Any]) -> list[Schedule]:
    return [Schedule.of(kind, container[field]) for field, kind in KINDS if isinstance(container.get(field), Mapping)]


class ProbeError(Exception):
    """The prober could not run the probe (``<Type> probe errored: ...``); the result is thrown away."""


def port_of(container: Mapping[str, Any], port: Any) -> int:
    """The probe's port: a number, or the name of one of the container's ports (prober.go extractPort)."""
    if isinstance(port, int):
        return port
    text = str(port or "")
    for p in container.get("ports") or []:
        if p.get("name") == text and isinstance(p.get("containerPort"), int):
            return int(p["containerPort"])
    if not text.isdigit():
        raise ProbeError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    return int(text)


def _closed_by_config(state: Any, pod: Pod, container: Mapping[str, Any], port: int) -> bool:
    """A port the image opens only where its configuration says so, and this one does not: CoreDNS's side
    plugins (a Corefile without ``ready`` leaves 8181 closed), judged by the function the offline build asks
    (cluster/workloadstatus.coredns_closed_port) on the ConfigMaps the API server holds now."""
    from ..cluster.workloadstatus import coredns_closed_port

    if state is None:
        return False
    volumes = (pod.raw.get("spec") or {}).get("volumes") or []
    names = {"coredns", *(str(v["configMap"].get("name") or "") for v in volumes
                          if isinstance(v, Mapping) and isinstance(v.get("configMap"), Mapping))}
    configmaps = {(pod.namespace, name): obj.raw.get("data") or {} for name in sorted(names)
                  if (obj := state.others.get(("ConfigMap", f"{pod.namespace}/{name}"))) is not None}
    return coredns_closed_port(pod.raw, container, port, configmaps)


def network_result(state: Any, pod: Pod, container: Mapping[str, Any], spec: Mapping[str, Any]) -> tuple[bool, str]:
    """(success, output) of an httpGet, tcpSocket or grpc probe against the simulated pod."""
    from ..network.app import app_reply
    from ..network.trace import Target, listening

    action = next(a for a in ("httpGet", "tcpSocket", "grpc") if isinstance(spec.get(a), Mapping))
    handler = spec[action]
    port = port_of(container, handler.get("port"))
    host = str(handler.get("host") or pod.pod_ip or "")
    addr = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    refused = f"dial tcp {addr}: connect: connection refused"
    up = listening(pod, port, "TCP") and not _closed_by_config(state, pod, container, port)
    if action == "tcpSocket":
        return up, "" if up else refused
    if action == "grpc":
        return up, "" if up else f'timeout: failed to connect service "{addr}" within 1s: context deadline exceeded'
    scheme = str(handler.get("scheme") or "HTTP").lower()
    path = str(handler.get("path") or "/")
    if not path.startswith("/"):
        path = "/" + path
    url = f"{scheme}://{addr}{path}"
    if not up:
        return False, f'Get "{url}": {refused}'
    headers = {str(h.get("name")): str(h.get("value")) for h in handler.get("httpHeaders") or []}
    headers.setdefault("User-Agent", "kube-probe/1.35")
    # The app's own answer to the probe's path, as the offline build judges it (model/programs.probe_status):
    # nginx's default site has no /healthz.
    answered = probe_status(parse_container(container), port, path)
    if answered is not None and scheme == "https":
        return False, f'Get "{url}": http: server gave HTTP response to HTTPS client'
    if answered is not None and not 200 <= answered[0] < 400:
        return False, f"HTTP probe failed with statuscode: {answered[0]}"
    if state is None:
        return True, ""
    _hop, reply = app_reply(state, state.config.dataplane, str(pod.raw.get("status", {}).get("hostIP") or ""), pod,
                            port, Target(scheme, host, port, path), "GET", headers)
    if reply is None or reply.status is None or 200 <= reply.status < 400:
        return True, ""  # an app that is not HTTP: knetsim cannot tell what Go's client would make of it
    return False, f"HTTP probe failed with statuscode: {reply.status}"


Exec = Callable[[list[str], float], Awaitable[tuple[bool, str]]]


class ContainerProbes(Worker):
    """The probes of one container run, until it exits or is killed (then the next run has its own)."""

    def __init__(self, container: Mapping[str, Any], network: Callable[[Mapping[str, Any]], tuple[bool, str]],
                 run_exec: Exec, unhealthy: Callable[[str], None], ready: Callable[[bool], None],
                 started: Callable[[], None], kill: Callable[[str], None]) -> None:
        self.schedules = schedules(container)
        self.network, self.run_exec = network, run_exec
        self.unhealthy, self.ready, self.started, self.kill = unhealthy, ready, started, kill
        self.start_done = not any(s.kind == "Startup" for s in self.schedules)

    async def _run(self) -> None:
        began = time.monotonic()
        while not self.cancelled:
            active = [s for s in self.schedules if (s.kind == "Startup") != self.start_done]
            if not active:
                return
            due = min(s.due for s in active)
            await asyncio.sleep(max(0.0, due - (time.monotonic() - began)))
            for s in [s for s in active if s.due <= due]:
                # A probe that waited for the startup probe runs now, then on its period (no catching up).
                s.due = max(s.due, time.monotonic() - began) + s.period
                if await self._probe(s):
                    return  # killed: the next run of the container starts its own probes

    async def _probe(self, s: Schedule) -> bool:
        """Run one probe and act on the result; True when the container is being killed."""
        try:
            if isinstance(s.spec.get("exec"), Mapping):
                command = [str(a) for a in s.spec["exec"].get("command") or []]
                ok, output = await self.run_exec(command, s.timeout)
                if self.cancelled:
                    return True
            else:
                ok, output = self.network(s.spec)
        except ProbeError as exc:
            self.unhealthy(f"{s.kind} probe errored: {exc}")
            if s.kind == "Readiness" and not s.succeeded:
                self.ready(False)
            return False
        s.record(ok)
        if not ok:
            self.unhealthy(f"{s.kind} probe failed: {output}")
        if s.kind == "Startup":
            if s.settled_success:
                self.start_done = True
                self.started()
            elif s.settled_failure:
                self.kill("startup")
                return True
        elif s.kind == "Liveness" and s.settled_failure:
            self.kill("liveness")
            return True
        elif s.kind == "Readiness":
            if s.settled_success:
                self.ready(True)
            elif not ok and (s.settled_failure or not s.succeeded):
                self.ready(False)
        s.succeeded = s.succeeded or ok
        return False
