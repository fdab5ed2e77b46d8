"""Validation ratcheting (KEP-4008) of the legacy IP and CIDR fields StrictIPCIDRValidation tightens (1.36 beta,
1.38 GA; model/versions.py): on an update, an address the stored object already holds is checked as before the
gate, so an object a 1.35 cluster stored keeps its unchanged ``192.168.0.5/24`` after the upgrade; a new or
changed one is refused; a create is refused as before. Restated from apimachinery validation/ip.go
(IsValidCIDRForLegacyField's ``validOldCIDRs``, IsValidIPForLegacyField's ``validOldIPs``) and the Service and
NetworkPolicy strategies that pass the old object's values."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import knetsim

from knetsim.model import versions
from knetsim.model.admission import resolve, validation_errors

POLICY: dict[str, Any] = {
    "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
    "metadata": {"name": "np", "namespace": "default", "uid": "u1", "resourceVersion": "1"},
    "spec": {"podSelector": {}, "policyTypes": ["Ingress"],
             "ingress": [{"from": [{"ipBlock": {"cidr": "192.168.0.5/24", "except": ["192.168.0.9/30"]}}]}]},
}
SERVICE: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Service",
    "metadata": {"name": "lb", "namespace": "default", "uid": "u2", "resourceVersion": "1"},
    "spec": {"type": "LoadBalancer", "selector": {"app": "web"}, "clusterIP": "10.96.0.50",
             "clusterIPs": ["10.96.0.50"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
             "sessionAffinity": "None",
             "externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster",
             "ports": [{"port": 80, "targetPort": 80, "protocol": "TCP", "nodePort": 30080}],
             "externalIPs": ["10.0.0.5"], "loadBalancerSourceRanges": ["192.168.0.5/24"]},
}


def errors(new: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
    kind = resolve(new["apiVersion"], new["kind"])
    with versions.using(versions.parse("1.38")):
        return [str(e) for e in validation_errors(copy.deepcopy(new), kind, copy.deepcopy(old) if old else None)]


def test_an_unchanged_ambiguous_ip_block_stays_on_update_and_a_create_is_refused() -> None:
    updated = copy.deepcopy(POLICY)
    updated["metadata"]["labels"] = {"team": "a"}
    assert errors(updated, POLICY) == []
    assert any("must not have bits set beyond the prefix length" in e for e in errors(POLICY, None))


def test_a_changed_or_added_ambiguous_cidr_is_refused_on_update() -> None:
    changed = copy.deepcopy(POLICY)
    changed["spec"]["ingress"][0]["from"].append({"ipBlock": {"cidr": "10.1.0.5/16"}})
    found = errors(changed, POLICY)
    assert len(found) == 1 and 'from[1].ipBlock.cidr: Invalid value: "10.1.0.5/16": must not have bits set' in found[0]


def test_a_services_unchanged_source_range_stays_and_a_new_leading_zero_ip_is_refused() -> None:
    updated = copy.deepcopy(SERVICE)
    updated["spec"]["externalIPs"] = ["10.0.0.5", "010.0.0.6"]
    found = errors(updated, SERVICE)
    assert found == ['spec.externalIPs[1]: Invalid value: "010.0.0.6": must not have leading 0s']


def test_a_leading_zero_address_knetsim_stored_as_read_still_ratchets() -> None:
    # A 1.35 cluster admitted 010.0.0.5 and knetsim keeps it as every reader reads it (10.0.0.5): the same value
    # written again on update stands.
    rewritten = copy.deepcopy(SERVICE)
    rewritten["spec"]["externalIPs"] = ["010.0.0.5"]
    assert errors(rewritten, SERVICE) == []


@pytest.mark.parametrize("version", ["1.36", "1.38"])
def test_a_snapshot_of_an_older_cluster_keeps_its_ambiguous_ip_block(tmp_path: Path, version: str) -> None:
    # A stored object is read as an update that changes nothing: what the cluster keeps, it keeps.
    import yaml

    snapshot = tmp_path / "snap.yaml"
    snapshot.write_text(yaml.safe_dump(POLICY))
    result = knetsim("validate", "-f", str(snapshot), "--kubernetes-version", version)
    assert result.exit_code == 0, result.output
    assert "StoredInvalid" not in result.output and "must not have bits set" not in result.output
