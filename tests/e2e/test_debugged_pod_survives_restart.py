"""A pod `kubectl debug` gave an ephemeral container is still served after `knetsim down` and `up`.

At start-up the daemon re-admits what its store holds (apiserver/recheck.py) and quarantines what today's
rules refuse; a create's own rules (ValidatePodCreate: no spec.ephemeralContainers) are no rule for a stored
object, so the debugged pod must come back as it was (issue 34, point 1, on knetsim's own store).
"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest
from tests.e2e.conftest import KUBECTL, knetsim_argv, start, stop

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live


def test_a_debugged_pod_survives_a_restart(tmp_path: Path) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    k = start(tmp_path)
    try:
        k.kubectl("run", "web", "--image=nginx:1.27")
        k.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")
        k.kubectl("debug", "-i", "web", "--image=busybox:1.36", "--target=web", "--container=dbg", "--", "sh",
                  input="exit\n", timeout=60)
        before = k.get_json("pod", "web")
        stop(k)
        # As if an older knetsim had written the store: the start-up recheck re-admits every stored object.
        with sqlite3.connect(k.state / "store.db") as db:
            db.execute("UPDATE meta SET value = 'knetsim 0.0 (an older release)' WHERE key = 'admission'")
        again = subprocess.run(knetsim_argv("up", "--port", "0", "--state", str(k.state)), capture_output=True,
                               text=True, env={**k.env(), "KNETSIM_STATE": str(k.state)}, timeout=60)
        assert again.returncode == 0, again.stderr
        after = k.get_json("pod", "web")
        assert [c["name"] for c in after["spec"]["ephemeralContainers"]] == ["dbg"]
        assert after["metadata"]["uid"] == before["metadata"]["uid"]
        assert after["status"]["podIP"] == before["status"]["podIP"]
        assert after["spec"]["nodeName"] == before["spec"]["nodeName"]
        log = (k.state / "daemon.log").read_text(errors="replace")
        assert "quarantin" not in log.lower() and "ephemeralContainers" not in log
    finally:
        stop(k)
