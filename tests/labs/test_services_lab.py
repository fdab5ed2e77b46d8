"""Lab services against ``knetsim up`` with the real kubectl, and the ``knetsim lab`` commands.

Given the lab started fresh, each test types the learner's kubectl commands (the seeds' traps
included: ``create service`` fills ``app: <name>``, a rule path without ``*`` is Exact) and
grades with ``knetsim lab check -o json``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import LiveLab, failed, load_lab, task_result

LAB = load_lab("services")
TASKS = [t.id for t in LAB.tasks]
NS = ("-n", "lab-services")


def test_the_starting_state_passes_no_task(live: LiveLab) -> None:
    live.restart("services")
    report = live.check("services")
    assert [t["passed"] for t in report["tasks"]] == [False] * len(TASKS)
    assert report["knetsim"] is True
    assert report["notes"][0].endswith("(knetsim up; traffic criteria use the server's own simulated state)")


@pytest.fixture(scope="module")
def solved(live: LiveLab) -> dict[str, Any]:
    live.restart("services")
    live.solve(LAB, *TASKS)
    return live.check("services")


@pytest.mark.parametrize("task", TASKS)
def test_reference_solution_gets_full_marks(solved: dict[str, Any], task: str) -> None:
    t = task_result(solved, task)
    assert failed(solved, task) == []
    assert t["score"] == t["maxScore"] == LAB.task(task).max_points


def test_selector_still_mistyped(live: LiveLab) -> None:
    live.restart("services")
    report = live.check("services", "fix-selector")
    bad = failed(report, "fix-selector")
    assert [c["check"] for c in bad] == ["selects", "endpoints", "trace"]
    assert bad[0]["found"] == ("selector app=catalgo selects no pod in lab-services; app=catalgo: nearest existing "
                               "label app=catalog (value differs by 1 character(s))")
    assert bad[0]["expected"].startswith("the 2 pod(s) app=catalog: catalog-")
    assert bad[1]["found"] == "0 ready address(es); selector app=catalgo"
    assert bad[2]["found"].startswith("refused at endpoints: Service lab-services/catalog has no ready endpoint")


def test_create_service_fills_the_selector_with_its_own_name(live: LiveLab) -> None:
    live.restart("services")
    live.kubectl(*NS, "create", "service", "nodeport", "web-np", "--tcp=80:80", "--node-port=30080")
    report = live.check("services", "nodeport")
    bad = failed(report, "nodeport")
    assert [c["check"] for c in bad] == ["selects", "trace"]
    assert bad[0]["found"].startswith("selector app=web-np selects no pod in lab-services; app=web-np: nearest "
                                      "existing label app=web")
    assert bad[0]["found"].endswith("kubectl set selector service web-np app=web fixes it")
    assert bad[1]["description"] == "external connects to http://172.18.0.3:30080"
    assert bad[1]["found"].startswith("refused at endpoints")
    assert task_result(report, "nodeport")["score"] == 2


def test_a_rule_path_without_star_is_exact(live: LiveLab) -> None:
    live.restart("services")
    live.solve(LAB, "clusterip", "multiport")
    live.kubectl(*NS, "create", "ingress", "shop", "--class=nginx", "--rule=shop.lab.example/api=api:80",
                 "--rule=shop.lab.example/*=web:80")
    (bad,) = failed(live.check("services", "ingress"), "ingress")
    assert bad["description"] == "http://shop.lab.example/api/orders is routed to Service lab-services/api port 80"
    assert bad["found"] == ("Service lab-services/web port 80 (Ingress lab-services/shop, path / Prefix) — a path "
                            "without * in kubectl create ingress is Exact: write /api* for Prefix")


def test_an_ingress_in_another_namespace_earns_nothing(live: LiveLab) -> None:
    """Given shop.lab.example served from a namespace the lab never made (someone else's app, or the
    learner's Ingress created without -n), no criterion of the ingress task passes, and each says why."""
    live.restart("services")
    live.solve(LAB, "clusterip", "multiport")
    live.kubectl("create", "namespace", "shop-demo")
    try:
        for args in (["create", "deployment", "api", "--image=nginx:1.27"],
                     ["expose", "deployment", "api", "--port=80"],
                     ["create", "ingress", "shop", "--class=nginx", "--rule=shop.lab.example/*=api:80"]):
            live.kubectl("-n", "shop-demo", *args)
        report = live.check("services", "ingress")
    finally:
        live.kubectl("delete", "namespace", "shop-demo", "--wait=false")
    t = task_result(report, "ingress")
    assert t["score"] == 0, failed(report, "ingress")
    by_check = {c["check"]: c for c in failed(report, "ingress")}
    assert by_check["ingress-class"]["found"].startswith("no Ingress shop in namespace lab-services")
    trace = by_check["trace"]
    assert trace["found"].startswith("connected to shop-demo/api-")
    assert trace["found"].endswith("— but through Ingress shop-demo/shop, outside the lab's namespaces (lab-services): "
                                   "labs grade only their own objects")


def test_a_clusterip_service_is_not_headless(live: LiveLab) -> None:
    live.restart("services")
    live.kubectl(*NS, "expose", "deployment", "web", "--name=web-headless", "--port=80")
    bad = failed(live.check("services", "headless"), "headless")
    assert [c["check"] for c in bad] == ["service", "dns"]
    assert bad[0]["found"].startswith("type ClusterIP, clusterIP 10.")
    assert bad[0]["found"].endswith("(clusterIP is immutable: delete the Service and create it with clusterIP: None)")
    assert bad[1]["found"].startswith("A 10.") and "10.244." not in bad[1]["found"]


def test_numeric_target_ports_work_but_are_not_named(live: LiveLab) -> None:
    live.restart("services")
    live.kubectl(*NS, "create", "service", "clusterip", "api", "--tcp=80:8080", "--tcp=9090:9090")
    bad = failed(live.check("services", "multiport"), "multiport")
    assert [c["description"] for c in bad] == [
        "Service lab-services/api port 80 named http reaches the pods' container port 8080 through a named targetPort",
        "Service lab-services/api port 9090 named metrics reaches the pods' container port 9090 through a named "
        "targetPort",
    ]
    assert bad[0]["found"] == "no port 80 named http (ports: 80-8080 80/TCP, 9090-9090 9090/TCP)"


# --- the commands ------------------------------------------------------------------------------


def test_lab_list_names_every_lab(live: LiveLab) -> None:
    out = live.lab("list")
    assert out.exit_code == 0
    lines = out.output.splitlines()
    assert lines[0].split() == ["NAME", "NAMESPACE", "TASKS", "POINTS", "TITLE"]
    assert [line.split()[0] for line in lines[1:]] == ["services", "netpol", "cluster-policy", "debug-service",
                                                       "gateway", "ingress-classes"]


def test_start_prints_the_tasks_and_check_exits_1_until_done(live: LiveLab) -> None:
    live.lab("reset", "services")
    out = live.lab("start", "services")
    assert out.exit_code == 0
    assert "namespace/lab-services created" in out.output
    assert "deployment/web created (namespace lab-services)" in out.output
    assert "1. [clusterip] ClusterIP Service for web  (5 points)" in out.output
    # Starting again replaces what is there.
    assert "deployment/web replaced (namespace lab-services)" in live.lab("start", "services").output
    result = live.lab("check", "clusterip")
    assert result.exit_code == 1
    assert "clusterip  0/5  failed  ClusterIP Service for web" in result.output
    assert "  FAIL  Service lab-services/web has type ClusterIP\n        expected: type ClusterIP\n" \
           "        found:    no Service web in namespace lab-services (Services there: catalog)" in result.output
    live.solve(LAB, "clusterip")
    result = live.lab("check", "clusterip")
    assert result.exit_code == 0, result.output
    assert result.output.endswith("Score: 5/5\n")


def test_status_shows_progress_and_reset_forgets_it(live: LiveLab) -> None:
    live.restart("services")
    live.solve(LAB, "clusterip")
    live.lab("check")
    out = live.lab("status")
    assert out.exit_code == 0
    rows = {tuple(line.split()[:5]) for line in out.output.splitlines()[1:]}
    assert ("services", "clusterip", "passed", "5/5", "5/5") in rows
    assert ("services", "nodeport", "failed", "0/4", "0/4") in rows
    saved = json.loads((live.state / "labs-progress.json").read_text())
    assert saved["current"] == "services"
    assert saved["labs"]["services"]["tasks"]["clusterip"]["passed"] is True
    out = live.lab("reset")
    assert out.output.splitlines() == ["namespace/lab-services deleted"]
    assert live.kubectl("get", "ns", "lab-services", check=False).returncode == 1
    assert "services" not in json.loads((live.state / "labs-progress.json").read_text())["labs"]


def test_hint_prints_hints_and_commands(live: LiveLab) -> None:
    out = live.lab("hint", "nodeport", "--lab", "services")
    assert out.exit_code == 0
    assert out.output.startswith("[nodeport] NodePort Service web-np on 30080\n")
    assert "  1. kubectl create service nodeport takes --node-port, but it does not read any Deployment" in out.output
    assert "  kubectl set selector service web-np app=web" in out.output


@pytest.mark.parametrize(("args", "message"), [
    (["check", "--lab", "services", "nope"], "error: lab services has no task 'nope' (tasks: clusterip, nodeport"),
    (["start", "nope"], "error: no lab named 'nope' (labs: cluster-policy, debug-service, gateway, ingress-classes, "
                          "netpol, services)"),
    (["check", "--lab", "services", "--kubeconfig", "/nonexistent"], "error: kubeconfig /nonexistent: No such file"),
])
def test_bad_input_exits_2(live: LiveLab, args: list[str], message: str) -> None:
    out = live.lab(*args)
    assert out.exit_code == 2
    assert message in out.output
