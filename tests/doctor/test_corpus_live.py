"""The corpus's breaks on `knetsim up` (tests/doctor/corpus/, the scenarios marked ``live``): each broken state
applied with the real kubectl, and `knetsim doctor --kubeconfig -n NS` names the same layer, code and object as
offline; the patch it prints, applied with kubectl, clears the finding; the repaired state, applied after it,
gives no error.

Where the objects go: those of ``default`` (or of no namespace) into a namespace of the test's own; a scenario's
own namespaces (frontend, backend, shop, ...) as they are, created first and deleted after (each module has a
cluster of its own, so no other test sees them). Scenarios that change the cluster's own kube-system objects run
in tests/doctor/test_corpus_live_system.py, which restores them after each test.

``live: refused``: the API server refuses the broken objects, so the live check is that `kubectl apply` exits 1
with the API server's words (``refused_with``), the very words the offline finding quotes."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterable
from typing import Any

import pytest
import yaml
from bench.doctor_corpus import Scenario, load
from click.testing import CliRunner
from tests import live as live_fixtures
from tests.live import Cluster, wait_for

from knetsim.cli.main import cli

# tests/live.py's fixtures: one `knetsim up` for the module (cluster), emptied after each test (k).
cluster, k = live_fixtures.cluster, live_fixtures.k

# The kinds of the corpus that belong to no namespace.
CLUSTER_SCOPED = {"Namespace", "GatewayClass", "IngressClass", "StorageClass", "PersistentVolume"}


def touches_kube_system(scenario: Scenario) -> bool:
    return any((d.get("metadata") or {}).get("namespace") == "kube-system"
               for state in ("broken", "repaired") for d in scenario.documents(state))


LIVE = [s for s in load() if s.expect.get("live") and s.found_expected]
USER_LIVE = [s for s in LIVE if not touches_kube_system(s)]


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


def wait_ready(cluster: Cluster, namespaces: Iterable[str], timeout: float = 60) -> bool:
    def ready() -> bool:
        pods = [p for ns in namespaces for p in cluster.get_json("pods", "-n", ns)["items"]]
        return bool(pods) and all(any(c["type"] == "Ready" and c["status"] == "True"
                                      for c in (p.get("status") or {}).get("conditions") or []) for p in pods)
    return bool(wait_for(ready, timeout=timeout, interval=1))


def in_namespace(subject: str, namespace: str) -> str:
    return subject.replace(" default/", f" {namespace}/").replace("Namespace default", f"Namespace {namespace}")


def subject_namespace(subject: str, namespace: str) -> str:
    """The namespace to ask the doctor about: the subject's (``Kind ns/name``), the test's own for default."""
    _, _, ref = in_namespace(subject, namespace).partition(" ")
    return ref.split("/", 1)[0] if "/" in ref else namespace


def placed(scenario: Scenario, state: str, namespace: str) -> list[dict[str, Any]]:
    """The scenario's objects as applied: those of default (or of no namespace) in ``namespace``, unless the
    scenario has namespaces of its own (then its clients name ``x.default`` and default stays default);
    Namespaces first, as the objects that live in them need them."""
    docs = copy.deepcopy(scenario.documents(state))
    keep_default = bool(own_namespaces(docs))
    for doc in docs:
        meta = doc.setdefault("metadata", {})
        if doc.get("kind") not in CLUSTER_SCOPED and meta.get("namespace", "default") == "default":
            meta["namespace"] = "default" if keep_default else namespace
    return sorted(docs, key=lambda d: d.get("kind") != "Namespace")


def own_namespaces(docs: list[dict[str, Any]]) -> list[str]:
    """The namespaces the scenario creates itself (deleted after it, as the test's own are)."""
    return [str(d["metadata"]["name"]) for d in docs if d.get("kind") == "Namespace"]


def user_namespaces(docs: list[dict[str, Any]]) -> list[str]:
    """Every namespace the objects live in, but kube-system (the cluster's own)."""
    return sorted({str(d["metadata"]["namespace"]) for d in docs if d.get("kind") not in CLUSTER_SCOPED}
                  - {"kube-system"})


def apply(k: Cluster, docs: list[dict[str, Any]], check: bool = True) -> Any:
    return k.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs, sort_keys=False), check=check)


def remove(k: Cluster, docs: list[dict[str, Any]], namespace: str) -> None:
    """The objects go, as a user's fix replaces them (an Ingress of the same host left in another namespace would
    still win ingress-nginx's merge): the test's namespace and every object of the scenario but the cluster's
    own (kube-system's are restored by their test), its namespaces included."""
    k.kubectl("delete", "namespace", namespace, "--wait=true", "--ignore-not-found", timeout=90)
    mine = [d for d in docs if (d.get("metadata") or {}).get("namespace") != "kube-system"]
    k.kubectl("delete", "--wait=true", "--ignore-not-found", "-f", "-", input=yaml.safe_dump_all(mine), timeout=90)
    k.namespaces.discard(namespace)


def errors(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["severity"] == "error"]


