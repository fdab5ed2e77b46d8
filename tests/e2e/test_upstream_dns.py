"""Kubernetes' own DNS conformance tests, restated for the real kubectl and dig against `knetsim up`.

Each test is one [Conformance] test of kubernetes/kubernetes ``test/e2e/network/dns.go`` (named in its docstring),
with the same objects: a headless Service and a plain one with a named port, pods with a hostname and a subdomain,
an ExternalName Service, a pod with ``dnsPolicy: None``. Upstream's probe pods loop ``dig`` and ``getent`` inside
the cluster and write result files; here the same names are asked from a pod (busybox's nslookup, as the docs'
"Debugging DNS Resolution" page asks) and from the host through the cluster's DNS port with the real dig, and the
answers are checked against the objects. docs/e2e.md lists them.
"""

from __future__ import annotations

import json

from tests.live import dig

from .conftest import Cluster

AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"
DOMAIN = "cluster.local"


def _apply(k: Cluster, *objects: dict) -> None:
    k.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))


def _pod(name: str, labels: dict[str, str], **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"containers": [{"name": "c", "image": AGNHOST, "args": ["netexec", "--http-port=8080"],
                                     "ports": [{"name": "http", "containerPort": 8080}]}], **spec}}


def _service(name: str, selector: dict[str, str], *, headless: bool = False) -> dict:
    spec: dict = {"selector": selector, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
    if headless:
        spec["clusterIP"] = "None"
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _answers(k: Cluster, name: str, rtype: str = "A") -> list[str]:
    return sorted(dig(k, "+short", name, rtype).split())


def _ready(k: Cluster, *pods: str) -> None:
    k.kubectl("wait", "--for=condition=Ready", *(f"pod/{p}" for p in pods), "--timeout=30s")


def test_should_provide_dns_for_the_cluster(k: Cluster) -> None:
    """DNS should provide DNS for the cluster [Conformance]: kubernetes.default in its short and full forms resolves
    from a pod through its search path (upstream digs with +search; here agnhost's Go resolver connects by the
    name), and in full through the cluster's DNS."""
    _apply(k, _pod("dns-test", {"app": "dns-test"}))
    _ready(k, "dns-test")
    for name in ("kubernetes.default", "kubernetes.default.svc", f"kubernetes.default.svc.{DOMAIN}"):
        out = k.kubectl("exec", "dns-test", "--", "/agnhost", "connect", f"{name}:443", "--timeout=3s", check=False)
        assert out.returncode == 0, (name, out.stdout, out.stderr)
    out = k.kubectl("exec", "dns-test", "--", "nslookup", f"kubernetes.default.svc.{DOMAIN}")
    assert "Address: 10.96.0.1" in out.stdout, out.stdout
    assert _answers(k, f"kubernetes.default.svc.{DOMAIN}") == ["10.96.0.1"]


def test_should_provide_dns_for_services(k: Cluster) -> None:
    """DNS should provide DNS for services [Conformance]: a headless Service's name is its pods' addresses, a
    ClusterIP Service's is its ClusterIP, and each named port has its SRV record."""
    _apply(k, _pod("dns-test-a", {"dns-test": "true"}), _pod("dns-test-b", {"dns-test": "true"}),
           _service("dns-test-service", {"dns-test": "true"}, headless=True),
           _service("test-service-2", {"dns-test": "true"}))
    _ready(k, "dns-test-a", "dns-test-b")
    pod_ips = sorted(k.kubectl("get", "pods", "-l", "dns-test=true", "-o",
                               "jsonpath={.items[*].status.podIP}").stdout.split())
    assert _answers(k, f"dns-test-service.default.svc.{DOMAIN}") == pod_ips
    cluster_ip = k.kubectl("get", "svc", "test-service-2", "-o", "jsonpath={.spec.clusterIP}").stdout
    assert _answers(k, f"test-service-2.default.svc.{DOMAIN}") == [cluster_ip]
    srv = dig(k, "+short", f"_http._tcp.test-service-2.default.svc.{DOMAIN}", "SRV").split()
    assert srv[2:] == ["80", f"test-service-2.default.svc.{DOMAIN}."], srv
    headless_srv = sorted(line.split()[3] for line in
                          dig(k, "+short", f"_http._tcp.dns-test-service.default.svc.{DOMAIN}", "SRV").splitlines())
    assert len(headless_srv) == 2 and all(t.endswith(f".dns-test-service.default.svc.{DOMAIN}.") for t in headless_srv)


def test_should_provide_dns_for_pods_for_hostname_and_subdomain(k: Cluster) -> None:
    """DNS should provide DNS for pods for Hostname [Conformance] and for Subdomain [Conformance]: a pod with
    hostname and subdomain, under a headless Service of the subdomain's name, is HOSTNAME.SUBDOMAIN.NS.svc.DOMAIN."""
    _apply(k, _pod("dns-querier-2", {"dns-test": "sub"}, hostname="dns-querier-2", subdomain="dns-test-service-2"),
           _service("dns-test-service-2", {"dns-test": "sub"}, headless=True))
    _ready(k, "dns-querier-2")
    ip = k.kubectl("get", "pod", "dns-querier-2", "-o", "jsonpath={.status.podIP}").stdout
    fqdn = f"dns-querier-2.dns-test-service-2.default.svc.{DOMAIN}"
    assert _answers(k, fqdn) == [ip]
    # The pod's own hostname -f is that name (the kubelet's /etc/hosts line), as the upstream probe's `hostname -f`.
    hosts = k.kubectl("exec", "dns-querier-2", "--", "cat", "/etc/hosts").stdout
    assert f"{ip}\t{fqdn}\tdns-querier-2" in hosts, hosts


def test_should_provide_dns_for_externalname_services(k: Cluster) -> None:
    """DNS should provide DNS for ExternalName services [Conformance]: the name is a CNAME to the external name,
    and follows a change of it."""
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "dns-test-service-3", "namespace": "default"},
               "spec": {"type": "ExternalName", "externalName": "foo.example.com"}}
    _apply(k, service)
    name = f"dns-test-service-3.default.svc.{DOMAIN}"
    assert dig(k, "+short", name, "CNAME").split() == ["foo.example.com."]
    k.kubectl("patch", "service", "dns-test-service-3", "--type=merge", "-p",
              '{"spec": {"externalName": "bar.example.com"}}')
    assert dig(k, "+short", name, "CNAME").split() == ["bar.example.com."]


