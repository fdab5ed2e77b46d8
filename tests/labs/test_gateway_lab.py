"""Lab gateway (CKA: "Use the Gateway API to manage Ingress traffic") against ``knetsim up`` with the real kubectl.

Given the lab started fresh, then no task passes; the reference solutions get full marks, graded by
the status the Gateway controller wrote and by requests through the Gateway; and a cross-namespace
backend without its ReferenceGrant loses exactly the criteria that describe it.
"""

from __future__ import annotations

from .conftest import LiveLab, failed, load_lab, task_result

LAB = load_lab("gateway")


def test_gateway_lab_from_start_to_full_marks(live: LiveLab) -> None:
    live.restart("gateway")
    report = live.check("gateway")
    assert [t["passed"] for t in report["tasks"]] == [False] * len(LAB.tasks)
    live.solve(LAB, "gateway", "host-path", "header-match", "canary")
    # The route first, without the ReferenceGrant: Accepted, but RefNotPermitted and 500.
    live.apply(LAB.task("cross-namespace").solution[0].apply)
    bad = failed(live.check("gateway", "cross-namespace"), "cross-namespace")
    assert [c["check"] for c in bad] == ["httproute", "gateway-route"]
    assert "ResolvedRefs False (RefNotPermitted" in bad[0]["found"]
    assert "500" in bad[1]["found"]
    live.apply(LAB.task("cross-namespace").solution[1].apply)
    report = live.check("gateway")
    for task in LAB.tasks:
        t = task_result(report, task.id)
        assert failed(report, task.id) == [], task.id
        assert t["score"] == t["maxScore"]
    out = live.kubectl("get", "gateway", "store", "-n", "lab-gateway").stdout.splitlines()
    assert out[1].split()[:4] == ["store", "eg", "172.18.255.200", "True"]
