"""What Hubble would record of a connection: a Trace (or a lookup, a probe) as the flows of its packets.

Hubble (Cilium's observability layer) records, on each node, the first packet of every connection
it sees, with both ends as it knows them (a pod's namespace, name, labels and workload; ``world``
for an address outside the cluster; ``host`` for the node itself) and the verdict its policy
gave. knetsim's live cluster keeps the same record of what happens in it (``kubelet/flows.py``),
built here from the answers the simulation already gave:

* a traced connection (``wget``, ``curl``, ``nc`` in ``kubectl exec``; a request at the Ingress or
  Gateway entry): its DNS lookups (UDP 53 to the kube-dns pod that answers, with the L7 DNS
  record), the hop from an external client to the ingress controller, then the connection the
  policy hop judged, from its source pod (or the controller) to the backend pod, ``FORWARDED``
  or ``DROPPED`` (``POLICY_DENIED``) as the verdict says;
* a lookup (``nslookup``): its queries;
* a probe and a ``kubectl port-forward`` stream are the node's own (``flowends.py``, which the
  node loads without the simulation).

Replies are not recorded: what decides a policy is the first packet of each connection.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..cluster.state import ClusterState
from ..dns.resolver import Resolution
from ..model.flows import DROPPED, EGRESS, FORWARDED, INGRESS, Flow, FlowEnd
from ..model.objects import Pod
from ..policy.engine import PolicyInputError, evaluate
from .dataplane import usable_candidates
from .flowends import WORLD, end_of, now, pod_end
from .trace import Trace, service_port_for


def _node_of(state: ClusterState, end: FlowEnd) -> str:
    pod = state.pods.get(end.pod_key) if end.pod else None
    return pod.node_name if pod is not None else ""


def _dns_flows(state: ClusterState, pod: Pod, queries: list[Mapping[str, Any]], time: str) -> list[Flow]:
    """One flow per DNS query: to the kube-dns pod the data plane sends it to (the first allowed, as the
    resolver's reachability check takes it), with the query and answer as Hubble's DNS record holds them."""
    out = []
    src = pod_end(state, pod)
    for q in queries:
        nameserver, port, protocol = str(q.get("nameserver") or ""), int(q.get("port") or 53), \
            str(q.get("protocol") or "UDP")
        dst_ip, verdict = nameserver, FORWARDED if q.get("response") else DROPPED
        svc = state.service_by_ip(nameserver)
        sp = service_port_for(svc, port, protocol) if svc is not None else None
        if svc is not None and sp is not None:
            candidates = usable_candidates(state, svc, sp)
            allowed = [c for c in candidates if _allowed(state, pod, c.pod or c.ip, c.port, protocol)]
            chosen = allowed[0] if allowed else (candidates[0] if candidates else None)
            if chosen is not None:
                dst_ip, port = chosen.ip, chosen.port
        response = q.get("response") or {}
        record: dict[str, Any] = {"query": str(q.get("name") or ""), "qtypes": [str(q.get("type") or "A")]}
        ips = [str(rr.get("data")) for rr in response.get("answer") or [] if rr.get("type") in ("A", "AAAA")]
        if ips:
            record["ips"] = ips
        if response:
            record["rcode"] = {"NOERROR": 0, "NXDOMAIN": 3, "SERVFAIL": 2}.get(str(response.get("rcode")), 0)
        dst = end_of(state, dst_ip)
        out.append(Flow(time, src, dst, protocol, 33000 + int(q.get("index") or 1), port, verdict,
                        pod.node_name, EGRESS, False, {"dns": record},
                        f"DNS Query {record['query']} {record['qtypes'][0]}",
                        "" if verdict == FORWARDED else "POLICY_DENIED"))
    return out


def _allowed(state: ClusterState, pod: Pod, dst: Any, port: int, protocol: str) -> bool:
    try:
        return evaluate(state, pod, dst, port, protocol).allowed
    except PolicyInputError:
        return False


def trace_flows(state: ClusterState, t: Trace, time: str | None = None) -> list[Flow]:
    """The flows of one traced connection (see the module docstring)."""
    time = time or now()
    out: list[Flow] = []
    source_pod = state.pods.get(t.source)
    connection: Flow | None = None  # the L3/L4 flow the policy hop judged: what an HTTP request rides on
    for hop in t.hops:
        if hop.layer == "dns" and source_pod is not None and hop.data.get("queries"):
            out += _dns_flows(state, source_pod, list(hop.data["queries"]), time)
        if hop.layer == "ingress" and t.source.startswith("external"):
            route = hop.data.get("route") or {}
            controller = route.get("controller") or {}
            if controller.get("pod_ip"):
                client = t.source.partition("(")[2].rstrip(")") or t.source
                request = route.get("request") or {}
                port = int(request.get("port") or 80)
                dst = end_of(state, str(controller["pod_ip"]), str(controller.get("pod") or ""))
                out.append(Flow(time, FlowEnd(client, labels=(WORLD,)), dst, "TCP", 40000, port, FORWARDED,
                                _node_of(state, dst), INGRESS, False, None, "TCP Flags: SYN"))
        if hop.layer == "policy" and isinstance(hop.data.get("policy"), Mapping):
            v = hop.data["policy"]
            src = end_of(state, str(v.get("fromIP") or ""), str(v.get("from") or ""))
            dst = end_of(state, str(v.get("toIP") or ""), str(v.get("to") or ""))
            allowed = bool(v.get("allowed"))
            protocol = str(v.get("protocol") or t.protocol)
            node = _node_of(state, src) or _node_of(state, dst)
            connection = Flow(time, src, dst, protocol, 40000, int(v.get("port") or 0),
                              FORWARDED if allowed else DROPPED, node, EGRESS if src.pod else INGRESS, False, None,
                              "TCP Flags: SYN" if protocol == "TCP" else protocol,
                              "" if allowed else "POLICY_DENIED")
            out.append(connection)
        if hop.layer == "app" and isinstance(hop.data.get("http"), Mapping) and connection is not None:
            out += _http_flows(connection, hop.data["http"])
    return out


def _http_flows(connection: Flow, http: Mapping[str, Any]) -> list[Flow]:
    """What Cilium's proxy records of a request it read (HTTP rules applied to the connection): the request,
    DROPPED when no rule allows it (the proxy answers 403 itself), else FORWARDED and the backend's response."""
    method, url, code = str(http.get("method") or "GET"), str(http.get("url") or ""), int(http.get("code") or 0)
    denied = bool(http.get("denied"))
    direction = str(http.get("direction") or INGRESS)
    request = {"http": {"method": method, "url": url, "protocol": "HTTP/1.1"}}
    out = [replace(connection, direction=direction, l7=request, verdict=DROPPED if denied else FORWARDED,
                   summary=f"HTTP/1.1 {method} {url}", drop_reason="")]
    if not denied:
        response = {"http": {"code": code, "method": method, "url": url, "protocol": "HTTP/1.1"}}
        out.append(replace(connection, src=connection.dst, dst=connection.src, src_port=connection.dst_port,
                           dst_port=connection.src_port, direction=direction, is_reply=True, l7=response,
                           verdict=FORWARDED, summary=f"HTTP/1.1 {code} ({method} {url})", drop_reason=""))
    return out


def lookup_flows(state: ClusterState, pod: Pod, resolution: Resolution, time: str | None = None) -> list[Flow]:
    """The queries of one lookup (``nslookup`` in ``kubectl exec``)."""
    return _dns_flows(state, pod, [q.to_dict() for q in resolution.queries], time or now())


__all__ = ["lookup_flows", "trace_flows"]
