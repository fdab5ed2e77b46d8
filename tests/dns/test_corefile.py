"""The Corefile as CoreDNS reads it, and the cluster's DNS answers coming from the coredns objects."""

from __future__ import annotations

import pytest
from tests.conftest import cluster_from

from knetsim.dns import ClusterDNS
from knetsim.dns.coredns import coredns_of
from knetsim.dns.corefile import CorefileError, default_corefile, parse_corefile

CLIENT = """
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: default}
spec:
  containers: [{name: c, image: busybox:1.36, command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  clusterIP: 10.96.7.7
  ports: [{port: 80}]
"""


def corefile_map(text: str) -> str:
    body = "\n".join("    " + line for line in text.strip("\n").splitlines())
    return f"""
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: coredns, namespace: kube-system}}
data:
  Corefile: |
{body}
"""


KUBEADM = default_corefile()


def test_kubeadm_corefile_parses_into_its_plugins():
    corefile = parse_corefile(KUBEADM)
    (block,) = corefile.blocks
    assert block.keys == (".:53",) and block.zones == (".",) and block.port == 53
    names = [d.name for d in block.directives]
    assert names == ["errors", "health", "ready", "kubernetes", "prometheus", "forward", "cache", "loop", "reload",
                     "loadbalance"]
    kubernetes = block.plugin("kubernetes")
    assert kubernetes is not None and kubernetes.args == ("cluster.local", "in-addr.arpa", "ip6.arpa")
    assert kubernetes.sub("pods").args == ("insecure",) and kubernetes.sub("ttl").args == ("30",)


@pytest.mark.parametrize(("text", "line", "words"), [
    (".:53 {\n    errors\n    forward .\n}\n", 3, "Wrong argument count"),
    (".:53 {\n    forward . 8.8.8.8:dns\n}\n", 2, "not an IP address or file"),
    (".:53 {\n    forwad . 8.8.8.8\n}\n", 2, "Unknown directive 'forwad'"),
    (".:53 {\n    errors\n    kubernetes cluster.local {\n        pods insecure\n", 3, "Unexpected EOF"),
    (".:53 {\n    kubernetes cluster.local {\n        pods maybe\n    }\n}\n", 3, "pods: invalid value"),
    (".:53 {\n}\n.:53 {\n}\n", 3, "already defined"),
])
def test_a_broken_corefile_names_its_line(text, line, words):
    with pytest.raises(CorefileError) as caught:
        parse_corefile(text)
    assert caught.value.line == line and words in str(caught.value)


def test_default_cluster_is_healthy_and_unchanged():
    cluster = cluster_from(CLIENT)
    dns = coredns_of(cluster.state)
    assert dns.problems == () and dns.serving and dns.replicas == 2 and dns.ready_pods == 2
    # kubeadm's ConfigMap is there from the start, as on kind, holding kubeadm's Corefile.
    assert dns.corefile_source == "ConfigMap kube-system/coredns" and not dns.explicit
    assert cluster.state.others[("ConfigMap", "kube-system/coredns")].raw["data"]["Corefile"] == KUBEADM
    assert cluster.dns("web", "default/client").values == ("10.96.7.7",)
    # An explicit ConfigMap with kubeadm's Corefile answers the same.
    same = cluster_from(CLIENT + corefile_map(KUBEADM))
    assert coredns_of(same.state).explicit and coredns_of(same.state).problems == ()
    assert same.dns("web", "default/client").values == ("10.96.7.7",)


def test_scaled_to_zero_every_name_times_out():
    broken = cluster_from(CLIENT + """
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 0
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      containers:
        - {name: coredns, image: registry.k8s.io/coredns/coredns:v1.12.1, args: [-conf, /etc/coredns/Corefile]}
""")
    dns = coredns_of(broken.state)
    assert not dns.serving and dns.outage is not None and dns.outage.code == "CoreDNSScaledToZero"
    assert dns.outage.fix == "kubectl -n kube-system scale deployment coredns --replicas=2"
    assert broken.dns("web", "default/client").outcome == "timeout"
    trace = broken.trace("default/client", "http://web/")
    assert trace.outcome == "dns-timeout"
    assert [f.code for f in trace.findings] == ["CoreDNSScaledToZero"]  # not DNSEgressBlocked: no policy exists
    assert "scale deployment coredns --replicas=2" in trace.findings[0].fix


