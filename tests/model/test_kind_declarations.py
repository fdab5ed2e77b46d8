"""Each kind is declared once (a row of model/kinds.py's KINDS, or a catalog Definition for a custom kind), and
the lists that name kinds elsewhere are derived from that row: a second declaration stops the import."""

import dataclasses

import pytest

from knetsim.cluster.state import COLLECTIONS, KEYED_BY_NAME, KEYED_BY_REF, ClusterState, collection_of
from knetsim.gateway.translate import ROUTE_COLLECTIONS
from knetsim.model import gatewayapi, kinds
from knetsim.model.apis.catalog import DEFINITIONS
from knetsim.model.kinds import BY_KIND, KINDS, DuplicateKind, KindInfo, index, view_of


def test_a_kind_declared_twice_is_refused():
    pod = BY_KIND["Pod"]
    with pytest.raises(DuplicateKind, match="kind Pod is declared twice"):
        index([*KINDS, dataclasses.replace(pod, version="v2")])


def test_two_kinds_in_one_collection_are_refused():
    stray = KindInfo("Pod2", "", "v1", "pod2s", True, collection="pods")
    with pytest.raises(DuplicateKind, match="kinds Pod and Pod2 both declare the ClusterState collection 'pods'"):
        index([*KINDS, stray])


def test_a_catalog_kind_declared_again_as_a_builtin_row_is_refused():
    # What a contributor might do by mistake: add HTTPRoute to KINDS as well as to the catalog.
    builtin = KindInfo("HTTPRoute", "gateway.networking.k8s.io", "v1", "httproutes", True)
    with pytest.raises(DuplicateKind, match="kind HTTPRoute is declared twice"):
        index([builtin, *kinds._crd_kinds()])


def test_the_declarations_hold_no_kind_twice():
    assert len({k.kind for k in KINDS}) == len(KINDS)
    assert len({(d.group, d.kind) for d in DEFINITIONS}) == len(DEFINITIONS)


def test_every_collection_of_the_state_is_some_kinds_and_only_its():
    fields = {f.name for f in dataclasses.fields(ClusterState) if f.name not in ("config", "notices")}
    assert set(COLLECTIONS) == fields
    assert len(COLLECTIONS) == len(set(COLLECTIONS))
    for kind, collection in {**KEYED_BY_NAME, **KEYED_BY_REF}.items():
        assert collection_of(kind) == collection
        assert BY_KIND[kind].namespaced == (kind in KEYED_BY_REF)
    assert collection_of("ConfigMap") == "others" and collection_of("Deployment") == "workloads"


def test_the_gateway_lists_are_the_catalogs():
    gateway = {d.kind for d in DEFINITIONS if d.group == "gateway.networking.k8s.io"}
    assert kinds.GATEWAY_API_KINDS == gateway == set(gatewayapi.KINDS) == set(gatewayapi.PARSERS)
    assert set(ROUTE_COLLECTIONS) == set(kinds.ROUTE_KINDS) == {"HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute",
                                                                 "UDPRoute"}
    assert {"ClusterNetworkPolicy", "AdminNetworkPolicy", "BaselineAdminNetworkPolicy"} == kinds.CLUSTER_POLICY_KINDS


def test_every_kind_with_a_collection_of_its_own_has_a_view_of_it():
    for info in KINDS:
        if info.keyed_collection:
            parse = view_of(info.kind)
            assert parse is not None, info.kind
            obj = parse({"apiVersion": info.api_version, "kind": info.kind,
                         "metadata": {"name": "x", **({"namespace": "ns"} if info.namespaced else {})}})
            assert obj.kind == info.kind
    assert view_of("ConfigMap") is None


