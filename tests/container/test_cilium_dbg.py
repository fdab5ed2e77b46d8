"""`cilium-dbg` in the Cilium agent's container, run in-process as `kubectl exec` runs it.

Given the shop on an ebpf cluster (DESIGN defaults; the agent pods `cilium-*` on every node), then the
agent's listings are its node's maps in cilium-dbg's layout: `service list` through Go's tabwriter with
upstream's columns (`ID`, `Frontend`, `Service Type`, `Backend`; `N => ADDR (state)` per backend, the
next backends on lines of their own), `bpf lb list -o json` the same entries as the text, keyed as Go
marshals a map; outside the agent's image there is no cilium-dbg, and on a kube-proxy cluster no agent.

Upstream facts (cilium/cilium cilium-dbg/cmd/service_list.go, bpf_lb_list.go, helpers.go) are restated
here as literals, independent of the code under test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import exec_in_pod

from knetsim import Cluster
from knetsim.cluster.config import config_from_dict

SHOP = str(Path(__file__).resolve().parents[2] / "examples" / "shop")


def cluster(dataplane: str) -> Any:
    return Cluster.from_paths([SHOP], config=config_from_dict({"dataplane": dataplane})).state


@pytest.fixture(scope="module")
def ebpf() -> Any:
    return cluster("ebpf")


def run(state: Any, pod_prefix: str, argv: list[str], node: str = "worker") -> tuple[int, str, str]:
    # "cilium-" is the agent (k8s-app=cilium), not its Envoy neighbour cilium-envoy-*.
    pod = next(p for p in state.pods.values() if p.name.startswith(pod_prefix) and p.node_name == node
               and (pod_prefix != "cilium-" or p.labels.get("k8s-app") == "cilium"))
    return exec_in_pod(state, pod, argv)


def go_tabwriter(rows: list[list[str]]) -> list[str]:
    """tabwriter(minwidth 5, padding 3) over lines whose every cell ends in a tab; trailing blanks dropped."""
    widths = [max(5, max(len(r[i]) for r in rows) + 3) for i in range(len(rows[0]))]
    return ["".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows]


def test_service_list_is_laid_out_as_cilium_dbg_prints_it(ebpf: Any) -> None:
    code, out, err = run(ebpf, "cilium-", ["cilium-dbg", "service", "list"])
    assert (code, err) == (0, "")
    lines = out.splitlines()
    rows = [re.split(r"\s{3,}", line) for line in lines]
    assert rows[0] == ["ID", "Frontend", "Service Type", "Backend"]
    cells: list[list[str]] = [rows[0]]
    for line, row in zip(lines[1:], rows[1:], strict=True):
        if line.startswith(" "):  # a further backend of the service above: empty first three cells
            assert re.fullmatch(r"\d+ => \S+ \((active|terminating|quarantined)\)", line.strip())
            cells.append(["", "", "", line.strip()])
        else:
            assert re.fullmatch(r"\d+", row[0]) and row[2] in ("ClusterIP", "NodePort", "ExternalIPs", "LoadBalancer")
            assert re.fullmatch(r"\S+:\d+/(TCP|UDP|SCTP)", row[1])
            cells.append(row + [""] * (4 - len(row)))
    assert lines == go_tabwriter(cells)
    ids = [int(r[0]) for r in cells[1:] if r[0]]
    assert ids == sorted(ids) and ids[0] == 1
    assert re.search(r"^1 +10\.96\.0\.1:443/TCP +ClusterIP +1 => 172\.18\.0\.2:6443/TCP \(active\)$", out, re.M)
    # The NodePort frontends are the agent's own node's.
    assert "172.18.0.3:" in out and "172.18.0.4:" not in out


def test_service_get_shows_one_frontend_and_refuses_an_unknown_id(ebpf: Any) -> None:
    code, out, _ = run(ebpf, "cilium-", ["cilium-dbg", "service", "get", "1"])
    assert code == 0 and out.splitlines()[1].startswith("1    10.96.0.1:443/TCP")
    code, _, err = run(ebpf, "cilium-", ["cilium-dbg", "service", "get", "9999"])
    assert code == 1 and err.startswith("Error: Cannot get service '9999'")


def test_bpf_lb_list_json_holds_the_texts_entries(ebpf: Any) -> None:
    _, text, _ = run(ebpf, "cilium-", ["cilium-dbg", "bpf", "lb", "list"])
    code, out, _ = run(ebpf, "cilium-", ["cilium-dbg", "bpf", "lb", "list", "-o", "json"])
    assert code == 0
    data = json.loads(out)
    assert list(data) == sorted(data)
    pairs = {tuple(re.split(r"\s{3,}", line, maxsplit=1)) for line in text.splitlines()[1:]}
    assert {(k, v.rstrip()) for k, values in data.items() for v in values} == pairs
    master = next(v for values in data.values() for v in values if v.startswith("0.0.0.0:0 "))
    assert master.endswith("] ")  # Go's format leaves a field for the L7 proxy port after the flags


def test_cilium_dbg_exists_only_where_an_agent_runs(ebpf: Any) -> None:
    code, _, err = run(ebpf, "web-", ["cilium-dbg", "service", "list"])
    assert (code, err) == (127, "sh: cilium-dbg: not found\n")
    # Cilium's image on a kube-proxy cluster: no agent serves its socket, no map is pinned.
    lone = Cluster.from_yaml("apiVersion: v1\nkind: Pod\nmetadata: {name: cilium-lone}\nspec:\n  nodeName: worker\n"
                             "  containers: [{name: agent, image: 'quay.io/cilium/cilium:v1.18.6'}]\n").state
    code, _, err = run(lone, "cilium-lone", ["cilium-dbg", "service", "list"])
    assert code == 1 and err.endswith("Is the agent running?\n")
    code, _, err = run(ebpf, "cilium-", ["cilium-dbg", "frobnicate"])
    assert code == 1 and err.startswith('Error: unknown command "frobnicate" for "cilium-dbg"')
    code, _, err = run(ebpf, "cilium-", ["cilium-dbg", "endpoint", "list"])
    assert code == 1 and "`endpoint list` is not simulated by knetsim" in err
    assert run(ebpf, "cilium-", ["cilium-dbg", "status", "--brief"])[1] == "OK\n"
