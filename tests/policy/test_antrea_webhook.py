"""What antrea-controller's validating webhook refuses (antrea-io/antrea pkg/controller/networkpolicy/validate.go),
restated as cases: `knetsim validate` refuses each in the webhook's words, as `kubectl apply` is refused on a real
cluster, and every answer leaves the refused object out; what the webhook admits (an ipBlock beside selectors, a
peer by service account) is read as Antrea reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.helpers import knetsim

from knetsim.policy.engine import policy_index

from .test_antrea_reachability import X, acnp, build, dropped, labels, ns_pairs, rule

ACNP_HOOK = 'admission webhook "acnpvalidator.antrea.io" denied the request: '
TIER_HOOK = 'admission webhook "tiervalidator.antrea.io" denied the request: '


def _with(policy: dict[str, Any], **spec: Any) -> dict[str, Any]:
    policy["spec"].update(spec)
    return policy


def tier(name: str, priority: int) -> dict[str, Any]:
    return {"apiVersion": "crd.antrea.io/v1beta1", "kind": "Tier", "metadata": {"name": name},
            "spec": {"priority": priority}}


CASES = [
    ("appliedTo on the policy and a rule",
     [acnp("p", 1, X, ingress=[rule("Drop", appliedTo=X)])],
     ACNP_HOOK + "appliedTo should not be set in both spec and rules"),
    ("appliedTo nowhere", [acnp("p", 1, None, ingress=[rule("Drop")])],
     ACNP_HOOK + "appliedTo needs to be set in either spec or rules"),
    ("appliedTo on one rule of two", [acnp("p", 1, None, ingress=[rule("Drop", appliedTo=X), rule("Allow")])],
     ACNP_HOOK + "appliedTo field should either be set in all rules or in none of them"),
    ("a group beside a selector in appliedTo", [acnp("p", 1, [{"group": "g", **X[0]}], ingress=[rule("Drop")])],
     ACNP_HOOK + "group cannot be set with other peers in appliedTo"),
    ("a group beside a selector in a peer", [acnp("p", 1, X, ingress=[rule("Drop", [{"group": "g", **X[0]}])])],
     ACNP_HOOK + "group cannot be set with other peers in rules"),
    ("namespaces beside namespaceSelector",
     [acnp("p", 1, X, ingress=[rule("Drop", [{"namespaces": {"match": "Self"}, **X[0]}])])],
     ACNP_HOOK + "namespaces and namespaceSelector cannot be set at the same time for a single NetworkPolicyPeer"),
    ("an except outside its cidr",
     [acnp("p", 1, X, ingress=[rule("Drop", [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.1.0.0/24"]}}])])],
     ACNP_HOOK + "except CIDR 10.1.0.0/24 is not a strict subset of CIDR 10.0.0.0/16"),
    ("endPort with a named port",
     [acnp("p", 1, X, ingress=[{"action": "Drop", "ports": [{"port": "serve-80", "endPort": 90}]}])],
     ACNP_HOOK + "if `port` is a string `endPort` cannot be specified"),
    ("endPort below port", [acnp("p", 1, X, ingress=[{"action": "Drop", "ports": [{"port": 90, "endPort": 80}]}])],
     ACNP_HOOK + "`endPort` should be greater than or equal to `port`"),
    ("endPort without port", [acnp("p", 1, X, ingress=[{"action": "Drop", "ports": [{"endPort": 80}]}])],
     ACNP_HOOK + "if `endPort` is specified `port` must be specified"),
    ("two rules of one name",
     [acnp("p", 1, X, ingress=[rule("Drop", name="r"), rule("Allow", name="r")])],
     ACNP_HOOK + "rules names must be unique within the policy"),
    ("a Pass in the baseline tier", [acnp("p", 1, X, tier="baseline", ingress=[rule("Pass")])],
     ACNP_HOOK + "`Pass` action should not be set for Baseline Tier policy rules"),
    ("a tier of mixed case", [acnp("p", 1, X, tier="securityOps", ingress=[rule("Drop")])],
     ACNP_HOOK + "tier securityOps does not exist"),
    ("toServices beside to",
     [acnp("p", 1, X, egress=[rule("Drop", X, None, side="to", toServices=[{"name": "s", "namespace": "x"}])])],
     ACNP_HOOK + "`toServices` cannot be used with `to`, `ports` or `protocols`"),
    ("two identical unnamed rules", [acnp("p", 1, X, ingress=[rule("Drop"), rule("Drop")])],
     ACNP_HOOK + "rules names must be unique within the policy"),
    ("an fqdn of characters DNS has not",
     [acnp("p", 1, X, egress=[rule("Drop", [{"fqdn": "web_1.example.com"}], None, side="to")])],
     ACNP_HOOK + "invalid characters in egress rule fqdn field: web_1.example.com"),
    ("a Reject to a multicast group",
     [acnp("p", 1, X, egress=[rule("Reject", [{"ipBlock": {"cidr": "225.1.2.3/32"}}], None, side="to")])],
     ACNP_HOOK + "multicast does not support action Pass or Reject"),
    ("layer 7 rules while the L7NetworkPolicy gate is off",
     [acnp("p", 1, X, ingress=[rule("Allow", l7Protocols=[{"http": {"path": "/"}}])])],
     ACNP_HOOK + "layer 7 protocols can only be used when L7NetworkPolicy is enabled"),
    ("a Tier on a static tier's priority", [tier("ops", 100)],
     TIER_HOOK + "tier ops priority 100 overlaps with existing Tier"),
    ("a Tier on a reserved priority", [tier("ops", 254)], TIER_HOOK + "tier ops priority 254 is reserved"),
    ("a second Tier on a taken priority", [tier("a-ops", 30), tier("b-ops", 30)],
     TIER_HOOK + "tier b-ops priority 30 overlaps with existing Tier"),
]


@pytest.mark.parametrize(("objects", "said"), [pytest.param(o, s, id=i) for i, o, s in CASES])
def test_validate_refuses_in_the_webhooks_words(tmp_path: Path, objects: list[dict[str, Any]], said: str) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    result = knetsim("validate", "-f", str(path))
    assert result.exit_code == 2, result.output
    assert said in result.output
    assert result.output.count("denied the request") == 1  # the first of two Tiers on one priority is admitted


def test_a_refused_policy_is_left_out_of_every_answer_and_named() -> None:
    s = build(acnp("both", 1, X, ingress=[rule("Drop", appliedTo=X)]))
    assert dropped(s) == set()
    assert any("ClusterNetworkPolicy.crd.antrea.io both: " + ACNP_HOOK + "appliedTo should not be set in both spec "
               "and rules" in p for p in policy_index(s).problems)


def test_a_tier_refused_by_the_webhook_leaves_its_policies_without_a_tier() -> None:
    """Two Tiers on one priority: the webhook admits the first; a policy in the second names a tier that does not
    exist, so it is refused too and drops nothing."""
    s = build(tier("a-ops", 30), tier("b-ops", 30), acnp("in-b", 1, X, tier="b-ops", ingress=[rule("Drop")]))
    problems = policy_index(s).problems
    assert any("Tier.crd.antrea.io b-ops: " + TIER_HOOK + "tier b-ops priority 30 overlaps" in p for p in problems)
    assert any(ACNP_HOOK + "tier b-ops does not exist" in p for p in problems)
    assert dropped(s) == set()
    s = build(tier("a-ops", 30), acnp("in-a", 1, X, tier="a-ops", ingress=[rule("Drop")]))
    assert dropped(s) == ns_pairs("x", "x") | ns_pairs("y", "x") | ns_pairs("z", "x")


def test_an_ip_block_beside_a_selector_is_the_ip_block_alone() -> None:
    """The webhook admits it and Antrea's controller reads the ipBlock and ignores the selectors (crd_utils.go,
    toAntreaPeerForCRD): a Drop from pods of y by an ipBlock that holds no pod drops nothing."""
    s = build(acnp("p", 1, X, ingress=[rule("Drop", [{"ipBlock": {"cidr": "192.0.2.0/24"},
                                                       "namespaceSelector": labels(ns="y")}])]))
    assert dropped(s) == set()


def test_a_service_account_peer_takes_the_pods_running_as_it() -> None:
    """docs/antrea-network-policy.md, "ServiceAccount based selection": y/b runs as `robot`; a Drop into x from
    `y/robot` drops y/b's traffic only (the verdict and the matrix agree: ``dropped`` checks both)."""
    robot = [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot", "namespace": "y"}}]
    policy = acnp("p", 1, X, ingress=[rule("Drop", [{"serviceAccount": {"name": "robot", "namespace": "y"}}])])
    s = build(*robot, policy, account={"y/b": "robot"})
    assert dropped(s) == {("y/b", f"x/{p}") for p in "abc"}
    s = build(*robot, policy)
    assert dropped(s) == set()


def test_the_build_and_validate_refuse_the_same_of_two_tiers_on_one_priority(tmp_path: Path) -> None:
    """The webhook refuses the later of two Tiers on one priority (in `kubectl apply -f` order, not by name); a policy
    finds its Tier wherever the input holds it; the build and `validate` agree (found by review: they did not)."""
    objects = [tier("z-ops", 30), tier("a-ops", 30), acnp("in-z", 1, X, tier="z-ops", ingress=[rule("Drop")])]
    path = tmp_path / "tiers.yaml"
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    result = knetsim("validate", "-f", str(path))
    assert result.exit_code == 2 and result.output.count("denied the request") == 1
    assert TIER_HOOK + "tier a-ops priority 30 overlaps with existing Tier" in result.output
    problems = policy_index(build(*objects)).problems
    assert [p for p in problems if "denied the request" in p] == [
        next(p for p in problems if "Tier.crd.antrea.io a-ops" in p)]
    assert dropped(build(*objects)) == ns_pairs("x", "x") | ns_pairs("y", "x") | ns_pairs("z", "x")
    policy_first = [acnp("early", 1, X, tier="late-tier", ingress=[rule("Drop")]), tier("late-tier", 40)]
    path.write_text(yaml.safe_dump_all(policy_first, sort_keys=False))
    assert knetsim("validate", "-f", str(path)).exit_code == 0


@pytest.mark.parametrize(("peer", "said"), [
    ({"serviceAccount": {}}, "spec.ingress[0].from[0].serviceAccount.name: Required value"),
    ({"ipBlock": {"cidr": "10.0.0.1"}}, 'spec.ingress[0].from[0].ipBlock.cidr: Invalid value: "10.0.0.1": '
                                       'spec.ingress[0].from[0].ipBlock.cidr in body must be of type cidr'),
])
def test_the_schema_refuses_an_empty_account_and_an_address_for_a_cidr(tmp_path: Path, peer: dict[str, Any],
                                                                       said: str) -> None:
    """The CRD's `required: [name, namespace]` and `format: cidr` (Go's ParseCIDR: a prefix length is required); an
    empty serviceAccount peer was read as "any pod" (found by review)."""
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump(acnp("p", 1, X, ingress=[rule("Drop", [peer])]), sort_keys=False))
    result = knetsim("validate", "-f", str(path))
    assert result.exit_code == 2 and said in result.output, result.output
