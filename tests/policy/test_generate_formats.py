"""``knetsim policy generate --format calico|cilium|antrea``: least privilege in the CNI's own dialect, proven
under that CNI.

The shop's intended connections (tests/policy/test_generate.py's) become one policy per workload of the CNI's
own kind: a Calico projectcalico.org/v3 NetworkPolicy (selector language, types, Allow rules, an order; the
default tier's end-of-tier deny does the rest), a cilium.io/v2 CiliumNetworkPolicy (endpointSelector,
fromEndpoints, toPorts; DNS through the DNS proxy with rules.dns), an Antrea crd.antrea.io/v1beta1
NetworkPolicy (application tier, priority, appliedTo, Allow rules, then Drop). Each is proven by knetsim's
engine for that CNI: every intended connection allowed, nothing else but DNS; and each, loaded into a cluster
with that CNI, answers ``policy check`` as intended.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.conftest import EXAMPLES
from tests.helpers import knetsim as run

from knetsim import Cluster
from knetsim.cluster.config import ClusterConfig
from knetsim.policy import evaluate
from knetsim.policy.generate_dialects import calico_selector

from .test_generate import INTENDED

SHOP = EXAMPLES / "shop"
PROOF = ("proof: 8 pair(s): 5 exactly as observed, 3 with more for the reason given, 0 with more for no reason, "
         "0 with an observed connection denied")
KINDS = {"calico": ("projectcalico.org/v3", "NetworkPolicy"), "cilium": ("cilium.io/v2", "CiliumNetworkPolicy"),
         "antrea": ("crd.antrea.io/v1beta1", "NetworkPolicy")}


@pytest.fixture(scope="module")
def intended(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("formats") / "intended.yaml"
    path.write_text(INTENDED)
    return path


def generate(intended: Path, fmt: str, output: str = "yaml") -> Any:
    result = run("policy", "generate", "-f", str(SHOP), "--connections", str(intended), "--format", fmt,
                 "-o", output)
    assert result.exit_code == 0, result.output
    return result


def by_name(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(d for d in docs if d["metadata"]["name"] == f"{name}-least-privilege")


@pytest.mark.parametrize("fmt", ["calico", "cilium", "antrea"])
def test_the_yaml_parses_as_the_cnis_kind_and_the_proof_holds_on_that_cni(intended: Path, fmt: str) -> None:
    result = generate(intended, fmt)
    docs = list(yaml.safe_load_all(result.stdout))
    assert [(d["apiVersion"], d["kind"], d["metadata"]["namespace"], d["metadata"]["name"]) for d in docs] == [
        (*KINDS[fmt], "shop", f"{name}-least-privilege") for name in ("api", "db", "web")]
    assert PROOF in result.stderr


@pytest.mark.parametrize("fmt", ["calico", "cilium", "antrea"])
def test_the_json_proof_pairs_are_exactly_the_intended_connections(intended: Path, fmt: str) -> None:
    doc = json.loads(generate(intended, fmt, "json").stdout)
    assert doc["proof"]["holds"]
    verdicts = {(p["from"], p["to"]): p["verdict"] for p in doc["proof"]["pairs"]}
    assert verdicts[("shop/web[Deployment]", "shop/api[Deployment]")] == "exact"
    assert verdicts[("shop/api[Deployment]", "shop/db[StatefulSet]")] == "exact"
    assert verdicts[("203.0.113.0/24", "shop/web[Deployment]")] == "exact"
    assert not [k for k, v in verdicts.items() if v in ("MISSING", "MORE")]


@pytest.mark.parametrize("fmt", ["calico", "cilium", "antrea"])
def test_loaded_with_that_cni_policy_check_allows_the_intended_and_denies_the_rest(intended: Path, fmt: str,
                                                                                   tmp_path: Path) -> None:
    out = tmp_path / "generated.yaml"
    out.write_text(generate(intended, fmt).stdout)
    # The shop plus the generated set: validate admits it (exit 0); then the shop without its own NetworkPolicies.
    assert run("validate", "-f", str(SHOP), "-f", str(out)).exit_code == 0
    shop = [str(p) for p in sorted(SHOP.glob("*.yaml"))]
    documents = [d for p in shop for d in yaml.safe_load_all(Path(p).read_text())
                 if d and not (d["kind"] == "NetworkPolicy" and d["apiVersion"].startswith("networking.k8s.io"))]
    documents += list(yaml.safe_load_all(out.read_text()))
    state = Cluster.from_yaml(yaml.safe_dump_all(documents), config=ClusterConfig(cni=fmt)).state
    pods = {p.name.rsplit("-", 2)[0] if p.name.count("-") >= 2 else p.name.rsplit("-", 1)[0]: p.key
            for p in state.pods.values() if p.namespace == "shop"}
    web, api, db = pods["web"], pods["api"], pods["db"]
    assert evaluate(state, web, api, 8080, "TCP").allowed
    assert evaluate(state, api, db, 5432, "TCP").allowed
    assert not evaluate(state, web, db, 5432, "TCP").allowed  # not intended: web never talks to the database
    assert not evaluate(state, api, web, 80, "TCP").allowed
    assert not evaluate(state, db, api, 8080, "TCP").allowed


def test_calico_writes_the_selector_language_an_order_and_allow_rules(intended: Path) -> None:
    docs = list(yaml.safe_load_all(generate(intended, "calico").stdout))
    api = by_name(docs, "api")["spec"]
    assert (api["tier"], api["order"], api["selector"], api["types"]) == (
        "default", 1000, "app == 'api'", ["Ingress", "Egress"])
    assert {r["action"] for r in api["ingress"] + api["egress"]} == {"Allow"}
    from_web = next(r for r in api["ingress"] if r["source"].get("selector") == "app == 'web'")
    assert from_web == {"action": "Allow", "protocol": "TCP", "source": {"selector": "app == 'web'"},
                        "destination": {"ports": ["http"]}}
    assert [r["protocol"] for r in api["egress"][-2:]] == ["UDP", "TCP"]
    assert api["egress"][-1]["destination"]["namespaceSelector"] == "projectcalico.org/name == 'kube-system'"


def test_cilium_dns_goes_through_the_dns_proxy(intended: Path) -> None:
    docs = list(yaml.safe_load_all(generate(intended, "cilium").stdout))
    web = by_name(docs, "web")["spec"]
    assert web["endpointSelector"] == {"matchLabels": {"app": "web"}}
    assert web["enableDefaultDeny"] == {"ingress": True, "egress": True}
    dns = web["egress"][-1]
    assert dns["toEndpoints"] == [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "kube-system",
                                                   "k8s:k8s-app": "kube-dns"}}]
    assert dns["toPorts"][0]["rules"] == {"dns": [{"matchPattern": "*"}]}
    assert {"fromCIDR": ["203.0.113.0/24"], "toPorts": [{"ports": [{"port": "http-web", "protocol": "TCP"}]}]} \
        in web["ingress"]


def test_antrea_writes_the_application_tier_allow_rules_then_drop(intended: Path) -> None:
    docs = list(yaml.safe_load_all(generate(intended, "antrea").stdout))
    db = by_name(docs, "db")["spec"]
    assert (db["tier"], db["priority"]) == ("application", 5)
    assert db["appliedTo"] == [{"podSelector": {"matchLabels": {"app": "db"}}}]
    assert [r["action"] for r in db["ingress"]] == ["Allow", "Drop"]
    assert [r["action"] for r in db["egress"]] == ["Allow", "Drop"]  # DNS, then the rest dropped


def test_tier_and_format_together_is_exit_2(intended: Path) -> None:
    result = run("policy", "generate", "-f", str(SHOP), "--connections", str(intended), "--format", "calico",
                 "--tier", "admin")
    assert result.exit_code == 2
    assert "give one of them" in result.stderr


@pytest.mark.parametrize(("selector", "expressions", "text"), [
    ((("app", "web"),), (), "app == 'web'"),
    ((), (("tier", "In", ("a", "b")),), "tier in {'a', 'b'}"),
    ((("app", "web"),), (("canary", "DoesNotExist", ()),), "app == 'web' && !has(canary)"),
    ((), (), "all()"),
])
def test_a_kubernetes_selector_in_calicos_language(selector: Any, expressions: Any, text: str) -> None:
    class Party:
        pass

    party = Party()
    party.selector, party.expressions = selector, expressions  # type: ignore[attr-defined]
    assert calico_selector(party) == text


@pytest.mark.parametrize("fmt", ["calico", "cilium", "antrea"])
def test_what_is_generated_is_admitted_by_the_cnis_api_and_webhook(intended: Path, fmt: str, tmp_path: Path) -> None:
    """What `policy generate` writes must be applicable: `validate` (the CRDs' fields and types, calico-apiserver's
    checks, Antrea's webhook: two rules of one name were refused there) admits every document with the shop."""
    out = tmp_path / f"{fmt}.yaml"
    out.write_text(generate(intended, fmt).stdout)
    config = tmp_path / "cluster.yaml"
    config.write_text(f"cni: {fmt}\n")
    result = run("validate", "-f", str(SHOP), "-f", str(out), "--cluster-config", str(config))
    assert result.exit_code == 0, result.output
    assert "denied the request" not in result.output and "is invalid" not in result.output
