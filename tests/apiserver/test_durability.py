"""Every acknowledged client write survives ``kill -9`` of the daemon, subresources included (issue 34, point 0).

The store commits a client's write (``synchronous=FULL``) before the API answers it, /scale and /status
included; only the controllers' derived writes are batched, and those the controllers derive again at
start. Given a server killed with SIGKILL right after kubectl's last answer, or in the middle of four
concurrent scalers, then restarted on the same state directory, what was acknowledged is what is served.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from .conftest import Live, start_server, stop_server, wait_for

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "extra", "labels": {"durability": "test"}}}


def restarted(live: Live) -> Live:
    stop_server(live.proc, hard=True)
    proc, info = start_server(live.state)
    return Live(live.state, live.home, proc, info)


def test_kubectls_acknowledged_create_scale_and_status_patch_survive_kill_9(tmp_path: Path) -> None:
    state, home = tmp_path / "state", tmp_path / "home"
    state.mkdir()
    home.mkdir()
    proc, info = start_server(state)
    live = Live(state, home, proc, info)
    try:
        live.kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=1")
        live.kubectl("create", "configmap", "settings", "--from-literal=mode=acked")
        live.kubectl("apply", "-f", "-", input=json.dumps(NODE))
        live.kubectl("scale", "deployment", "web", "--replicas=3")
        live.kubectl("patch", "node", "extra", "--subresource=status", "--type=merge",
                     "-p", '{"status":{"capacity":{"pods":"7"}}}')
        live.kubectl("scale", "deployment", "web", "--replicas=2")  # the last word, right before the kill
        live = restarted(live)
        deploy = json.loads(live.kubectl("get", "deployment", "web", "-o", "json").stdout)
        assert deploy["spec"]["replicas"] == 2
        assert json.loads(live.kubectl("get", "configmap", "settings", "-o", "json").stdout)["data"] == \
            {"mode": "acked"}
        node = json.loads(live.kubectl("get", "node", "extra", "-o", "json").stdout)
        assert node["status"]["capacity"]["pods"] == "7"
        # The derived objects follow the acknowledged spec again (the controllers resync at start).
        def replica_set_follows() -> bool:
            items = json.loads(live.kubectl("get", "rs", "-l", "app=web", "-o", "json").stdout)["items"]
            return [rs["spec"]["replicas"] for rs in items] == [2]
        assert wait_for(replica_set_follows)
    finally:
        stop_server(live.proc)


def test_the_last_acknowledged_scale_of_concurrent_scalers_survives_kill_9(tmp_path: Path) -> None:
    state, home = tmp_path / "state", tmp_path / "home"
    state.mkdir()
    home.mkdir()
    proc, info = start_server(state)
    live = Live(state, home, proc, info)
    stop = threading.Event()
    try:
        live.kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=1")
        path = "/apis/apps/v1/namespaces/default/deployments/web/scale"
        acked: list[tuple[int, int]] = []  # (resourceVersion, replicas) of each answered scale
        in_flight: dict[int, int] = {}  # writer -> the replicas it asked for and has no answer to
        lock = threading.Lock()

        def scaler(writer: int) -> None:
            i = 0
            while not stop.is_set():
                replicas = 1 + 2 * writer + i % 2  # each writer its own two values: who wrote what is known
                i += 1
                with lock:
                    in_flight[writer] = replicas
                try:
                    code, scale = live.request("PATCH", path, {"spec": {"replicas": replicas}},
                                               "application/merge-patch+json")
                except OSError:
                    return  # the server died with this one unanswered
                if code != 200:
                    return
                with lock:
                    acked.append((int(scale["metadata"]["resourceVersion"]), scale["spec"]["replicas"]))
                    del in_flight[writer]

        threads = [threading.Thread(target=scaler, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        wait_for(lambda: len(acked) >= 40, timeout=20)
        stop_server(live.proc, hard=True)
        stop.set()
        for t in threads:
            t.join(30)
        assert len(acked) >= 40, "the scalers barely ran; the test proved nothing"
        last_rv, last_replicas = max(acked)
        allowed = {last_replicas, *in_flight.values()}  # an unanswered write may have been committed after it
        proc, info = start_server(state)
        live = Live(state, home, proc, info)
        deploy = json.loads(live.kubectl("get", "deployment", "web", "-o", "json").stdout)
        assert deploy["spec"]["replicas"] in allowed, (deploy["spec"]["replicas"], last_replicas, in_flight)
        assert int(deploy["metadata"]["resourceVersion"]) >= last_rv
        scale = json.loads(live.kubectl("get", "--raw", path).stdout)
        assert scale["spec"]["replicas"] == deploy["spec"]["replicas"]
    finally:
        stop.set()
        stop_server(live.proc)
