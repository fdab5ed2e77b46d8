"""Calico's evaluation: tiers by order, policies by order, rules in order; Pass, Log, the end-of-tier deny; the rule
fields (protocol, ports, nets, selectors, service accounts, network sets); Kubernetes NetworkPolicy in the default
tier; ClusterNetworkPolicy in kube-admin. Facts from docs.tigera.io ("Get started with policy tiers", the
GlobalNetworkPolicy / NetworkPolicy / Tier / NetworkSet references)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from knetsim import Cluster
from knetsim.cluster.config import ClusterConfig
from knetsim.policy import connections, evaluate
from knetsim.policy.engine import policy_index
from knetsim.policy.matrix import matrix

from .helpers import clusterpolicy, namespace_is, netpol, ns, pod


def sa(name: str) -> Any:
    def tweak(body: dict[str, Any]) -> None:
        body["spec"]["serviceAccountName"] = name
    return tweak


BASE = [ns("prod", env="prod"), ns("dev", env="dev"),
        pod("prod/web", {"app": "web"}, tweak=sa("web-sa")),
        pod("prod/db", {"app": "db"}, ports={"pg": 5432}, node="worker2"),
        pod("prod/api", {"app": "api"}, ports={"http": 8080}),
        pod("dev/tool", {"app": "tool"}),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "web-sa", "namespace": "prod",
                                                                    "labels": {"team": "shop"}}}]


def gnp(name: str, spec: dict[str, Any], group: str = "projectcalico.org/v3") -> dict[str, Any]:
    return {"apiVersion": group, "kind": "GlobalNetworkPolicy", "metadata": {"name": name}, "spec": spec}


def cnp(ref: str, spec: dict[str, Any]) -> dict[str, Any]:
    namespace, _, name = ref.partition("/")
    return {"apiVersion": "projectcalico.org/v3", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def tier(name: str, order: float, default_action: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"order": order}
    if default_action:
        spec["defaultAction"] = default_action
    return {"apiVersion": "projectcalico.org/v3", "kind": "Tier", "metadata": {"name": name}, "spec": spec}


def build(*objects: dict[str, Any], cni: str | None = "calico") -> Any:
    return Cluster.from_yaml(yaml.safe_dump_all([*BASE, *objects], sort_keys=False),
                             config=ClusterConfig(cni=cni)).state


def allowed(s: Any, src: str, dst: str, port: int, protocol: str = "TCP") -> bool:
    return evaluate(s, src, dst, port, protocol).allowed


DENY_ALL = gnp("deny-all", {"selector": "all()", "types": ["Ingress", "Egress"]})


# --- the reproducer ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("cni", ["calico", None])
def test_global_default_deny_denies_on_calico(cni: str | None) -> None:
    v = evaluate(build(DENY_ALL, cni=cni), "prod/web", "prod/api", 8080)
    assert not v.allowed and not v.egress.allowed and not v.ingress.allowed
    assert v.ingress.reason == ("denied at the end of tier `default`: GlobalNetworkPolicy deny-all selects prod/api "
                                "for ingress and no rule matched (Calico's implicit end-of-tier deny)")
    assert v.cni is not None and v.cni.how == ("configured" if cni else "inferred")
    assert v.caveats == ()


def test_the_storage_form_a_live_cluster_returns_is_read_alike() -> None:
    stored = gnp("deny-all", {"selector": "all()", "types": ["Ingress"]}, group="crd.projectcalico.org/v1")
    assert not allowed(build(stored), "prod/web", "prod/api", 8080)


# --- order, Pass, Log, end of tier --------------------------------------------------------------------------------


def test_lower_order_decides_first_and_equal_orders_go_by_name() -> None:
    deny = gnp("b-deny", {"order": 10, "selector": "app == 'api'", "ingress": [{"action": "Deny"}]})
    allow = gnp("a-allow", {"order": 20, "selector": "app == 'api'", "ingress": [{"action": "Allow"}]})
    assert not allowed(build(deny, allow), "prod/web", "prod/api", 8080)
    tied = gnp("a-allow", {"order": 10, "selector": "app == 'api'", "ingress": [{"action": "Allow"}]})
    assert allowed(build(deny, tied), "prod/web", "prod/api", 8080)  # a-allow sorts before b-deny
    unordered = gnp("a-allow", {"selector": "app == 'api'", "ingress": [{"action": "Allow"}]})
    assert not allowed(build(deny, unordered), "prod/web", "prod/api", 8080)  # no order: last


def test_pass_goes_to_the_next_tier_and_an_unselected_tier_is_skipped() -> None:
    objects = [tier("security", 100), tier("platform", 200),
               gnp("pass-prod", {"tier": "security", "selector": "projectcalico.org/namespace == 'prod'",
                                 "ingress": [{"action": "Pass"}]}),
               gnp("dev-only", {"tier": "platform", "selector": "projectcalico.org/namespace == 'dev'",
                                "ingress": [{"action": "Deny"}]})]
    v = evaluate(build(*objects), "prod/web", "prod/api", 8080)
    assert v.allowed  # security passes, platform selects nothing in prod, no default-tier policy: the profile
    assert v.ingress.reason.startswith("passed by GlobalNetworkPolicy `pass-prod` ingress[0] (Pass; tier `security`)")
    assert v.ingress.reason.endswith("no tier decided: the namespace's profile allows it")


def test_end_of_tier_deny_and_a_pass_default_action() -> None:
    only_web = gnp("security.from-web", {"tier": "security", "selector": "app == 'api'", "ingress": [
        {"action": "Allow", "source": {"selector": "app == 'web'"}}]})
    s = build(tier("security", 100), only_web)
    assert allowed(s, "prod/web", "prod/api", 8080)
    v = evaluate(s, "dev/tool", "prod/api", 8080)
    assert not v.allowed and "denied at the end of tier `security`" in v.ingress.reason
    assert "set the tier's defaultAction: Pass" in v.ingress.fix("TCP/8080")
    assert allowed(build(tier("security", 100, "Pass"), only_web), "dev/tool", "prod/api", 8080)


def test_log_goes_on_to_the_next_rule() -> None:
    logged = gnp("log-then-deny", {"selector": "app == 'api'", "ingress": [{"action": "Log"}, {"action": "Deny"}]})
    v = evaluate(build(logged), "prod/web", "prod/api", 8080)
    assert not v.allowed and "ingress[1] (Deny" in v.ingress.reason


def test_types_default_to_egress_only_for_a_policy_with_egress_rules_only() -> None:
    egress_only = gnp("egress-only", {"selector": "app == 'web'", "egress": [{"action": "Deny"}]})
    s = build(egress_only)
    assert not allowed(s, "prod/web", "prod/api", 8080)
    assert allowed(s, "prod/api", "prod/web", 80)  # web's ingress is not selected


# --- Kubernetes NetworkPolicy in the default tier at order 1000 ---------------------------------------------------


K8S_ALLOW_WEB = netpol("prod/api-from-web", {"podSelector": {"matchLabels": {"app": "api"}}, "ingress": [
    {"from": [{"podSelector": {"matchLabels": {"app": "web"}}}]}]})


def test_kubernetes_policy_sits_at_order_1000_in_the_default_tier() -> None:
    early_deny = cnp("prod/deny-web", {"order": 500, "selector": "app == 'api'", "ingress": [
        {"action": "Deny", "source": {"selector": "app == 'web'"}}]})
    late_deny = cnp("prod/deny-web", {"order": 2000, "selector": "app == 'api'", "ingress": [
        {"action": "Deny", "source": {"selector": "app == 'web'"}}]})
    denied = evaluate(build(K8S_ALLOW_WEB, early_deny), "prod/web", "prod/api", 8080)
    assert not denied.allowed
    assert "NetworkPolicy.projectcalico.org `prod/deny-web` ingress[0] (Deny; tier `default`, order 500)" in \
        denied.ingress.reason
    ok = evaluate(build(K8S_ALLOW_WEB, late_deny), "prod/web", "prod/api", 8080)
    assert ok.allowed and "NetworkPolicy `prod/api-from-web` ingress[0] (Allow; tier `default`, order 1000)" in \
        ok.ingress.reason
    # What no rule of the default tier matched is denied at its end, as a Kubernetes-isolated pod is.
    assert not allowed(build(K8S_ALLOW_WEB, late_deny), "dev/tool", "prod/api", 8080)


def test_cluster_network_policy_admin_tier_is_kube_admin() -> None:
    admin_deny = clusterpolicy("no-dev", "Admin", 10, {"namespaces": namespace_is("prod")}, ingress=[
        {"name": "dev", "action": "Deny", "from": [{"namespaces": namespace_is("dev")}]}])
    allow_all = gnp("allow-all", {"selector": "all()", "ingress": [{"action": "Allow"}]})
    v = evaluate(build(admin_deny, allow_all), "dev/tool", "prod/api", 8080)
    assert not v.allowed and "(Calico tier `kube-admin`)" in v.ingress.reason
    # A Calico tier ordered before kube-admin (1,000) decides first.
    early = gnp("early.allow", {"tier": "early", "selector": "all()", "ingress": [{"action": "Allow"}]})
    assert allowed(build(tier("early", 50), early, admin_deny), "dev/tool", "prod/api", 8080)


# --- rule fields --------------------------------------------------------------------------------------------------


def test_protocols_by_name_and_number_and_port_forms() -> None:
    by_number = gnp("api-in", {"selector": "app == 'api'", "ingress": [
        {"action": "Allow", "protocol": 6, "destination": {"ports": ["8000:8100"]}},
        {"action": "Allow", "protocol": "UDP", "destination": {"ports": [53]}},
        {"action": "Allow", "protocol": "ICMP"}]})
    s = build(by_number)
    assert allowed(s, "prod/web", "prod/api", 8080)
    assert not allowed(s, "prod/web", "prod/api", 9000)
    assert allowed(s, "prod/web", "prod/api", 53, "UDP")
    assert not allowed(s, "prod/web", "prod/api", 53)  # an ICMP rule matches no TCP connection
    assert connections(s, "prod/web", "prod/api").describe() == "TCP 8000-8100; UDP 53; other protocols"


def test_named_ports_and_not_ports() -> None:
    named = gnp("db-in", {"selector": "app == 'db'", "ingress": [
        {"action": "Allow", "protocol": "TCP", "destination": {"ports": ["pg"]}}]})
    assert allowed(build(named), "prod/web", "prod/db", 5432)
    not_ports = gnp("api-in", {"selector": "app == 'api'", "ingress": [
        {"action": "Allow", "protocol": "TCP", "destination": {"notPorts": ["1:1023"]}}]})
    s = build(not_ports)
    assert allowed(s, "prod/web", "prod/api", 8080) and not allowed(s, "prod/web", "prod/api", 80)


def test_selectors_namespace_selectors_and_not_selector() -> None:
    policy = gnp("api-in", {"selector": "app == 'api'", "ingress": [
        {"action": "Deny", "source": {"notSelector": "app == 'web'", "namespaceSelector": "env == 'prod'"}},
        {"action": "Allow", "source": {"namespaceSelector": "all()"}}]})
    s = build(policy)
    assert allowed(s, "prod/web", "prod/api", 8080)
    assert not allowed(s, "prod/db", "prod/api", 8080)  # prod, not web: denied
    assert allowed(s, "dev/tool", "prod/api", 8080)  # not in a prod namespace: the next rule
    scoped = cnp("prod/api-in", {"selector": "app == 'api'", "ingress": [
        {"action": "Allow", "source": {"selector": "app == 'tool'"}}]})
    # A namespaced policy's selector sees its own namespace only.
    assert not allowed(build(scoped), "dev/tool", "prod/api", 8080)


def test_service_accounts_in_rules_and_policy_selector() -> None:
    by_name = gnp("api-in", {"selector": "app == 'api'", "ingress": [
        {"action": "Allow", "source": {"serviceAccounts": {"names": ["web-sa"]}}}]})
    s = build(by_name)
    assert allowed(s, "prod/web", "prod/api", 8080) and not allowed(s, "prod/db", "prod/api", 8080)
    by_label = gnp("team-egress", {"serviceAccountSelector": "team == 'shop'", "egress": [{"action": "Deny"}]})
    s = build(by_label)
    assert not allowed(s, "prod/web", "prod/api", 8080) and allowed(s, "prod/db", "prod/api", 8080)


def test_the_add_ons_run_as_their_own_accounts() -> None:
    """A default deny whose one exception is DNS to CoreDNS by its account (``serviceAccounts: {names: [coredns]}``,
    as Calico's guides write it): kubeadm's CoreDNS runs as ``coredns``, so the lookup is allowed and nothing else
    is. Before, the add-ons ran as ``default`` and the exception matched nothing."""
    dns_only = gnp("dns-only", {"selector": "all()", "types": ["Egress"], "egress": [
        {"action": "Allow", "protocol": "UDP", "destination": {"serviceAccounts": {"names": ["coredns"]},
                                                               "ports": [53]}}]})
    s = build(dns_only)
    coredns = sorted(p.key for p in s.pods.values() if p.labels.get("k8s-app") == "kube-dns")
    # The static pods' mirrors name none (a mirror pod may not).
    accounts = {p.raw["spec"].get("serviceAccountName") for p in s.pods.values() if p.namespace == "kube-system"}
    assert accounts == {"coredns", "kube-proxy", "calico-node", "calico-kube-controllers", None}, accounts
    assert coredns and all(allowed(s, "prod/web", c, 53, "UDP") for c in coredns)
    assert not allowed(s, "prod/web", coredns[0], 9153) and not allowed(s, "prod/web", "prod/api", 8080)


def test_nets_and_network_sets() -> None:
    external = {"apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkSet",
                "metadata": {"name": "partners", "labels": {"role": "partner"}}, "spec": {"nets": ["192.0.2.0/24"]}}
    policy = gnp("api-in", {"selector": "app == 'api'", "ingress": [
        {"action": "Allow", "source": {"selector": "role == 'partner'"}},
        {"action": "Allow", "source": {"nets": ["198.51.100.0/24"], "notNets": ["198.51.100.128/25"]}}]})
    s = build(external, policy)
    assert allowed(s, "192.0.2.10", "prod/api", 8080)
    assert allowed(s, "198.51.100.5", "prod/api", 8080)
    assert not allowed(s, "198.51.100.200", "prod/api", 8080)
    assert not allowed(s, "203.0.113.9", "prod/api", 8080)


def test_staged_policies_are_never_enforced() -> None:
    staged = {**DENY_ALL, "kind": "StagedGlobalNetworkPolicy"}
    v = evaluate(build(staged), "prod/web", "prod/api", 8080)
    assert v.allowed and any("staged, never enforced" in n for n in v.notes)


def test_an_invalid_policy_is_named_with_its_field() -> None:
    bad = gnp("typo", {"selector": "app == api", "ingress": [{"action": "Deny"}]})
    index = policy_index(build(bad, DENY_ALL))
    assert any("GlobalNetworkPolicy.projectcalico.org typo: spec.selector: Invalid value: \"app == api\": invalid "
               "selector: expected a quoted string after == (at column 8)" in p for p in index.problems)
    unknown_tier = gnp("lost", {"tier": "nowhere", "selector": "all()"})
    index = policy_index(build(unknown_tier, DENY_ALL))
    assert any("spec.tier: Not found: 'nowhere'" in p for p in index.problems)


# --- the matrix agrees with the verdicts -------------------------------------------------------------------------


def test_matrix_pair_by_pair_agrees_with_policy_check() -> None:
    s = build(tier("security", 100), K8S_ALLOW_WEB,
              gnp("security.dev", {"tier": "security", "selector": "all()", "ingress": [
                  {"action": "Deny", "source": {"namespaceSelector": "env == 'dev'"}}, {"action": "Pass"}]}))
    m = matrix(s, pods=True)
    names = ["prod/web", "prod/db", "prod/api", "dev/tool"]
    for a in names:
        for b in names:
            if a != b:
                assert m.allowed_between(a, b) == connections(s, a, b), (a, b)
    assert m.allowed_between("prod/web", "prod/api").describe() == "All connections"
    assert m.allowed_between("dev/tool", "prod/db").describe() == "No connections"
    assert m.allowed_between("prod/db", "prod/api").describe() == "No connections"


# --- staged policies: what each would change ---------------------------------------------------------------------


def test_policy_check_previews_each_staged_policy() -> None:
    staged_deny = {**gnp("deny-all", {"selector": "all()", "types": ["Ingress"]}),
                   "kind": "StagedGlobalNetworkPolicy"}
    staged_k8s = {"apiVersion": "projectcalico.org/v3", "kind": "StagedKubernetesNetworkPolicy",
                  "metadata": {"name": "api-from-web", "namespace": "prod"},
                  "spec": {"podSelector": {"matchLabels": {"app": "api"}},
                           "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}]}]}}
    s = build(staged_deny, staged_k8s)
    v = evaluate(s, "prod/web", "prod/api", 8080)
    assert v.allowed
    assert [(p.policy, p.allowed, p.changes) for p in v.staged] == [
        ("StagedGlobalNetworkPolicy deny-all", False, True),
        ("StagedKubernetesNetworkPolicy prod/api-from-web", True, False)]
    assert v.staged[0].text() == (
        "StagedGlobalNetworkPolicy deny-all (staged, not enforced) would make it DENIED: ingress of prod/api: denied "
        "at the end of tier `default`: GlobalNetworkPolicy deny-all selects prod/api for ingress and no rule matched "
        "(Calico's implicit end-of-tier deny)")
    tool = evaluate(s, "dev/tool", "prod/api", 8080)
    assert [(p.allowed, p.changes) for p in tool.staged] == [(False, True), (False, True)]
    assert tool.to_dict()["staged"][1]["policy"] == "StagedKubernetesNetworkPolicy prod/api-from-web"


def test_a_staged_delete_previews_the_policy_gone() -> None:
    deny = gnp("deny-api", {"selector": "app == 'api'", "ingress": [{"action": "Deny"}]})
    delete = {**gnp("deny-api", {"stagedAction": "Delete"}), "kind": "StagedGlobalNetworkPolicy"}
    v = evaluate(build(deny, delete), "prod/web", "prod/api", 8080)
    assert not v.allowed
    assert [(p.allowed, p.changes) for p in v.staged] == [(True, True)]


# --- policy describe ---------------------------------------------------------------------------------------------


def test_policy_describe_names_the_cni_tier_order_and_rules() -> None:
    from knetsim.policy.describe import describe

    s = build(tier("security", 100), K8S_ALLOW_WEB,
              gnp("security.prod", {"tier": "security", "order": 10, "namespaceSelector": "env == 'prod'",
                                    "ingress": [{"action": "Pass", "source": {"namespaceSelector": "env == 'prod'"}},
                                                {"action": "Deny"}]}),
              cnp("prod/db-in", {"order": 100, "selector": "app == 'db'", "ingress": [
                  {"action": "Allow", "protocol": "TCP", "source": {"selector": "app == 'web'"},
                   "destination": {"ports": ["pg"]}}]}))
    (gnp_text,) = describe(s, "security.prod", "globalnetworkpolicy")
    text = gnp_text.text()
    assert "Tier:         security (tier order 100)" in text
    assert "Selector:     all(); namespaceSelector env == \"prod\"" in text
    assert "Applies to:   3 pod(s): prod/api, prod/db, prod/web" in text
    assert "Rule 1 (spec.ingress[0]): Pass from namespaceSelector env == \"prod\"" in text
    (np_text,) = describe(s, "db-in", "prod")
    doc = np_text.to_dict()
    assert (doc["kind"], doc["tier"], doc["order"], doc["cni"]) == (
        "NetworkPolicy.projectcalico.org", "default", 100.0, "CNI Calico (cluster config)")
    assert doc["ingress"] == [{"rule": 0, "action": "Allow",
                               "match": "protocol TCP; from selector app == \"web\"; to ports pg"}]
    assert doc["evaluatedAfter"] == []  # the Kubernetes policy sits at 1000, after it


def test_doctor_counts_calico_policies_as_isolating_and_names_unsimulated_fields() -> None:
    from knetsim.policy.lint import lint

    s = build(gnp("prod-in", {"selector": "projectcalico.org/namespace == 'prod'", "ingress": [
        {"action": "Allow", "http": {"methods": ["GET"]}}]}))
    loose = [f.subject for f in lint(s) if f.code == "PodsNotIsolated"]
    assert loose == ["Namespace dev"]
    assert any("GlobalNetworkPolicy prod-in: spec.ingress[0].http: not simulated" in n
               for n in evaluate(s, "prod/web", "prod/api", 8080).notes)


def test_matrix_classes_group_alike_pods_and_keep_their_own_pair() -> None:
    # Two replicas alike (labels, namespace, service account): one class, and what one may open on the other is
    # the class's own pair, not "a pod reaching itself".
    twin = pod("prod/api-2", {"app": "api"}, ports={"http": 8080})
    s = build(twin, gnp("api-in", {"selector": "app == 'api'", "ingress": [
        {"action": "Deny", "source": {"selector": "app == 'api'"}}, {"action": "Allow"}]}))
    m = matrix(s, pods=True)
    assert m.allowed_between("prod/api", "prod/api-2").describe() == "No connections"
    assert m.allowed_between("prod/web", "prod/api-2").describe() == "All connections"
    assert m.allowed_between("prod/api", "prod/api-2") == connections(s, "prod/api", "prod/api-2")


def test_calico_docs_pass_action_example() -> None:
    # docs.tigera.io "Get started with policy tiers", the Pass action rule example: tier devops (order 300), a
    # policy that denies stage pods' traffic with non-stage pods and passes the rest to the next tier.
    stage = [pod("prod/stage-a", {"env": "stage"}), pod("prod/stage-b", {"env": "stage"}, ports={"http": 80})]
    policy = gnp("devops.stage-env", {"tier": "devops", "order": 255, "selector": 'env == "stage"',
                                      "ingress": [{"action": "Deny", "source": {"selector": 'env != "stage"'}},
                                                  {"action": "Pass"}],
                                      "egress": [{"action": "Deny", "destination": {"selector": 'env != "stage"'}},
                                                 {"action": "Pass"}],
                                      "types": ["Ingress", "Egress"]})
    s = build(*stage, tier("devops", 300), policy)
    assert allowed(s, "prod/stage-a", "prod/stage-b", 80)  # passed on; no later tier selects them: the profile
    assert not allowed(s, "prod/web", "prod/stage-b", 80)
    assert not allowed(s, "prod/stage-a", "prod/web", 80)
    assert allowed(s, "prod/web", "prod/api", 8080)  # not selected: the devops tier is skipped


def test_lint_finds_a_selector_typo_and_a_pass_into_the_profile() -> None:
    from knetsim.policy.lint import lint

    typo = gnp("db-in", {"selector": "app == 'dbb'", "ingress": [{"action": "Allow"}]})
    passing = gnp("sec.pass", {"tier": "sec", "selector": "app == 'web'", "ingress": [{"action": "Pass"}]})
    found = {(f.code, f.subject): f for f in lint(build(tier("sec", 10), typo, passing))}
    nothing = found[("CalicoSelectorMatchesNothing", "GlobalNetworkPolicy db-in")]
    assert nothing.message == ('selects no pod right now (selector app == "dbb"): no pod has app=dbb; '
                               "did you mean app=db?")
    assert found[("CalicoPassToProfile", "GlobalNetworkPolicy sec.pass")].message.startswith(
        "passes ingress of prod/web (and maybe others) to later tiers, where no policy selects it")


def test_lint_finds_a_rule_no_packet_reaches() -> None:
    """A catch-all Deny of a lower order decides every ingress of prod/web before the Allow of the later policy;
    a catch-all Log goes on, and a catch-all of other pods hides nothing."""
    from knetsim.policy.lint import lint

    deny_first = gnp("deny-web", {"order": 10, "selector": "app == 'web'", "ingress": [{"action": "Deny"}]})
    allow_later = gnp("allow-api-to-web", {"order": 20, "selector": "app == 'web'",
                                           "ingress": [{"action": "Allow", "source": {"selector": "app == 'api'"}}]})
    s = build(deny_first, allow_later)
    shadowed = [f for f in lint(s) if f.code == "CalicoRuleShadowed"]
    assert [(f.subject, f.message) for f in shadowed] == [(
        "GlobalNetworkPolicy allow-api-to-web",
        "spec.ingress[0] (Allow) is never reached: spec.ingress[0] (Deny) in GlobalNetworkPolicy deny-web, which "
        "comes first in tier `default`, matches every packet of the same pods")]
    assert not allowed(s, "prod/api", "prod/web", 80)  # what the finding says: the Allow never applies
    logging = gnp("deny-web", {"order": 10, "selector": "app == 'web'", "ingress": [{"action": "Log"}]})
    other_pods = gnp("deny-web", {"order": 10, "selector": "app == 'db'", "ingress": [{"action": "Deny"}]})
    for first in (logging, other_pods):
        assert not [f for f in lint(build(first, allow_later)) if f.code == "CalicoRuleShadowed"]


def test_lint_names_a_tier_whose_end_of_tier_deny_hides_later_policies() -> None:
    """Tier security (no defaultAction: Deny) lets monitoring reach prod/web; the Kubernetes policy that admits
    prod/api in the default tier never sees api's traffic, which security drops at its end. With defaultAction
    Pass, the later policy decides and no finding is left."""
    from knetsim.policy.lint import lint

    security = gnp("security.web-monitoring", {"tier": "security", "order": 10, "selector": "app == 'web'",
                                               "ingress": [{"action": "Allow",
                                                            "source": {"selector": "app == 'monitoring'"}}]})
    api_to_web = netpol("prod/api-to-web", {"podSelector": {"matchLabels": {"app": "web"}},
                                            "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "api"}}}]}]})
    s = build(tier("security", 100), security, api_to_web)
    assert not allowed(s, "prod/api", "prod/web", 80)
    [finding] = [f for f in lint(s) if f.code == "CalicoTierEndDeny"]
    assert (finding.subject, finding.severity) == ("Tier.projectcalico.org security", "warning")
    assert finding.message == (
        "its policies select prod/web for ingress, and ingress none of their rules match is denied at the end of the "
        "tier (defaultAction Deny, a Tier's default): it never reaches the later NetworkPolicy prod/api-to-web")
    assert finding.fix.startswith("if the later tiers should decide, set spec.defaultAction: Pass on Tier security")
    passing = build(tier("security", 100, "Pass"), security, api_to_web)
    assert allowed(passing, "prod/api", "prod/web", 80)
    assert not [f for f in lint(passing) if f.code == "CalicoTierEndDeny"]


def test_profile_labels_of_namespace_and_service_account() -> None:
    # Calico's profiles apply the namespace's labels as pcns.<key> and the service account's as pcsa.<key>.
    by_profiles = gnp("prod-shop", {"selector": "pcns.env == 'prod' && pcsa.team == 'shop'",
                                    "egress": [{"action": "Deny"}]})
    s = build(by_profiles)
    assert not allowed(s, "prod/web", "prod/api", 8080)  # web runs as web-sa (team=shop)
    assert allowed(s, "prod/db", "prod/api", 8080)
    named = gnp("by-name", {"selector": "pcns.projectcalico.org/name == 'dev'", "egress": [{"action": "Deny"}]})
    assert not allowed(build(named), "dev/tool", "prod/api", 8080)


def test_calico_policies_in_kube_admin_are_ordered_with_the_cluster_policies_by_priority() -> None:
    admin_deny = clusterpolicy("no-dev", "Admin", 20, {"namespaces": namespace_is("prod")}, ingress=[
        {"name": "dev", "action": "Deny", "from": [{"namespaces": namespace_is("dev")}]}])
    before = gnp("kube-admin.allow-tool", {"tier": "kube-admin", "order": 10, "selector": "app == 'api'",
                                           "ingress": [{"action": "Allow", "source": {"selector": "app == 'tool'",
                                                                                      "namespaceSelector": "all()"}}]})
    after = {**before, "spec": {**before["spec"], "order": 30}}
    v = evaluate(build(admin_deny, before), "dev/tool", "prod/api", 8080)
    assert v.allowed and "tier `kube-admin`, order 10" in v.ingress.reason
    assert not allowed(build(admin_deny, after), "dev/tool", "prod/api", 8080)
    assert connections(build(admin_deny, before), "dev/tool", "prod/api").is_all
    assert connections(build(admin_deny, after), "dev/tool", "prod/api").is_empty


def test_apply_on_forward_leaves_the_policys_pods_as_they_are() -> None:
    """applyOnForward adds forwarded host traffic; the deny-all still selects every pod (only doNotTrack and preDNAT
    make a policy one of host endpoints alone)."""
    deny = gnp("deny-all", {"selector": "all()", "applyOnForward": True, "types": ["Ingress", "Egress"]})
    assert not allowed(build(deny), "prod/web", "prod/api", 8080)
    host_only = gnp("deny-all", {"selector": "all()", "applyOnForward": True, "preDNAT": True, "types": ["Ingress"]})
    assert allowed(build(host_only), "prod/web", "prod/api", 8080)