def test_corefile_that_does_not_parse_crash_loops_coredns():
    broken = cluster_from(CLIENT + corefile_map(".:53 {\n    kubernetes cluster.local\n    forward .\n}"))
    dns = coredns_of(broken.state)
    assert dns.outage is not None and dns.outage.code == "CorefileInvalid"
    assert "Corefile:3" in dns.outage.message and "CrashLoopBackOff" in dns.outage.message
    assert broken.dns("web", "default/client").outcome == "timeout"


def test_forwarding_loop_with_the_loop_plugin_crash_loops():
    text = KUBEADM.replace("forward . /etc/resolv.conf", "forward . 127.0.0.1")
    broken = cluster_from(CLIENT + corefile_map(text))
    outage = coredns_of(broken.state).outage
    assert outage is not None and outage.code == "CoreDNSForwardLoop" and "Loop (127.0.0.1:53 -> :53) detected" in \
        outage.message
    assert broken.dns("web", "default/client").outcome == "timeout"
    # Forwarding to kube-dns itself without the loop plugin: cluster names answer, the rest SERVFAIL.
    looped = cluster_from(CLIENT + corefile_map(
        KUBEADM.replace("forward . /etc/resolv.conf", "forward . 10.96.0.10").replace("    loop\n", "")))
    dns = coredns_of(looped.state)
    assert dns.serving and [p.code for p in dns.problems] == ["CoreDNSForwardLoop"]
    assert looped.dns("web", "default/client").values == ("10.96.7.7",)
    assert looped.dns("example.com.", "default/client").outcome == "servfail"


def test_unreachable_upstream_servfails_outside_names_only():
    broken = cluster_from(CLIENT + corefile_map(KUBEADM.replace("forward . /etc/resolv.conf", "forward . 192.0.2.53")))
    dns = coredns_of(broken.state)
    assert [p.code for p in dns.problems] == ["CoreDNSUpstreamUnreachable"]
    assert broken.dns("web", "default/client").values == ("10.96.7.7",)
    assert broken.dns("example.com.", "default/client").outcome == "servfail"
    repaired = cluster_from(CLIENT + corefile_map(KUBEADM.replace("forward . /etc/resolv.conf", "forward . 8.8.8.8")))
    assert coredns_of(repaired.state).problems == ()
    assert repaired.dns("example.com.", "default/client").values == ("93.184.215.14",)


def test_stub_domain_rewrite_and_hosts():
    text = KUBEADM.replace("    loop\n", """    loop
    hosts {
        10.1.2.3 legacy.corp.example
        fallthrough
    }
    rewrite name exact old-web.default.svc.cluster.local web.default.svc.cluster.local
""") + """corp.example:53 {
    errors
    forward . 198.51.100.10
}
"""
    cluster = cluster_from(CLIENT + corefile_map(text))
    dns = ClusterDNS(cluster.state)
    # The stub domain's upstream does not answer: its names SERVFAIL, and the doctor says which line.
    assert dns.query("db.corp.example.", "A").rcode == "SERVFAIL"
    assert [p.code for p in coredns_of(cluster.state).problems] == ["CoreDNSUpstreamUnreachable"]
    renamed = dns.query("old-web.default.svc.cluster.local.", "A")
    assert renamed.values() == ("10.96.7.7",) and renamed.answer[0].name == "old-web.default.svc.cluster.local."
    # hosts lives in the `.` block; corp.example is served by its own block, so the hosts entry is not reached.
    assert dns.query("legacy.corp.example.", "A").rcode == "SERVFAIL"
    text2 = text.replace("legacy.corp.example", "legacy.example.org")
    dns2 = ClusterDNS(cluster_from(CLIENT + corefile_map(text2)).state)
    assert dns2.query("legacy.example.org.", "A").values() == ("10.1.2.3",)
    # Without fallthrough the hosts plugin answers everything else itself: SERVFAIL, cluster names too.
    strict = cluster_from(CLIENT + corefile_map(text2.replace("        fallthrough\n", "", 1)))
    assert "CoreDNSHostsWithoutFallthrough" in [p.code for p in coredns_of(strict.state).problems]
    assert strict.dns("web", "default/client").outcome == "servfail"


