"""kube-proxy as a workload: the nodes where its DaemonSet runs no pod keep no Service rules.

The Kubernetes docs' "Debug Services" page asks "Is the kube-proxy working?" before anything below the
Service: kube-proxy is a DaemonSet in kube-system (``k8s-app: kube-proxy``), one pod per node, and a node
without it has no rules for ClusterIPs and NodePorts written since (the rules already written stay until the
node restarts; a Service created after that answers nothing there). With Cilium's kube-proxy replacement
(data plane ``ebpf``) there is no kube-proxy to ask about.

Only a kube-proxy DaemonSet that was read is judged (manifests of an app alone say nothing of kube-system). The
packet and trace answers still program every node: they do not model a node without kube-proxy; the finding
says so, and so does a trace from such a node (network/tracer.py).
"""

from __future__ import annotations

from typing import Any

from ..cluster.state import ClusterState
from ..network.kubeproxy import KUBE_PROXY, kube_proxy_nodes
from .checks import SYSTEM_NAMESPACES, Finding, _offer, examples
from .fixes import Patch


def _without_kube_proxy(state: ClusterState) -> list[str]:
    """The nodes that carry workloads (no NoSchedule or NoExecute taint, or a pod of a user's namespace on them)
    where no kube-proxy pod runs. A tainted control-plane node without one is left out: no app pod runs there to
    miss it, as a kube-proxy DaemonSet without tolerations leaves it."""
    covered = kube_proxy_nodes(state) or frozenset()
    hosting = {p.node_name for p in state.pods.values() if p.node_name and p.namespace not in SYSTEM_NAMESPACES}
    return sorted(name for name, node in state.nodes.items() if name not in covered and (
        name in hosting or not any(t.get("effect") in ("NoSchedule", "NoExecute") for t in node.taints)))


def kube_proxy_findings(state: ClusterState, *, verify: bool = True) -> list[Finding]:
    daemonset = state.workloads.get(("DaemonSet", KUBE_PROXY))
    if daemonset is None or kube_proxy_nodes(state) is None:
        return []
    missing = _without_kube_proxy(state)
    if not missing:
        return []
    template: dict[str, Any] = ((daemonset.raw.get("spec") or {}).get("template") or {}).get("spec") or {}
    selector = template.get("nodeSelector") or {}
    fits = [n for n in missing if all(state.nodes[n].labels.get(k) == v for k, v in selector.items())]
    message = (f"no kube-proxy pod runs on {len(missing)} node(s) that run workloads ({len(state.nodes)} in all): "
               "their Service rules (ClusterIPs, NodePorts) are not kept, so a pod there reaches no Service created or "
               "changed since; knetsim's packet and trace still answer as if it ran (they do not model a node without "
               "kube-proxy)")
    look = ("kubectl -n kube-system get ds kube-proxy -o wide and kubectl -n kube-system describe ds kube-proxy: "
            "why it runs no pod on those nodes (its nodeSelector, tolerations, or pods that do not start)")
    finding = Finding("KubeProxyNotRunning", "error", "dataplane", f"DaemonSet {KUBE_PROXY}", message, look,
                      examples([f"node {n}" for n in missing]))
    if selector and not fits:
        # Its nodeSelector keeps it off these nodes: kube-proxy belongs on every node, so the selector goes (a JSON
        # patch: a merge patch would keep the keys it does not name).
        labels = ", ".join(f"{k}={v}" for k, v in sorted(selector.items()))
        patch = Patch("DaemonSet", "kube-system", "kube-proxy", "json",
                      [{"op": "remove", "path": "/spec/template/spec/nodeSelector"}])
        finding = Finding(finding.code, finding.severity, finding.layer, finding.subject,
                          f"{message}. Its nodeSelector ({labels}) matches none of them", look,
                          finding.evidence, patch)
        finding = _offer(finding, state, lambda fixed: ", ".join(_without_kube_proxy(fixed)) or None, look, verify)
    return [finding]
