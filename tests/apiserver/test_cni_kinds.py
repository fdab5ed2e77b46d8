"""A CNI's policy kinds on the live cluster: served where the cluster config names the CNI (Calico's at
projectcalico.org/v3 as calico-apiserver serves them and at crd.projectcalico.org/v1, Antrea's crd.antrea.io
kinds), listed by discovery, stored apart from the Kubernetes kinds of the same name, printed with their upstream
CRDs' columns, refused with a 422 naming the field where Calico or Antrea refuse them, and carried into the
ClusterState the data plane reads.

The server runs in process (aiohttp's test client): the requests are the raw ones kubectl sends.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from knetsim.apiserver.server import ApiServer
from knetsim.cluster.config import ClusterConfig
from knetsim.controllers import ControllerManager
from knetsim.daemon.daemon import bring_up
from knetsim.policy import cni

V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"

GNP = {"apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkPolicy", "metadata": {"name": "deny-all"},
       "spec": {"selector": "all()", "types": ["Ingress", "Egress"]}}
CALICO_NP = {"apiVersion": "projectcalico.org/v3", "kind": "NetworkPolicy",
             "metadata": {"name": "web", "namespace": "default"},
             "spec": {"selector": "app == 'web'", "ingress": [{"action": "Allow"}]}}
ACNP = {"apiVersion": "crd.antrea.io/v1beta1", "kind": "ClusterNetworkPolicy", "metadata": {"name": "drop-web"},
        "spec": {"tier": "securityops", "priority": 5, "appliedTo": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                 "ingress": [{"action": "Drop", "from": [{"podSelector": {}}]}]}}

Request = tuple[str, str, Any, dict[str, str]]  # method, path, body, headers


def talk(tmp_path: Path, cni_name: str | None, requests: list[Request],
         then: Any = None) -> tuple[list[tuple[int, Any]], Any]:
    """Send each request to an API server (with its controllers) of a cluster whose CNI is ``cni_name``; ``then``
    is called with the cluster's ClusterState (what the data plane reads) once they are answered."""

    async def run() -> tuple[list[tuple[int, Any]], Any]:
        server = ApiServer(tmp_path / "state", ClusterConfig(cni=cni_name))
        manager: ControllerManager = bring_up(server)
        await server.settle()
        client = TestClient(TestServer(server.app()))
        await client.start_server()
        out = []
        try:
            for method, path, body, headers in requests:
                resp = await client.request(method, path, json=body, headers=headers)
                out.append((resp.status, await resp.json(content_type=None)))
            await server.settle()
            after = then(server.state) if then is not None else None
        finally:
            await client.close()
            await manager.close()
            await server.close()
        return out, after

    return asyncio.run(run())


def _resources(discovery: dict[str, Any], group: str) -> dict[str, dict[str, Any]]:
    for g in discovery["items"]:
        if g["metadata"]["name"] == group:
            return {r["resource"]: r for v in g["versions"] for r in v["resources"]}
    return {}


def test_a_calico_cluster_lists_calicos_kinds_and_a_kindnet_cluster_does_not(tmp_path: Path) -> None:
    ask = [("GET", "/apis", None, {"Accept": V2})]
    (calico,), _ = talk(tmp_path / "calico", "calico", ask)
    (kindnet,), _ = talk(tmp_path / "kindnet", None, ask)
    v3 = _resources(calico[1], "projectcalico.org")
    assert v3["globalnetworkpolicies"]["scope"] == "Cluster"
    assert v3["globalnetworkpolicies"]["shortNames"] == ["gnp", "cgnp", "calicoglobalnetworkpolicies"]
    assert v3["networkpolicies"]["scope"] == "Namespaced"
    # `cnp` stays CiliumNetworkPolicy's (served before it), as kubectl's discovery order would resolve it.
    assert "cnp" not in v3["networkpolicies"].get("shortNames", [])
    assert set(_resources(calico[1], "crd.projectcalico.org")) >= {"globalnetworkpolicies", "tiers", "networksets"}
    assert _resources(calico[1], "crd.antrea.io") == {}
    assert _resources(kindnet[1], "projectcalico.org") == {}
    assert _resources(kindnet[1], "cilium.io")  # Cilium's kinds are served as they always were


