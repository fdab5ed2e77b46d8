"""The corpus's breaks on `knetsim up` (tests/doctor/corpus/, the scenarios marked ``live: true``): each broken
state applied to a namespace of its own with the real kubectl, and `knetsim doctor --kubeconfig -n NS` names the
same layer, code and object as offline; the repaired state, applied to another namespace, gives no error."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from bench.doctor_corpus import load
from click.testing import CliRunner
from tests import live as live_fixtures
from tests.live import Cluster, wait_for

from knetsim.cli.main import cli

# tests/live.py's fixtures: one `knetsim up` for the module (cluster), emptied after each test (k).
cluster, k = live_fixtures.cluster, live_fixtures.k

LIVE = [s for s in load() if s.expect.get("live") and s.found_expected]


def doctor(cluster: Cluster, namespace: str) -> dict[str, Any]:
    """``knetsim doctor --kubeconfig`` in this process: a scenario asks it several times while the kubelet
    settles, and a process each time cost the suite half a second of imports per call."""
    out = CliRunner().invoke(cli, ["doctor", "--kubeconfig", cluster.kubeconfig, "-n", namespace, "-o", "json"],
                             catch_exceptions=False)
    assert out.exit_code in (0, 1), out.output
    return json.loads(out.stdout)


def settle(cluster: Cluster, namespace: str, done: Any, timeout: float = 45) -> dict[str, Any]:
    """The doctor's report once ``done(report)`` holds (probes, restarts and pulls take the kubelet a while), or
    the last report."""
    deadline = time.monotonic() + timeout
    report = doctor(cluster, namespace)
    while not done(report) and time.monotonic() < deadline:
        time.sleep(2)
        report = doctor(cluster, namespace)
    return report


def wait_ready(cluster: Cluster, namespace: str, timeout: float = 60) -> bool:
    def ready() -> bool:
        pods = cluster.get_json("pods", "-n", namespace)["items"]
        return bool(pods) and all(any(c["type"] == "Ready" and c["status"] == "True"
                                      for c in (p.get("status") or {}).get("conditions") or []) for p in pods)
    return bool(wait_for(ready, timeout=timeout, interval=1))


def in_namespace(subject: str, namespace: str) -> str:
    return subject.replace(" default/", f" {namespace}/").replace("Namespace default", f"Namespace {namespace}")


# A known difference of the live cluster, said in the scenario's expect.yaml (`live_known_issue`): the test is
# expected to fail there (strict: once fixed it passes and the note must go).
CASES = [pytest.param(s, marks=pytest.mark.xfail(reason=s.expect["live_known_issue"], strict=True))
         if s.expect.get("live_known_issue") else s for s in LIVE]


@pytest.mark.parametrize("scenario", CASES, ids=[s.name for s in LIVE])
def test_the_live_doctor_names_the_break_and_the_repair_is_clean(scenario, k: Cluster) -> None:
    expect = scenario.expect
    short = scenario.name[:40].rstrip("-")
    broken, repaired = k.namespace(f"b-{short}"), k.namespace(f"r-{short}")
    k.kubectl("apply", "-n", broken, "-f", str(scenario.path / "broken"))
    subject = in_namespace(expect["subject"], broken)

    def named(report: dict[str, Any]) -> bool:
        return any((f["code"], f["layer"], f["subject"], f["severity"]) ==
                   (expect["code"], expect["layer"], subject, expect.get("severity", "error"))
                   for f in report["findings"])
    report = settle(k, broken, named)
    assert named(report), [(f["code"], f["subject"], f["severity"]) for f in report["findings"]]

    # The broken objects go first, as a user's fix replaces them: an Ingress of the same host left in another
    # namespace would still win ingress-nginx's merge.
    k.kubectl("delete", "namespace", broken, "--wait=true", timeout=90)
    k.namespaces.discard(broken)
    k.kubectl("apply", "-n", repaired, "-f", str(scenario.path / "repaired"))

    def clean(report: dict[str, Any]) -> bool:
        return not [f for f in report["findings"] if f["severity"] == "error"]
    # The repaired pods need their first pulls and probes: judged once every pod is Ready (a report before
    # they exist would be clean for nothing).
    assert wait_ready(k, repaired), k.kubectl("get", "pods", "-n", repaired).stdout
    report = settle(k, repaired, clean, timeout=20)
    assert clean(report), [(f["code"], f["subject"], f["message"]) for f in report["findings"]
                           if f["severity"] == "error"]
