"""kube-proxy as a workload (the Debug Services page's "Is the kube-proxy working?"): a kube-proxy DaemonSet that
runs no pod on the nodes that run workloads is named by the doctor, and a trace from such a node says that knetsim
programs its Service rules all the same."""

from __future__ import annotations

from pathlib import Path

from knetsim import Cluster
from knetsim.cluster.config import ClusterConfig
from knetsim.network.tracer import trace

CORPUS = Path(__file__).parent / "corpus" / "kube-proxy-not-running"


def _cluster(state: str, **config: str) -> Cluster:
    text = "---\n".join(p.read_text() for p in sorted((CORPUS / state).glob("*.yaml")))
    return Cluster.from_yaml(text, config=ClusterConfig(**config))


def _kube_proxy_note(cluster: Cluster) -> list[str]:
    hops = trace(cluster.state, "default/client", "http://hostnames:80").hops
    return [h.detail for h in hops if "kube-proxy" in h.detail]


def test_a_daemonset_pinned_off_every_node_is_named_with_a_patch_that_brings_it_back() -> None:
    broken = _cluster("broken")
    found = [f for f in broken.doctor().findings if f.code == "KubeProxyNotRunning"]
    assert [(f.subject, f.severity, f.layer) for f in found] == [("DaemonSet kube-system/kube-proxy", "error",
                                                                   "dataplane")]
    assert found[0].evidence == ("node worker", "node worker2")  # the tainted control plane runs no app
    assert found[0].fix.startswith("kubectl -n kube-system patch daemonset kube-proxy --type=json")
    assert _kube_proxy_note(broken) == [
        "no kube-proxy pod runs on node worker: a real node keeps no Service rules written since it stopped; "
        "knetsim programs them all the same (it does not model a node without kube-proxy)"]


def test_a_running_kube_proxy_and_cilium_without_one_say_nothing() -> None:
    repaired = _cluster("repaired")
    assert "KubeProxyNotRunning" not in [f.code for f in repaired.doctor().findings]
    assert _kube_proxy_note(repaired) == []
    # Cilium's kube-proxy replacement: there is no kube-proxy to ask about, whatever DaemonSet was read.
    replaced = _cluster("broken", dataplane="ebpf", cni="cilium")
    assert "KubeProxyNotRunning" not in [f.code for f in replaced.doctor().findings]
    assert _kube_proxy_note(replaced) == []
