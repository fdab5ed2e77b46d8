"""The custom kinds' CRDs on the live cluster, with the real kubectl.

Given `knetsim up`, then `kubectl get crd` lists the CRDs of every custom kind knetsim defines (generated
from model/apis), `kubectl explain` reads their schemas, and `kubectl apply` (strict field validation)
refuses what a cluster with the upstream CRDs refuses, in the API server's words: issue 19's four
reproducers and ClusterNetworkPolicy's unknown field and out-of-range priority. Given the experimental
channel's HTTPRoute CRD applied (server-side, as upstream's install instructions apply it), then it
takes over its kind: a route with a retry is stored, `kubectl explain` describes the retry, and
`knetsim status` and the daemon log say which definition is in force.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from knetsim.model.crd import builtin_crds

from .. import upstream
from .conftest import Live

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live

ROUTE = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "backend"},
         "spec": {"parentRefs": [{"name": "gw"}], "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}}


def apply(live: Live, tmp_path: Path, doc: dict, *args: str) -> tuple[int, str]:
    path = tmp_path / "doc.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = live.kubectl("apply", *args, "-f", str(path), check=False)
    return out.returncode, (out.stdout + out.stderr).replace(str(path), "doc.yaml")


def test_a_fresh_cluster_lists_the_crds_of_every_custom_kind(live: Live) -> None:
    rows = live.kubectl("get", "crd").stdout.splitlines()
    assert rows[0].split() == ["NAME", "CREATED", "AT"]
    assert [r.split()[0] for r in rows[1:]] == [c["metadata"]["name"] for c in builtin_crds()]
    served = json.loads(live.kubectl("get", "crd", "httproutes.gateway.networking.k8s.io", "-o", "json").stdout)
    (generated,) = [c for c in builtin_crds() if c["metadata"]["name"] == "httproutes.gateway.networking.k8s.io"]
    assert served["spec"] == generated["spec"]
    assert served["metadata"]["annotations"]["gateway.networking.k8s.io/bundle-version"] == "v1.6.1"


def test_kubectl_explain_reads_the_definitions(live: Live) -> None:
    out = live.kubectl("explain", "httproute.spec.rules.matches.path").stdout
    assert "KIND:       HTTPRoute" in out and "VERSION:    v1" in out
    assert "enum: Exact, PathPrefix, RegularExpression" in out
    assert "value\t<string>" in out
    out = live.kubectl("explain", "clusternetworkpolicy.spec.priority").stdout
    assert "FIELD: priority <integer>" in out


@pytest.mark.parametrize(("doc", "message"), [
    ({**ROUTE, "spec": {**ROUTE["spec"], "rulez": [{"backendRefs": [{"name": "web", "port": 80}]}]}},
     'Error from server (BadRequest): error when creating "doc.yaml": HTTPRoute in version "v1" cannot be handled '
     'as a HTTPRoute: strict decoding error: unknown field "spec.rulez"'),
    ({**ROUTE, "spec": {**ROUTE["spec"], "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "nope"}}]}]}},
     'The HTTPRoute "backend" is invalid: spec.rules[0].matches[0].path: Invalid value: "object": value must be an '
     "absolute path and start with '/' when type one of ['Exact', 'PathPrefix']"),
    ({**ROUTE, "spec": {**ROUTE["spec"], "rules": [{"backendRefs": [{"name": "web", "port": "eighty"}]}]}},
     '* spec.rules[0].backendRefs[0].port: Invalid value: "string": spec.rules[0].backendRefs[0].port in body must be '
     'of type integer: "string"'),
    ({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "gw"},
      "spec": {"gatewayClassName": "eg", "listeners": [{"name": "http", "protocol": "HTTP", "port": 80},
                                                        {"name": "http", "protocol": "HTTP", "port": 8080}]}},
     'The Gateway "gw" is invalid: \n* spec.listeners[1]: Duplicate value: map[string]interface {}{"name":"http"}\n'
     '* spec.listeners: Invalid value: "array": Listener name must be unique within the Gateway'),
    ({"apiVersion": "policy.networking.k8s.io/v1alpha2", "kind": "ClusterNetworkPolicy", "metadata": {"name": "x"},
      "spec": {"tier": "Admin", "priority": 1, "subject": {"namespaces": {}}, "egres": []}},
     'Error from server (BadRequest): error when creating "doc.yaml": ClusterNetworkPolicy in version "v1alpha2" '
     'cannot be handled as a ClusterNetworkPolicy: strict decoding error: unknown field "spec.egres"'),
    ({"apiVersion": "policy.networking.k8s.io/v1alpha2", "kind": "ClusterNetworkPolicy", "metadata": {"name": "x"},
      "spec": {"tier": "Admin", "priority": 2000, "subject": {"namespaces": {}}}},
     'The ClusterNetworkPolicy "x" is invalid: spec.priority: Invalid value: 2000: spec.priority in body should be '
     "less than or equal to 1000"),
], ids=["rulez", "path nope", "port eighty", "two listeners named http", "cnp unknown field", "cnp priority"])
def test_kubectl_apply_is_refused_in_the_api_servers_words(live: Live, tmp_path: Path, doc: dict,
                                                          message: str) -> None:
    code, output = apply(live, tmp_path, doc)
    assert code == 1
    assert message in output
    kind = doc["kind"].lower()
    assert live.kubectl("get", kind, doc["metadata"]["name"], check=False).returncode == 1  # nothing stored


@pytest.mark.parametrize(("spec", "message"), [
    ("a string", 'spec: Invalid value: "string": spec in body must be of type object: "string"'),
    ({"gatewayClassName": "eg", "listeners": "x"},
     'spec.listeners: Invalid value: "string": spec.listeners in body must be of type array: "string"'),
    ([1], 'spec: Invalid value: "array": spec in body must be of type object: "array"'),
])
def test_a_gateway_whose_spec_breaks_every_reader_is_never_stored(live: Live, spec: object, message: str) -> None:
    """Given bodies that stored would break every reader of Gateways (issue 20), then the API answers 422 with the
    field, and `kubectl get gateways -A` still works."""
    body = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "broken"},
            "spec": spec}
    code, status = live.request("POST", "/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways", body)
    assert code == 422, status
    assert message in status["message"]
    assert live.request("GET", "/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways/broken")[0] == 404
    assert live.kubectl("get", "gateways", "-A", check=False).returncode == 0


def test_a_crd_applied_by_a_client_takes_over_its_kind(live: Live, tmp_path: Path) -> None:
    crd = upstream.upstream_crds("gateway-api-v1.6.1/experimental")["httproutes.gateway.networking.k8s.io"]
    retrying = {**ROUTE, "metadata": {"name": "retrying"},
                "spec": {**ROUTE["spec"], "rules": [{"backendRefs": [{"name": "web", "port": 80}],
                                                     "retry": {"codes": [503], "attempts": 2}}]}}
    code, output = apply(live, tmp_path, retrying)
    assert code == 1 and 'unknown field "spec.rules[0].retry"' in output
    # The CRD is larger than the 256 KiB an annotation may hold: a client-side apply is refused, as on a cluster.
    code, output = apply(live, tmp_path, crd)
    assert code == 1 and "metadata.annotations: Too long: may not be more than 262144 bytes" in output
    code, output = apply(live, tmp_path, crd, "--server-side")
    assert code == 0, output
    code, output = apply(live, tmp_path, retrying)
    assert code == 0, output
    stored = json.loads(live.kubectl("get", "httproute", "retrying", "-o", "json").stdout)
    assert stored["spec"]["rules"][0]["retry"] == {"attempts": 2, "codes": [503]}
    assert "FIELD: retry <Object>" in live.kubectl("explain", "httproute.spec.rules.retry").stdout
    log = (live.state.parent / f"{live.state.name}.log").read_text()
    assert ("HTTPRoute (gateway.networking.k8s.io) is now admitted by CustomResourceDefinition httproutes.gateway."
            "networking.k8s.io from the cluster (bundle-version v1.6.1, channel experimental)") in log
    from knetsim.cli.main import cli

    status = CliRunner().invoke(cli, ["status", "--state", str(live.state)])
    assert ("# HTTPRoute: CustomResourceDefinition httproutes.gateway.networking.k8s.io from the cluster "
            "(bundle-version v1.6.1, channel experimental)") in status.output
    assert "Gateway, GatewayClass, " in status.output and "knetsim's built-in definition (bundle-version v1.6.1" \
        in status.output


def test_an_update_may_not_change_a_gateway_classs_controller(live: Live, tmp_path: Path) -> None:
    """A transition rule (self == oldSelf) judges updates: the controller name is fixed once set."""
    gc = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": {"name": "fixed"},
          "spec": {"controllerName": "example.com/one"}}
    assert apply(live, tmp_path, gc)[0] == 0
    code, output = apply(live, tmp_path, {**gc, "spec": {"controllerName": "example.com/two"}})
    assert code == 1
    assert 'The GatewayClass "fixed" is invalid: spec.controllerName: Invalid value: "string": Value is immutable' \
        in output


def test_a_store_from_before_typing_is_checked_again_at_start(tmp_path: Path) -> None:
    """Given a store an older knetsim wrote, holding a Gateway whose spec is a string (it broke every reader), then
    the server starts, sets it aside (quarantine, a Warning event) and serves the rest."""
    import sqlite3

    from .conftest import start_server, stop_server

    state = tmp_path / "state"
    state.mkdir()
    proc, _ = start_server(state)
    stop_server(proc)
    broken = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
              "metadata": {"name": "broken", "namespace": "default", "uid": "u1", "resourceVersion": "5"},
              "spec": "x"}
    route = {**ROUTE, "metadata": {"name": "fine", "namespace": "default", "uid": "u2", "resourceVersion": "6"}}
    db = sqlite3.connect(state / "store.db")
    for obj in (broken, route):
        db.execute("INSERT INTO objects VALUES (?,?,?,?,?,?)", (obj["kind"], "default", obj["metadata"]["name"], 5,
                                                               "user", json.dumps(obj)))
    db.execute("UPDATE meta SET value='knetsim 0.1.0, Kubernetes v1.35.0' WHERE key='admission'")
    db.commit()
    db.close()
    proc, info = start_server(state)
    try:
        live = Live(state, tmp_path, proc, info)
        assert live.request("GET", "/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways/broken")[0] == 404
        assert live.request("GET", "/apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes/fine")[0] == 200
        events = live.request("GET", "/api/v1/namespaces/default/events")[1]["items"]
        assert [e["involvedObject"]["name"] for e in events if e["reason"] == "Quarantined"] == ["broken"]
        log = (state.parent / f"{state.name}.log").read_text()
        assert 'quarantined Gateway default/broken: spec: Invalid value: "string": spec in body must be of type ' \
               'object: "string"' in log
    finally:
        stop_server(proc)
