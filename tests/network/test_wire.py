"""The header lines each writer sends for a traced reply (network.wire), given the date of the moment.

Given a reply written by ingress-nginx, by Envoy (a route miss, Cilium's L7 denial traced offline on
examples/kube-proxy-free) or by a pod's server, then its lines are that writer's: nginx's Date first, its own
fields, Connection, no Server; Envoy's lower-case names in its order with server: envoy; a pod's own headers
then Date and Content-Length.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from knetsim.cli.main import cli
from knetsim.network.trace import Reply
from knetsim.network.wire import header_lines

KPR = Path(__file__).resolve().parents[2] / "examples" / "kube-proxy-free"
DATE = "Fri, 04 Dec 2026 18:00:00 GMT"


def test_nginx_writes_its_own_fields_first_and_no_server() -> None:
    reply = Reply(401, "<html>x</html>", {"Content-Type": "text/html", "WWW-Authenticate": 'Basic realm="a"'},
                  "nginx")
    assert header_lines(reply, DATE) == [("Date", DATE), ("Content-Type", "text/html"), ("Content-Length", "14"),
                                         ("Connection", "keep-alive"), ("WWW-Authenticate", 'Basic realm="a"')]
    preflight = Reply(204, "", {"Access-Control-Allow-Origin": "*", "Content-Type": "text/plain charset=UTF-8",
                                "Content-Length": "0"}, "nginx")
    assert header_lines(preflight, DATE, keep_alive=False) == [
        ("Date", DATE), ("Content-Type", "text/plain charset=UTF-8"), ("Content-Length", "0"),
        ("Connection", "close"), ("Access-Control-Allow-Origin", "*")]


def test_nginx_relays_a_backends_answer_without_its_date_and_server() -> None:
    relayed = Reply(200, "ok", {"server": "gunicorn", "date": "Thu, 01 Jan 2026 00:00:00 GMT",
                                "content-type": "text/plain", "x-app": "1"}, "nginx")
    assert header_lines(relayed, DATE) == [("Date", DATE), ("Content-Type", "text/plain"), ("Content-Length", "2"),
                                           ("Connection", "keep-alive"), ("x-app", "1")]


def test_envoys_route_miss_has_no_body() -> None:
    assert header_lines(Reply(404, "", {}, "envoy"), DATE) == [("date", DATE), ("server", "envoy"),
                                                                ("content-length", "0")]


def test_cilium_proxy_denial_as_traced_offline() -> None:
    out = CliRunner().invoke(cli, ["trace", "-f", str(KPR / "app.yaml"), "--cluster-config",
                                   str(KPR / "cluster-config.yaml"), "--from", "default/client", "--method", "POST",
                                   "http://web/", "-o", "json"]).stdout
    reply = json.loads(out)["reply"]
    assert reply == {"status": 403, "body": "Access denied\r\n",
                     "headers": {"content-length": "15", "content-type": "text/plain", "server": "envoy"}}
    lines = header_lines(Reply(403, reply["body"], reply["headers"], "envoy"), DATE)
    assert lines == [("content-length", "15"), ("content-type", "text/plain"), ("date", DATE), ("server", "envoy")]


def test_a_pods_server_keeps_its_headers() -> None:
    assert header_lines(Reply(200, "hi\n", {"content-type": "text/plain"}), DATE) == [
        ("content-type", "text/plain"), ("Date", DATE), ("Content-Length", "3")]


def test_envoy_gateways_own_answers_have_no_body_offline() -> None:
    """examples/gateway/broken: a host no route takes gets the router's 404, a route whose backendRef is not
    permitted (no ReferenceGrant) Envoy Gateway's direct 500; neither has a body."""
    broken = str(Path(__file__).resolve().parents[2] / "examples" / "gateway" / "broken")
    for host, status in (("invoices.store.example", 404), ("billing.store.example", 500)):
        out = CliRunner().invoke(cli, ["trace", "-f", broken, "--from", "external", f"http://{host}/", "-o",
                                       "json"]).stdout
        assert json.loads(out)["reply"] == {"status": status, "body": "", "headers": {}}
