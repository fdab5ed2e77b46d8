"""The CLI: exit codes (0 allowed / 1 denied / 2 bad input), JSON shapes, describe's AND/OR wording, lint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from tests.helpers import knetsim_raising as run

from knetsim.cli.main import cli
from knetsim.policy.lint import lint

from .helpers import ALLOW_DNS, DEFAULT_DENY_ALL, netpol, ns, pod, service, state

APP = [ns("prod"), ns("alice", user="alice"), pod("prod/api", {"app": "api"}, ports={"http": 8080}),
       pod("prod/web", {"app": "web"}), pod("prod/client", {"role": "client"}),
       pod("alice/tool", {"role": "tool"}),
       netpol("prod/api-in", {"podSelector": {"matchLabels": {"app": "api"}}, "ingress": [{"from": [
           {"namespaceSelector": {"matchLabels": {"user": "alice"}},
            "podSelector": {"matchLabels": {"role": "client"}}},
           {"podSelector": {"matchLabels": {"app": "web"}}}], "ports": [{"port": "http"}]}]})]


@pytest.fixture()
def manifests(tmp_path: Path) -> str:
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump_all(APP, sort_keys=False))
    return str(path)



def test_check_allowed_and_denied_exit_codes(manifests: str) -> None:
    ok = run("policy", "check", "-f", manifests, "--from", "prod/web", "--to", "prod/api", "--port", "8080")
    assert ok.exit_code == 0
    assert ok.output.startswith("ALLOWED  prod/web (10.244.1.")
    assert "allowed by NetworkPolicy prod/api-in ingress[0].from[1].ports[0]" in ok.output
    no = run("policy", "check", "-f", manifests, "--from", "prod/client", "--to", "prod/api", "--port", "8080")
    assert no.exit_code == 1
    assert no.output.startswith("DENIED")
    assert "timeout" in no.output


def test_check_json(manifests: str) -> None:
    result = run("policy", "check", "-f", manifests, "--from", "prod/web", "--to", "prod/api", "--port", "http",
                 "-o", "json")
    data = json.loads(result.output)
    assert data["allowed"] is True and data["port"] == 8080
    assert data["ingress"]["isolated"] is True
    assert data["ingress"]["allowedBy"][0] | {"reason": ""} == {
        "kind": "NetworkPolicy", "policy": "prod/api-in", "direction": "ingress", "rule": 0, "peer": 1,
        "port": 0, "allowed": True, "reason": ""}
    assert data["egress"]["isolated"] is False


def test_check_bad_input_exit_2(manifests: str) -> None:
    result = CliRunner().invoke(cli, ["policy", "check", "-f", manifests, "--from", "prod/nope", "--to",
                                      "prod/api", "--port", "80"])
    assert result.exit_code == 2
    assert "pod prod/nope not found" in result.output


def test_describe_shows_an_and_peer_as_one_line(manifests: str) -> None:
    out = run("policy", "describe", "api-in", "-n", "prod", "-f", manifests).output
    assert "from any one of 2 peer(s):" in out
    assert ("1. pods with role=client in namespaces with user=alice "
            "(one peer: namespace AND pod selector must both match) [0 pod(s)]") in out
    assert "2. pods with app=web in namespace prod [1 pod(s)]" in out
    assert "TCP port named 'http'" in out
    data = json.loads(run("policy", "describe", "prod/api-in", "-f", manifests, "-o", "json").output)
    assert [p["and"] for p in data["ingress"][0]["peers"]] == [True, False]


# --- lint -----------------------------------------------------------------------------


def codes(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return {f.code: f for f in lint(state(*objects))}


def test_lint_default_deny_egress_without_dns_names_the_fix() -> None:
    found = codes([ns("prod"), pod("prod/web"), netpol("prod/deny", DEFAULT_DENY_ALL)])
    f = found["DNSEgressBlocked"]
    assert f.severity == "error" and f.subject == "Namespace prod"
    assert "kind: NetworkPolicy\nmetadata:\n  name: allow-dns-egress\n  namespace: prod" in f.fix
    assert "DNSEgressBlocked" not in codes([ns("prod"), pod("prod/web"), netpol("prod/deny", DEFAULT_DENY_ALL),
                                             netpol("prod/dns", ALLOW_DNS)])


def test_lint_dns_over_tcp() -> None:
    udp_only = {**ALLOW_DNS, "egress": [{**ALLOW_DNS["egress"][0], "ports": [{"protocol": "UDP", "port": 53}]}]}
    found = codes([ns("prod"), pod("prod/web"), netpol("prod/deny", DEFAULT_DENY_ALL), netpol("prod/dns", udp_only)])
    assert "DNSOverTCPBlocked" in found


def test_lint_service_port_instead_of_pod_port() -> None:
    found = codes([ns("prod"), pod("prod/api", {"app": "api"}, ports={"http": 8080}),
                   service("prod/api", {"app": "api"}, 80, "http"),
                   netpol("prod/in", {"podSelector": {"matchLabels": {"app": "api"}},
                                      "ingress": [{"ports": [{"port": 80}]}]})])
    f = found["ServicePortInPolicy"]
    assert "port of Service prod/api" in f.message and "listen on 8080" in f.message
    assert f.fix == "use port: 8080 (or the name 'http') in spec.ingress[0].ports[0]"


def test_lint_selectors_that_select_nothing_name_the_nearest_label() -> None:
    found = codes([ns("prod"), pod("prod/web", {"app": "web"}),
                   netpol("prod/typo", {"podSelector": {"matchLabels": {"app": "wbe"}}, "ingress": [{"from": [
                       {"podSelector": {"matchLabels": {"app": "wbe"}}},
                       {"namespaceSelector": {"matchLabels": {"name": "kube-system"}}}]}]})])
    assert "nearest is app=web" in found["PolicySelectsNothing"].message
    assert "nearest is app=web" in found["PeerSelectsNothing"].message
    assert "kubernetes.io/metadata.name" in found["NamespaceSelectorMatchesNothing"].fix


def test_lint_and_or_readings_show_a_concrete_pair() -> None:
    f = codes(APP)["AndOrReadingsDiffer"]
    details = dict(f.details)
    assert f.subject == "NetworkPolicy prod/api-in"
    # Read as OR, alice's tool pod (any pod of alice) would get in; as written (AND) it does not.
    assert (details["from"], details["to"]) == ("alice/tool", "prod/api")
    assert details["asWritten"] == "No connections" and details["otherReading"] == "TCP 8080"


def test_lint_pods_not_isolated_and_exit_codes(tmp_path: Path) -> None:
    found = codes([ns("prod"), pod("prod/web")])
    assert "PodsNotIsolated" in found and found["PodsNotIsolated"].severity == "info"
    path = tmp_path / "a.yaml"
    path.write_text(yaml.safe_dump_all([ns("prod"), pod("prod/web"), netpol("prod/deny", DEFAULT_DENY_ALL)]))
    result = run("policy", "lint", "-f", str(path))
    assert result.exit_code == 1 and "error    DNSEgressBlocked  Namespace prod:" in result.output
    data = json.loads(run("policy", "lint", "-f", str(path), "-o", "json").output)
    assert set(data["findings"][0]) == {"code", "severity", "subject", "message", "fix", "details"}
