"""The header lines of the answers a proxy writes itself, as a real HTTP client reads them through the entry.

Given `knetsim up` with the Ingresses of test_live_annotations and the Gateway quickstart applied with kubectl,
then Python's http.client (which keeps each header line's name as sent) reads, through the front door:
ingress-nginx's answers with a Date and no Server line (the template clears it), nginx's Content-Type without a
charset (a CORS preflight's exactly as the template sets it), and for a host no rule takes the controller's
default backend's 404 page, byte for byte what the offline `knetsim route` and `trace` answer; Envoy's route
miss on a Gateway listener as an empty 404 with Envoy's lower-case date, server and content-length.
"""

from __future__ import annotations

import http.client
import json
import subprocess
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest

from .conftest import CURL, KUBECTL, Cluster, knetsim_argv, wait_for
from .test_live_annotations import APPS, ingress

pytestmark = pytest.mark.skipif(KUBECTL is None or CURL is None, reason="kubectl and curl are needed")

ROOT = Path(__file__).resolve().parents[2]


def fetch(k: Cluster, host: str, method: str = "GET", headers: dict[str, str] | None = None,
          path: str = "/") -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, the header lines as sent (name case kept, in order), body."""
    port = int(k.info["ingress_port"])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, headers={"Host": host, **(headers or {})})
        resp = conn.getresponse()
        return resp.status, [(n, v) for n, v in resp.msg.raw_items()], resp.read()
    finally:
        conn.close()


def names(lines: list[tuple[str, str]]) -> list[str]:
    return [n for n, _ in lines]


def value(lines: list[tuple[str, str]], name: str) -> str | None:
    return next((v for n, v in lines if n.lower() == name.lower()), None)


def assert_date(text: str | None) -> None:
    assert text is not None and text.endswith(" GMT")
    assert parsedate_to_datetime(text).tzinfo is not None


def test_ingress_nginx_answers_carry_nginx_header_lines(k: Cluster) -> None:
    k.kubectl("apply", "-f", "-", input=APPS + "---" + ingress("internal", "internal.example", {
        "whitelist-source-range": "10.0.0.0/8"}) + "---" + ingress("api", "api.example", {"enable-cors": "true"}))
    k.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")
    wait_for(lambda: fetch(k, "internal.example")[0] == 403)
    status, lines, body = fetch(k, "internal.example")
    assert status == 403
    assert names(lines) == ["Date", "Content-Type", "Content-Length", "Connection"], lines
    assert_date(value(lines, "Date"))
    assert value(lines, "Content-Type") == "text/html"
    assert value(lines, "Content-Length") == str(len(body))
    assert value(lines, "Connection") == "keep-alive"
    assert body.startswith(b"<html>\r\n<head><title>403 Forbidden</title></head>")

    status, lines, body = fetch(k, "api.example", "OPTIONS", {"Origin": "https://app.example"})
    assert status == 204 and body == b""
    assert value(lines, "Content-Type") == "text/plain charset=UTF-8"
    assert value(lines, "Content-Length") == "0"
    assert value(lines, "Access-Control-Allow-Origin") == "*"
    assert value(lines, "Server") is None
    assert_date(value(lines, "Date"))

    # What the backend pod answers comes through nginx too: its Date, no Server line.
    wait_for(lambda: fetch(k, "api.example")[0] == 200)
    status, lines, _ = fetch(k, "api.example")
    assert value(lines, "Server") is None and names(lines)[0] == "Date"

    # curl reads the same lines (-D - dumps them as received; the shell's text mode reads CRLF as a newline).
    dumped = k.sh(f"curl -s -o /dev/null -D - -H 'Host: internal.example' {k.ingress}/").stdout
    assert dumped.startswith("HTTP/1.1 403 Forbidden\nDate: ")
    assert "\nContent-Type: text/html\n" in dumped and "Server:" not in dumped and "charset" not in dumped


def test_a_host_no_rule_takes_gets_the_default_backends_page_everywhere(k: Cluster, tmp_path: Path) -> None:
    status, lines, body = fetch(k, "unknown.example.com")
    assert status == 404
    assert names(lines) == ["Date", "Content-Type", "Content-Length", "Connection"], lines
    assert value(lines, "Content-Type") == "text/html"
    # The offline answers for the same request on an input without that host: the same page.
    env_argv = ["-f", str(ROOT / "examples" / "ingress-nginx")]
    route = subprocess.run(knetsim_argv("route", *env_argv, "--host", "unknown.example.com", "-o", "json"),
                           capture_output=True, text=True, timeout=60)
    trace = subprocess.run(knetsim_argv("trace", *env_argv, "--from", "external", "http://unknown.example.com/",
                                        "-o", "json"), capture_output=True, text=True, timeout=60)
    routed = json.loads(route.stdout)["response"]
    traced = json.loads(trace.stdout)["reply"]
    assert routed["body"].encode() == traced["body"].encode() == body
    assert routed["headers"] == traced["headers"] == {"Content-Type": "text/html"}
    assert b"<hr><center>nginx</center>" in body


GATEWAY = ROOT / "examples" / "gateway" / "quickstart" / "quickstart.yaml"


def test_a_gateway_route_miss_is_envoys_empty_404(k: Cluster) -> None:
    k.kubectl("apply", "-f", str(GATEWAY))
    wait_for(lambda: fetch(k, "www.example.com", path="/get")[0] == 200, timeout=90)
    status, lines, body = fetch(k, "other.example.com", path="/nothing")
    assert (status, body) == (404, b"")
    assert lines[:2] == [("date", lines[0][1]), ("server", "envoy")] and lines[2] == ("content-length", "0"), lines
    assert_date(lines[0][1])
    assert all(n == n.lower() for n in names(lines))
    k.kubectl("delete", "-f", str(GATEWAY), "--wait=false", check=False)
