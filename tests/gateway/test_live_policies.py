"""Envoy Gateway's policies on a live Gateway listener, through curl against ``knetsim up``.

Given examples/gateway/policies applied with kubectl (SecurityPolicy, BackendTrafficPolicy and
ClientTrafficPolicy are served kinds, as on a cluster running Envoy Gateway), then curl to the
portal Gateway's loopback listener gets what Envoy's filters answer — the CORS preflight, basic
auth's 401 and RBAC's 403 by the client address X-Forwarded-For carries, the auth service's denial,
the body limit's 413 — and the local rate limit's 429 once a client has used its bucket; with the
ClientTrafficPolicy deleted, X-Forwarded-For no longer names the client.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess

import pytest
from tests.apiserver import conftest as apiserver_conftest
from tests.apiserver.conftest import Live, wait_for
from tests.gateway.test_envoy_policies import POLICIES

live = apiserver_conftest.live
ALICE = "Basic " + base64.b64encode(b"alice:wonderland").decode()


@pytest.fixture(scope="module")
def portal(live: Live) -> int:
    live.kubectl("apply", "-f", str(POLICIES))

    def port() -> int | None:
        info = json.loads((live.state / "ready.json").read_text())
        rows = [r for r in info.get("gateway_listeners") or [] if r["gateway"] == "portal/portal"]
        return int(rows[0]["address"].rsplit(":", 1)[1]) if rows else None

    found = wait_for(port, timeout=90)
    assert found, (live.state / "ready.json").read_text()

    def serving() -> bool:  # the backends are ready once the web app answers (a route without a rate limit)
        return _curl(found, "reports.portal.example", "-u", "alice:wonderland")[0] == 200

    assert wait_for(serving, timeout=90)
    return int(found)


def _curl(port: int, host: str, *extra: str) -> tuple[int, dict[str, str], str]:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    proc = subprocess.run(["curl", "-sS", "-i", "--resolve", f"{host}:{port}:127.0.0.1", *extra,
                           f"http://{host}:{port}/"], capture_output=True, text=True, timeout=20)
    head, _, body = proc.stdout.replace("\r\n", "\n").partition("\n\n")
    lines = head.splitlines()
    if not lines:
        return 0, {}, proc.stderr
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body


def test_the_policy_kinds_are_served(live: Live, portal: int) -> None:
    out = live.kubectl("get", "sp,btp,ctp", "-n", "portal", "-o", "name").stdout.split()
    assert out == ["securitypolicy.gateway.envoyproxy.io/admin-access", "securitypolicy.gateway.envoyproxy.io/api-cors",
                   "securitypolicy.gateway.envoyproxy.io/reports-auth",
                   "backendtrafficpolicy.gateway.envoyproxy.io/api-limits",
                   "clienttrafficpolicy.gateway.envoyproxy.io/portal-client-ip"]


def test_cors_preflight(portal: int) -> None:
    status, headers, body = _curl(portal, "api.portal.example", "-X", "OPTIONS",
                                  "-H", "Origin: https://app.portal.example",
                                  "-H", "Access-Control-Request-Method: POST")
    assert (status, body) == (200, "")
    assert headers["access-control-allow-origin"] == "https://app.portal.example"
    assert (headers["access-control-allow-methods"], headers["access-control-max-age"]) == ("GET,POST", "600")


def test_basic_auth_and_source_ranges(portal: int) -> None:
    status, headers, body = _curl(portal, "admin.portal.example")
    assert (status, body) == (401, "User authentication failed. Missing username and password.")
    # Envoy's realm is the URL the client asked for, as its Host header says it (curl sends the port).
    assert headers["www-authenticate"] == f'Basic realm="http://admin.portal.example:{portal}/"'
    status, headers, _ = _curl(portal, "admin.portal.example", "-H", f"Authorization: {ALICE}",
                               "-H", "X-Forwarded-For: 10.1.2.3")
    assert status == 200 and headers["x-knetsim-backend"].startswith("portal/web-")
    status, _, body = _curl(portal, "admin.portal.example", "-u", "alice:wonderland",
                            "-H", "X-Forwarded-For: 10.66.0.9")
    assert (status, body) == (403, "RBAC: access denied")


def test_external_authorization(portal: int) -> None:
    status, headers, _ = _curl(portal, "reports.portal.example")
    assert (status, headers.get("www-authenticate")) == (401, 'Basic realm="Fake Realm"')
    assert _curl(portal, "reports.portal.example", "-u", "alice:wonderland")[0] == 200


def test_body_limit(portal: int) -> None:
    status, _, body = _curl(portal, "api.portal.example", "-X", "POST", "--data-binary", "x" * 2048,
                            "-H", "X-Forwarded-For: 192.0.2.1")
    assert (status, body) == (413, "Payload Too Large")


def test_the_local_rate_limit_refuses_the_fourth_request_of_a_minute(portal: int) -> None:
    answers: list[tuple[int, dict[str, str], str]] = [
        _curl(portal, "api.portal.example", "-H", "X-Forwarded-For: 192.0.2.77") for _ in range(4)]
    assert [a[0] for a in answers] == [200, 200, 200, 429]
    _, headers, body = answers[-1]
    assert body == "local_rate_limited"
    assert (headers["x-ratelimit-limit"], headers["x-ratelimit-remaining"]) == ("3", "0")
    assert 0 < int(headers["x-ratelimit-reset"]) <= 60
    # Another client has a bucket of its own.
    assert _curl(portal, "api.portal.example", "-H", "X-Forwarded-For: 192.0.2.78")[0] == 200


def test_without_the_client_traffic_policy_x_forwarded_for_no_longer_counts(live: Live, portal: int) -> None:
    # Last in this module: it removes the ClientTrafficPolicy the tests above rely on.
    live.kubectl("delete", "clienttrafficpolicy", "portal-client-ip", "-n", "portal")

    def refused() -> bool:
        return _curl(portal, "admin.portal.example", "-u", "alice:wonderland", "-H", "X-Forwarded-For: 10.1.2.3")[0] \
            == 403

    # The address is the client's own now (not in the allowed 10.0.0.0/8): RBAC refuses it.
    assert wait_for(refused, timeout=30)
