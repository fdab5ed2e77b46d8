"""The Gateway side of issue 33's auth finding: a SecurityPolicy ``extAuth`` whose auth Service runs a program
knetsim does not know. Its verdict cannot be simulated, so the answer says so ("unverified", in the summary and a
note) instead of presenting a 200 the auth service never gave; with httpbin (known) the verdict is simulated
(examples/gateway/policies: /basic-auth/alice/wonderland answers 200 only to alice).
"""

from __future__ import annotations

import base64
from pathlib import Path

from knetsim import Cluster
from knetsim.gateway import route
from knetsim.model.http import HTTPRequest

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "examples" / "gateway" / "policies"
ALICE = "Basic " + base64.b64encode(b"alice:wonderland").decode()


def _cluster(image: str | None = None) -> Cluster:
    text = "\n---\n".join(p.read_text(encoding="utf-8") for p in sorted(POLICIES.glob("*.yaml")))
    if image is not None:
        assert "image: kennethreitz/httpbin" in text
        text = text.replace("image: kennethreitz/httpbin", f"image: {image}")
    return Cluster.from_yaml(text, filename="policies.yaml")


def _reports(c: Cluster, *headers: tuple[str, str]):  # type: ignore[no-untyped-def]
    return route(c.state, "portal/portal", HTTPRequest("reports.portal.example", "/", headers=headers))


def test_a_known_auth_service_decides() -> None:
    c = _cluster()
    assert _reports(c).http_status == 401
    allowed = _reports(c, ("Authorization", ALICE))
    assert allowed.proxied and "unverified" not in allowed.summary


def test_an_unknown_auth_program_is_said_to_be_unverified() -> None:
    c = _cluster("registry.example.com/acme/authz:3.1")
    result = _reports(c)
    assert result.proxied, result.summary  # followed as if allowed: the only way to show the rest
    assert "unverified" in result.summary
    [note] = [n for n in result.notes if "unverified" in n]
    assert "does not know" in note and "401 or 403" in note
    assert "unverified" in result.answer().explanation


def test_the_live_listener_says_it_on_the_answer() -> None:
    """The Gateway listener of knetsim up (driven in-process): the 200 carries x-knetsim-unverified."""
    import asyncio

    from knetsim.daemon.gatewaylisteners import GatewayListeners

    class Server:
        def __init__(self) -> None:
            self.state = _cluster("registry.example.com/acme/authz:3.1").state
            self.state_listeners: list = []

        async def settle(self) -> None:
            return None

    listeners = GatewayListeners(Server())

    async def ask() -> object:
        try:
            return await listeners._answer_http("portal/portal", 80, "http", "GET", "/",
                                                [("host", "reports.portal.example")], None, None, "HTTP/1.1")
        finally:
            await listeners.close()
    answer = asyncio.run(ask())
    assert answer is not None and answer.status == 200  # type: ignore[attr-defined]
    [value] = [v for n, v in answer.headers if n == "x-knetsim-unverified"]  # type: ignore[attr-defined]
    assert "does not know" in value
