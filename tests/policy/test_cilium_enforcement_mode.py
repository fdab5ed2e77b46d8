"""Cilium's policy enforcement mode (kube-system/cilium-config ``enable-policy``), as the agent enforces it.

Facts (cilium/cilium Documentation/security/policy/intro.rst, "Policy Enforcement Modes"): ``default`` enforces a
policy on the endpoints it selects; ``always`` enforces on every endpoint even when no rule selects it (what no rule
allows is dropped, both ways); ``never`` enforces on none, even where rules select it (everything is allowed).
Before, knetsim answered every Cilium cluster as ``default``: on an ``always`` cluster it said ALLOWED where the
agent drops, on a ``never`` cluster DENIED where the agent lets everything through.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from knetsim import Cluster
from knetsim.cli.main import cli
from knetsim.cluster.config import ClusterConfig

from .helpers import assert_same_cells, vectorised_and_pairwise

SHOP = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
    *({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "shop", "labels": {"app": name}},
       "spec": {"containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": port}]}]}}
      for name, port in (("web", 80), ("client", 8080), ("db", 5432))),
]
# The web pods take port 80 from the client pods: the only allow rule.
WEB_FROM_CLIENT = {
    "apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy", "metadata": {"name": "web-from-client",
                                                                              "namespace": "shop"},
    "spec": {"endpointSelector": {"matchLabels": {"app": "web"}},
             "ingress": [{"fromEndpoints": [{"matchLabels": {"app": "client"}}],
                          "toPorts": [{"ports": [{"port": "80", "protocol": "TCP"}]}]}]}}
# The Kubernetes policy a Cilium agent translates into its own: client may send to web only.
CLIENT_TO_WEB = {
    "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "client-to-web",
                                                                                "namespace": "shop"},
    "spec": {"podSelector": {"matchLabels": {"app": "client"}}, "policyTypes": ["Egress"],
             "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "web"}}}]}]}}


def cilium_config(mode: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"},
            "data": {"enable-policy": mode, "cluster-name": "default"}}


def write(tmp_path: Path, mode: str | None, *objects: dict[str, Any]) -> list[str]:
    manifests, config = tmp_path / "app.yaml", tmp_path / "cluster.yaml"
    manifests.write_text(yaml.safe_dump_all([*SHOP, *objects, *([cilium_config(mode)] if mode else [])],
                                            sort_keys=False))
    config.write_text("cni: cilium\n")
    return ["-f", str(manifests), "--cluster-config", str(config)]


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def check(files: list[str], src: str, dst: str, port: int) -> Any:
    return run("policy", "check", *files, "--from", f"shop/{src}", "--to", f"shop/{dst}", "--port", str(port),
               "-o", "json")


@pytest.mark.parametrize("mode", [None, "default", "Default"])
def test_default_enforces_on_what_a_policy_selects(tmp_path: Path, mode: str | None) -> None:
    files = write(tmp_path, mode, WEB_FROM_CLIENT)
    assert check(files, "client", "web", 80).exit_code == 0
    assert check(files, "db", "web", 80).exit_code == 1  # web is selected: default deny for its ingress
    assert check(files, "web", "db", 5432).exit_code == 0  # nothing selects db


def test_always_enforces_on_every_endpoint(tmp_path: Path) -> None:
    files = write(tmp_path, "always", WEB_FROM_CLIENT, CLIENT_TO_WEB)
    # client -> web: the client's egress (the Kubernetes policy) and web's ingress (the Cilium policy) both allow.
    allowed = check(files, "client", "web", 80)
    assert allowed.exit_code == 0, allowed.output
    # web -> db: no policy selects either pod, yet both sides are in default deny.
    denied = json.loads(check(files, "web", "db", 5432).output)
    assert denied["allowed"] is False
    mode = "the agent's policy enforcement mode always (kube-system/cilium-config enable-policy)"
    assert denied["egress"]["reason"] == f"isolated by {mode} (default deny); no egress rule matches"
    assert denied["ingress"]["reason"] == f"isolated by {mode} (default deny); no ingress rule matches"
    # client -> db: the client's egress allows web only.
    assert check(files, "client", "db", 5432).exit_code == 1


def test_never_enforces_nothing_and_says_so(tmp_path: Path) -> None:
    deny_all = {"apiVersion": "cilium.io/v2", "kind": "CiliumClusterwideNetworkPolicy",
                "metadata": {"name": "lockdown"}, "spec": {"endpointSelector": {}, "ingress": [{}], "egress": [{}]}}
    files = write(tmp_path, "never", WEB_FROM_CLIENT, CLIENT_TO_WEB, deny_all)
    answer = check(files, "db", "web", 80)
    assert answer.exit_code == 0, answer.output
    # The reason is the mode, not "no policy selects it": three policies select these pods.
    assert json.loads(answer.output)["ingress"]["reason"] == (
        "the Cilium agent enforces no policy (its enforcement mode is never: kube-system/cilium-config "
        "enable-policy): all ingress traffic is allowed")
    caveats = {c["text"].split(":", 1)[0] for c in json.loads(answer.output)["caveats"]}
    assert caveats == {"CiliumNetworkPolicy.cilium.io shop/web-from-client",
                       "CiliumClusterwideNetworkPolicy.cilium.io lockdown",
                       "NetworkPolicy.networking.k8s.io shop/client-to-web"}
    assert check(files, "client", "db", 5432).exit_code == 0
    doctor = run("doctor", "-n", "shop", *files)
    assert "PolicyNotEnforced" in doctor.output and "set enable-policy: default" in doctor.output


def test_a_value_that_is_no_mode_is_named(tmp_path: Path) -> None:
    files = write(tmp_path, "sometimes", WEB_FROM_CLIENT)
    answer = run("policy", "check", *files, "--from", "shop/db", "--to", "shop/web", "--port", "80")
    assert answer.exit_code == 1  # answered as default
    assert ("enable-policy: sometimes is not a policy enforcement mode (default, always, never)"
            in answer.output), answer.output


@pytest.mark.parametrize("mode", ["always", "never"])
def test_the_matrix_agrees_with_the_walk(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    text = yaml.safe_dump_all([*SHOP, WEB_FROM_CLIENT, CLIENT_TO_WEB, cilium_config(mode)], sort_keys=False)
    state = Cluster.from_yaml(text, config=ClusterConfig(cni="cilium")).state
    vectorised, pairwise = vectorised_and_pairwise(state, monkeypatch, pods=True, namespace="shop")
    cells = assert_same_cells(vectorised, pairwise, mode)
    # The matrix lists the connections allowed: web -> db (no policy selects either) only where nothing is enforced.
    assert (("shop/web", "shop/db") in cells) is (mode == "never")
    assert ("shop/client", "shop/web") in cells
