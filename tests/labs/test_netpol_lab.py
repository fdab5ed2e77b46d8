"""Lab netpol against ``knetsim up`` with the real kubectl: the reference solutions get full marks,
and the classic mistakes lose exactly the criteria that describe them.

Given the lab started fresh (reset, start), each test applies policies with ``kubectl apply``
and grades with ``knetsim lab check -o json``.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import LiveLab, failed, load_lab, policy_manifest, task_result

LAB = load_lab("netpol")
TASKS = [t.id for t in LAB.tasks]


def _policy(name: str, spec: str) -> str:
    return policy_manifest("networking.k8s.io/v1", "NetworkPolicy", f"name: {name}, namespace: lab-netpol", spec)


def test_the_starting_state_passes_no_task(live: LiveLab) -> None:
    live.restart("netpol")
    report = live.check("netpol")
    assert {t["task"]: t["passed"] for t in report["tasks"]} == dict.fromkeys(TASKS, False)
    # Nothing is isolated yet: every "must stay blocked" criterion finds a connection.
    (first,) = [c for c in failed(report, "default-deny") if "stranger" in c["description"]]
    assert first["expected"] == "timeout"
    assert first["found"].startswith("connected to lab-netpol/canary 10.244.")
    # "May connect" criteria earn nothing while nothing is blocked: doing nothing scores 0.
    assert [t["score"] for t in report["tasks"]] == [0] * len(TASKS)
    (door,) = [c for c in failed(report, "from-pods") if "frontend" in c["description"]]
    assert door["found"].endswith("no policy isolates anything yet, so this earns nothing")


@pytest.fixture(scope="module")
def solved(live: LiveLab) -> dict[str, Any]:
    live.restart("netpol")
    live.solve(LAB, *TASKS)
    return live.check("netpol")


@pytest.mark.parametrize("task", TASKS)
def test_reference_solution_gets_full_marks(solved: dict[str, Any], task: str) -> None:
    t = task_result(solved, task)
    assert failed(solved, task) == []
    assert t["score"] == t["maxScore"] == LAB.task(task).max_points


def test_and_written_as_or_lets_in_the_two_pods_or_admits(live: LiveLab) -> None:
    live.restart("netpol")
    live.solve(LAB, "default-deny")
    live.apply(_policy("db-allow-ops-monitor", """
podSelector: {matchLabels: {app: db}}
ingress:
  - from:
      - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: lab-netpol-ops}}
      - podSelector: {matchLabels: {role: monitor}}
    ports: [{protocol: TCP, port: 5432}]
"""))
    report = live.check("netpol", "and")
    bad = failed(report, "and")
    assert [c["description"] for c in bad] == [
        "lab-netpol-ops/toolbox is dropped on the way to tcp://db.lab-netpol:5432",
        "lab-netpol/monitor is dropped on the way to tcp://db:5432",
    ]
    assert all(c["expected"] == "timeout" and c["found"].startswith("connected to lab-netpol/db ") for c in bad)
    assert bad[0]["found"].endswith("the selectors are two peers (OR); put them in one from[] entry")
    assert task_result(report, "and")["score"] == 2


def test_or_written_as_and_blocks_the_frontend_and_the_toolbox(live: LiveLab) -> None:
    live.restart("netpol")
    live.solve(LAB, "default-deny")
    live.apply(_policy("queue-allow", """
podSelector: {matchLabels: {app: queue}}
ingress:
  - from:
      - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: lab-netpol-ops}}
        podSelector: {matchLabels: {role: frontend}}
"""))
    bad = failed(live.check("netpol", "or"), "or")
    assert [c["description"] for c in bad] == [
        "lab-netpol/frontend connects to tcp://queue:5672",
        "lab-netpol-ops/toolbox connects to tcp://queue.lab-netpol:5672",
        "lab-netpol-ops/monitor connects to tcp://queue.lab-netpol:5672",
    ]
    assert all(c["found"].startswith("timeout at policy: ingress of lab-netpol/queue") for c in bad)


def test_egress_without_the_dns_allowance_fails_at_dns(live: LiveLab) -> None:
    live.restart("netpol")
    live.apply(_policy("worker-egress", """
podSelector: {matchLabels: {role: worker}}
policyTypes: [Egress]
egress:
  - to:
      - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: lab-netpol-ops}}
        podSelector: {matchLabels: {app: dashboard}}
    ports: [{protocol: TCP, port: 80}]
"""))
    report = live.check("netpol", "egress-dns")
    bad = failed(report, "egress-dns")
    assert [c["description"] for c in bad] == [
        "lab-netpol/worker connects to http://dashboard.lab-netpol-ops",
        "lab-netpol/worker is dropped on the way to http://echo.lab-netpol-other",
    ]
    assert [c["expected"] for c in bad] == ["connected", "timeout"]
    for c in bad:
        assert c["found"].startswith("dns-timeout at dns: the DNS query from lab-netpol/worker to 10.96.0.10 never "
                                     "gets an answer")
        assert "isolated by NetworkPolicy lab-netpol/worker-egress; no egress rule matches" in c["found"]
    assert bad[0]["found"].endswith("an egress policy must also allow DNS: UDP and TCP 53 to kube-system")


def test_the_service_port_in_the_policy_drops_the_real_traffic(live: LiveLab) -> None:
    live.restart("netpol")
    live.solve(LAB, "default-deny")
    live.apply(_policy("api-allow-frontend", """
podSelector: {matchLabels: {app: api}}
ingress:
  - from: [{podSelector: {matchLabels: {role: frontend}}}]
    ports: [{protocol: TCP, port: 80}]
"""))
    (bad,) = failed(live.check("netpol", "ports"), "ports")
    assert bad["description"] == "lab-netpol/frontend connects to http://api:80"
    assert bad["found"].startswith("timeout at policy: ingress of lab-netpol/api: isolated by NetworkPolicy "
                                   "lab-netpol/api-allow-frontend, NetworkPolicy lab-netpol/default-deny")
    assert bad["found"].endswith("allow the pod port 8080 (or its name http), not the Service port 80")


def test_a_custom_namespace_label_that_does_not_exist_admits_nobody(live: LiveLab) -> None:
    live.restart("netpol")
    live.solve(LAB, "default-deny")
    live.apply(_policy("cache-allow-ops", """
podSelector: {matchLabels: {app: cache}}
ingress:
  - from: [{namespaceSelector: {matchLabels: {name: lab-netpol-ops}}}]
"""))
    bad = failed(live.check("netpol", "from-namespace"), "from-namespace")
    assert [c["description"] for c in bad] == [
        "lab-netpol-ops/monitor connects to tcp://cache.lab-netpol:6379",
        "lab-netpol-ops/toolbox connects to tcp://cache.lab-netpol:6379",
    ]
    assert all(c["found"].startswith("timeout at policy:") for c in bad)


def test_policies_without_a_default_deny_leave_the_canary_open(live: LiveLab) -> None:
    live.restart("netpol")
    live.solve(LAB, "from-pods", "from-namespace", "and", "or", "ports")
    report = live.check("netpol")
    assert [t["task"] for t in report["tasks"] if t["passed"]] == ["from-pods", "from-namespace", "and", "or", "ports"]
    assert task_result(report, "default-deny")["score"] == 0
