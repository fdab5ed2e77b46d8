"""``knetsim matrix``: rows per workload (merged where policy treats replicas alike, split where not),
system pods left out, the pod-level answer streamed, and every format saying the same thing.

Address plan: DESIGN defaults (pods 10.244.0.0/16 on worker 10.244.1.x and worker2 10.244.2.x);
external addresses from 192.0.2.0/24 (documentation range).
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.helpers import knetsim_raising

from knetsim.policy.matrix import matrix

from .helpers import DEFAULT_DENY_INGRESS, deployment, netpol, ns, pod, state

ROOT = Path(__file__).resolve().parents[2]
SHOP = str(ROOT / "examples" / "shop")

# web (2 replicas) may call api (3 replicas) on its named port; canary is one of api's pods with
# another track label, which a policy selects on: api is split into two rows.
APP = [ns("prod"), ns("alice", user="alice"),
       deployment("prod/web", {"tier": "front"}, 2),
       deployment("prod/api", {"track": "stable"}, 3, ports={"http": 8080}),
       pod("prod/canary", {"app": "api", "track": "canary"}, ports={"http": 8081},
           tweak=lambda b: b["metadata"].update(ownerReferences=[{
               "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "api-canary", "uid": "u1", "controller": True}])),
       pod("alice/tool", {"role": "tool"}),
       netpol("prod/deny", DEFAULT_DENY_INGRESS),
       netpol("prod/api-in", {"podSelector": {"matchLabels": {"app": "api"}}, "ingress": [
           {"from": [{"podSelector": {"matchLabels": {"app": "web"}}}], "ports": [{"port": "http"}]}]}),
       netpol("prod/canary-from-alice", {"podSelector": {"matchLabels": {"track": "canary"}}, "ingress": [
           {"from": [{"namespaceSelector": {"matchLabels": {"user": "alice"}}}]}]})]


@pytest.fixture()
def manifests(tmp_path: Path) -> str:
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump_all(APP, sort_keys=False))
    return str(path)


def run(*args: str) -> Any:
    result = knetsim_raising(*args)
    assert result.exit_code == 0, result.output
    return result.output


def test_rows_are_workloads_and_replicas_merge() -> None:
    m = matrix(state(*APP))
    assert m.names == ["alice/tool[Pod]", "prod/api-canary[ReplicaSet]", "prod/api[Deployment]",
                       "prod/web[Deployment]"]
    assert [len(r) for r in m.rows.members] == [1, 1, 3, 2]
    assert m.allowed_between("prod/web[Deployment]", "prod/api[Deployment]").describe() == "TCP 8080"
    assert m.allowed_between("prod/web[Deployment]", "prod/api-canary[ReplicaSet]").describe() == "TCP 8081"
    assert m.allowed_between("alice/tool[Pod]", "prod/api-canary[ReplicaSet]").is_all
    assert m.allowed_between("alice/tool[Pod]", "prod/api[Deployment]").is_empty


def _owned(ref: str, labels: dict[str, str], owner: str) -> dict[str, Any]:
    return pod(ref, labels, tweak=lambda b: b["metadata"].update(ownerReferences=[
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": owner, "controller": True}]))


def test_a_workload_policy_tells_apart_is_split_with_a_note() -> None:
    # Two replicas of one ReplicaSet, one of them relabelled (kubectl label pod web-b role=admin).
    s = state(ns("prod"), _owned("prod/web-a", {"app": "web"}, "web"),
              _owned("prod/web-b", {"app": "web", "role": "admin"}, "web"),
              netpol("prod/pin", {"podSelector": {"matchLabels": {"app": "web"}}, "ingress": [
                  {"from": [{"podSelector": {"matchLabels": {"role": "admin"}}}]}]}))
    m = matrix(s)
    assert m.names == ["prod/web[ReplicaSet]{!role}", "prod/web[ReplicaSet]{role=admin}"]
    assert m.notes == ("prod/web[ReplicaSet] is 2 rows: policy tells its pods apart ({!role}, {role=admin})",)
    assert m.allowed_between("prod/web[ReplicaSet]{role=admin}", "prod/web[ReplicaSet]{!role}").is_all
    assert m.allowed_between("prod/web[ReplicaSet]{!role}", "prod/web[ReplicaSet]{role=admin}").is_empty


def test_system_pods_are_left_out_unless_asked_for() -> None:
    names = json.loads(run("matrix", "-f", SHOP, "-o", "json"))["workloads"]
    assert names == ["shop/api[Deployment]", "shop/db[StatefulSet]", "shop/web[Deployment]"]
    everything = json.loads(run("matrix", "-f", SHOP, "-o", "json", "--include-system"))["workloads"]
    assert "kube-system/coredns[Deployment]" in everything
    assert "ingress-nginx/ingress-nginx-controller[Deployment]" in everything
    assert "kube-system/kube-proxy[DaemonSet]{node=worker}" in everything


def test_a_hostnetwork_source_gets_a_partly_cell() -> None:
    out = run("matrix", "-f", SHOP, "--include-system", "-o", "list")
    assert ("kube-system/kindnet[DaemonSet]{node=worker} => shop/api[Deployment] : No connections (and All "
            "connections for 2 of 3 pod pairs: 2 of 3 pods of shop/api[Deployment] run on node worker, and a pod "
            "always accepts traffic from its own node)") in out.splitlines()
    table = run("matrix", "-f", SHOP, "--include-system", "--port", "8080")
    row = next(line for line in table.splitlines() if "kindnet[DaemonSet]{node=worker} " in line)
    assert row.split()[-5:] == ["~", "~", "~", ".", "."]  # api, db, web partly; the two external ranges


def test_docs_json_example_is_the_real_output() -> None:
    text = (ROOT / "docs" / "policy.md").read_text()
    section = text.split("## `matrix -o json`", 1)[1]
    example = re.search(r"```json\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    assert json.loads(example) == json.loads(run("matrix", "-f", SHOP, "-o", "json"))
    listing = re.search(r"```\n\$ knetsim matrix -f examples/shop -o list\n(.*?)```", section, re.S)
    assert listing is not None and listing.group(1) == run("matrix", "-f", SHOP, "-o", "list")


@pytest.mark.parametrize("pods", [False, True])
def test_every_format_says_the_same(manifests: str, pods: bool) -> None:
    flags = ["--pods"] if pods else []
    data = json.loads(run("matrix", "-f", manifests, "-o", "json", *flags))
    m = matrix(state(*APP), pods=pods)
    assert data == m.to_dict()
    assert data[("pods" if pods else "workloads")] == [n for n in m.names if not n[0].isdigit()]
    pairs = {(c["from"], c["to"]): c["allowed"] for c in data["connections"]}
    assert yaml.safe_load(run("matrix", "-f", manifests, "-o", "yaml", *flags)) == data
    rows = list(csv.reader(io.StringIO(run("matrix", "-f", manifests, "-o", "csv", *flags))))
    assert rows[0] == ["from", "to", "allowed"] and {(a, b) for a, b, _ in rows[1:]} == set(pairs)
    listed = run("matrix", "-f", manifests, "-o", "list", *flags).splitlines()
    assert [tuple(line.split(" : ")[0].split(" => ")) for line in listed] == list(pairs)
    dot = run("matrix", "-f", manifests, "-o", "dot", *flags)
    assert dot.count(" -> ") == len(pairs)
    if pods:
        web = next(n for n in data["pods"] if n.startswith("prod/web-"))
        assert pairs[(web, "prod/canary")] == [{"protocol": "TCP", "ports": [[8081, 8081]]}]
        assert not any(a == b for a, b in pairs)  # a pod and itself: never listed
    else:
        assert pairs[("prod/web[Deployment]", "prod/api[Deployment]")] == [{"protocol": "TCP", "ports": [[8080, 8080]]}]


def test_table_grid_and_list(manifests: str) -> None:
    table = run("matrix", "-f", manifests, "--port", "8080")
    assert "1  alice/tool[Pod]              . . X X" in table  # alice may reach the canary only
    assert "3  prod/api[Deployment]         . X X X" in table  # api's replicas among themselves: denied
    assert "4  prod/web[Deployment]         . X . X" in table  # web -> canary is 8081 only
    assert "prod/web[Deployment] => prod/api[Deployment] : TCP 8080" in table
    assert "Note: prod/" not in table


def test_namespace_keeps_its_rows_only(manifests: str) -> None:
    data = json.loads(run("matrix", "-f", manifests, "-n", "alice", "-o", "json"))
    assert data["workloads"] == ["alice/tool[Pod]"]
    assert data["connections"] == []


def test_pod_level_stream_equals_the_reference_pairs(manifests: str) -> None:
    from knetsim.policy import connections

    s = state(*APP)
    m = matrix(s, pods=True)
    expected = {}
    users = [p for k, p in sorted(s.pods.items()) if p.namespace in ("prod", "alice")]
    for a in users:
        for b in users:
            c = connections(s, a, b)
            if a is not b and c:
                expected[(a.key, b.key)] = c
    assert {(a, b): c for a, b, c in m.connections()} == expected


def test_output_is_deterministic(manifests: str) -> None:
    for flags in ([], ["--pods"]):
        first = run("matrix", "-f", manifests, "-o", "json", *flags)
        assert first == run("matrix", "-f", manifests, "-o", "json", *flags)


def test_external_pieces_appear_when_ipblocks_are_used() -> None:
    s = state(ns("prod"), pod("prod/web", {"app": "web"}),
              netpol("prod/out", {"podSelector": {}, "policyTypes": ["Egress"],
                                  "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0",
                                                                  "except": ["192.0.2.0/24"]}}]}]}))
    m = matrix(s, "prod")
    assert m.names == ["prod/web[Pod]", "0.0.0.0-10.243.255.255", "10.245.0.0-192.0.1.255", "192.0.2.0/24",
                       "192.0.3.0-255.255.255.255"]
    assert m.allowed_between("prod/web[Pod]", "192.0.2.0/24").is_empty
    assert m.allowed_between("prod/web[Pod]", "0.0.0.0-10.243.255.255").is_all


def test_pods_the_nodes_have_no_room_for_are_named_not_dropped_silently(tmp_path: Path) -> None:
    """A full cluster must not read as a smaller one: the Pending replicas are left out of the grid, and a
    note says how many, why (the scheduler's own message), and of which workloads."""
    (tmp_path / "app.yaml").write_text(yaml.safe_dump_all(
        [ns("prod"), deployment("prod/web", {"tier": "front"}, 2), deployment("prod/big", {"tier": "batch"}, 6)],
        sort_keys=False))
    # Two workers with room for 5 pods each, kindnet and kube-proxy (and CoreDNS) among them: 8 replicas do not fit.
    (tmp_path / "cluster.yaml").write_text("maxPods: 5\n")
    config = ["--cluster-config", str(tmp_path / "cluster.yaml")]
    grid = json.loads(run("matrix", "-f", str(tmp_path / "app.yaml"), *config, "--pods", "-o", "json"))
    placed = [p for p in grid["pods"] if p.startswith("prod/")]
    notes = [n for n in grid["notes"] if n.startswith("left out:")]
    assert len(notes) == 1, grid["notes"]
    found = re.fullmatch(r"left out: (\d+) pods with no address yet \(0/3 nodes are available: 1 node\(s\) had "
                         r"untolerated taint \{node-role.kubernetes.io/control-plane: \}, 2 Too many pods\. .*\), "
                         r"of (\d) workloads?: (.*)", notes[0])
    assert found, notes[0]
    assert len(placed) + int(found[1]) == 8 and len(placed) > 0
    replicas = {"prod/web": 2, "prod/big": 6}
    short = sorted(f"{w}[Deployment]" for w, n in replicas.items() if sum(p.startswith(w + "-") for p in placed) < n)
    assert found[3].split(", ") == short and int(found[2]) == len(short)
