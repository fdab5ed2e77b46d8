"""The Cilium kinds through the CLI: `get ccnp`, `policy check` naming the CNI and the deny rule, `policy describe`
in Cilium's order, `matrix` and `policy lint`.

The objects restate cilium/cilium's docs example ``external-lockdown`` (Documentation/security/policy/
language.rst, "Deny Policies") and the connectivity test's ``client-egress-to-echo-deny.yaml``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from knetsim.cli.main import cli

from .helpers import cnp, ns, pod

OBJECTS = [
    ns("cilium-test"),
    pod("cilium-test/client", {"kind": "client"}),
    pod("cilium-test/echo", {"kind": "echo"}, ports={"http": 8080}),
    {"apiVersion": "cilium.io/v2", "kind": "CiliumClusterwideNetworkPolicy", "metadata": {"name": "external-lockdown"},
     "spec": {"endpointSelector": {}, "ingressDeny": [{"fromEntities": ["world"]}],
              "ingress": [{"fromEntities": ["all"]}]}},
    cnp("cilium-test/client-egress-to-echo-deny", {
        "endpointSelector": {"matchLabels": {"kind": "client"}},
        "egressDeny": [{"toPorts": [{"ports": [{"port": "8080", "protocol": "TCP"}]}],
                        "toEndpoints": [{"matchLabels": {"io.kubernetes.pod.namespace": "cilium-test",
                                                         "kind": "echo"}}]}]}),
]


@pytest.fixture()
def files(tmp_path: Path) -> tuple[str, str]:
    manifests, config = tmp_path / "app.yaml", tmp_path / "cluster.yaml"
    manifests.write_text(yaml.safe_dump_all(OBJECTS, sort_keys=False))
    config.write_text("cni: cilium\n")  # Cilium without its kube-proxy replacement
    return str(manifests), str(config)


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_get_ccnp_offline(files: tuple[str, str]) -> None:
    out = run("get", "ccnp", "-f", files[0])
    assert out.exit_code == 0 and "external-lockdown" in out.output


def test_policy_check_names_the_cni_and_the_deny_rule(files: tuple[str, str]) -> None:
    manifests, config = files
    out = run("policy", "check", "-f", manifests, "--cluster-config", config, "--from", "cilium-test/client",
              "--to", "cilium-test/echo", "--port", "8080")
    assert out.exit_code == 1
    assert ("egress of cilium-test/client: denied by CiliumNetworkPolicy cilium-test/client-egress-to-echo-deny "
            "egressDeny[0].to[0].toPorts.ports[0] (Cilium: a deny rule wins over every allow)") in out.output
    assert "cni: CNI Cilium (cluster config)" in out.output
    world = run("policy", "check", "-f", manifests, "--cluster-config", config, "--from", "192.0.2.1",
                "--to", "cilium-test/echo", "--port", "8080", "-o", "json")
    data = json.loads(world.output)
    assert data["allowed"] is False
    assert data["ingress"]["cilium"]["deniedBy"] == ("CiliumClusterwideNetworkPolicy external-lockdown "
                                                     "ingressDeny[0].from[0]")


def test_policy_describe_in_ciliums_order(files: tuple[str, str]) -> None:
    manifests, config = files
    out = run("policy", "describe", "-f", manifests, "--cluster-config", config, "ccnp/external-lockdown")
    assert out.exit_code == 0
    text = out.output
    assert "Kind:         CiliumClusterwideNetworkPolicy (cilium.io/v2, cluster-scoped)" in text
    assert "CNI:          CNI Cilium (cluster config)" in text
    assert text.index("ingressDeny: dropped") < text.index("ingress: allowed")
    assert "1. Cilium entity 'world'" in text
    deny = run("policy", "describe", "-f", manifests, "--cluster-config", config,
               "cilium-test/client-egress-to-echo-deny", "-o", "json")
    data = json.loads(deny.output)
    assert data["rules"][0]["section"] == "egressDeny"
    assert data["rules"][0]["ports"] == ["TCP port 8080"]
    missing = run("policy", "describe", "-f", manifests, "ccnp/nope")
    assert missing.exit_code == 2 and "ciliumclusterwidenetworkpolicy nope not found" in missing.output


def test_matrix_includes_them(files: tuple[str, str]) -> None:
    manifests, config = files
    out = run("matrix", "-f", manifests, "--cluster-config", config, "--pods", "-n", "cilium-test", "-o", "json")
    data = json.loads(out.output)
    pairs = {(c["from"], c["to"]): c["allowed"] for c in data["connections"]}
    # The deny-only policy puts the client in default deny for egress (the manifest's own note): nothing leaves it.
    assert ("cilium-test/client", "cilium-test/echo") not in pairs
    assert pairs[("cilium-test/echo", "cilium-test/client")] == "all"  # ingress: all, and no deny for a pod
    assert "evaluated under Cilium's deny-before-allow walk over classes of pods alike" in data["notes"]


def test_trace_stops_at_the_deny_rule(tmp_path: Path) -> None:
    from .helpers import service

    objects = [dict(o) for o in OBJECTS]
    objects[-1] = {**objects[-1], "spec": {**objects[-1]["spec"], "egress": [{"toEntities": ["all"]}]}}
    manifests = tmp_path / "app.yaml"
    manifests.write_text(yaml.safe_dump_all([*objects, service("cilium-test/echo", {"kind": "echo"}, 8080, 8080)]))
    config = tmp_path / "cluster.yaml"
    config.write_text("dataplane: ebpf\n")  # Cilium with its kube-proxy replacement
    out = run("trace", "-f", str(manifests), "--cluster-config", str(config), "--from", "cilium-test/client",
              "http://echo.cilium-test:8080/")
    assert ("✗ policy     egress of cilium-test/client: denied by CiliumNetworkPolicy "
            "cilium-test/client-egress-to-echo-deny egressDeny[0].to[0].toPorts.ports[0] (Cilium: a deny rule wins "
            "over every allow) — the packet is dropped") in out.output
    assert "no allow rule overrides a deny: narrow or remove that deny rule" in out.output


def test_describe_a_plain_cilium_policy_without_kube_proxy_replacement(tmp_path: Path) -> None:
    plain = cnp("cilium-test/echo-from-client", {"endpointSelector": {"matchLabels": {"kind": "echo"}},
                                                 "ingress": [{"fromEndpoints": [{"matchLabels": {"kind": "client"}}]}]})
    manifests = tmp_path / "app.yaml"
    manifests.write_text(yaml.safe_dump_all([*OBJECTS[:3], plain]))
    config = tmp_path / "cluster.yaml"
    config.write_text("cni: cilium\n")
    on_cilium = run("policy", "describe", "-f", str(manifests), "--cluster-config", str(config),
                    "cilium-test/echo-from-client")
    assert on_cilium.exit_code == 0 and "not enforced" not in on_cilium.output
    elsewhere = run("policy", "describe", "-f", str(manifests), "cilium-test/echo-from-client")
    assert "Note: not enforced: the data plane is iptables, which has no Cilium" in elsewhere.output


def test_policy_check_allowed_under_the_walk_names_each_rule_once(files: tuple[str, str]) -> None:
    manifests, config = files
    allow_all = cnp("cilium-test/client-egress-all", {"endpointSelector": {"matchLabels": {"kind": "client"}},
                                                      "egress": [{"toEntities": ["all"]}]})
    extra = Path(manifests).with_name("extra.yaml")
    extra.write_text(yaml.safe_dump(allow_all))
    out = run("policy", "check", "-f", manifests, "-f", str(extra), "--cluster-config", config,
              "--from", "cilium-test/client", "--to", "cilium-test/echo", "--port", "9090")
    assert out.exit_code == 0
    assert out.output.count("CiliumNetworkPolicy cilium-test/client-egress-all egress[0]") == 1
    assert ("ingress of cilium-test/echo: allowed by CiliumClusterwideNetworkPolicy external-lockdown "
            "ingress[0].from[0]\n") in out.output


def test_describe_names_a_host_policy_spec_left_out(tmp_path: Path) -> None:
    two = {"apiVersion": "cilium.io/v2", "kind": "CiliumClusterwideNetworkPolicy", "metadata": {"name": "two"},
           "specs": [{"endpointSelector": {"matchLabels": {"kind": "echo"}}, "ingress": [{}]},
                     {"nodeSelector": {}, "ingress": [{"fromEntities": ["cluster"]}]}]}
    manifests = tmp_path / "app.yaml"
    manifests.write_text(yaml.safe_dump_all([*OBJECTS[:3], two]))
    out = run("policy", "describe", "-f", str(manifests), "ccnp/two")
    assert out.exit_code == 0
    assert "Note: specs[1].nodeSelector: host policies (a node's own traffic) are not simulated" in out.output
    assert "Name:         two#specs[0]" in out.output
