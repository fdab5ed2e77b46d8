"""``knetsim verify kernel``: the simulation's verdicts against the kernel, per input and data plane.

Given each example, each of the seeds' scenarios (tests/e2e/seeds.py, with the pods they
talk about) and both kube-proxy modes, then every flow the kernel carries agrees with
``knetsim trace``. A kernel that does something else (a policy table removed by hand) is
reported flow by flow, with exit code 1. The figures these runs print are in docs/kernel.md.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner
from tests.conftest import EXAMPLES, cluster_from
from tests.e2e import seeds
from tests.kernel.conftest import doc_figures, needs_kernel

from knetsim.cli.main import cli
from knetsim.kernel import Topology
from knetsim.kernel.netns import exec_in
from knetsim.kernel.verify import format_report, verify

# The examples docs/kernel.md's agreement table measures (unknown-field is refused before any packet moves).
EXAMPLE_DIRS = ["shop", "cluster-policy", *(f"broken/{p.name}" for p in sorted((EXAMPLES / "broken").iterdir())
                                            if p.is_dir() and p.name != "unknown-field")]

CLIENT = """
---
apiVersion: v1
kind: Pod
metadata: {name: client, labels: {role: client}}
spec: {containers: [{name: c, image: busybox:1.36, command: [sleep, infinity]}]}
"""


def pod(name: str, labels: str, image: str, namespace: str = "default", port: int | None = None) -> str:
    ports = f", ports: [{{containerPort: {port}}}]" if port else ""
    return (f"\n---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}, labels: {labels}}}\n"
            f"spec: {{containers: [{{name: c, image: {image}{ports}}}]}}\n")


SEED_SCENARIOS = {
    "named targetPort and headless": seeds.NAMED_TARGET_PORT + "---\n" + seeds.HEADLESS + CLIENT,
    "default deny and db": seeds.DEFAULT_DENY_AND_DB + pod("db", "{role: db}", "postgres:16")
    + pod("backend", "{role: backend}", "nginx:1.27") + CLIENT,
    "default deny egress": seeds.NAMED_TARGET_PORT + "---\n" + seeds.DEFAULT_DENY_EGRESS + CLIENT,
    "deny egress, allow DNS": seeds.NAMED_TARGET_PORT + "---\n" + seeds.DEFAULT_DENY_EGRESS + "---\n"
    + seeds.ALLOW_DNS_EGRESS + CLIENT,
    "AND and OR": "apiVersion: v1\nkind: Namespace\nmetadata: {name: alice, labels: {user: alice}}\n---\n"
    + seeds.AND_OR + pod("web", "{app: web}", "nginx:1.27") + pod("client", "{role: client}", "busybox:1.36", "alice")
    + pod("other", "{role: other}", "busybox:1.36", "alice") + CLIENT,
}


DOC = EXAMPLES.parent / "docs" / "kernel.md"


def _agree(report, doc_key):
    assert not report.disagree, format_report(report)
    assert (report.flows, report.agree, len(report.disagree)) == doc_figures()[(doc_key, report.dataplane)]


@needs_kernel
@pytest.mark.parametrize("dataplane", ["iptables", "nftables"])
@pytest.mark.parametrize("example", EXAMPLE_DIRS)
def test_examples_agree_with_the_kernel(example, dataplane, no_leftovers):
    from knetsim import Cluster

    _agree(verify(Cluster.from_paths([str(EXAMPLES / example)]).state, dataplane), f"examples/{example}")


@needs_kernel
@pytest.mark.parametrize("dataplane", ["iptables", "nftables"])
@pytest.mark.parametrize("scenario", list(SEED_SCENARIOS))
def test_seed_scenarios_agree_with_the_kernel(scenario, dataplane):
    _agree(verify(cluster_from(SEED_SCENARIOS[scenario]).state, dataplane), f"seeds: {scenario}")


@needs_kernel
def test_a_kernel_that_differs_is_reported(shop):
    """Remove worker2's policy table by hand: the flows it used to drop now connect, and verify says so."""
    with Topology.build(shop.state, "nftables") as topo:
        exec_in(topo.netns_of("node/worker2"), ["nft", "delete", "table", "inet", "knetsim-policy"])
        report = verify(shop.state, "nftables", topology=topo)
    assert report.disagree
    text = format_report(report)
    # The ingress controller's egress is open; db-0's ingress (admits api only) was enforced on worker2.
    bad = next(r for r in report.disagree if r.flow.kind == "pod" and r.flow.host == "10.244.2.3"
               and r.flow.source == "ingress-nginx/ingress-nginx-controller-578587bbb5-6jt9b")
    assert bad.expected.summary.startswith("timeout at policy")
    assert bad.kernel == "connected to shop/db-0"
    assert ("DISAGREE  pod      ingress-nginx/ingress-nginx-controller-578587bbb5-6jt9b → 10.244.2.3:5432/TCP\n"
            "  knetsim: timeout at policy: ingress of shop/db-0:") in text


@needs_kernel
def test_cli_json_and_exit_code():
    result = CliRunner().invoke(cli, ["verify", "kernel", "-f", str(EXAMPLES / "broken" / "selector-typo"),
                                      "--dataplane", "nftables", "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["dataplane"], data["flows"], data["agree"], data["disagree"]) == ("nftables", data["flows"],
                                                                                   data["flows"], [])


@needs_kernel
def test_cli_samples_and_prints_the_sample():
    result = CliRunner().invoke(cli, ["verify", "kernel", "-f", str(EXAMPLES / "shop"), "--max-flows", "5"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1].startswith("Flows:       5 of ") and lines[1].endswith("sampled (lowest hash of each flow's text):")
    assert len([line for line in lines if line.startswith("  ")]) == 5
    again = CliRunner().invoke(cli, ["verify", "kernel", "-f", str(EXAMPLES / "shop"), "--max-flows", "5"])
    assert again.output == result.output  # the same sample, the same report


def test_ebpf_is_refused_clearly():
    result = CliRunner().invoke(cli, ["verify", "kernel", "-f", str(EXAMPLES / "shop"), "--dataplane", "ebpf"])
    assert result.exit_code == 2


@pytest.mark.skipif(shutil.which("setpriv") is None or not hasattr(__import__("os"), "geteuid")
                    or __import__("os").geteuid() != 0, reason="needs root and setpriv to run as another user")
def test_refuses_without_root():
    out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                          "knetsim.cli.main", "verify", "kernel", "-f", str(EXAMPLES / "shop")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "error: knetsim verify kernel cannot run here:" in out.stderr
    assert "root privileges" in out.stderr


@needs_kernel
def test_docs_example_is_real_output():
    text = DOC.read_text()
    block = text.split("```console\n", 1)[1].split("```", 1)[0]
    command, _, expected = block.partition("\n")
    args = command.removeprefix("$ knetsim ").split()
    args[args.index("-f") + 1] = str(EXAMPLES.parent / args[args.index("-f") + 1])
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0 and result.output == expected


def test_docs_list_every_packet_flow_row():
    from tests.dataplane.flows import FLOWS

    figures = doc_figures()
    for plane in ("iptables", "nftables"):
        assert figures[("kube-proxy packet-flow table (tests/dataplane)", plane)] == (len(FLOWS), len(FLOWS), 0)
