"""A pod's resolv.conf and the queries its resolver sends.

Address plan: DESIGN defaults (kube-dns 10.96.0.10, node nameserver 172.18.0.1); the
`data` Service lives in namespace prod, the clients in namespace test.
"""

from __future__ import annotations

import pytest
from tests.conftest import cluster_from

from knetsim import Cluster
from knetsim.cluster.config import ClusterConfig
from knetsim.dns import ClusterDNS, Upstream, query_names, resolv_conf, resolve

APP = """
apiVersion: v1
kind: Namespace
metadata: {name: prod}
---
apiVersion: v1
kind: Namespace
metadata: {name: test}
---
apiVersion: v1
kind: Pod
metadata: {name: data-0, namespace: prod, labels: {app: data}}
spec:
  containers: [{name: db, image: postgres:17, ports: [{containerPort: 5432}]}]
---
apiVersion: v1
kind: Service
metadata: {name: data, namespace: prod}
spec:
  selector: {app: data}
  ports: [{name: pg, port: 5432}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: test}
spec:
  containers: [{name: c, image: busybox:1.36}]
---
apiVersion: v1
kind: Pod
metadata: {name: default-policy, namespace: test}
spec:
  dnsPolicy: Default
  containers: [{name: c, image: busybox:1.36}]
---
apiVersion: v1
kind: Pod
metadata: {name: hostnet, namespace: test}
spec:
  hostNetwork: true
  containers: [{name: c, image: busybox:1.36}]
---
apiVersion: v1
kind: Pod
metadata: {name: hostnet-cluster, namespace: test}
spec:
  hostNetwork: true
  dnsPolicy: ClusterFirstWithHostNet
  containers: [{name: c, image: busybox:1.36}]
---
# The dnsConfig example of the Kubernetes docs ("Pod's DNS Config").
apiVersion: v1
kind: Pod
metadata: {name: dns-example, namespace: test}
spec:
  dnsPolicy: "None"
  dnsConfig:
    nameservers: [192.0.2.1]
    searches: [ns1.svc.cluster-domain.example, my.dns.search.suffix]
    options:
      - name: ndots
        value: "2"
      - name: edns0
  containers: [{name: c, image: busybox:1.36}]
---
apiVersion: v1
kind: Pod
metadata: {name: merged, namespace: test}
spec:
  dnsConfig:
    nameservers: [192.0.2.53]
    searches: [my.dns.search.suffix, svc.cluster.local]
    options:
      - name: ndots
        value: "1"
      - name: single-request-reopen
  containers: [{name: c, image: busybox:1.36}]
"""


@pytest.fixture(scope="module")
def app() -> Cluster:
    return cluster_from(APP, config=ClusterConfig(host_search=("corp.example",)))


def pod(cluster: Cluster, key: str):
    return cluster.state.pods[key]


RESOLV_CONFS = {
    "test/client": (
        "search test.svc.cluster.local svc.cluster.local cluster.local corp.example\n"
        "nameserver 10.96.0.10\n"
        "options ndots:5\n"),
    "test/default-policy": "search corp.example\nnameserver 172.18.0.1\n",
    "test/hostnet": "search corp.example\nnameserver 172.18.0.1\n",
    "test/hostnet-cluster": (
        "search test.svc.cluster.local svc.cluster.local cluster.local corp.example\n"
        "nameserver 10.96.0.10\n"
        "options ndots:5\n"),
    "test/dns-example": (
        "search ns1.svc.cluster-domain.example my.dns.search.suffix\n"
        "nameserver 192.0.2.1\n"
        "options ndots:2 edns0\n"),
    # appended without duplicates, the pod's ndots replacing the kubelet's
    "test/merged": (
        "search test.svc.cluster.local svc.cluster.local cluster.local corp.example my.dns.search.suffix\n"
        "nameserver 10.96.0.10\n"
        "nameserver 192.0.2.53\n"
        "options ndots:1 single-request-reopen\n"),
}


@pytest.mark.parametrize("key", sorted(RESOLV_CONFS))
def test_resolv_conf_per_dns_policy(app: Cluster, key: str) -> None:
    assert resolv_conf(app.state, pod(app, key)).text() == RESOLV_CONFS[key]


def test_hostnetwork_clusterfirst_says_why_it_falls_back(app: Cluster) -> None:
    conf = resolv_conf(app.state, pod(app, "test/hostnet"))
    assert (conf.dns_policy, conf.effective_policy) == ("ClusterFirst", "Default")
    assert "ClusterFirstWithHostNet" in conf.notes[0]


def test_limits_of_the_kubelet() -> None:
    many = [f"d{i}.example" for i in range(40)]
    cluster = cluster_from("""
        apiVersion: v1
        kind: Pod
        metadata: {name: p}
        spec:
          containers: [{name: c, image: busybox}]
    """, config=ClusterConfig(host_search=tuple(many), upstream_nameservers=("1.1.1.1", "8.8.8.8")))
    conf = resolv_conf(cluster.state, cluster.state.pods["default/p"])
    assert len(conf.search) == 32
    assert conf.search[:3] == ("default.svc.cluster.local", "svc.cluster.local", "cluster.local")
    assert any("Search Line limits were exceeded" in n for n in conf.notes)


