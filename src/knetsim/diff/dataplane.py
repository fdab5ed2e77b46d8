"""Data plane: per Service port, the addresses kube-proxy programs and where it sends their packets.

What every backend (iptables, nftables, ebpf) renders from, as they derive it
(``dataplane.model``): the frontends of a port (ClusterIP:port, the NodePort on every node,
LoadBalancer and external IPs) and the endpoints used for them (ready ones; serving-terminating
ones only when none is ready). A port whose endpoints are gone is rejected by kube-proxy (a client
sees "connection refused"): that is lost; the reverse gained. Targets are counted per workload.
"""

from __future__ import annotations

from ..dataplane.model import endpoints_by_port, service_ports, usable_endpoints
from .model import CHANGED, GAINED, LOST, Item, Layer, Side
from .workloads import Workloads, counted

TITLE = "data plane (what kube-proxy programs per Service port: frontends and DNAT targets)"
# A kube-proxy-free cluster: Cilium's socket and tc programs translate with its service maps (lb4/lb6).
TITLE_EBPF = "data plane (what Cilium programs per Service port, no kube-proxy: frontends and backends)"


def programmed(side: Side) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """``ns/name:port/PROTO`` -> (frontends, targets as ``workload:port``)."""
    workloads = Workloads(side.state)
    out = {}
    for key in sorted(side.state.services):
        svc = side.state.services[key]
        by_port = endpoints_by_port(side.state, svc)
        for info in service_ports(svc):
            frontends = [f"{info.cluster_ip}:{info.port}"]
            if info.node_port:
                frontends.append(f"<node>:{info.node_port}")
            frontends += [f"{ip}:{info.port}" for ip in (*info.load_balancer_ips, *info.external_ips)]
            targets = [f"{workloads.of_ip(e.ip)}:{e.port}"
                       for e in usable_endpoints(by_port.get((info.port_name, info.protocol), ()))]
            name = f"{key}:{info.port_name or info.port}/{info.protocol}"
            out[name] = (tuple(frontends), tuple(sorted(targets)))
    return out


def _targets_text(targets: tuple[str, ...]) -> str:
    return f"DNAT to {counted(list(targets))}" if targets else "REJECT (no endpoints: connection refused)"


def compare(before: Side, after: Side) -> Layer:
    old, new = programmed(before), programmed(after)
    items = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if a == b:
            continue
        subject = f"Service {name}"
        if a is None:
            assert b is not None
            items.append(Item(CHANGED, subject, f"programmed now: {', '.join(b[0])} → {_targets_text(b[1])}",
                              None, {"frontends": list(b[0]), "targets": list(b[1])}))
            continue
        if b is None:
            items.append(Item(CHANGED, subject, f"no longer programmed (was {', '.join(a[0])})",
                              {"frontends": list(a[0]), "targets": list(a[1])}, None))
            continue
        parts = []
        if a[0] != b[0]:
            parts.append(f"frontends {', '.join(a[0])} → {', '.join(b[0])}")
        if a[1] != b[1]:
            parts.append(f"{_targets_text(a[1])} → {_targets_text(b[1])}")
        effect = LOST if a[1] and not b[1] else GAINED if b[1] and not a[1] else CHANGED
        items.append(Item(effect, subject, "; ".join(parts), {"frontends": list(a[0]), "targets": list(a[1])},
                          {"frontends": list(b[0]), "targets": list(b[1])}))
    return Layer("dataplane", TITLE_EBPF if after.state.config.dataplane == "ebpf" else TITLE, tuple(items))


__all__ = ["TITLE", "TITLE_EBPF", "compare", "programmed"]
