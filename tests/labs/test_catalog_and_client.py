"""Offline: the lab files hold together, the kubeconfig reader, and grading a "real" cluster.

The fake API server is a stdlib HTTP server on loopback serving JSON lists, standing in for kind:
its /version is not knetsim's, so traffic criteria must say they ran on the simulation.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from knetsim import Cluster
from knetsim.labs import (
    CHECKS,
    KubeClient,
    KubeconfigError,
    all_labs,
    fetch,
    from_objects,
    grade,
    load_kubeconfig,
    load_lab,
)
from knetsim.labs.model import LabError, parse_lab

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


# --- kubeconfig ---------------------------------------------------------------------------------


def _kubeconfig(tmp_path: Path, user: dict[str, Any], server: str = "https://127.0.0.1:6443",
                cluster: dict[str, Any] | None = None) -> Path:
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "kind-kind",
           "clusters": [{"name": "kind-kind", "cluster": {"server": server, **(cluster or {})}}],
           "contexts": [{"name": "kind-kind", "context": {"cluster": "kind-kind", "user": "kind-kind",
                                                           "namespace": "team"}}],
           "users": [{"name": "kind-kind", "user": user}]}
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_kubeconfig_with_client_certificate_data_as_kind_writes_it(tmp_path: Path) -> None:
    cert, key, ca = b"CERT", b"KEY", b"CA"
    path = _kubeconfig(tmp_path, {"client-certificate-data": base64.b64encode(cert).decode(),
                                  "client-key-data": base64.b64encode(key).decode()},
                       cluster={"certificate-authority-data": base64.b64encode(ca).decode()})
    cfg = load_kubeconfig(path)
    assert (cfg.server, cfg.context, cfg.namespace) == ("https://127.0.0.1:6443", "kind-kind", "team")
    assert (cfg.client_cert_data, cfg.client_key_data, cfg.ca_data, cfg.token) == (cert, key, ca, None)


def test_kubeconfig_files_are_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_bytes(b"CA")
    path = _kubeconfig(tmp_path, {"token": "t0k"}, cluster={"certificate-authority": "ca.crt"})
    cfg = load_kubeconfig(path)
    assert (cfg.ca_data, cfg.token) == (b"CA", "t0k")


@pytest.mark.parametrize(("user", "message"), [
    ({"exec": {"command": "gke-gcloud-auth-plugin"}}, "authenticates with an exec plugin or auth-provider"),
    ({"client-certificate": "missing.crt", "client-key": "k"}, "client-certificate"),
])
def test_kubeconfig_problems_are_named(tmp_path: Path, user: dict[str, Any], message: str) -> None:
    with pytest.raises(KubeconfigError, match=message):
        load_kubeconfig(_kubeconfig(tmp_path, user))


# --- a "real" cluster ---------------------------------------------------------------------------


@pytest.fixture
def fake_kind(tmp_path: Path) -> Iterator[tuple[Path, list[dict[str, Any]]]]:
    lab = load_lab("debug-service")
    state = Cluster.from_yaml(yaml.safe_dump_all([_with_ns(o, lab.namespace) for o in lab.setup])).state
    objects = _objects(state)
    for o in objects:  # what a real API server adds
        o.setdefault("metadata", {}).setdefault("uid", "u-" + o["metadata"]["name"])
    seen: list[str] = []
    plural = {"namespaces": "Namespace", "nodes": "Node", "pods": "Pod", "services": "Service",
              "endpointslices": "EndpointSlice", "ingresses": "Ingress", "ingressclasses": "IngressClass",
              "networkpolicies": "NetworkPolicy", "deployments": "Deployment"}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            kind = "version"
            if self.path == "/version":
                body: Any = {"major": "1", "minor": "35", "gitCommit": "a1b2c3"}
            else:
                kind = plural.get(self.path.rstrip("/").rsplit("/", 1)[-1], "")
                body = {"kind": f"{kind}List", "items": [o for o in objects if o["kind"] == kind]}
            if not kind:  # a kind cluster without the Gateway API CRDs: 404 for their resources
                body = {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404}
            data = json.dumps(body).encode()
            self.send_response(200 if kind else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        path = _kubeconfig(tmp_path, {"token": "secret"}, server=f"http://127.0.0.1:{server.server_port}")
        yield path, seen  # type: ignore[misc]
    finally:
        server.shutdown()
        server.server_close()


def test_a_real_cluster_is_graded_and_the_report_says_traffic_was_simulated(fake_kind: Any) -> None:
    path, seen = fake_kind
    client = KubeClient(load_kubeconfig(path))
    report = grade(load_lab("debug-service"), fetch(client))
    assert report.knetsim is False
    assert "traffic criteria run on knetsim's simulation of this cluster's objects, not on real packets" in \
           report.notes[0]
    assert set(seen) == {"Bearer secret"}
    trace = next(c for c in report.tasks[1].criteria if c.check == "trace")
    assert trace.simulated and not trace.passed
    assert trace.found.startswith("refused at endpoints")
