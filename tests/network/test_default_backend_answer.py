"""A host no Ingress rule takes: the controller's default backend answers, the same bytes in every command.

Given examples/ingress-nginx, when `knetsim route --host unknown.example.com` and `knetsim trace --from
external http://unknown.example.com/` answer, then both give ingress-nginx's default backend's answer
(``ingress.phases.default_backend_answer``): nginx's 404 page, text/html.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from knetsim.cli.main import cli
from knetsim.ingress.phases import default_backend_answer

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "ingress-nginx")


def test_route_and_trace_give_the_default_backends_page() -> None:
    runner = CliRunner()
    routed = json.loads(runner.invoke(cli, ["route", "-f", EXAMPLE, "--host", "unknown.example.com", "-o",
                                            "json"]).stdout)["response"]
    traced = json.loads(runner.invoke(cli, ["trace", "-f", EXAMPLE, "--from", "external",
                                            "http://unknown.example.com/", "-o", "json"]).stdout)["reply"]
    expected = default_backend_answer()
    assert routed == {"status": 404, "headers": {"Content-Type": "text/html"}, "body": expected.body}
    assert (traced["status"], traced["headers"], traced["body"]) == (404, {"Content-Type": "text/html"},
                                                                   expected.body)
    assert expected.body == ("<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not "
                             "Found</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
