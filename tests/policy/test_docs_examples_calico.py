"""Calico's own documentation examples, asked of knetsim as a user pasting them would, on a Calico cluster.

Sources (docs.tigera.io, Calico Open Source and Enterprise): "Enable a default deny policy for Kubernetes pods",
"Global default deny policy best practices" (its deny-app-policy), "Get started with policy tiers" and the Tier
resource reference ("How Policy Is Evaluated"), and the "Policy rules" pages (ports with ranges, nets/notNets,
notPorts); projectcalico/calico ``api/pkg/apis/projectcalico/v3/tier.go`` (defaultAction). Each test restates the
page's scenario in our own words, with the pods the page implies, and the outcome the page says Calico gives.
"""

from __future__ import annotations

from typing import Any

import yaml

from knetsim import Cluster
from knetsim.cluster.config import ClusterConfig
from knetsim.policy import evaluate
from knetsim.policy.lint import lint

from .helpers import netpol, ns, pod

V3 = "projectcalico.org/v3"


def gnp(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": V3, "kind": "GlobalNetworkPolicy", "metadata": {"name": name}, "spec": spec}


def calico_np(ref: str, spec: dict[str, Any]) -> dict[str, Any]:
    namespace, _, name = ref.partition("/")
    return {"apiVersion": V3, "kind": "NetworkPolicy", "metadata": {"name": name, "namespace": namespace},
            "spec": spec}


def tier(name: str, order: float, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": V3, "kind": "Tier", "metadata": {"name": name}, "spec": {"order": order, **spec}}


WORLD = [ns("app"), ns("other"),
         pod("app/web", {"app": "web"}, ports={"http": 80}),
         pod("app/api", {"app": "api"}, ports={"http": 80, "redis": 6379}, node="worker2"),
         pod("other/x", {"app": "x"}, ports={"http": 80})]


def state(*objects: dict[str, Any]) -> Any:
    return Cluster.from_yaml(yaml.safe_dump_all([*WORLD, *objects], sort_keys=False),
                             config=ClusterConfig(cni="calico")).state


def dns_pod(s: Any) -> str:
    return next(key for key, p in sorted(s.pods.items()) if p.labels.get("k8s-app") == "kube-dns")


def dns_rule(protocol: str) -> dict[str, Any]:
    return {"action": "Allow", "protocol": protocol,
            "destination": {"selector": 'k8s-app == "kube-dns"', "ports": [53]}}


# "Global default deny policy best practices": deny-app-policy keeps system namespaces out and lets DNS through.
DENY_APP_POLICY = gnp("deny-app-policy", {
    "namespaceSelector": 'has(projectcalico.org/name) && projectcalico.org/name not in {"kube-system", '
                         '"calico-system", "calico-apiserver"}',
    "types": ["Ingress", "Egress"],
    "egress": [dns_rule("UDP"), dns_rule("TCP")]})


def test_global_default_deny_denies_app_traffic_but_not_dns() -> None:
    s = state(DENY_APP_POLICY)
    assert not evaluate(s, "app/web", "app/api", 80).allowed
    assert not evaluate(s, "other/x", "app/api", 80).allowed
    v = evaluate(s, "app/api", "app/web", 80)
    assert "end of tier `default`" in v.egress.reason and "deny-app-policy" in v.egress.reason
    dns = dns_pod(s)
    assert evaluate(s, "app/web", dns, 53, "UDP").allowed and evaluate(s, "app/web", dns, 53, "TCP").allowed
    # The page's point: the policy has no Deny rule; what denies is the end of the default tier.
    assert not [f for f in lint(s) if f.code in ("DNSEgressBlocked", "DNSOverTCPBlocked")]


def test_kubernetes_policies_order_1000_come_before_a_global_policy_without_order() -> None:
    # Kubernetes NetworkPolicy lives in the default tier at order 1000; a policy without order comes last there.
    allow = [netpol("app/web-to-api", {"podSelector": {"matchLabels": {"app": "api"}},
                                       "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}]}]}),
             netpol("app/web-egress", {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Egress"],
                                       "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "api"}}}]}]})]
    s = state(DENY_APP_POLICY, *allow)
    v = evaluate(s, "app/web", "app/api", 80)
    assert v.allowed and "order 1000" in v.ingress.reason
    assert not evaluate(s, "app/api", "app/web", 80).allowed
    # web's NetworkPolicy allows only api; its DNS still gets through, by the global policy after it in the tier.
    assert evaluate(s, "app/web", dns_pod(s), 53, "UDP").allowed


# "Enable a default deny policy for Kubernetes pods": the global default deny by the endpoint's namespace label.
DEFAULT_DENY = gnp("default-deny", {
    "selector": "projectcalico.org/namespace not in  {'kube-system', 'calico-system', 'calico-apiserver'}",
    "types": ["Ingress", "Egress"]})


def test_enable_default_deny_isolates_every_application_pod() -> None:
    s = state(DEFAULT_DENY)
    for src, dst in (("app/web", "app/api"), ("other/x", "app/web"), ("app/api", "other/x")):
        assert not evaluate(s, src, dst, 80).allowed, (src, dst)
    assert not evaluate(s, "app/web", "192.0.2.10", 443).allowed


def test_enable_default_deny_is_named_by_doctor_as_what_blocks_dns() -> None:
    # This page's policy has no DNS rule: every application pod's lookups fail. Before, doctor only looked at pods
    # a Kubernetes NetworkPolicy isolates and said nothing here.
    s = state(DEFAULT_DENY)
    blocked = {f.subject: f for f in lint(s) if f.code == "DNSEgressBlocked"}
    assert {"Namespace app", "Namespace other"} <= set(blocked)
    assert "GlobalNetworkPolicy default-deny" in blocked["Namespace app"].message


# "Get started with policy tiers" and the Tier reference: a tier that selects the endpoint but takes no action on
# the packet drops it; Pass (a rule, or the tier's defaultAction) hands it to the next tier.

def security_tier_dns_only(*, with_pass: bool = False) -> dict[str, Any]:
    egress = [{"action": "Allow", "protocol": "UDP",
               "destination": {"selector": 'k8s-app == "kube-dns"',
                               "namespaceSelector": 'projectcalico.org/name == "kube-system"', "ports": [53]}}]
    if with_pass:
        egress.append({"action": "Pass"})
    return gnp("allow-dns", {"tier": "security", "selector": "all()", "types": ["Egress"], "egress": egress})


ALLOW_ALL_EGRESS = netpol("app/allow-all-egress", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{}]})


def test_a_tier_that_selects_the_pod_and_matches_nothing_denies_before_the_default_tier() -> None:
    s = state(tier("security", 300), security_tier_dns_only(), ALLOW_ALL_EGRESS)
    v = evaluate(s, "app/web", "app/api", 80)
    assert not v.allowed and "end of tier `security`" in v.egress.reason
    assert evaluate(s, "app/web", dns_pod(s), 53, "UDP").allowed


def test_pass_hands_the_packet_to_the_default_tier() -> None:
    s = state(tier("security", 300), security_tier_dns_only(with_pass=True), ALLOW_ALL_EGRESS)
    v = evaluate(s, "app/web", "app/api", 80)
    assert v.allowed and "Pass" in v.egress.reason and "app/allow-all-egress" in v.egress.reason


def test_a_tiers_default_action_pass_does_the_same() -> None:
    s = state(tier("security", 300, defaultAction="Pass"), security_tier_dns_only(), ALLOW_ALL_EGRESS)
    assert evaluate(s, "app/web", "app/api", 80).allowed
    # The last tier passing it: the endpoint's profile decides, which allows.
    assert evaluate(s, "other/x", "app/api", 80).allowed


def test_a_tier_ordered_after_the_default_tier_comes_after_it() -> None:
    # The default tier's order is fixed at 1,000,000; a tier of a larger order is evaluated after it.
    s = state(tier("late", 2_000_000), gnp("late-deny", {"tier": "late", "selector": "all()", "types": ["Egress"]}),
              ALLOW_ALL_EGRESS)
    assert evaluate(s, "app/web", "app/api", 80).allowed  # the default tier allowed it first
    assert not evaluate(s, "other/x", "app/api", 80).allowed  # nothing in the default tier selects other/x


# "Policy rules": destination ports as numbers and "from:to" ranges, nets with notNets, notPorts.

def test_rule_ports_ranges_nets_and_not_ports() -> None:
    s = state(calico_np("app/api-ingress", {
        "selector": "app == 'api'", "types": ["Ingress"],
        "ingress": [{"action": "Allow", "protocol": "TCP", "source": {"selector": "app == 'web'"},
                     "destination": {"ports": [6379, "8000:8100"]}},
                    {"action": "Allow", "protocol": "TCP",
                     "source": {"nets": ["192.0.2.0/24"], "notNets": ["192.0.2.128/25"]},
                     "destination": {"notPorts": [22]}}]}))
    assert evaluate(s, "app/web", "app/api", 6379).allowed
    assert evaluate(s, "app/web", "app/api", 8050).allowed
    assert not evaluate(s, "app/web", "app/api", 80).allowed
    # A namespaced policy's source selector is its own namespace's pods only.
    assert not evaluate(s, "other/x", "app/api", 6379).allowed
    assert evaluate(s, "192.0.2.5", "app/api", 80).allowed
    assert not evaluate(s, "192.0.2.200", "app/api", 80).allowed
    assert not evaluate(s, "192.0.2.5", "app/api", 22).allowed