# --- the order of queries ----------------------------------------------------------------

SEARCH = ("test.svc.cluster.local", "svc.cluster.local", "cluster.local")


@pytest.mark.parametrize(("mode", "name", "expected"), [
    ("glibc", "data", ["data.test.svc.cluster.local.", "data.svc.cluster.local.", "data.cluster.local.", "data."]),
    ("glibc", "a.b.c.d.e", ["a.b.c.d.e.", "a.b.c.d.e.test.svc.cluster.local.", "a.b.c.d.e.svc.cluster.local.",
                            "a.b.c.d.e.cluster.local."]),  # 4 dots, ndots:4: as typed first
    ("glibc", "data.prod.svc.cluster.local.", ["data.prod.svc.cluster.local."]),  # trailing dot: absolute only
    ("musl", "a.b.c.d.e.f", ["a.b.c.d.e.f."]),  # at least ndots: musl never searches
    ("musl", "data.prod", ["data.prod.test.svc.cluster.local.", "data.prod.svc.cluster.local.",
                           "data.prod.cluster.local.", "data.prod."]),
    ("busybox-nslookup", "data", ["data.test.svc.cluster.local.", "data.svc.cluster.local.", "data.cluster.local."]),
    ("busybox-nslookup", "data.prod", ["data.prod."]),  # a dot: sent as typed, never searched
])
def test_query_order(mode: str, name: str, expected: list[str]) -> None:
    ndots = 4 if name == "a.b.c.d.e" else 5
    assert list(query_names(name, SEARCH, ndots, mode)) == expected


def test_ndots_boundary_glibc() -> None:
    # fewer than ndots dots: the search list first, the name as typed last
    assert query_names("a.b.c.d", SEARCH, 5, "glibc")[-1] == "a.b.c.d."
    assert query_names("a.b.c.d", SEARCH, 5, "glibc")[0] == "a.b.c.d.test.svc.cluster.local."
    # at least ndots dots: as typed first
    assert query_names("a.b.c.d.e.f", SEARCH, 5, "glibc")[0] == "a.b.c.d.e.f."
    assert query_names("a.b.c.d.e.f", SEARCH, 5, "glibc")[-1] == "a.b.c.d.e.f.cluster.local."


# --- resolving -----------------------------------------------------------------------------


def test_data_from_namespace_test(app: Cluster) -> None:
    """The Kubernetes docs: from namespace test, `data` fails; `data.prod` and the FQDN succeed."""
    client = pod(app, "test/client")
    ip = app.state.services["prod/data"].cluster_ip
    plain = resolve(app.state, client, "data")
    assert plain.outcome == "nxdomain"
    assert [q.name for q in plain.queries] == [
        "data.test.svc.cluster.local.", "data.svc.cluster.local.", "data.cluster.local.",
        "data.corp.example.", "data."]
    assert plain.messages == ("data: Name or service not known",)

    short = resolve(app.state, client, "data.prod")
    assert (short.outcome, short.answered, short.fqdn, short.values) == (
        "resolved", 2, "data.prod.svc.cluster.local.", (ip,))
    assert [q.outcome for q in short.queries] == ["nxdomain", "answer"]

    full = resolve(app.state, client, "data.prod.svc.cluster.local")
    # 4 dots < ndots 5: even the FQDN walks the search list first, which is why a trailing dot helps
    assert full.ok and full.answered == 5 and full.values == (ip,)
    absolute = resolve(app.state, client, "data.prod.svc.cluster.local.")
    assert (len(absolute.queries), absolute.values) == (1, (ip,))


def test_every_query_goes_to_kube_dns(app: Cluster) -> None:
    result = resolve(app.state, pod(app, "test/client"), "data")
    assert {(q.nameserver, q.port, q.protocol) for q in result.queries} == {("10.96.0.10", 53, "UDP")}


def test_busybox_nslookup_quirk(app: Cluster) -> None:
    """busybox 1.36 nslookup: `data.prod` fails with NXDOMAIN where wget (libc) resolves it."""
    client = pod(app, "test/client")
    nslookup = resolve(app.state, client, "data.prod", mode="busybox-nslookup")
    assert nslookup.outcome == "nxdomain"
    assert [q.name for q in nslookup.queries] == ["data.prod."]
    assert "** server can't find data.prod: NXDOMAIN" in nslookup.messages
    assert resolve(app.state, client, "data.prod", mode="glibc").ok
    assert resolve(app.state, client, "data.prod", mode="musl").ok
    # a dotless name gets every search domain, all sent, each reply printed
    bare = resolve(app.state, client, "data", mode="busybox-nslookup")
    assert [q.outcome for q in bare.queries] == ["nxdomain"] * 4
    fqdn = resolve(app.state, client, "data.prod.svc.cluster.local", mode="busybox-nslookup")
    assert fqdn.ok and "Name:\tdata.prod.svc.cluster.local" in fqdn.messages


