"""The live side of test_upstream_auth.py: through ``knetsim up``'s front door (daemon/entry.py), a request behind an
``auth-url`` whose auth service runs an image knetsim does not know is answered — and the answer carries
``X-Knetsim-Unverified`` saying the auth verdict was assumed, not given."""

from __future__ import annotations

import subprocess

import yaml
from tests.apiserver import conftest as apiserver_conftest
from tests.apiserver.conftest import Live, wait_for
from tests.ingress.builders import ingress, path, rule, service

from .test_upstream_auth import _unknown_auth_pod

live = apiserver_conftest.live
HOST = "auth.example.com"


def test_the_live_answer_says_the_auth_verdict_is_unverified(live: Live) -> None:
    docs = [*service("app"), *_unknown_auth_pod(),
            ingress("auth", rule(HOST, path("/", "Prefix", "app")),
                    annotations={"auth-url": "http://authz.default.svc.cluster.local/check"})]
    live.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
    port = live.info["ingress_port"]

    def answered() -> str | None:
        out = subprocess.run(["curl", "-sS", "-i", "-H", f"Host: {HOST}", f"http://127.0.0.1:{port}/"],
                             capture_output=True, text=True, timeout=20).stdout
        return out if out.startswith("HTTP/1.1 200") else None

    out = wait_for(answered, timeout=60, interval=0.5)
    assert out is not None
    [line] = [ln for ln in out.splitlines() if ln.lower().startswith("x-knetsim-unverified:")]
    assert "authz" in line and "401 or 403" in line
