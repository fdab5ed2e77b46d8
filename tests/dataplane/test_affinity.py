"""sessionAffinity: ClientIP over several connections, as each data plane keeps it.

iptables: ``-m recent --rcheck --seconds T`` in the service chain, ``--set`` in the endpoint chain;
nftables: a dynamic ``affinity-`` set per endpoint with ``timeout T``, ``update`` in the endpoint chain;
Cilium: ``cilium_lb4_affinity`` {client, rev-NAT id} -> backend with its last use. Each refreshes the
time on every connection it pins, so the timeout runs from the client's last connection.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from knetsim.cli.main import cli
from knetsim.dataplane import BACKENDS, DataplaneError, Packet, trace_connections

CLIENT = "10.244.1.10"
STICKY = "10.96.100.45"  # conftest's svc5: ClientIP, timeoutSeconds 10800, one endpoint
TWO = "10.96.100.44"  # svc4: two endpoints, no affinity


@pytest.fixture(scope="module")
def sticky_state():
    from knetsim.dataplane.synthetic import make_service, make_slice, state_of
    from knetsim.model.objects import ServicePort

    services = [make_service("ns", "sticky", cluster_ip="10.96.100.90", session_affinity="ClientIP",
                             session_affinity_timeout=30, ports=(ServicePort("p80", "TCP", 80, 80),)),
                make_service("ns", "sticky6", cluster_ip="fd00:10:96::90", session_affinity="ClientIP",
                             session_affinity_timeout=30)]
    slices = [make_slice("ns", "sticky", [(f"10.244.{n}.{h}", f"worker{'' if n == 1 else n}")
                                          for n in (1, 2) for h in (20, 21)]),
              make_slice("ns", "sticky6", [("fd00:10:244:1::20", "worker"), ("fd00:10:244:2::20", "worker2")])]
    from knetsim.cluster.config import config_from_dict

    return state_of(services, slices, config_from_dict({"ipFamily": "dual"}))


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_the_next_connections_are_pinned_to_the_first_ones_backend(sticky_state, backend):
    conns = trace_connections(sticky_state, Packet(CLIENT, "10.96.100.90", 80), 4, 10, backend)
    assert len(conns[0].result.targets) == 4 and not conns[0].result.pinned and conns[0].remembered
    assert {c.backend for c in conns} == {conns[0].backend}
    assert [c.result.pinned for c in conns] == [False, True, True, True]
    assert all(c.result.targets == [c.result.targets[0]] and c.result.targets[0].probability == 1.0
               for c in conns[1:])


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_a_pause_longer_than_the_timeout_lets_the_affinity_expire(sticky_state, backend):
    conns = trace_connections(sticky_state, Packet(CLIENT, "10.96.100.90", 80), 2, 45, backend)
    assert not conns[1].result.pinned and len(conns[1].result.targets) == 4
    assert conns[1].result.affinity.startswith("expired")


@pytest.mark.parametrize(("backend", "pinned"), [("iptables", False), ("nftables", False), ("ebpf", True)])
def test_exactly_at_the_timeout(sticky_state, backend, pinned):
    # xt_recent and nft timeouts hold an address for less than T seconds; Cilium expires an entry only
    # once now - last_used > T.
    conns = trace_connections(sticky_state, Packet(CLIENT, "10.96.100.90", 80), 2, 30, backend)
    assert conns[1].result.pinned is pinned


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_ipv6_clients_are_remembered_too(sticky_state, backend):
    conns = trace_connections(sticky_state, Packet("fd00:10:244:1::10", "fd00:10:96::90", 80), 3, 1, backend)
    assert [c.result.pinned for c in conns] == [False, True, True]
    assert conns[2].backend == conns[0].backend


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_without_affinity_every_connection_is_balanced_anew(flow_state, backend):
    conns = trace_connections(flow_state, Packet(CLIENT, TWO, 80), 8, 1, backend)
    assert not any(c.result.pinned or c.remembered for c in conns)
    assert len({c.backend for c in conns}) == 2  # the deterministic picks use both endpoints


def test_bad_count_or_interval(flow_state):
    with pytest.raises(DataplaneError, match="--count"):
        trace_connections(flow_state, Packet(CLIENT, STICKY, 80), 0, 1)
    with pytest.raises(DataplaneError, match="--interval"):
        trace_connections(flow_state, Packet(CLIENT, STICKY, 80), 2, -1)


def test_packet_count_on_the_command_line(tmp_path):
    app = tmp_path / "app.yaml"
    app.write_text("""apiVersion: v1
kind: Service
metadata: {name: sticky}
spec:
  clusterIP: 10.96.0.70
  selector: {app: web}
  sessionAffinity: ClientIP
  sessionAffinityConfig: {clientIP: {timeoutSeconds: 30}}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1.27}]}
""")
    run = CliRunner().invoke(cli, ["packet", "-f", str(app), "--client", "10.244.1.9", "--dst", "10.96.0.70",
                                   "--dport", "80", "--count", "3", "--interval", "20", "--dataplane", "nftables"])
    assert run.exit_code == 0, run.output
    lines = run.output.splitlines()
    assert lines[0] == "Client:      10.244.1.9 -> 10.96.0.70:80/TCP, 3 connections"
    rows = [line.split() for line in lines if line[:1].isdigit()]
    assert [(r[0], r[1], r[2]) for r in rows] == [("1", "0s", "DNAT"), ("2", "20s", "DNAT"), ("3", "40s", "DNAT")]
    assert rows[1][3] == rows[2][3] == rows[0][3]
    assert "pinned: @affinity-" in lines[-1] and "updated 20s ago (timeout 30s)" in lines[-1]
    expired = CliRunner().invoke(cli, ["packet", "-f", str(app), "--client", "10.244.1.9", "--dst", "10.96.0.70",
                                       "--dport", "80", "--count", "2", "--interval", "31", "-o", "json"])
    data = json.loads(expired.output)
    assert [c["pinned"] for c in data] == [False, False]
    assert data[1]["trace"]["affinity"].startswith("expired: recent list KUBE-SEP-")


def test_a_first_iptables_packet_says_once_how_a_returning_client_is_pinned(sticky_state):
    from knetsim.dataplane import trace_packet

    result = trace_packet(sticky_state, Packet(CLIENT, "10.96.100.90", 80), "iptables")
    notes = [n for n in result.notes if "--rcheck" in n]
    assert len(notes) == 1, result.notes
    assert "a client seen again within --seconds 30 goes back to the endpoint chain it used" in notes[0]
    assert notes[0].count("KUBE-SEP-") == 4