def check_scenario(scenario: Scenario, k: Cluster, while_broken: Callable[[Cluster], None] | None = None,
                   once_repaired: Callable[[Cluster], None] | None = None) -> None:
    """Broken named as offline, repaired clean: the whole live check of one scenario (``while_broken`` and
    ``once_repaired`` check the cluster itself while the break holds and once the repaired objects are in)."""
    expect = scenario.expect
    short = scenario.name[:40].rstrip("-")
    broken_ns, repaired_ns = k.namespace(f"b-{short}"), k.namespace(f"r-{short}")
    broken = placed(scenario, "broken", broken_ns)
    if expect.get("live") == "refused":
        refused_by_the_api_server(scenario, k, broken)
    else:
        apply(k, broken)
        subject = in_namespace(expect["subject"], broken_ns)

        def named(report: dict[str, Any]) -> bool:
            return any((f["code"], f["layer"], f["subject"], f["severity"]) ==
                       (expect["code"], expect["layer"], subject, expect.get("severity", "error"))
                       for f in report["findings"])
        report = settle(k, subject_namespace(expect["subject"], broken_ns), named)
        assert named(report), [(f["code"], f["subject"], f["severity"]) for f in report["findings"]]
        if while_broken is not None:
            while_broken(k)
        finding = next(f for f in report["findings"] if named({"findings": [f]}))
        if finding.get("patch"):
            the_printed_patch_clears_it_live(k, finding, subject_namespace(expect["subject"], broken_ns))
    remove(k, broken, broken_ns)

    repaired = placed(scenario, "repaired", repaired_ns)
    apply(k, repaired)
    namespaces = user_namespaces(repaired)
    # The repaired pods need their first pulls and probes: judged once every pod is Ready (a report before
    # they exist would be clean for nothing).
    assert wait_ready(k, namespaces), [k.kubectl("get", "pods", "-n", ns).stdout for ns in namespaces]
    for ns in namespaces:
        report = settle(k, ns, lambda r: not errors(r), timeout=20)
        assert not errors(report), [(f["code"], f["subject"], f["message"]) for f in errors(report)]
    if once_repaired is not None:
        once_repaired(k)
    remove(k, repaired, repaired_ns)


def the_printed_patch_clears_it_live(k: Cluster, finding: dict[str, Any], namespace: str) -> None:
    """The fix the live doctor prints, applied to the live objects with kubectl as a user would paste it: the
    doctor asked again no longer gives the finding (pods the patch rolls out may take their probes' time)."""
    patch = finding["patch"]
    k.kubectl("-n", patch["namespace"], "patch", str(patch["kind"]).lower(), patch["name"],
              f"--type={patch['type']}", "-p", json.dumps(patch["patch"]))

    def cleared(report: dict[str, Any]) -> bool:
        return not any((f["code"], f["subject"]) == (finding["code"], finding["subject"]) for f in report["findings"])
    report = settle(k, namespace, cleared, timeout=60)
    assert cleared(report), (finding["fix"], [f["message"] for f in report["findings"]
                                              if (f["code"], f["subject"]) == (finding["code"], finding["subject"])])


def refused_by_the_api_server(scenario: Scenario, k: Cluster, broken: list[dict[str, Any]]) -> None:
    """Live, the layer that answers is the API server itself: `kubectl apply` exits 1 with its words, and they
    are the words the offline finding quotes."""
    words = str(scenario.expect["refused_with"])
    offline = [f for f in scenario_findings(scenario) if f.code == scenario.expect["code"]]
    assert any(words in f.message for f in offline), [f.message for f in offline]
    out = apply(k, broken, check=False)
    assert out.returncode == 1, out.stdout + out.stderr
    assert words in out.stderr, out.stderr


def scenario_findings(scenario: Scenario) -> list[Any]:
    from knetsim import Cluster as Offline

    return list(Offline.from_yaml(scenario.text("broken"), strict=False).doctor().findings)


def cases(scenarios: list[Scenario]) -> list[Any]:
    """A known difference of the live cluster, said in the scenario's expect.yaml (`live_known_issue`): the test
    is expected to fail there (strict: once fixed it passes and the note must go)."""
    return [pytest.param(s, id=s.name, marks=pytest.mark.xfail(reason=s.expect["live_known_issue"], strict=True))
            if s.expect.get("live_known_issue") else pytest.param(s, id=s.name) for s in scenarios]


@pytest.mark.parametrize("scenario", cases(USER_LIVE))
def test_the_live_doctor_names_the_break_and_the_repair_is_clean(scenario: Scenario, k: Cluster) -> None:
    check_scenario(scenario, k)


def test_every_scenario_a_cluster_can_hold_runs_live() -> None:
    """Issue 29 asks for each break offline and through --kubeconfig: a scenario the doctor finds either runs
    live (or is refused live by the API server, in its words) or says why a real cluster cannot hold it."""
    offline_only = [s.name for s in load() if s.found_expected and s.expect.get("live") not in (True, "refused")
                    and not s.expect.get("why_offline")]
    assert not offline_only, offline_only
    wordless = [s.name for s in load() if s.expect.get("live") == "refused" and not s.expect.get("refused_with")]
    assert not wordless, wordless
