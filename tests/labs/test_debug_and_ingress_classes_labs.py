"""Labs debug-service and ingress-classes against ``knetsim up`` with the real kubectl.

Given each lab started fresh, the reference solutions get full marks, and a half-done repair
or a second default class loses exactly the criteria that describe it.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import LiveLab, failed, load_lab, task_result

DEBUG = load_lab("debug-service")
CLASSES = load_lab("ingress-classes")


@pytest.mark.parametrize("lab", [DEBUG, CLASSES], ids=lambda lab: lab.name)
def test_the_starting_state_passes_no_task(live: LiveLab, lab: Any) -> None:
    live.restart(lab.name)
    report = live.check(lab.name)
    assert [t["passed"] for t in report["tasks"]] == [False] * len(lab.tasks)


@pytest.fixture(scope="module")
def solved(live: LiveLab) -> dict[str, dict[str, Any]]:
    out = {}
    for lab in (DEBUG, CLASSES):
        live.restart(lab.name)
        live.solve(lab, *[t.id for t in lab.tasks])
        out[lab.name] = live.check(lab.name)
    # Both labs stay in place together: their namespaces are disjoint.
    return out


@pytest.mark.parametrize(("lab", "task"), [(lab.name, t.id) for lab in (DEBUG, CLASSES) for t in lab.tasks])
def test_reference_solution_gets_full_marks(solved: dict[str, dict[str, Any]], lab: str, task: str) -> None:
    report = solved[lab]
    t = task_result(report, task)
    assert failed(report, task) == []
    assert t["score"] == t["maxScore"] == load_lab(lab).task(task).max_points


def test_not_ready_pods_are_named_with_the_probe_that_fails(live: LiveLab) -> None:
    live.restart("debug-service")
    bad = failed(live.check("debug-service", "not-ready"), "not-ready")
    assert [c["check"] for c in bad] == ["pods-ready", "endpoints"]
    assert bad[0]["found"].startswith("0 of 2 Ready; shop-")
    assert "readiness probe httpGet of container 'shop' targets port 8081, where nothing listens" in bad[0]["found"]
    assert ", 2 not ready: 10.244." in bad[1]["found"]


def test_ready_pods_behind_the_wrong_target_port_are_refused(live: LiveLab) -> None:
    live.restart("debug-service")
    live.solve(DEBUG, "not-ready")
    report = live.check("debug-service", "target-port")
    bad = failed(report, "target-port")
    assert [c["check"] for c in bad] == ["port", "trace"]
    assert bad[0]["found"].startswith("targetPort 80: shop-")
    assert "resolves to 80 (container ports: 8080 (http))" in bad[0]["found"]
    assert bad[1]["found"].startswith("refused at listener:")


def test_a_named_target_port_the_pods_do_not_declare(live: LiveLab) -> None:
    live.restart("debug-service")
    bad = failed(live.check("debug-service", "named-port"), "named-port")
    assert [c["check"] for c in bad] == ["port", "endpoints", "trace"]
    assert "does not declare a port named 'web' (container ports: 8080 (http))" in bad[0]["found"]
    assert bad[1]["found"].startswith("0 ready address(es), 2 without any port (10.244.")


def test_two_default_classes_are_one_too_many(live: LiveLab) -> None:
    live.restart("ingress-classes")
    live.solve(CLASSES, "create-class", "default-class")
    live.kubectl("annotate", "ingressclass", "nginx", "ingressclass.kubernetes.io/is-default-class=true")
    try:
        bad = failed(live.check("ingress-classes", "default-class"), "default-class")
    finally:
        live.kubectl("annotate", "ingressclass", "nginx", "ingressclass.kubernetes.io/is-default-class-")
    assert [c["check"] for c in bad] == ["ingressclass"]
    assert bad[0]["found"].startswith("2 default classes: internal, nginx")


def test_fixing_the_annotation_typo_is_not_the_current_way(live: LiveLab) -> None:
    live.restart("ingress-classes")
    live.kubectl("-n", "lab-ingress", "annotate", "ingress", "legacy", "kubernetes.io/ingress.class=nginx",
                 "--overwrite")
    report = live.check("ingress-classes", "legacy")
    bad = failed(report, "legacy")
    assert [c["check"] for c in bad] == ["ingress-class", "no-class-annotation"]
    assert bad[0]["found"].endswith("(through annotation, not spec.ingressClassName)")
    assert bad[1]["found"] == "kubernetes.io/ingress.class: nginx"
    assert task_result(report, "legacy")["score"] == 1  # the route itself works


def test_reset_removes_the_cluster_scoped_class(live: LiveLab) -> None:
    live.restart("ingress-classes")
    live.solve(CLASSES, "create-class")
    out = live.lab("reset", "ingress-classes")
    assert out.output.splitlines() == ["ingressclass/internal deleted", "namespace/lab-ingress deleted"]
    names = live.kubectl("get", "ingressclass", "-o", "name").stdout.split()
    assert names == ["ingressclass.networking.k8s.io/nginx"]
