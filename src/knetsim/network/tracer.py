"""``trace()``: one connection from a pod, or from outside, to a target, through every layer.

The entry point only: where the connection starts decides the path. From a pod it is
``connect.py``'s stages (DNS, Service, endpoints, data plane, policy, listener, app); from
outside it enters through ``external.py`` (a Gateway, an Ingress, a NodePort or a LoadBalancer
address) and joins the same stages. Both are imported from here, so neither imports the other's
caller: the module graph stays one-directional.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..cluster.state import ClusterState
from ..model.objects import Pod
from .balance import Balancer
from .connect import _dns_stage, _Run, connect_ip, resolve_pod
from .external import into_ingress_controller, through_ingress, trace_external
from .gateway import into_gateway_proxy
from .kubeproxy import kube_proxy_nodes
from .trace import EXTERNAL_CLIENT_IP, Hop, Trace, TraceInputError, choose, parse_target

# How many times one connection may lead to another (netexec's /dial dialling a /dial...): a real chain stops
# at its clients' timeouts; a trace stops here, the innermost dial refused.
MAX_ONWARD = 4


def _through_proxy(run: _Run, pod: Pod, port: int) -> Trace | None:
    """The routing of the proxy ``pod`` runs, for a request that reached it on ``port`` (connect.deliver)."""
    return into_ingress_controller(run, pod, port) or into_gateway_proxy(run, pod, port)


def trace(state: ClusterState, source: str, target: str, *, protocol: str = "TCP", method: str = "GET",
          headers: Mapping[str, str] | None = None, dataplane: str | None = None,
          balancer: Balancer | None = None, entry: str | None = None, _onward: int = 0) -> Trace:
    """Trace one connection from ``source`` (``ns/pod`` or ``external``) to ``target``; ``balancer``: a live
    cluster's, which picks each connection's backend as the data plane does over time. ``entry="ingress"``:
    from outside, through the Ingress controller even where a Gateway names the host too (side by side during
    a migration, DNS decides which one a client reaches; a question about an Ingress asks for its controller)."""
    protocol = protocol.upper()
    if protocol not in ("TCP", "UDP", "SCTP"):
        raise TraceInputError(f"protocol {protocol!r}: supported values: SCTP, TCP, UDP")
    parsed = parse_target(target, protocol)
    if parsed.scheme == "udp":
        protocol = "UDP"  # udp://HOST:PORT says the transport itself
    plane = dataplane or state.config.dataplane
    run = _Run(state, source, parsed, protocol, method.upper(), dict(headers or {}), plane, [], [], balancer)
    if _onward < MAX_ONWARD:
        run.dial = lambda src, url, proto: trace(state, src, url, protocol=proto, dataplane=dataplane,
                                                 balancer=balancer, _onward=_onward + 1)
    run.proxy = _through_proxy
    if source == "external":
        if entry == "ingress":
            run.source = f"external ({EXTERNAL_CLIENT_IP})"
            return through_ingress(run, parsed.host)
        return trace_external(run)
    pod = resolve_pod(state, source)
    run.source = pod.key
    if not pod.pod_ip:
        return run.fail("dns", "no-route", f"{pod.key} has no IP (phase {pod.phase}): it cannot send anything")
    ips = _dns_stage(run, pod)
    if isinstance(ips, Trace):
        return ips
    # The addresses come in getaddrinfo's order (RFC 6724): the client connects to the first family's.
    family_first = [ip for ip in ips if (":" in ip) == (":" in ips[0])]
    pick = choose(family_first, f"{pod.pod_ip}->{parsed.host}")
    if len(ips) > 1:
        run.hops.append(Hop("dns", "info", f"{len(ips)} addresses; the client uses {family_first[pick]} (the first "
                            "its resolver returns; knetsim picks one deterministically)"))
    # The source is the pod's own address of the destination's family (a dual-stack pod has one of each).
    src = next((ip for ip in pod.pod_ips if (":" in ip) == (":" in family_first[pick])), pod.pod_ip)
    covered = kube_proxy_nodes(state) if plane == state.config.dataplane else None
    if covered is not None and pod.node_name not in covered:
        # Never silent: the doctor names the node (KubeProxyNotRunning); what follows is not what that node does.
        run.hops.append(Hop("dataplane", "info", f"no kube-proxy pod runs on node {pod.node_name}: a real node "
                            "keeps no Service rules written since it stopped; knetsim programs them all the same (it "
                            "does not model a node without kube-proxy)"))
    return connect_ip(run, pod, src, family_first[pick], pod.node_name)