def test_calicos_networkpolicy_is_stored_apart_from_the_kubernetes_one_and_read_into_the_state(
        tmp_path: Path) -> None:
    k8s_np = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
              "metadata": {"name": "web", "namespace": "default"}, "spec": {"podSelector": {}}}
    answers, others = talk(tmp_path, "calico", [
        ("POST", "/apis/projectcalico.org/v3/globalnetworkpolicies", GNP, {}),
        ("POST", "/apis/projectcalico.org/v3/namespaces/default/networkpolicies", CALICO_NP, {}),
        ("POST", "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies", k8s_np, {}),
        ("GET", "/apis/projectcalico.org/v3/namespaces/default/networkpolicies", None, {}),
        ("GET", "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies", None, {}),
        ("GET", "/apis/projectcalico.org/v3/globalnetworkpolicies/deny-all", None, {}),
    ], then=lambda state: sorted(k for k in state.others if "projectcalico" in k[0]))
    assert [a[0] for a in answers] == [201, 201, 201, 200, 200, 200]
    calico_list, k8s_list, got = answers[3][1], answers[4][1], answers[5][1]
    assert [(o["apiVersion"], o["spec"]["selector"]) for o in calico_list["items"]] == [
        ("projectcalico.org/v3", "app == 'web'")]
    assert calico_list["kind"] == "NetworkPolicyList"
    assert [o["apiVersion"] for o in k8s_list["items"]] == ["networking.k8s.io/v1"]
    assert got["spec"]["selector"] == "all()" and got["metadata"]["generation"] == 1
    # Kept in ClusterState.others under the qualified kind, as the offline build keeps them.
    assert others == [("GlobalNetworkPolicy.projectcalico.org", "deny-all"),
                      ("NetworkPolicy.projectcalico.org", "default/web")]


def test_the_state_of_a_calico_cluster_enforces_its_global_policy(tmp_path: Path) -> None:
    def caveats_and_cni(state: Any) -> Any:
        return [o.ref for o in cni.policy_objects(state)], cni.cluster_cni(state).name

    _, (objects, name) = talk(tmp_path, "calico", [("POST", "/apis/projectcalico.org/v3/globalnetworkpolicies",
                                                     GNP, {})], then=caveats_and_cni)
    assert name == "calico"
    assert objects == ["GlobalNetworkPolicy.projectcalico.org deny-all"]


def test_what_calico_or_antrea_refuse_is_a_422_naming_the_field(tmp_path: Path) -> None:
    bad_selector = {**GNP, "metadata": {"name": "typo"}, "spec": {"selector": "app = = 'web'"}}
    bad_action = {**GNP, "apiVersion": "crd.projectcalico.org/v1", "metadata": {"name": "action"},
                  "spec": {"selector": "all()", "ingress": [{"action": "Reject"}]}}
    no_priority = {**ACNP, "spec": {k: v for k, v in ACNP["spec"].items() if k != "priority"}}
    answers, _ = talk(tmp_path / "calico", "calico", [
        ("POST", "/apis/projectcalico.org/v3/globalnetworkpolicies", bad_selector, {}),
        ("POST", "/apis/crd.projectcalico.org/v1/globalnetworkpolicies", bad_action, {}),
    ])
    (status, body), (status2, body2) = answers
    assert status == 422 and body["reason"] == "Invalid"
    assert body["message"].startswith('GlobalNetworkPolicy.projectcalico.org "typo" is invalid: spec.selector: '
                                      'Invalid value: ')
    assert body["details"]["causes"][0]["field"] == "spec.selector"
    assert status2 == 422
    assert body2["details"]["causes"] == [{"reason": "FieldValueNotSupported", "field": "spec.ingress[0].action",
                                           "message": "Unsupported value: 'Reject': supported values: Allow, Deny, "
                                                      "Log, Pass"}]
    (antrea,), _ = talk(tmp_path / "antrea", "antrea", [
        ("POST", "/apis/crd.antrea.io/v1beta1/clusternetworkpolicies", no_priority, {})])
    assert antrea[0] == 422
    assert antrea[1]["message"] == ('ClusterNetworkPolicy.crd.antrea.io "drop-web" is invalid: spec.priority: '
                                    "Required value")


