"""Lab cluster-policy against ``knetsim up`` with the real kubectl: the reference solutions get full
marks, the classic tier mistakes lose exactly the criteria that describe them, and the traffic a
learner makes with ``kubectl exec`` obeys the ClusterNetworkPolicies as the grader does.

Given the lab started fresh (reset, start), each test applies policies with ``kubectl apply``
and grades with ``knetsim lab check -o json``.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import LiveLab, failed, load_lab, policy_manifest, task_result

LAB = load_lab("cluster-policy")
TASKS = [t.id for t in LAB.tasks]


def _policy(name: str, spec: str) -> str:
    return policy_manifest("policy.networking.k8s.io/v1alpha2", "ClusterNetworkPolicy", f"name: {name}", spec)


def test_the_starting_state_passes_no_task_and_scores_nothing(live: LiveLab) -> None:
    live.restart("cluster-policy")
    report = live.check("cluster-policy")
    assert {t["task"]: (t["passed"], t["score"]) for t in report["tasks"]} == dict.fromkeys(TASKS, (False, 0))
    # The lockdown already blocks what pass-delegate must keep blocked: that earns nothing on its own.
    (blocked, *_) = [c for c in failed(report, "pass-delegate") if c["expected"] == "timeout"]
    assert blocked["found"].endswith("nothing is let through yet, so this earns nothing")


@pytest.fixture(scope="module")
def solved(live: LiveLab) -> dict[str, Any]:
    live.restart("cluster-policy")
    live.solve(LAB, *TASKS)
    return live.check("cluster-policy")


@pytest.mark.parametrize("task", TASKS)
def test_reference_solution_gets_full_marks(solved: dict[str, Any], task: str) -> None:
    t = task_result(solved, task)
    assert failed(solved, task) == []
    assert t["score"] == t["maxScore"] == LAB.task(task).max_points


def test_kubectl_exec_traffic_obeys_the_tiers(live: LiveLab, solved: dict[str, Any]) -> None:
    def wget(namespace: str, pod: str, url: str) -> Any:
        return live.kubectl("-n", namespace, "exec", pod, "--", "wget", "-qO-", "-T", "2", url, check=False)

    ok = wget("lab-cnp-tenant-a", "client", "http://api.lab-cnp-shop:8080")  # Pass, then the shop's policy
    assert ok.returncode == 0 and "api" in ok.stdout
    for namespace, url in (("lab-cnp-tenant-b", "http://api.lab-cnp-shop:8080"),  # the shop's policy says no
                           ("lab-cnp-tenant-a", "http://app.lab-cnp-tenant-b")):  # the Baseline tier says no
        dropped = wget(namespace, "client", url)
        assert dropped.returncode == 1 and "download timed out" in dropped.stderr, dropped
    nc = live.kubectl("-n", "lab-cnp-tenant-a", "exec", "app", "--", "nc", "-zv", "-w", "2", "db.lab-cnp-shop",
                      "5432", check=False)  # the Admin tier's Deny, whatever db-allow-backend admits
    assert nc.returncode == 1
    assert wget("lab-cnp-tenant-a", "client", "http://partner.lab-cnp-tenant-b").returncode == 0


def test_isolation_in_the_admin_tier_overrides_the_tenants_own_networkpolicy(live: LiveLab) -> None:
    live.restart("cluster-policy")
    for t in "abc":
        live.apply(_policy(f"tenant-{t}-isolation", f"""
tier: Admin
priority: 50
subject: {{namespaces: {{matchLabels: {{tenant: {t}}}}}}}
ingress:
  - {{action: Accept, from: [{{namespaces: {{matchLabels: {{tenant: {t}}}}}}}]}}
  - {{action: Deny, from: [{{namespaces: {{matchExpressions: [{{key: tenant, operator: Exists}}]}}}}]}}
"""))
    report = live.check("cluster-policy", "tenant-isolation")
    (bad,) = failed(report, "tenant-isolation")
    assert bad["description"] == "lab-cnp-tenant-a/client connects to http://partner.lab-cnp-tenant-b"
    assert bad["found"].startswith("timeout at policy: ingress of lab-cnp-tenant-b/partner: denied by "
                                   "ClusterNetworkPolicy `tenant-b-isolation` rule #2 (spec.ingress[1]) (Admin tier, "
                                   "priority 50); the NetworkPolicy `partner-from-tenant-a` would have allowed it")
    assert bad["found"].endswith("a Baseline-tier isolation gives way to it, an Admin-tier one does not")


def test_denying_the_tenants_by_name_leaves_a_new_tenant_in(live: LiveLab) -> None:
    live.restart("cluster-policy")
    live.apply(_policy("protect-db", """
tier: Admin
priority: 10
subject: {pods: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: lab-cnp-shop}},
                 podSelector: {matchLabels: {app: db}}}}
ingress:
  - action: Deny
    from: [{namespaces: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In,
                                              values: [lab-cnp-tenant-a, lab-cnp-tenant-b]}]}}]
"""))
    report = live.check("cluster-policy", "admin-deny")
    (bad,) = failed(report, "admin-deny")
    assert bad["description"] == "lab-cnp-tenant-c/app is dropped on the way to tcp://db.lab-cnp-shop:5432"
    assert bad["found"].startswith("connected to lab-cnp-shop/db ")
    assert task_result(report, "admin-deny")["score"] == 3


def test_a_pass_after_the_deny_changes_nothing_and_an_accept_decides_for_the_shop(live: LiveLab) -> None:
    live.restart("cluster-policy")
    delegate = """
tier: Admin
priority: {priority}
subject: {{namespaces: {{matchLabels: {{kubernetes.io/metadata.name: lab-cnp-shop}}}}}}
ingress:
  - action: {action}
    from: [{{namespaces: {{matchExpressions: [{{key: tenant, operator: Exists}}]}}}}]
    protocols: [{{tcp: {{destinationPort: {{number: 8080}}}}}}]
"""
    live.apply(_policy("shop-api-delegate", delegate.format(priority=40, action="Pass")))
    report = live.check("cluster-policy", "pass-delegate")
    assert task_result(report, "pass-delegate")["score"] == 0  # never reached: the lockdown (30) decides first
    assert failed(report, "pass-delegate")[0]["found"].endswith("a priority number below 30")
    live.apply(_policy("shop-api-delegate", delegate.format(priority=20, action="Accept")))
    report = live.check("cluster-policy", "pass-delegate")
    assert [c["description"] for c in failed(report, "pass-delegate")] == [
        "lab-cnp-tenant-b/client is dropped on the way to http://api.lab-cnp-shop:8080",
        "lab-cnp-tenant-a/app is dropped on the way to http://api.lab-cnp-shop:8080",
    ]