def test_a_kind_declared_twice_in_one_group_is_refused_and_one_name_in_two_groups_is_not():
    from knetsim.model.kinds import CNI_KINDS, index_by_group_kind

    calico_np = kinds.info_for("projectcalico.org/v3", "NetworkPolicy")
    with pytest.raises(DuplicateKind, match=r"kind NetworkPolicy of group projectcalico\.org is declared twice"):
        index_by_group_kind([*KINDS, *CNI_KINDS, dataclasses.replace(calico_np, version="v4")])
    # Three NetworkPolicies (Kubernetes', Calico's, Antrea's) and two Tiers are rows side by side.
    assert {k.group for k in kinds.BY_GROUP_KIND.values() if k.kind == "NetworkPolicy"} == {
        "networking.k8s.io", "projectcalico.org", "crd.projectcalico.org", "crd.antrea.io"}


def test_every_cni_kind_is_a_row_saying_which_cni_brings_it():
    calico = {k.kind for k in kinds.BY_GROUP_KIND.values() if k.cni == "calico"}
    assert calico == {"NetworkPolicy", "GlobalNetworkPolicy", "NetworkSet", "GlobalNetworkSet", "Tier",
                      "StagedNetworkPolicy", "StagedGlobalNetworkPolicy", "StagedKubernetesNetworkPolicy"}
    for kind in calico:  # both forms: calico-apiserver's v3 and the v1 CRDs that store it
        assert kinds.info_for("projectcalico.org/v3", kind).cni == "calico"
        assert kinds.info_for("crd.projectcalico.org/v1", kind).cni == "calico"
    antrea = {k.kind for k in kinds.BY_GROUP_KIND.values() if k.cni == "antrea"}
    assert antrea == {"ClusterNetworkPolicy", "NetworkPolicy", "Tier", "ClusterGroup", "Group"}
    assert {k.kind for k in kinds.BY_GROUP_KIND.values() if k.cni == "cilium"} == {
        "CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy"}
    assert kinds.info_for("crd.antrea.io/v1beta1", "ClusterNetworkPolicy").short_names == ("acnp",)
    assert kinds.info_for("projectcalico.org/v3", "GlobalNetworkPolicy").short_names[0] == "gnp"
    assert kinds.info_for("example.com/v1", "NetworkPolicy") is None


def test_a_bare_name_is_still_the_kubernetes_or_knetsim_kind():
    assert BY_KIND["NetworkPolicy"].group == "networking.k8s.io"
    assert BY_KIND["ClusterNetworkPolicy"].group == "policy.networking.k8s.io"
    assert "GlobalNetworkPolicy" not in BY_KIND and "Tier" not in BY_KIND
    assert kinds.resolve_kind("cnp").kind == "CiliumNetworkPolicy"  # Cilium's alias stays Cilium's


def test_the_group_lists_are_derived_from_the_rows():
    from knetsim.cluster import build
    from knetsim.cluster.state import stored_kind
    from knetsim.policy import cni
    from knetsim.policy.antrea import model as antrea_model
    from knetsim.policy.calico import model as calico_model

    assert build.CALICO_GROUPS == calico_model.GROUPS == {"projectcalico.org", "crd.projectcalico.org"}
    assert build.ANTREA_GROUPS == antrea_model.GROUPS == {"crd.antrea.io"}
    assert {g for g, owner in cni.GROUPS.items() if owner == "calico"} == calico_model.GROUPS
    assert cni.EVALUATED["antrea"] == {("crd.antrea.io", "NetworkPolicy"), ("crd.antrea.io", "ClusterNetworkPolicy")}
    assert {"StagedNetworkPolicy", "StagedGlobalNetworkPolicy", "StagedKubernetesNetworkPolicy"} == cni.STAGED_KINDS
    assert stored_kind("NetworkPolicy", "projectcalico.org/v3") == "NetworkPolicy.projectcalico.org"
    assert stored_kind("NetworkPolicy", "networking.k8s.io/v1") == "NetworkPolicy"
    assert stored_kind("ClusterNetworkPolicy", "crd.antrea.io/v1beta1") == "ClusterNetworkPolicy.crd.antrea.io"
