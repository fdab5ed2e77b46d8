"""The live cluster runs a GatewayClass of another implementation as that implementation: NGINX Gateway Fabric's
class written through the API is Accepted with its report's features, its Gateway gets NGINX Gateway Fabric's
data plane (``<gateway>-<class>`` in the Gateway's namespace) and the control plane in ``nginx-gateway``, the
route's parent entry is written under NGINX Gateway Fabric's controllerName, and deleting the Gateway removes
its proxy."""

from __future__ import annotations

import copy
from pathlib import Path

from tests.apiserver.inprocess import Cluster, run

from knetsim.apiserver.store import Write
from knetsim.cluster.gatewayimplementations import NGINX_GATEWAY_FABRIC
from knetsim.model.loader import load_paths

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "gateway" / "quickstart"
NGF = NGINX_GATEWAY_FABRIC.controller_names[0]


def test_nginx_gateway_fabric_class_live(tmp_path: Path) -> None:
    async def scenario(c: Cluster) -> None:
        for doc in load_paths([str(QUICKSTART)]).documents:
            body = copy.deepcopy(doc.body)
            if body["kind"] == "GatewayClass":
                body["metadata"]["name"] = "nginx"
                body["spec"]["controllerName"] = NGF
            if body["kind"] == "Gateway":
                body["spec"]["gatewayClassName"] = "nginx"
            c.create(body)
        await c.server.settle()
        store = c.server.store.objects
        klass = store[("GatewayClass", "", "nginx")].body["status"]
        assert klass["conditions"][0]["reason"] == "Accepted"
        assert [f["name"] for f in klass["supportedFeatures"]] == sorted(NGINX_GATEWAY_FABRIC.features)
        gateway = store[("Gateway", "default", "eg")].body["status"]
        assert {x["type"]: x["status"] for x in gateway["conditions"]} == {"Accepted": "True", "Programmed": "True"}
        route = store[("HTTPRoute", "default", "backend")].body["status"]["parents"][0]
        assert route["controllerName"] == NGF
        assert ("Service", "default", "eg-nginx") in store and ("Deployment", "default", "eg-nginx") in store
        assert ("Deployment", "nginx-gateway", "ngf-nginx-gateway-fabric") in store
        assert not any(k[1] == "envoy-gateway-system" for k in store)
        c.server.store.commit([Write(("Gateway", "default", "eg"), None)])
        await c.server.settle()
        assert ("Service", "default", "eg-nginx") not in store and ("Deployment", "default", "eg-nginx") not in store
    run(tmp_path, scenario)


def test_an_invalid_parameters_ref_provisions_nothing_live(tmp_path: Path) -> None:
    """Given NGINX Gateway Fabric's class whose parametersRef names a ConfigMap that does not exist, then live the
    class is Accepted False (InvalidParameters), its Gateway is neither accepted nor programmed (no status from
    the implementation) and no proxy Deployment or Service is created; once the ConfigMap is created, the class is
    accepted and the Gateway gets its proxy."""
    async def scenario(c: Cluster) -> None:
        for doc in load_paths([str(QUICKSTART)]).documents:
            body = copy.deepcopy(doc.body)
            if body["kind"] == "GatewayClass":
                body["metadata"]["name"] = "nginx"
                body["spec"]["controllerName"] = NGF
                body["spec"]["parametersRef"] = {"group": "", "kind": "ConfigMap", "name": "proxy-params",
                                                 "namespace": "default"}
            if body["kind"] == "Gateway":
                body["spec"]["gatewayClassName"] = "nginx"
            c.create(body)
        await c.server.settle()
        store = c.server.store.objects
        klass = store[("GatewayClass", "", "nginx")].body["status"]
        accepted = next(x for x in klass["conditions"] if x["type"] == "Accepted")
        assert (accepted["status"], accepted["reason"]) == ("False", "InvalidParameters")
        assert "ConfigMap default/proxy-params not found" in accepted["message"]
        assert not (store[("Gateway", "default", "eg")].body.get("status") or {}).get("conditions") or all(
            x["reason"] == "Pending" for x in store[("Gateway", "default", "eg")].body["status"]["conditions"])
        assert ("Service", "default", "eg-nginx") not in store and ("Deployment", "default", "eg-nginx") not in store
        c.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "proxy-params", "namespace": "default"},
                  "data": {}})
        await c.server.settle()
        accepted = next(x for x in store[("GatewayClass", "", "nginx")].body["status"]["conditions"]
                        if x["type"] == "Accepted")
        assert accepted["status"] == "True"
        assert ("Service", "default", "eg-nginx") in store and ("Deployment", "default", "eg-nginx") in store
    run(tmp_path, scenario)
