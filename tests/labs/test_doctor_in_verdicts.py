"""A wrong answer in a lab says what the doctor diagnoses about it, not only the trace's "no ingress rule matches".

Offline: the lab's starting objects plus the learner's policies, as a snapshot, graded in process.
"""

from __future__ import annotations

from typing import Any

import yaml

from knetsim.labs import grade, load_lab
from knetsim.labs.snapshot import Snapshot

LAB = load_lab("netpol")
DEFAULT_DENY = "podSelector: {}\npolicyTypes: [Ingress]"


def policy(name: str, spec: str) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": "lab-netpol"}, "spec": yaml.safe_load(spec)}


def failed_found(task: str, *policies: dict[str, Any]) -> list[str]:
    objects: dict[str, list[dict[str, Any]]] = {}
    for body in (*LAB.setup, *policies):
        objects.setdefault(body["kind"], []).append(body)
    result = grade(LAB, Snapshot("offline", "test", False, objects), [task])
    return [c.found for t in result.tasks for c in t.criteria if not c.passed]


def test_or_written_as_and_says_the_selectors_are_one_peer() -> None:
    found = failed_found("or", policy("default-deny", DEFAULT_DENY), policy("queue-allow", """
podSelector: {matchLabels: {app: queue}}
ingress:
  - from:
      - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: lab-netpol-ops}}
        podSelector: {matchLabels: {role: frontend}}
"""))
    assert found and all("no ingress rule matches" in f for f in found)
    assert all("the doctor: NetworkPolicy lab-netpol/queue-allow:" in f for f in found)
    assert all("namespace AND pod selector must both match" in f for f in found)
    assert all("gets no connections as written, all connections in the other reading" in f for f in found)


def test_a_name_namespace_label_says_which_label_namespaces_carry() -> None:
    found = failed_found("from-namespace", policy("default-deny", DEFAULT_DENY), policy("cache-allow-ops", """
podSelector: {matchLabels: {app: cache}}
ingress:
  - from: [{namespaceSelector: {matchLabels: {name: lab-netpol-ops}}}]
"""))
    assert len(found) == 2
    assert all("namespace lab-netpol-ops exists but has no label name=lab-netpol-ops" in f
               and "kubernetes.io/metadata.name=lab-netpol-ops" in f for f in found)


def test_a_too_narrow_default_deny_says_which_pods_it_leaves_out() -> None:
    found = failed_found("default-deny", policy("default-deny", "podSelector: {matchLabels: {app: api}}\n"
                                                                 "policyTypes: [Ingress]"))
    canary = [f for f in found if f.startswith("connected to lab-netpol/canary")]
    assert canary and all(
        "the doctor: lab-netpol/canary is selected by no NetworkPolicy, so it accepts every connection; "
        "NetworkPolicy lab-netpol/default-deny allows nothing in but selects only app=api: a default deny selects "
        "every pod of the namespace with podSelector: {}" in f for f in canary)
