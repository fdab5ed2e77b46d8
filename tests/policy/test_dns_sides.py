"""doctor names the side that drops a pod's lookups: the pod's own egress (DNSEgressBlocked, the allow-dns-egress fix
in its namespace) or the DNS server's ingress (DNSIngressBlocked, the policies on kube-dns and a fix in kube-system).
Before, a policy on kube-dns's ingress was reported as isolating the client's egress, with a fix in the client's
namespace that changed nothing (found by review)."""

from __future__ import annotations

import yaml

from knetsim import Cluster
from knetsim.cluster.config import ClusterConfig

CLIENT = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "client", "namespace": "shop",
                                                          "labels": {"app": "client"}},
          "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}
SHOP = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
ALLOW_DNS_EGRESS = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                    "metadata": {"name": "allow-dns-egress", "namespace": "shop"},
                    "spec": {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"ports": [
                        {"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}]}}


def findings(*objects: dict, cni: str | None = None) -> dict[str, str]:
    cluster = Cluster.from_yaml(yaml.safe_dump_all([SHOP, CLIENT, *objects]), config=ClusterConfig(cni=cni))
    return {f"{f.code} {f.subject}": f"{f.message}\nfix: {f.fix}" for f in cluster.doctor().findings
            if f.code.startswith("DNS") and f.subject == "Namespace shop"}


def test_a_policy_on_kube_dns_is_named_as_the_servers_and_fixed_in_kube_system() -> None:
    deny_in = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
               "metadata": {"name": "deny-in", "namespace": "kube-system"},
               "spec": {"podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}, "policyTypes": ["Ingress"]}}
    found = findings(deny_in)
    assert list(found) == ["DNSIngressBlocked Namespace shop"], found
    text = found["DNSIngressBlocked Namespace shop"]
    assert "its ingress is isolated by NetworkPolicy kube-system/deny-in" in text
    assert "namespace: kube-system" in text and "k8s-app: kube-dns" in text and "namespace: shop" not in text
    # Applied, the fix clears it.
    fix = yaml.safe_load(text.split("\n", 2)[2])
    assert findings(deny_in, fix) == {}


def test_cilium_always_drops_the_lookup_at_the_server_once_the_egress_is_allowed() -> None:
    always = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "cilium-config", "namespace": "kube-system"}, "data": {"enable-policy": "always"}}
    before = findings(always, cni="cilium")
    assert list(before) == ["DNSEgressBlocked Namespace shop"], before
    after = findings(always, ALLOW_DNS_EGRESS, cni="cilium")
    assert list(after) == ["DNSIngressBlocked Namespace shop"], after
    assert ("its ingress is isolated by the agent's policy enforcement mode always (kube-system/cilium-config "
            "enable-policy)") in after["DNSIngressBlocked Namespace shop"]
    assert "allow-dns-egress" not in after["DNSIngressBlocked Namespace shop"]


def test_trace_names_the_servers_side_too() -> None:
    """`trace` of a name from a pod whose egress is free, kube-dns's ingress denying: the finding is the server's,
    and its fix is in kube-system."""
    deny_in = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
               "metadata": {"name": "deny-in", "namespace": "kube-system"},
               "spec": {"podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}, "policyTypes": ["Ingress"]}}
    web = [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
           {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}]
    cluster = Cluster.from_yaml(yaml.safe_dump_all([SHOP, CLIENT, *web, deny_in]))
    result = cluster.trace("shop/client", "web:80").to_dict()
    assert result["outcome"] == "dns-timeout", result
    [finding] = result["findings"]
    assert finding["code"] == "DNSIngressBlocked" and "in kube-system" in finding["fix"], finding
    egress_too = Cluster.from_yaml(yaml.safe_dump_all([SHOP, CLIENT, *web, {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "deny-out",
                                                                                    "namespace": "shop"},
        "spec": {"podSelector": {}, "policyTypes": ["Egress"]}}]))
    [finding] = egress_too.trace("shop/client", "web:80").to_dict()["findings"]
    assert finding["code"] == "DNSEgressBlocked", finding
