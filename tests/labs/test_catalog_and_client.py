"""Offline: the lab files hold together, and grading a "real" cluster.

The fake API server (tests/fakeapi.py) stands in for kind: its /version is not knetsim's, so
traffic criteria must say they ran on the simulation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.fakeapi import fake_api, kubeconfig_for

from knetsim import Cluster
from knetsim.labs import CHECKS, all_labs, fetch, from_objects, grade, load_lab
from knetsim.labs.model import LabError, parse_lab
from knetsim.sources import connect

LABS = all_labs()


def test_the_catalog_has_the_five_labs_in_order() -> None:
    assert [lab.name for lab in LABS] == ["services", "netpol", "cluster-policy", "debug-service", "gateway",
                                          "ingress-classes"]
    assert [t.id for t in load_lab("netpol").tasks] == ["default-deny", "from-pods", "from-namespace", "and", "or",
                                                         "ports", "egress-dns"]


@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.name)
def test_every_task_is_complete(lab: Any) -> None:
    for task in lab.tasks:
        assert task.statement and task.hints and task.commands and task.solution, task.id
        assert len(task.checks) >= 2, f"{task.id}: a task is graded by several criteria"
        assert {c.type for c in task.checks} <= set(CHECKS), task.id
    for obj in lab.setup:
        ns = obj["metadata"].get("namespace", lab.namespace)
        assert obj["kind"] in ("Namespace", "IngressClass", "GatewayClass") or ns in lab.namespaces, \
            obj["metadata"]["name"]


@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.name)
def test_graded_on_the_starting_objects_every_failure_says_what_and_why(lab: Any) -> None:
    """Given only the lab's starting objects (as a fresh knetsim would hold them), no task passes
    and every failed criterion names what it expected and what it found."""
    state = Cluster.from_yaml(yaml.safe_dump_all([_with_ns(o, lab.namespace) for o in lab.setup])).state
    snap = from_objects(_objects(state))
    report = grade(lab, snap)
    assert not any(t.passed for t in report.tasks)
    for t in report.tasks:
        for c in t.criteria:
            if not c.passed:
                assert c.expected and c.found and c.found != c.expected, (t.task, c.description)
    assert json.dumps(report.to_dict()) == json.dumps(grade(lab, from_objects(_objects(state))).to_dict())


def _with_ns(obj: dict[str, Any], ns: str) -> dict[str, Any]:
    if obj["kind"] not in ("Namespace", "IngressClass", "GatewayClass"):
        obj = dict(obj, metadata=dict(obj["metadata"], namespace=obj["metadata"].get("namespace", ns)))
    return obj


def _objects(state: Any) -> list[dict[str, Any]]:
    out = [ns.raw for ns in state.namespaces.values()] + [n.raw for n in state.nodes.values()]
    out += [ic.raw for ic in state.ingress_classes.values()]
    out += [gc.raw for gc in state.gateway_classes.values()]
    for coll in (state.pods, state.services, state.endpoint_slices, state.ingresses, state.network_policies,
                 state.gateways, state.http_routes, state.reference_grants):
        out += [o.raw for o in coll.values()]
    return out


def test_a_hint_that_yaml_read_as_a_mapping_is_refused() -> None:
    text = "name: x\nnamespace: x\ntasks:\n  - id: t\n    hints:\n      - use this: it works\n"
    with pytest.raises(LabError, match=r"lab x, task t: hints\[0\] is not a string"):
        parse_lab(text, "x")


# --- a "real" cluster ---------------------------------------------------------------------------


@pytest.fixture
def fake_kind(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    lab = load_lab("debug-service")
    state = Cluster.from_yaml(yaml.safe_dump_all([_with_ns(o, lab.namespace) for o in lab.setup])).state
    objects = _objects(state)
    for o in objects:  # what a real API server adds
        o.setdefault("metadata", {}).setdefault("uid", "u-" + o["metadata"]["name"])
    with fake_api(objects, token="secret") as api:
        path = tmp_path / "config"
        path.write_text(yaml.safe_dump(kubeconfig_for(api.url, {"token": "secret"}, namespace="team")))
        yield path, api


def test_a_real_cluster_is_graded_and_the_report_says_traffic_was_simulated(fake_kind: Any) -> None:
    path, api = fake_kind
    report = grade(load_lab("debug-service"), fetch(connect(str(path))))
    assert report.knetsim is False
    assert "traffic criteria run on knetsim's simulation of this cluster's objects, not on real packets" in \
           report.notes[0]
    assert {r.authorization for r in api.requests} == {"Bearer secret"}
    trace = next(c for c in report.tasks[1].criteria if c.check == "trace")
    assert trace.simulated and not trace.passed
    assert trace.found.startswith("refused at endpoints")
