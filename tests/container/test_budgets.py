"""Pod processes run within their container's resources: a runaway command is OOM-killed, never the cluster.

Given a live cluster (a subprocess, the real kubectl) and busybox pods with and without memory limits,
then the runaway commands a learner writes (`x=$x$x` forever, a huge `seq`, a `printf` of gigabytes, an
endless `yes` into `$(...)`): the command ends with 137, the container is OOMKilled and restarted as the
kubelet does, the daemon's memory stays bounded, and a `kubectl get` while a CPU-bound loop runs is as
quick as without it.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.live import KUBECTL, Live, live_fixture, start_live, stop_server, wait_for

from knetsim.container.cgroup import DEFAULT_MEMORY, NODE_MEMORY, limits_of, quantity

RUNAWAY = "x=a; while true; do x=$x$x; done"


@live_fixture
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    live = start_live(tmp_path_factory.mktemp("budgets"))
    try:
        yield live
    finally:
        stop_server(live.proc)


def _apply(live: Live, manifest: dict[str, Any]) -> None:
    live.kubectl("apply", "-f", "-", input=json.dumps(manifest))


def _pod(name: str, command: list[str] | None = None, memory: str | None = None,
         policy: str = "Always", image: str = "busybox:1.36") -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": image}
    if command is not None:
        container["command"] = command
    if memory is not None:
        container["resources"] = {"limits": {"memory": memory}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"restartPolicy": policy, "containers": [container]}}


def _status(live: Live, name: str) -> dict[str, Any]:
    code, body = live.request("GET", f"/api/v1/namespaces/default/pods/{name}")
    assert code == 200, body
    return body.get("status") or {}


def _container(live: Live, name: str) -> dict[str, Any]:
    return (_status(live, name).get("containerStatuses") or [{}])[0]


def _running(live: Live, name: str) -> None:
    assert wait_for(lambda: _status(live, name).get("phase") == "Running", 20), _status(live, name)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _exec(live: Live, pod: str, script: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return live.kubectl("exec", pod, "--", "sh", "-c", script, check=False, timeout=timeout)


@pytest.mark.parametrize(("script", "ok"), [
    (RUNAWAY, False),
    ("x=$(seq 1 100000000)", False),
    ("printf '%5000000000s' x | wc -c", False),
    ("x=$(yes)", False),
    ("x=$(seq 1 1000); echo ${#x}", True),
])
def test_a_runaway_exec_is_oom_killed_with_137_and_the_daemon_stays_small(cluster: Live, script: str,
                                                                          ok: bool) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    name = "victim-" + str(abs(hash(script)) % 10**6)
    _apply(cluster, _pod(name, ["sleep", "3600"]))
    _running(cluster, name)
    before = _container(cluster, name).get("restartCount", 0)
    started = time.monotonic()
    done = _exec(cluster, name, script)
    assert time.monotonic() - started < 45
    assert _rss_mb(cluster.proc.pid) < 600, "the daemon grew with the pod's command"
    if ok:
        assert (done.returncode, done.stdout) == (0, "3892\n"), done.stderr
        return
    assert done.returncode == 137 and "command terminated with exit code 137" in done.stderr, (done.stdout,
                                                                                              done.stderr)
    # memory.oom.group: the whole container went, its main process too; the kubelet restarts it.
    status = wait_for(lambda: (c := _container(cluster, name)).get("restartCount", 0) > before and c, 20)
    assert status, _container(cluster, name)
    assert status["lastState"]["terminated"]["reason"] == "OOMKilled"
    assert status["lastState"]["terminated"]["exitCode"] == 137
    assert "Traceback" not in (cluster.state.parent / f"{cluster.state.name}.log").read_text()
    cluster.kubectl("delete", "pod", name, "--wait=false")


def test_the_memory_limit_is_the_containers(cluster: Live) -> None:
    """Within its limit a command holds what it likes; past it, the container is OOMKilled."""
    _apply(cluster, _pod("limited", ["sleep", "3600"], memory="8Mi"))
    _running(cluster, "limited")
    held = _exec(cluster, "limited", "x=$(seq 1 500000); echo ${#x}")  # 3.4 MB
    assert (held.returncode, held.stdout) == (0, "3388894\n"), held.stderr
    over = _exec(cluster, "limited", "x=$(seq 1 1500000); echo ${#x}")  # 10.9 MB
    assert over.returncode == 137, (over.stdout, over.stderr)
    assert wait_for(lambda: (_container(cluster, "limited").get("lastState") or {}).get("terminated"), 20)


def test_a_main_process_past_its_limit_is_oomkilled_then_crash_loops(cluster: Live) -> None:
    _apply(cluster, _pod("hog", ["sh", "-c", RUNAWAY], memory="16Mi"))
    status = wait_for(lambda: (c := _container(cluster, "hog")).get("restartCount", 0) >= 2 and c, 40)
    assert status, _container(cluster, "hog")
    assert status["lastState"]["terminated"]["reason"] == "OOMKilled"
    assert status["lastState"]["terminated"]["exitCode"] == 137
    assert status["state"].get("waiting", {}).get("reason") == "CrashLoopBackOff" or "running" in status["state"]
    reasons = [e["reason"] for e in cluster.request("GET", "/api/v1/namespaces/default/events?fieldSelector="
                                                           "involvedObject.name%3Dhog")[1]["items"]]
    assert "BackOff" in reasons and "Started" in reasons
    get = cluster.kubectl("get", "pod", "hog").stdout.split("\n")[1].split()
    assert get[2] in ("OOMKilled", "CrashLoopBackOff") and int(get[3]) >= 2, get
    never = _pod("hog-once", ["sh", "-c", RUNAWAY], policy="Never")
    _apply(cluster, never)
    assert wait_for(lambda: _status(cluster, "hog-once").get("phase") == "Failed", 30), _status(cluster, "hog-once")
    terminated = _container(cluster, "hog-once")["state"]["terminated"]
    assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137)


def test_an_exec_into_a_server_that_runs_out_of_memory_restarts_the_server(cluster: Live) -> None:
    _apply(cluster, _pod("web", image="nginx:1.27"))
    _running(cluster, "web")
    done = _exec(cluster, "web", RUNAWAY)
    assert done.returncode == 137
    status = wait_for(lambda: (c := _container(cluster, "web")).get("restartCount", 0) == 1 and c, 20)
    assert status and status["lastState"]["terminated"]["reason"] == "OOMKilled", _container(cluster, "web")
    assert wait_for(lambda: "running" in _container(cluster, "web").get("state", {}), 20)


def _latencies(live: Live, count: int) -> list[float]:
    out = []
    for _ in range(count):
        started = time.perf_counter()
        code, _ = live.request("GET", "/api/v1/namespaces/default/pods")
        assert code == 200
        out.append(time.perf_counter() - started)
    return out


# kubectl's own latency is the machine's: a neighbour test's CPU would be read as the loop's.
@pytest.mark.alone
def test_a_cpu_bound_loop_does_not_slow_the_api(cluster: Live) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    _apply(cluster, _pod("spinner", ["sleep", "3600"]))
    _running(cluster, "spinner")
    quiet = _latencies(cluster, 15)
    kubectl_quiet = []
    for _ in range(3):
        started = time.perf_counter()
        cluster.kubectl("get", "pods")
        kubectl_quiet.append(time.perf_counter() - started)
    spin = subprocess.Popen([KUBECTL, "exec", "spinner", "--", "sh", "-c", "while true; do i=$((i+1)); done"],
                            env=cluster.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    hog = subprocess.Popen([KUBECTL, "exec", "spinner", "--", "sh", "-c", "seq 1 100000000 > /dev/null"],
                           env=cluster.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        busy = _latencies(cluster, 15)
        kubectl_busy = []
        for _ in range(3):
            started = time.perf_counter()
            cluster.kubectl("get", "pods")
            kubectl_busy.append(time.perf_counter() - started)
    finally:
        spin.terminate()
        hog.terminate()
        spin.wait(10)
        hog.wait(10)
    # The loops get their share of the loop (NODE_SHARE); a request waits at most a slice per turn of it.
    assert statistics.median(busy) < statistics.median(quiet) + 0.05, (quiet, busy)
    assert max(busy) < 0.5, busy
    assert statistics.median(kubectl_busy) < statistics.median(kubectl_quiet) + 0.15, (kubectl_quiet, kubectl_busy)


@pytest.mark.parametrize(("limits", "expected"), [
    ({}, (DEFAULT_MEMORY, None)),
    ({"memory": "8Mi", "cpu": "500m"}, (8 << 20, 0.5)),
    ({"memory": "10M", "cpu": "2"}, (10_000_000, 2.0)),
    ({"memory": "64e6"}, (64_000_000, None)),
    ({"memory": "1Ti"}, (64 << 20, None)),  # capped: the daemon holds every pod's processes
    ({"memory": "bogus", "cpu": []}, (DEFAULT_MEMORY, None)),
])
def test_limits_are_read_as_quantities(limits: dict[str, Any], expected: tuple[int, float | None]) -> None:
    assert limits_of({"resources": {"limits": limits}}) == expected


def test_quantities() -> None:
    assert quantity("1Ki") == 1024 and quantity("1.5Gi") == 1.5 * 2**30 and quantity("100m") * 1000 == 100
    assert quantity("x") is None and NODE_MEMORY > DEFAULT_MEMORY


def test_a_command_that_fails_after_the_upgrade_ends_the_exec_with_a_status(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in a tool used to reach the HTTP middleware after the WebSocket upgrade: an HTTP 500 written
    into the WebSocket, and kubectl printed `websocket: RSV1 set, FIN not set on control`."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    import asyncio
    import threading

    from knetsim.container import shell
    from knetsim.daemon.daemon import start

    async def crash(ctx: shell.Ctx, argv: list[str]) -> int:
        await ctx.out("before\n")
        raise RuntimeError("a tool bug")

    monkeypatch.setitem(shell._REGISTERED, "crash", crash)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    state = tmp_path / "state"
    running = asyncio.run_coroutine_threadsafe(start(state, port=0, dns_port=None, ingress_port=None), loop).result(30)
    live = Live(state, tmp_path, subprocess.Popen(["true"]), {"api_port": running.port})
    try:
        _apply(live, _pod("crashing", ["sleep", "3600"]))
        _running(live, "crashing")
        done = live.kubectl("exec", "crashing", "--", "crash", check=False)
        assert "RSV1" not in done.stderr and done.stdout == "before\n"
        assert (done.returncode, done.stderr.strip()) == (1, "error: Internal error occurred: RuntimeError: a tool bug")
        # The stream is a session's own: the next exec works.
        assert live.kubectl("exec", "crashing", "--", "echo", "fine").stdout == "fine\n"
    finally:
        asyncio.run_coroutine_threadsafe(running.close(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        live.proc.wait()
