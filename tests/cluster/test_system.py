"""kube-system of a fresh cluster, per data plane: what `kubectl get -n kube-system` lists.

Given the cluster config's `dataplane`, then the node network add-ons are those a real cluster of
that shape runs: kind's kindnetd + kube-proxy for iptables and nftables; for ebpf, seed 000's
cluster (kubeadm without the kube-proxy addon, Cilium with kubeProxyReplacement) — no kube-proxy,
no kindnet, and Cilium's objects as its Helm chart names and labels them.
"""

from __future__ import annotations

import pytest

from knetsim.cluster.build import build_cluster
from knetsim.cluster.config import config_from_dict


def kube_system(dataplane: str, cni: str | None = None, namespace: str = "kube-system"
                ) -> tuple[set[str], dict[str, str]]:
    config = {"dataplane": dataplane, **({"cni": cni} if cni else {})}
    state = build_cluster([], config_from_dict(config)).state
    workloads = {f"{kind}/{key.split('/', 1)[1]}" for kind, key in state.workloads
                 if key.startswith(f"{namespace}/") and kind != "ReplicaSet"}
    owners = {p.name: p.meta.owner.name if p.meta.owner else "" for p in state.pods.values()
              if p.namespace == namespace}
    return workloads, owners


@pytest.mark.parametrize("dataplane", ["iptables", "nftables"])
def test_kube_proxy_clusters_run_kindnet_and_kube_proxy(dataplane: str) -> None:
    workloads, owners = kube_system(dataplane)
    assert workloads == {"DaemonSet/kindnet", "DaemonSet/kube-proxy", "Deployment/coredns"}
    assert sum(owner == "kube-proxy" for owner in owners.values()) == 3  # one per node


def test_ebpf_cluster_has_cilium_and_neither_kube_proxy_nor_kindnet() -> None:
    workloads, owners = kube_system("ebpf")
    assert workloads == {"DaemonSet/cilium", "DaemonSet/cilium-envoy", "Deployment/cilium-operator",
                         "Deployment/coredns"}
    assert not [name for name in owners if name.startswith(("kube-proxy", "kindnet"))]
    assert sum(owner == "cilium" for owner in owners.values()) == 3


def test_cilium_agent_is_named_as_the_chart_names_it() -> None:
    state = build_cluster([], config_from_dict({"dataplane": "ebpf"})).state
    agent = next(p for p in state.pods.values() if p.meta.owner and p.meta.owner.name == "cilium")
    # `kubectl exec -n kube-system ds/cilium -c cilium-agent -- cilium-dbg ...` is how Cilium's docs say it.
    assert [c.name for c in agent.containers] == ["cilium-agent"]
    assert agent.host_network
    assert agent.labels["k8s-app"] == "cilium"
    annotations = agent.raw["metadata"].get("annotations") or {}
    assert annotations["kubectl.kubernetes.io/default-container"] == "cilium-agent"
    peer = state.services["kube-system/hubble-peer"]
    assert peer.internal_traffic_policy == "Local"
    assert [(p.port, p.target_port) for p in peer.ports] == [(443, 4244)]


# The CNI named in the cluster config runs as its own manifest installs it (the names `kubectl get pods -A` shows
# on such a cluster, and what `knetsim ... --kubeconfig` recognises a CNI by), beside kube-proxy; never kindnet.
@pytest.mark.parametrize(("cni", "namespace", "agents"), [
    ("calico", "kube-system", {"DaemonSet/calico-node", "Deployment/calico-kube-controllers"}),
    ("antrea", "kube-system", {"DaemonSet/antrea-agent", "Deployment/antrea-controller"}),
    ("flannel", "kube-flannel", {"DaemonSet/kube-flannel-ds"}),
    ("cilium", "kube-system", {"DaemonSet/cilium", "DaemonSet/cilium-envoy", "Deployment/cilium-operator"}),
])
def test_a_configured_cni_runs_its_own_agents_beside_kube_proxy(cni: str, namespace: str, agents: set[str]) -> None:
    workloads, owners = kube_system("iptables", cni, namespace)
    assert agents <= workloads
    system, system_owners = kube_system("iptables", cni)
    assert "DaemonSet/kindnet" not in system and "DaemonSet/kube-proxy" in system
    assert not [name for name in system_owners if name.startswith("kindnet")]
    agent = next(a.split("/")[1] for a in sorted(agents) if a.startswith("DaemonSet/"))
    assert sum(owner == agent for owner in owners.values()) == 3  # one per node


def test_antreas_service_fronts_its_controller() -> None:
    state = build_cluster([], config_from_dict({"cni": "antrea"})).state
    service = state.services["kube-system/antrea"]
    assert service.selector == {"app": "antrea", "component": "antrea-controller"}
    controller = next(p for p in state.pods.values() if p.name.startswith("antrea-controller-"))
    assert controller.host_network and controller.ready