def test_dns_policy_default_cannot_resolve_cluster_names(app: Cluster) -> None:
    result = resolve(app.state, pod(app, "test/default-policy"), "data.prod.svc.cluster.local.")
    assert result.outcome == "nxdomain"
    assert result.queries[0].nameserver == "172.18.0.1"
    assert result.queries[0].answer is not None and result.queries[0].answer.source == "upstream"
    assert resolve(app.state, pod(app, "test/hostnet-cluster"), "data.prod").ok


def test_dns_policy_none_uses_only_its_nameserver(app: Cluster) -> None:
    result = resolve(app.state, pod(app, "test/dns-example"), "data.prod.svc.cluster.local")
    assert {q.nameserver for q in result.queries} == {"192.0.2.1"}
    assert result.outcome == "nxdomain"


def test_unreachable_nameserver_times_out(app: Cluster) -> None:
    """A default-deny egress drops the UDP/53 query: every query times out (dns-timeout), no NXDOMAIN."""
    client = pod(app, "test/client")
    result = resolve(app.state, client, "data.prod", reachable=lambda ip, port, proto: False)
    assert result.outcome == "timeout"
    assert all(q.answer is None for q in result.queries)
    # glibc stops the search on a timeout and tries the name as typed once more
    assert [q.name for q in result.queries] == ["data.prod.test.svc.cluster.local.", "data.prod."]
    busybox = resolve(app.state, client, "data.prod.svc.cluster.local", mode="busybox-nslookup",
                      reachable=lambda ip, port, proto: False)
    assert busybox.messages == (";; connection timed out; no servers could be reached",)


def test_second_nameserver_answers_when_the_first_is_unreachable(app: Cluster) -> None:
    seen: list[tuple[str, int, str]] = []

    def reachable(ip: str, port: int, proto: str) -> bool:
        seen.append((ip, port, proto))
        return ip != "10.96.0.10"

    result = resolve(app.state, pod(app, "test/merged"), "data.prod.svc.cluster.local.", reachable=reachable)
    assert seen[:2] == [("10.96.0.10", 53, "UDP"), ("192.0.2.53", 53, "UDP")]
    assert (result.queries[0].nameserver, result.queries[0].unreachable) == ("192.0.2.53", ("10.96.0.10",))
    assert result.outcome == "nxdomain"  # 192.0.2.53 is not the cluster DNS


def test_glibc_keeps_searching_after_nodata_musl_stops(app: Cluster) -> None:
    """NODATA for a search candidate: glibc moves on, musl gives up (name_from_dns returns EAI_NODATA)."""
    client = pod(app, "test/client")
    # `prod.svc` under the first search domain is NXDOMAIN; `prod` as a namespace name is NODATA
    glibc = resolve(app.state, client, "prod", mode="glibc")
    musl = resolve(app.state, client, "prod", mode="musl")
    assert [q.outcome for q in glibc.queries][:2] == ["nxdomain", "nodata"]
    assert glibc.outcome == "nodata" and len(glibc.queries) == 5
    assert [q.outcome for q in musl.queries] == ["nxdomain", "nodata"]
    assert musl.outcome == "nodata"


def test_servfail_from_upstream_is_reported(app: Cluster) -> None:
    dns = ClusterDNS(app.state, upstream=Upstream(mode="servfail"))
    result = resolve(app.state, pod(app, "test/client"), "example.com", dns=dns)
    assert result.queries[-1].rcode == "SERVFAIL"
    assert result.outcome == "servfail"
    assert result.messages == ("example.com: Temporary failure in name resolution",)


def test_reverse_lookup(app: Cluster) -> None:
    ip = app.state.services["prod/data"].cluster_ip
    result = resolve(app.state, pod(app, "test/client"), ip, "PTR")
    assert [q.name for q in result.queries] == [".".join(reversed(ip.split("."))) + ".in-addr.arpa."]
    assert result.values == ("data.prod.svc.cluster.local.",)


def test_srv_through_the_search_list(app: Cluster) -> None:
    result = resolve(app.state, pod(app, "test/client"), "_pg._tcp.data.prod", "SRV")
    assert result.values == ("0 100 5432 data.prod.svc.cluster.local.",)


def test_externalname_resolves_to_outside(shop: Cluster) -> None:
    client = next(p for p in shop.state.pods_in("shop") if p.name.startswith("web-"))
    result = resolve(shop.state, client, "payments")
    assert (result.outcome, result.ok, result.fqdn) == ("external", True, "payments.shop.svc.cluster.local.")


def test_resolution_json_shape(app: Cluster) -> None:
    data = resolve(app.state, pod(app, "test/client"), "data.prod").to_dict()
    assert list(data) == ["name", "type", "from", "resolver", "resolvConf", "order", "queries", "answered",
                          "fqdn", "outcome", "values", "messages"]
    assert data["queries"][1]["response"]["answer"][0]["type"] == "A"


def test_bad_arguments(app: Cluster) -> None:
    with pytest.raises(ValueError, match="resolver"):
        resolve(app.state, pod(app, "test/client"), "data", mode="bind")
    with pytest.raises(ValueError, match="empty"):
        resolve(app.state, pod(app, "test/client"), " ")