def test_kubernetes_plugin_zone_typo_makes_service_names_nxdomain():
    broken = cluster_from(CLIENT + corefile_map(KUBEADM.replace("kubernetes cluster.local", "kubernetes cluster.locl")))
    assert [p.code for p in coredns_of(broken.state).problems] == ["CoreDNSNoKubernetesZone"]
    assert broken.dns("web", "default/client").outcome == "nxdomain"


def test_ttl_and_pods_come_from_the_configmap():
    text = KUBEADM.replace("ttl 30", "ttl 7").replace("pods insecure", "pods disabled")
    dns = ClusterDNS(cluster_from(CLIENT + corefile_map(text)).state)
    assert dns.ttl == 7 and dns.pods == "disabled"


def test_loopback_server_answers_nothing_while_coredns_is_down():
    import dns.message

    from knetsim.dns.server import DNSServer

    query = dns.message.make_query("web.default.svc.cluster.local.", "A").to_wire()
    healthy = DNSServer(cluster_from(CLIENT).state)
    assert dns.message.from_wire(healthy.handle(query)).answer
    down = DNSServer(cluster_from(CLIENT + corefile_map(".:53 {\n    forward\n}")).state)
    assert down.handle(query) is None  # dig times out, as against a kube-dns without endpoints


def test_distribution_corefiles_parse():
    """k3s's Corefile (imports, a NodeHosts file) and AKS's (`import custom/*.override`) are not errors."""
    k3s = """.:53 {
    errors
    health
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
      pods insecure
      fallthrough in-addr.arpa ip6.arpa
    }
    hosts /etc/coredns/NodeHosts {
      ttl 60
      reload 15s
      fallthrough
    }
    prometheus :9153
    forward . /etc/resolv.conf
    cache 30
    loop
    reload
    loadbalance
    import /etc/coredns/custom/*.override
}
import /etc/coredns/custom/*.server
"""
    (block,) = parse_corefile(k3s).blocks
    assert block.plugin("hosts") is not None
    cluster = cluster_from(CLIENT + corefile_map(k3s))
    assert coredns_of(cluster.state).problems == ()
    assert cluster.dns("web", "default/client").values == ("10.96.7.7",)
    snippet = "(common) {\n    errors\n}\n" + KUBEADM.replace("    errors\n", "    import common\n", 1)
    assert len(parse_corefile(snippet).blocks) == 1


def test_a_corefile_serving_another_port_answers_nothing():
    broken = cluster_from(CLIENT + corefile_map(KUBEADM.replace(".:53 {", ".:5353 {")))
    outage = coredns_of(broken.state).outage
    assert outage is not None and outage.code == "CorefileNoPort53"
    assert broken.dns("web", "default/client").outcome == "timeout"


def test_a_ready_plugin_moved_off_its_port_leaves_the_pods_unready_and_says_where():
    """`ready :8282` opens the plugin elsewhere: kubeadm's readiness probe still asks :8181, is refused, and the
    pods stay 0/1; the finding names both addresses (one function decides for the prober and the doctor)."""
    from knetsim.doctor import diagnose

    moved = cluster_from(CLIENT + corefile_map(KUBEADM.replace("    ready\n", "    ready :8282\n")))
    dns = coredns_of(moved.state)
    assert dns.ready_pods == 0 and not dns.serving
    [problem] = [p for p in dns.problems if p.code == "CoreDNSNotReady"]
    assert "the Corefile's `ready` plugin listens on :8282, not on :8181 where their readiness probe asks" in \
        problem.message
    assert "give `ready` its default address (`ready` alone, :8181)" in problem.fix
    assert any(f.code == "CoreDNSNotReady" for f in diagnose(moved.state).findings)
