"""The corpus's breaks of the cluster's own objects, live (tests/doctor/corpus/, the ``live`` scenarios that
change kube-system: the coredns Deployment, its Corefile ConfigMap, the kube-dns Service, kube-proxy's DaemonSet).

They are applied to the running `knetsim up` as a user changes them (kubectl apply over the cluster's own
objects), and put back after each test as they were (saved with `kubectl get -o json` first; an object the
cluster did not have, like the coredns ConfigMap, is deleted), then the test waits until the cluster's DNS
answers again. The live DNS must really behave as the break says: ``live_dig`` in expect.yaml is what the real
`dig` at the cluster's DNS port gets for a name while the break holds. A module of its own, so that it runs
beside tests/doctor/test_corpus_live.py in the parallel live job."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from bench.doctor_corpus import Scenario
from tests import live as live_fixtures
from tests.doctor.test_corpus_live import LIVE, cases, check_scenario, touches_kube_system
from tests.live import Cluster, wait_for

cluster, k = live_fixtures.cluster, live_fixtures.k

SYSTEM_LIVE = [s for s in LIVE if touches_kube_system(s)]
DIG = shutil.which("dig")
# What a real cluster's kube-dns answers for its own API Service while DNS works.
KUBERNETES_NAME = "kubernetes.default.svc.cluster.local"
# Fields the API server owns: a saved object without them can be put back with `kubectl replace`.
SERVER_FIELDS = ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields")


def dig_status(cluster: Cluster, name: str) -> str:
    """What the real `dig` gets from the cluster's DNS listener for ``name``: its rcode (NOERROR, NXDOMAIN,
    SERVFAIL, ...), or ``timeout`` when nothing answers (one try, one second)."""
    if DIG is None:
        pytest.skip("dig is not installed")
    out = subprocess.run([DIG, "@127.0.0.1", "-p", str(cluster.dns_port), "+time=1", "+tries=1", name],
                         capture_output=True, text=True, timeout=10)
    if "status:" not in out.stdout:
        return "timeout"
    return out.stdout.split("status:", 1)[1].split(",", 1)[0].strip()


def system_objects(scenario: Scenario) -> list[tuple[str, str]]:
    """(kind, name) of every kube-system object the scenario writes, broken or repaired."""
    return sorted({(str(d["kind"]), str(d["metadata"]["name"])) for state in ("broken", "repaired")
                   for d in scenario.documents(state) if (d.get("metadata") or {}).get("namespace") == "kube-system"})


def saved(cluster: Cluster, kind: str, name: str) -> dict[str, Any] | None:
    out = cluster.kubectl("get", kind.lower(), name, "-n", "kube-system", "-o", "json", check=False)
    if out.returncode != 0:
        return None
    body = json.loads(out.stdout)
    body.pop("status", None)
    meta = body["metadata"]
    for field in SERVER_FIELDS:
        meta.pop(field, None)
    (meta.get("annotations") or {}).pop("kubectl.kubernetes.io/last-applied-configuration", None)
    return body


@pytest.fixture
def restored(k: Cluster, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """The cluster's own objects the scenario changes, put back after the test, and DNS answering again."""
    scenario: Scenario = request.node.callspec.params["scenario"]
    before = {(kind, name): saved(k, kind, name) for kind, name in system_objects(scenario)}
    try:
        yield k
    finally:
        for (kind, name), body in before.items():
            if body is None:
                k.kubectl("delete", kind.lower(), name, "-n", "kube-system", "--ignore-not-found")
            else:
                k.kubectl("replace", "-f", "-", input=yaml.safe_dump(body))
        assert wait_for(lambda: dig_status(k, KUBERNETES_NAME) == "NOERROR", timeout=60, interval=1), \
            "the cluster's DNS does not answer again once its objects are restored"
        k.kubectl("-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=60s", timeout=70)
        k.kubectl("-n", "kube-system", "rollout", "status", "daemonset/kube-proxy", "--timeout=60s", timeout=70)


@pytest.mark.parametrize("scenario", cases(SYSTEM_LIVE))
def test_the_live_doctor_names_the_break_of_a_system_object(scenario: Scenario, restored: Cluster) -> None:
    def behaves_as_the_break_says(cluster: Cluster) -> None:
        # A readiness probe refused takes its failureThreshold times its period (30 s) to take a pod out.
        for name, status in (scenario.expect.get("live_dig") or {}).items():
            assert wait_for(lambda n=name, st=status: dig_status(cluster, n) == st, timeout=60, interval=1), \
                (name, status, dig_status(cluster, name))
        for selector in scenario.expect.get("live_no_pods") or []:
            assert wait_for(lambda sel=selector: not system_pods(cluster, sel), timeout=30, interval=1), \
                (selector, system_pods(cluster, selector))

    def dns_answers_once_repaired(cluster: Cluster) -> None:
        assert wait_for(lambda: dig_status(cluster, KUBERNETES_NAME) == "NOERROR", timeout=60, interval=1), \
            dig_status(cluster, KUBERNETES_NAME)
    check_scenario(scenario, restored, while_broken=behaves_as_the_break_says, once_repaired=dns_answers_once_repaired)


def system_pods(cluster: Cluster, selector: str) -> list[str]:
    """The names of kube-system's pods with these labels that are not on their way out."""
    pods = cluster.get_json("pods", "-n", "kube-system", "-l", selector)["items"]
    return [p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")]