def test_should_provide_etc_hosts_entries_for_the_cluster(k: Cluster) -> None:
    """DNS should provide /etc/hosts entries for the cluster [Conformance]: the kubelet writes the pod's own address
    and name, and its hostAliases, into /etc/hosts."""
    _apply(k, _pod("dns-hosts", {"dns-test": "hosts"},
                   hostAliases=[{"ip": "123.45.67.89", "hostnames": ["foo.local", "bar.local"]}]))
    _ready(k, "dns-hosts")
    ip = k.kubectl("get", "pod", "dns-hosts", "-o", "jsonpath={.status.podIP}").stdout
    hosts = k.kubectl("exec", "dns-hosts", "--", "cat", "/etc/hosts").stdout
    assert f"{ip}\tdns-hosts\n" in hosts, hosts
    assert hosts.endswith("\n# Entries added by HostAliases.\n123.45.67.89\tfoo.local\tbar.local\n"), hosts
    # The resolver reads /etc/hosts first: the alias resolves without a query, so connecting to it fails on the way
    # to 123.45.67.89 (nothing there answers), not in DNS; a name in no hosts file and no zone is a DNS error.
    out = k.kubectl("exec", "dns-hosts", "--", "/agnhost", "connect", "foo.local:80", "--timeout=1s", check=False)
    assert out.returncode == 1 and not out.stderr.startswith("DNS:"), out.stderr
    out = k.kubectl("exec", "dns-hosts", "--", "/agnhost", "connect", "baz.local:80", "--timeout=1s", check=False)
    assert out.returncode == 1 and out.stderr.startswith("DNS: lookup baz.local"), out.stderr


def test_should_support_configurable_pod_dns_nameservers(k: Cluster) -> None:
    """DNS should support configurable pod DNS nameservers [Conformance]: with dnsPolicy None and a dnsConfig,
    the pod's resolv.conf holds exactly those servers and searches; agnhost's dns-server-list and dns-suffix read
    them back, as the upstream test execs them."""
    _apply(k, _pod("test-dns-nameservers", {"dns-test": "ns"}, dnsPolicy="None",
                   dnsConfig={"nameservers": ["1.1.1.1"], "searches": ["resolv.conf.local"]}))
    _ready(k, "test-dns-nameservers")
    servers = k.kubectl("exec", "test-dns-nameservers", "--", "/agnhost", "dns-server-list").stdout.strip()
    suffix = k.kubectl("exec", "test-dns-nameservers", "--", "/agnhost", "dns-suffix").stdout.strip()
    assert (servers, suffix) == ("1.1.1.1", "resolv.conf.local")


def test_should_resolve_dns_of_partial_qualified_names_for_services(k: Cluster) -> None:
    """DNS should resolve DNS of partial qualified names for services [LinuxOnly] [Conformance]: from a pod of the
    namespace, `dns-test-service`, `dns-test-service.NS` and `dns-test-service.NS.svc` resolve through the pod's
    search path to the headless Service's pod (upstream asks `dig +search`, which jessie-dnsutils has and knetsim's
    userland does not; here the pod's own resolver, with ndots:5, takes each name to netexec's /hostname). The
    Services' SRV records are asked in full with the real dig (the search path is the pod's, not the host's)."""
    ns = k.namespace("dns-partial")
    pod = _pod("dns-test", {"dns-test": "true"}, hostname="dns-querier-1", subdomain="dns-test-service")
    pod["metadata"]["namespace"] = ns
    headless = _service("dns-test-service", {"dns-test": "true"}, headless=True)
    regular = _service("test-service-2", {"dns-test": "true"})
    for service in (headless, regular):
        service["metadata"]["namespace"] = ns
    _apply(k, pod, headless, regular)
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/dns-test", "--timeout=30s")
    for name in ("dns-test-service", f"dns-test-service.{ns}", f"dns-test-service.{ns}.svc"):
        out = k.kubectl("exec", "-n", ns, "dns-test", "--", "curl", "-s", "--connect-timeout", "2",
                        f"http://{name}:8080/hostname", check=False)
        assert (out.returncode, out.stdout) == (0, "dns-querier-1"), (name, out.stderr)
    # A partial name of no Service is a resolver error (curl's 6), after every search domain.
    assert k.kubectl("exec", "-n", ns, "dns-test", "--", "curl", "-s", f"http://nosuch.{ns}:8080/",
                     check=False).returncode == 6
    # A headless Service's SRV names its endpoints' port, a ClusterIP one's its own.
    for service, port in (("dns-test-service", "8080"), ("test-service-2", "80")):
        assert dig(k, "+short", f"_http._tcp.{service}.{ns}.svc.{DOMAIN}", "SRV").split()[2] == port
