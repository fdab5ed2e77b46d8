"""ClusterNetworkPolicy (and the v1alpha1 kinds) on ``knetsim up`` with the real kubectl: apply, get with
the printer columns, describe, and `kubectl exec` traffic that obeys the tiers the moment they change.

The worked example of docs/policy.md (examples/cluster-policy): shop (db-0, api-0), tenant-a
(app-0, app-1), tenant-b (app-0). Address plan: DESIGN defaults (pods 10.244.0.0/16).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import Live, wait_for

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "cluster-policy")


@pytest.fixture(scope="module")
def tiers(live: Live) -> Live:
    out = live.kubectl("apply", "-f", EXAMPLE).stdout
    assert "clusternetworkpolicy.policy.networking.k8s.io/block-db created" in out
    wait_for(lambda: "Running" in live.kubectl("get", "pod", "-n", "tenant-a", "app-0", "--no-headers").stdout)
    return live


def exec_(live: Live, namespace: str, pod: str, *cmd: str) -> Any:
    return live.kubectl("exec", "-n", namespace, pod, "--", *cmd, check=False)


def test_get_prints_the_tier_and_priority_columns(tiers: Live) -> None:
    lines = tiers.kubectl("get", "clusternetworkpolicies").stdout.splitlines()
    assert lines[0].split() == ["NAME", "TIER", "PRIORITY", "AGE"]
    assert [line.split()[:3] for line in lines[1:]] == [
        ["block-db", "Admin", "10"], ["shop-api-delegate", "Admin", "20"], ["shop-from-tenants", "Admin", "30"],
        ["tenant-a-isolation", "Baseline", "10"], ["tenant-b-isolation", "Baseline", "10"]]
    one = tiers.kubectl("get", "clusternetworkpolicy.policy.networking.k8s.io", "block-db",
                        "-o", "jsonpath={.spec.ingress[0].name}").stdout
    assert one == "deny-from-tenants"


def test_describe_shows_the_spec(tiers: Live) -> None:
    out = tiers.kubectl("describe", "clusternetworkpolicy", "block-db").stdout
    assert "Kind:         ClusterNetworkPolicy" in out
    assert "API Version:  policy.networking.k8s.io/v1alpha2" in out
    assert "Name:            deny-from-tenants" in out
    assert "Tier:         Admin" in out


def test_exec_traffic_obeys_the_tiers(tiers: Live) -> None:
    # Admin Deny over the shop's NetworkPolicy that admits every role=backend pod.
    db = exec_(tiers, "tenant-a", "app-0", "nc", "-zv", "-w", "2", "db.shop", "5432")
    assert db.returncode == 1 and "timeout" in db.stderr
    assert exec_(tiers, "shop", "api-0", "nc", "-zv", "-w", "2", "db", "5432").returncode == 0
    # Pass hands port 8080 to the shop's NetworkPolicy: tenant-a in, tenant-b out.
    assert exec_(tiers, "tenant-a", "app-0", "nc", "-zv", "-w", "2", "api.shop", "8080").returncode == 0
    assert exec_(tiers, "tenant-b", "app-0", "nc", "-zv", "-w", "2", "api.shop", "8080").returncode == 1
    # The Baseline tier keeps tenants apart, and a tenant's pods together.
    def ip(namespace: str, pod: str) -> str:
        return tiers.kubectl("get", "pod", "-n", namespace, pod, "-o", "jsonpath={.status.podIP}").stdout

    assert exec_(tiers, "tenant-a", "app-0", "wget", "-qO-", "-T", "2", f"http://{ip('tenant-a', 'app-1')}"
                 ).returncode == 0
    other = exec_(tiers, "tenant-a", "app-0", "wget", "-qO-", "-T", "2", f"http://{ip('tenant-b', 'app-0')}")
    assert other.returncode == 1 and "download timed out" in other.stderr


def test_deleting_a_policy_changes_the_traffic_at_once(tiers: Live) -> None:
    tiers.kubectl("delete", "clusternetworkpolicy", "block-db")
    try:
        wait_for(lambda: exec_(tiers, "tenant-a", "app-0", "nc", "-zv", "-w", "2", "db.shop", "5432").returncode == 0)
    finally:
        tiers.kubectl("apply", "-f", f"{EXAMPLE}/40-cluster-policies.yaml")
    wait_for(lambda: exec_(tiers, "tenant-a", "app-0", "nc", "-zv", "-w", "2", "db.shop", "5432").returncode == 1)


def test_the_v1alpha1_kinds_are_served_and_enforced_alike(tiers: Live) -> None:
    anp = """apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: shop-metrics}
spec:
  priority: 5
  subject: {namespaces: {matchLabels: {kubernetes.io/metadata.name: shop}}}
  ingress:
    - name: tenant-a-metrics
      action: Allow
      from: [{namespaces: {matchLabels: {tenant: a}}}]
      ports: [{portNumber: {protocol: TCP, port: 9090}}]
"""
    tiers.kubectl("apply", "-f", "-", input=anp)
    try:
        lines = tiers.kubectl("get", "adminnetworkpolicies").stdout.splitlines()
        assert lines[0].split() == ["NAME", "PRIORITY", "AGE"] and lines[1].split()[:2] == ["shop-metrics", "5"]
        # Allow at priority 5 comes before shop-from-tenants (30): tenant-a reaches the metrics port.
        wait_for(lambda: exec_(tiers, "tenant-a", "app-0", "nc", "-zv", "-w", "2", "api.shop",
                               "9090").returncode == 0)
        assert exec_(tiers, "tenant-b", "app-0", "nc", "-zv", "-w", "2", "api.shop", "9090").returncode == 1
    finally:
        tiers.kubectl("delete", "adminnetworkpolicy", "shop-metrics")