def test_antreas_kinds_are_printed_with_their_crds_columns_and_deleted(tmp_path: Path) -> None:
    answers, others = talk(tmp_path, "antrea", [
        ("POST", "/apis/crd.antrea.io/v1beta1/clusternetworkpolicies", ACNP, {}),
        ("GET", "/apis/crd.antrea.io/v1beta1/clusternetworkpolicies", None, {"Accept": TABLE}),
        ("GET", "/apis/projectcalico.org/v3/globalnetworkpolicies", None, {}),
        ("DELETE", "/apis/crd.antrea.io/v1beta1/clusternetworkpolicies/drop-web", None, {}),
        ("GET", "/apis/crd.antrea.io/v1beta1/clusternetworkpolicies/drop-web", None, {}),
    ], then=lambda state: [k for k in state.others if "antrea" in k[0]])
    created, table, calico, deleted, gone = answers
    assert created[0] == 201
    assert [c["name"] for c in table[1]["columnDefinitions"]] == ["Name", "Tier", "Priority", "Desired Nodes",
                                                                   "Current Nodes", "Age"]
    assert table[1]["rows"][0]["cells"][:5] == ["drop-web", "securityops", 5, None, None]
    assert calico[0] == 404  # not a Calico cluster
    assert deleted[0] == 200 and gone[0] == 404
    assert others == []


# --- a client's CRD of a kind knetsim does not serve -------------------------------------------------------------

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "shortNames": ["wd"]},
             "versions": [
                 {"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                  "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                                               {"name": "Color", "type": "string", "jsonPath": ".spec.color",
                                                "priority": 1}],
                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                      "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 1},
                                                                "color": {"type": "string"}}},
                      "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}},
                 {"name": "v1beta1", "served": True, "storage": False,
                  "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
             ]}}
WIDGET = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": "default"},
          "spec": {"size": 3, "color": "blue"}}


def test_a_clients_crd_of_an_unknown_kind_is_served_as_an_api_server_serves_any_crd(tmp_path: Path) -> None:
    widgets = "/apis/example.com/v1/namespaces/default/widgets"
    answers, others = talk(tmp_path, None, [
        ("POST", widgets, WIDGET, {}),  # before its CRD: not served
        ("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", WIDGET_CRD, {}),
        ("GET", "/apis", None, {"Accept": V2}),
        ("POST", widgets, WIDGET, {}),
        ("POST", widgets, {**WIDGET, "metadata": {"name": "w0", "namespace": "default"}, "spec": {"size": 0}}, {}),
        ("GET", widgets, None, {"Accept": TABLE}),
        ("GET", "/apis/example.com/v1beta1/namespaces/default/widgets/w1", None, {}),
        ("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com", None, {}),
        ("GET", "/apis/example.com/v1", None, {}),
    ], then=lambda state: sorted(k for k in state.others if k[0] == "Widget"))
    _, widgets_in_state = talk(tmp_path / "kept", None, [
        ("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", WIDGET_CRD, {}),
        ("POST", widgets, WIDGET, {})], then=lambda state: sorted(k for k in state.others if k[0] == "Widget"))
    assert widgets_in_state == [("Widget", "default/w1")]  # in the state, as any kind knetsim keeps
    before, crd, discovery, created, invalid, table, v1beta1, _deleted, after = answers
    assert before[0] == 404
    assert crd[0] == 201
    resources = _resources(discovery[1], "example.com")
    assert resources["widgets"]["shortNames"] == ["wd"] and resources["widgets"]["scope"] == "Namespaced"
    assert created[0] == 201 and created[1]["metadata"]["generation"] == 1
    assert invalid[0] == 422
    assert invalid[1]["details"]["causes"][0]["field"] == "spec.size"
    # The priority-0 additionalPrinterColumns, then Age, as kubectl get prints a CRD's kind.
    assert [c["name"] for c in table[1]["columnDefinitions"]] == ["Name", "Size", "Age"]
    assert table[1]["rows"][0]["cells"][:2] == ["w1", 3]
    assert v1beta1[0] == 200 and v1beta1[1]["apiVersion"] == "example.com/v1beta1"
    assert after[0] == 404  # its CRD deleted, the kind is no longer served, and its objects are gone with it
    assert others == []


