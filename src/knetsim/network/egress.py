"""A connection that leaves the cluster: a pod (or a node) to an address of the world outside.

After DNS (CoreDNS forwards names outside the cluster domain to the outside's resolver: the names of
``cluster/outside.py``), the hops are:

* **service** — the address is no Service, pod or node of the cluster;
* **policy** — the source pod's egress (``ipBlock``, ClusterNetworkPolicy ``networks``, Cilium's
  ``toCIDR``/``toEntities: world``): a denied packet is dropped (``timeout``);
* **dataplane** — the packet leaves its node masqueraded to the node's address
  (``dataplane/masquerade.py``: kindnetd's nftables rule, or Cilium's BPF masquerading), so the
  outside host sees the node, never the pod; a hostNetwork source already has the node's address;
* **listener** — nothing answers at an address the outside does not list (``no-route``, busybox's
  "Host is unreachable"); a listed host answers on 80 and 443 (and the public resolvers on 53); its
  firewall drops any other port (``timeout``);
* **app** — a plain web server: ``GET``/``HEAD /`` is 200 with a small page naming the host, any
  other path 404, any other method 405, nginx-like.
"""

from __future__ import annotations

from typing import Any

from ..cluster.outside import OutsideHost
from ..dataplane.masquerade import egress_masquerade
from ..model.objects import Pod
from ..policy.engine import evaluate
from .trace import Backend, Finding, Hop, Reply, Trace

HTML = {"content-type": "text/html"}


def outside_reply(host: OutsideHost, method: str, path: str) -> Reply:
    """What a plain web server at ``host`` answers (nginx's wording for its errors)."""
    if method not in ("GET", "HEAD"):
        return Reply(405, _error_page(405, "Not Allowed"), HTML)
    if path.split("?", 1)[0] not in ("/", "/index.html"):
        return Reply(404, _error_page(404, "Not Found"), HTML)
    body = (f"<!doctype html>\n<html>\n<head><title>{host.name}</title></head>\n<body>\n<h1>{host.name}</h1>\n"
            f"<p>A web server outside the cluster.</p>\n</body>\n</html>\n")
    return Reply(200, "" if method == "HEAD" else body, HTML)


def _error_page(status: int, reason: str) -> str:
    return (f"<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n<center><h1>{status} {reason}"
            "</h1></center>\r\n</body>\r\n</html>\r\n")


def to_outside(run: Any, src_pod: Pod | None, src_ip: str, dst_ip: str) -> Trace:
    """Everything after DNS for ``dst_ip``, an address that is no Service, pod or node of the cluster.
    ``run`` is the trace being built (``connect._Run``)."""
    state = run.state
    port, protocol = run.target.port, run.protocol
    outside = state.config.outside
    host = outside.host_at(dst_ip)
    who = f" ({host.name})" if host is not None else ""
    run.hops.append(Hop("service", "skip", f"{dst_ip}{who} lies outside the cluster: no Service, pod or node has "
                        "that address"))
    if src_pod is not None:
        verdict = evaluate(state, src_pod, dst_ip, port, protocol)
        if not verdict.egress.allowed:
            detail = f"egress of {verdict.egress.endpoint}: {verdict.egress.reason} — the packet is dropped"
            run.findings.append(Finding("PolicyDrop", "policy", detail, verdict.egress.fix(f"{protocol}/{port}")))
            return run.fail("policy", "timeout", detail, data={"policy": verdict.to_dict()})
        run.hops.append(Hop("policy", "ok", f"egress: {verdict.egress.reason}", {"policy": verdict.to_dict()}))
    node = src_pod.node_name if src_pod is not None else None
    if src_pod is not None and node and not src_pod.host_network:
        masq = egress_masquerade(state, node, "IPv6" if ":" in dst_ip else "IPv4")
        if masq.applies(dst_ip):
            run.hops.append(Hop("dataplane", "ok", f"leaves node {node} masqueraded: source {src_ip} → "
                                f"{masq.node_ip}, by {masq.how}; {dst_ip} sees the node, never the pod",
                                {"snat": {"from": src_ip, "to": masq.node_ip, "by": masq.agent}}))
        else:
            run.hops.append(Hop("dataplane", "ok", f"leaves node {node} with the pod's own source {src_ip}"))
    else:
        run.hops.append(Hop("dataplane", "ok", f"leaves with the node's own address {src_ip}"))
    if host is None:
        return run.fail("listener", "no-route", f"nothing answers at {dst_ip}: the outside knetsim models has no "
                        "host there (cluster config: outside.hosts)")
    backend = Backend(host.name, dst_ip, port)
    if not host.listens(port, protocol):
        run.hops.append(Hop("listener", "fail", f"{host.name} ({dst_ip}) answers on "
                            f"{', '.join(f'{p}/{pr}' for p, pr in host.ports)}; its firewall drops {port}/{protocol}"))
        return run.finish("timeout", backend)
    run.hops.append(Hop("listener", "ok", f"{host.name} ({dst_ip}) listens on {port}/{protocol}"))
    if run.target.scheme not in ("http", "https") and port not in (80, 443):
        run.hops.append(Hop("app", "ok", f"{protocol} connection established with {host.name}:{port}"))
        return run.finish("connected", backend)
    reply = outside_reply(host, run.method, run.target.path + (f"?{run.target.query}" if run.target.query else ""))
    run.hops.append(Hop("app", "ok" if reply.status == 200 else "fail",
                        f"{run.method} {run.target.path} → HTTP {reply.status} from {host.name}"))
    return run.finish("connected", backend, reply)