def test_a_cnis_crd_applied_on_a_cluster_of_another_cni_serves_its_kind_with_the_cnis_rules(tmp_path: Path) -> None:
    gnp_crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "globalnetworkpolicies.crd.projectcalico.org"},
               "spec": {"group": "crd.projectcalico.org", "scope": "Cluster",
                        "names": {"kind": "GlobalNetworkPolicy", "plural": "globalnetworkpolicies",
                                  "singular": "globalnetworkpolicy"},
                        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                            "type": "object", "properties": {"spec": {
                                "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]}}
    path = "/apis/crd.projectcalico.org/v1/globalnetworkpolicies"
    v1 = {**GNP, "apiVersion": "crd.projectcalico.org/v1"}
    answers, _ = talk(tmp_path, None, [
        ("POST", path, v1, {}),
        ("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", gnp_crd, {}),
        ("POST", path, v1, {}),
        ("POST", path, {**v1, "metadata": {"name": "typo"}, "spec": {"selector": "app = = 'web'"}}, {}),
    ])
    assert [a[0] for a in answers] == [404, 201, 201, 422]
    assert answers[3][1]["details"]["causes"][0]["field"] == "spec.selector"


def test_a_clients_crd_kind_takes_merge_patches_and_refuses_strategic_ones(tmp_path: Path) -> None:
    item = "/apis/example.com/v1/namespaces/default/widgets/w1"
    answers, _ = talk(tmp_path, None, [
        ("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", WIDGET_CRD, {}),
        ("POST", "/apis/example.com/v1/namespaces/default/widgets", WIDGET, {}),
        ("PATCH", item, {"spec": {"size": 5}}, {"Content-Type": "application/merge-patch+json"}),
        ("PATCH", item, {"spec": {"size": 6}}, {"Content-Type": "application/strategic-merge-patch+json"}),
    ])
    merged, strategic = answers[2], answers[3]
    assert merged[0] == 200 and merged[1]["spec"] == {"size": 5, "color": "blue"}
    assert merged[1]["metadata"]["generation"] == 2
    assert strategic[0] == 415  # custom resources have no patch strategies


def test_a_clients_crd_kind_and_its_objects_survive_a_restart(tmp_path: Path) -> None:
    from knetsim.apiserver.recheck import ADMISSION_MARK, recheck
    from knetsim.apiserver.registry import now_rfc3339

    talk(tmp_path, None, [("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", WIDGET_CRD, {}),
                          ("POST", "/apis/example.com/v1/namespaces/default/widgets", WIDGET, {})])

    async def restart() -> list[Any]:
        server = ApiServer(tmp_path / "state")
        try:
            server.store.meta.pop(ADMISSION_MARK, None)  # as a newer knetsim finds the store: everything rechecked
            return recheck(server.registry, now_rfc3339())
        finally:
            await server.close()

    assert not [key for key, _ in asyncio.run(restart()) if key[0] == "Widget"]
    (got,), _ = talk(tmp_path, None, [("GET", "/apis/example.com/v1/namespaces/default/widgets/w1", None, {})])
    assert got[0] == 200 and got[1]["spec"]["size"] == 3
