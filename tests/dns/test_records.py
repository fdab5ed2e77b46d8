"""The cluster's records, as CoreDNS's kubernetes plugin answers them.

Address plan: tests/dns/coredns_fixture.yaml is CoreDNS's handler_test fixture with the
ClusterIPs moved into 10.96.0.0/12 (svc1 10.96.0.101, svcempty 10.96.0.102); endpoint
addresses 172.0.0.x and 5678:abcd::x as upstream. examples/shop for the StatefulSet case.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from tests.conftest import EXAMPLES, cluster_from

from knetsim import Cluster
from knetsim.dns import ClusterDNS, Upstream, lookup, reverse_name, zone_records

FIXTURE = Path(__file__).with_name("coredns_fixture.yaml")
SOA = "cluster.local.\t5\tIN\tSOA\tns.dns.cluster.local. hostmaster.cluster.local. {serial} 7200 1800 86400 5"


@pytest.fixture(scope="module")
def testns() -> ClusterDNS:
    # CoreDNS's handler_test runs the plugin with its own defaults (ttl 5, pods disabled).
    return ClusterDNS(Cluster.from_paths([str(FIXTURE)]).state, ttl=5, pods="disabled")


@pytest.fixture(scope="module")
def shop_dns(shop: Cluster) -> ClusterDNS:
    return ClusterDNS(shop.state)


@dataclass(frozen=True)
class Case:
    qname: str
    qtype: str
    rcode: str
    answer: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    soa: bool = False  # SOA in the authority section (every negative answer)
    ns: list[str] = field(default_factory=list)


def rr(name: str, rtype: str, data: str, ttl: int = 5) -> str:
    return f"{name}\t{ttl}\tIN\t{rtype}\t{data}"


# copied_from: coredns/coredns plugin/kubernetes/handler_test.go dnsTestCases (test.Case rows),
# with 10.0.0.1 -> 10.96.0.101/102 as explained above. Compared order-insensitively, as
# test.SortAndCheck does.
COREDNS_CASES = [
    # A Service
    Case("svc1.testns.svc.cluster.local.", "A", "NOERROR",
         (rr("svc1.testns.svc.cluster.local.", "A", "10.96.0.101"),)),
    # A Service without endpoints still answers its ClusterIP
    Case("svcempty.testns.svc.cluster.local.", "A", "NOERROR",
         (rr("svcempty.testns.svc.cluster.local.", "A", "10.96.0.102"),)),
    Case("svc1.testns.svc.cluster.local.", "SRV", "NOERROR",
         (rr("svc1.testns.svc.cluster.local.", "SRV", "0 100 80 svc1.testns.svc.cluster.local."),),
         (rr("svc1.testns.svc.cluster.local.", "A", "10.96.0.101"),)),
    Case("svcempty.testns.svc.cluster.local.", "SRV", "NOERROR",
         (rr("svcempty.testns.svc.cluster.local.", "SRV", "0 100 80 svcempty.testns.svc.cluster.local."),),
         (rr("svcempty.testns.svc.cluster.local.", "A", "10.96.0.102"),)),
    # SRV Service
    Case("_http._tcp.svc1.testns.svc.cluster.local.", "SRV", "NOERROR",
         (rr("_http._tcp.svc1.testns.svc.cluster.local.", "SRV", "0 100 80 svc1.testns.svc.cluster.local."),),
         (rr("svc1.testns.svc.cluster.local.", "A", "10.96.0.101"),)),
    # A Service (Headless)
    Case("hdls1.testns.svc.cluster.local.", "A", "NOERROR",
         tuple(rr("hdls1.testns.svc.cluster.local.", "A", f"172.0.0.{i}") for i in (2, 3, 4, 5))),
    # A Service (Headless and Portless)
    Case("hdlsprtls.testns.svc.cluster.local.", "A", "NOERROR",
         (rr("hdlsprtls.testns.svc.cluster.local.", "A", "172.0.0.20"),)),
    # An Endpoint with no port
    Case("172-0-0-20.hdlsprtls.testns.svc.cluster.local.", "A", "NOERROR",
         (rr("172-0-0-20.hdlsprtls.testns.svc.cluster.local.", "A", "172.0.0.20"),)),
    # An Endpoint ip
    Case("172-0-0-2.hdls1.testns.svc.cluster.local.", "A", "NOERROR",
         (rr("172-0-0-2.hdls1.testns.svc.cluster.local.", "A", "172.0.0.2"),)),
    # An Endpoint by name: two endpoints share the hostname
    Case("dup-name.hdls1.testns.svc.cluster.local.", "A", "NOERROR",
         (rr("dup-name.hdls1.testns.svc.cluster.local.", "A", "172.0.0.4"),
          rr("dup-name.hdls1.testns.svc.cluster.local.", "A", "172.0.0.5"))),
    # SRV Service (Headless): 6 addresses -> weight 100/6, dup-name collapses to one target
    Case("_http._tcp.hdls1.testns.svc.cluster.local.", "SRV", "NOERROR",
         tuple(rr("_http._tcp.hdls1.testns.svc.cluster.local.", "SRV", f"0 16 80 {t}.hdls1.testns.svc.cluster.local.")
               for t in ("172-0-0-2", "172-0-0-3", "5678-abcd--1", "5678-abcd--2", "dup-name")),
         (rr("172-0-0-2.hdls1.testns.svc.cluster.local.", "A", "172.0.0.2"),
          rr("172-0-0-3.hdls1.testns.svc.cluster.local.", "A", "172.0.0.3"),
          rr("5678-abcd--1.hdls1.testns.svc.cluster.local.", "AAAA", "5678:abcd::1"),
          rr("5678-abcd--2.hdls1.testns.svc.cluster.local.", "AAAA", "5678:abcd::2"),
          rr("dup-name.hdls1.testns.svc.cluster.local.", "A", "172.0.0.4"),
          rr("dup-name.hdls1.testns.svc.cluster.local.", "A", "172.0.0.5"))),
    # AAAA
    Case("5678-abcd--2.hdls1.testns.svc.cluster.local", "AAAA", "NOERROR",
         (rr("5678-abcd--2.hdls1.testns.svc.cluster.local.", "AAAA", "5678:abcd::2"),)),
    # CNAME External
    Case("external.testns.svc.cluster.local.", "CNAME", "NOERROR",
         (rr("external.testns.svc.cluster.local.", "CNAME", "ext.interwebs.test."),)),
    # CNAME External To Internal Service
    Case("external-to-service.testns.svc.cluster.local", "A", "NOERROR",
         (rr("external-to-service.testns.svc.cluster.local.", "CNAME", "svc1.testns.svc.cluster.local."),
          rr("svc1.testns.svc.cluster.local.", "A", "10.96.0.101"))),
    # AAAA Service (with an existing A record, but no AAAA record): NODATA
    Case("svc1.testns.svc.cluster.local.", "AAAA", "NOERROR", soa=True),
    # AAAA / A Service (non-existing service), A Service (non-existing namespace)
    Case("svc0.testns.svc.cluster.local.", "AAAA", "NXDOMAIN", soa=True),
    Case("svc0.testns.svc.cluster.local.", "A", "NXDOMAIN", soa=True),
    Case("svc0.svc-nons.svc.cluster.local.", "A", "NXDOMAIN", soa=True),
    # TXT Schema
    Case("dns-version.cluster.local.", "TXT", "NOERROR", (rr("dns-version.cluster.local.", "TXT", '"1.1.0"', 28800),)),
    # A Service (Headless) does not exist / A Service does not exist
    Case("bogusendpoint.hdls1.testns.svc.cluster.local.", "A", "NXDOMAIN", soa=True),
    Case("bogusendpoint.svc0.testns.svc.cluster.local.", "A", "NXDOMAIN", soa=True),
    # AAAA Service (Headless), AAAA Endpoint
    Case("hdls1.testns.svc.cluster.local.", "AAAA", "NOERROR",
         (rr("hdls1.testns.svc.cluster.local.", "AAAA", "5678:abcd::1"),
          rr("hdls1.testns.svc.cluster.local.", "AAAA", "5678:abcd::2"))),
    Case("5678-abcd--1.hdls1.testns.svc.cluster.local.", "AAAA", "NOERROR",
         (rr("5678-abcd--1.hdls1.testns.svc.cluster.local.", "AAAA", "5678:abcd::1"),)),
    # The structure of the zone itself: NODATA
    Case("svc.cluster.local.", "A", "NOERROR", soa=True),
    Case("pod.cluster.local.", "A", "NOERROR", soa=True),
    Case("testns.svc.cluster.local.", "A", "NOERROR", soa=True),
    # NS query for qname != zone: existing domain NODATA, non-existing NXDOMAIN
    Case("svc.cluster.local.", "NS", "NOERROR", soa=True),
    Case("testns.svc.cluster.local.", "NS", "NOERROR", soa=True),
    Case("foo.cluster.local.", "NS", "NXDOMAIN", soa=True),
    Case("foo.svc.cluster.local.", "NS", "NXDOMAIN", soa=True),
    # SOA for a name below the apex: NODATA with the SOA in the authority section
    Case("svc1.testns.svc.cluster.local.", "SOA", "NOERROR", soa=True),
    # A query for a subdomain of an external service should not resolve to the external service
    Case("endpoint.external.testns.svc.cluster.local.", "CNAME", "NXDOMAIN", soa=True),
]

# Our own rows, for what the spec and the issue name but CoreDNS's table does not cover.
KNETSIM_CASES = [
    # headless with no ready endpoints: NXDOMAIN (spec 2.4.1); publishNotReadyAddresses publishes them
    Case("hdls-unready.testns.svc.cluster.local.", "A", "NXDOMAIN", soa=True),
    Case("hdls-tolerant.testns.svc.cluster.local.", "A", "NOERROR",
         (rr("hdls-tolerant.testns.svc.cluster.local.", "A", "172.0.0.31"),)),
    # a portless headless Service has A records and no SRV: NODATA
    Case("hdlsprtls.testns.svc.cluster.local.", "SRV", "NOERROR", soa=True),
    # a port that does not exist, and a protocol that does not match: NXDOMAIN
    Case("_https._tcp.svc1.testns.svc.cluster.local.", "SRV", "NXDOMAIN", soa=True),
    Case("_http._udp.svc1.testns.svc.cluster.local.", "SRV", "NXDOMAIN", soa=True),
    # an ExternalName has no SRV and no endpoint names
    Case("external.testns.svc.cluster.local.", "SRV", "NOERROR", soa=True),
    # case-insensitive names; the owner keeps the asker's spelling
    Case("SVC1.TestNS.svc.Cluster.Local.", "A", "NOERROR", (rr("SVC1.TestNS.svc.Cluster.Local.", "A", "10.96.0.101"),)),
    # more labels than the schema has
    Case("a.b._http._tcp.svc1.testns.svc.cluster.local.", "A", "NXDOMAIN", soa=True),
    # TXT of anything but dns-version is NODATA, even for a name that does not exist (CoreDNS quirk)
    Case("svc0.testns.svc.cluster.local.", "TXT", "NOERROR", soa=True),
    # the pre-1.1.0 pod record: `pods disabled` (the plugin default) answers NXDOMAIN
    Case("172-0-0-2.testns.pod.cluster.local.", "A", "NXDOMAIN", soa=True),
    # the apex
    Case("cluster.local.", "SOA", "NOERROR",
         (SOA,)),
    # PTR for a ClusterIP and for endpoints (hostname, else dashed IP)
    Case("101.0.96.10.in-addr.arpa.", "PTR", "NOERROR",
         (rr("101.0.96.10.in-addr.arpa.", "PTR", "svc1.testns.svc.cluster.local."),)),
    Case("1.0.0.172.in-addr.arpa.", "PTR", "NOERROR",
         (rr("1.0.0.172.in-addr.arpa.", "PTR", "ep1a.svc1.testns.svc.cluster.local."),)),
    Case("2.0.0.172.in-addr.arpa.", "PTR", "NOERROR",
         (rr("2.0.0.172.in-addr.arpa.", "PTR", "172-0-0-2.hdls1.testns.svc.cluster.local."),)),
    Case(reverse_name("5678:abcd::1"), "PTR", "NOERROR",
         (rr(reverse_name("5678:abcd::1"), "PTR", "5678-abcd--1.hdls1.testns.svc.cluster.local."),)),
    # an address the cluster does not know falls through to the upstream (kubeadm Corefile)
    Case("9.9.9.10.in-addr.arpa.", "PTR", "NXDOMAIN"),
    # outside the cluster domain: forwarded; the simulated internet does not know it
    Case("svc1.testns.", "A", "NXDOMAIN"),
]


@pytest.mark.parametrize("case", COREDNS_CASES + KNETSIM_CASES, ids=lambda c: f"{c.qname} {c.qtype}")
def test_answers_like_coredns(testns: ClusterDNS, case: Case) -> None:
    answer = testns.query(case.qname, case.qtype)
    soa = SOA.format(serial=testns.serial)
    assert answer.rcode == case.rcode, answer.reason
    assert sorted(r.text() for r in answer.answer) == sorted(a.format(serial=testns.serial) for a in case.answer)
    assert sorted(r.text() for r in answer.additional) == sorted(case.extra)
    assert [r.text() for r in answer.authority] == ([soa] if case.soa else [])


def test_cname_comes_before_its_target(testns: ClusterDNS) -> None:
    # test.CNAMEOrder: a CNAME must not appear after the records of its target
    answer = testns.query("external-to-service.testns.svc.cluster.local.", "A")
    assert [r.type for r in answer.answer] == ["CNAME", "A"]


def test_cluster_answers_are_authoritative_without_recursion(testns: ClusterDNS) -> None:
    assert testns.query("svc1.testns.svc.cluster.local.").flags == ("qr", "aa", "rd")
    assert testns.query("svc0.testns.svc.cluster.local.").flags == ("qr", "aa", "rd")
    assert testns.query("example.com.").flags == ("qr", "rd", "ra")


def test_externalname_outside_the_cluster_is_a_cname_and_an_unknown(testns: ClusterDNS) -> None:
    """Given an ExternalName to ext.interwebs.test, then A answers the CNAME and says the rest is upstream."""
    answer = testns.query("external.testns.svc.cluster.local.", "A")
    assert answer.rcode == "NOERROR"
    cname = rr("external.testns.svc.cluster.local.", "CNAME", "ext.interwebs.test.")
    assert [r.text() for r in answer.answer] == [cname]
    assert answer.outcome == "external"
    assert testns.query("ext.interwebs.test.", "A").outcome == "external"


def test_upstream_modes() -> None:
    state = Cluster.from_paths([str(FIXTURE)]).state
    servfail = ClusterDNS(state, upstream=Upstream(mode="servfail"))
    assert servfail.query("example.com.", "A").rcode == "SERVFAIL"
    assert servfail.query("svc1.testns.svc.cluster.local.", "A").rcode == "NOERROR"  # the zone still answers
    hosts = ClusterDNS(state, ttl=5, upstream=Upstream(hosts={"ext.interwebs.test.": ("1.2.3.4",)}))
    answer = hosts.query("external.testns.svc.cluster.local.", "A")
    # CoreDNS's "CNAME External" case with an upstream: the CNAME, then the target's address
    assert [r.text() for r in answer.answer] == [
        rr("external.testns.svc.cluster.local.", "CNAME", "ext.interwebs.test."),
        rr("ext.interwebs.test.", "A", "1.2.3.4", ttl=30),
    ]
    with pytest.raises(ValueError, match="upstream mode"):
        Upstream(mode="refused")


@pytest.mark.parametrize(("pods", "rcode", "answer"), [
    ("disabled", "NXDOMAIN", []),
    ("insecure", "NOERROR", ["10.244.9.9"]),  # insecure: any dashed address, no check
    ("verified", "NXDOMAIN", []),
])
def test_pod_records_modes(pods: str, rcode: str, answer: list[str]) -> None:
    state = Cluster.from_paths([str(FIXTURE)]).state
    result = ClusterDNS(state, pods=pods).query("10-244-9-9.testns.pod.cluster.local.", "A")
    assert (result.rcode, list(result.values())) == (rcode, answer)


def test_pods_verified_answers_a_real_pod(shop: Cluster) -> None:
    db0 = shop.state.pods["shop/db-0"]
    name = f"{db0.pod_ip.replace('.', '-')}.shop.pod.cluster.local."
    assert ClusterDNS(shop.state, pods="verified").query(name).values() == (db0.pod_ip,)
    assert ClusterDNS(shop.state, pods="verified").query(name.replace(".shop.", ".default.")).rcode == "NXDOMAIN"


# --- examples/shop -----------------------------------------------------------------------


def test_statefulset_pods_have_their_own_names(shop: Cluster, shop_dns: ClusterDNS) -> None:
    """Given the db StatefulSet behind the headless Service db, then db-0.db and db-1.db resolve to each pod."""
    for ordinal in (0, 1):
        pod = shop.state.pods[f"shop/db-{ordinal}"]
        answer = shop_dns.query(f"db-{ordinal}.db.shop.svc.cluster.local.", "A")
        assert answer.values() == (pod.pod_ip,)
        ptr = shop_dns.query(reverse_name(pod.pod_ip), "PTR")
        assert ptr.values() == (f"db-{ordinal}.db.shop.svc.cluster.local.",)
    headless = shop_dns.query("db.shop.svc.cluster.local.", "A")
    assert set(headless.values()) == {shop.state.pods[f"shop/db-{i}"].pod_ip for i in (0, 1)}
    assert shop_dns.query("db-2.db.shop.svc.cluster.local.", "A").rcode == "NXDOMAIN"


def test_srv_for_named_ports(shop: Cluster, shop_dns: ClusterDNS) -> None:
    api = shop.state.services["shop/api"].cluster_ip
    assert shop_dns.query("_metrics._tcp.api.shop.svc.cluster.local.", "SRV").values() == (
        "0 100 9090 api.shop.svc.cluster.local.",)
    # the bare name: one record per port, weight 100/2
    assert shop_dns.query("api.shop.svc.cluster.local.", "SRV").values() == (
        "0 50 8080 api.shop.svc.cluster.local.", "0 50 9090 api.shop.svc.cluster.local.")
    srv = shop_dns.query("_postgres._tcp.db.shop.svc.cluster.local.", "SRV")
    assert srv.values() == ("0 50 5432 db-0.db.shop.svc.cluster.local.", "0 50 5432 db-1.db.shop.svc.cluster.local.")
    assert [r.name for r in srv.additional] == ["db-0.db.shop.svc.cluster.local.", "db-1.db.shop.svc.cluster.local."]
    assert shop_dns.query("api.shop.svc.cluster.local.").values() == (api,)


def test_ptr_of_a_pod_behind_several_services(shop: Cluster, shop_dns: ClusterDNS) -> None:
    """A web pod is an endpoint of web, web-np and web-lb: CoreDNS answers one PTR per Service."""
    pod = next(p for p in shop.state.pods_in("shop") if p.name.startswith("web-"))
    dashed = pod.pod_ip.replace(".", "-")
    assert shop_dns.query(reverse_name(pod.pod_ip), "PTR").values() == tuple(
        f"{dashed}.{svc}.shop.svc.cluster.local." for svc in ("web-lb", "web-np", "web"))


@pytest.mark.parametrize(("qname", "qtype", "outcome"), [
    ("web.shop.svc.cluster.local.", "A", "answer"),
    ("web.shop.svc.cluster.local.", "AAAA", "nodata"),  # exists, IPv4 only
    ("web.shop.svc.cluster.local.", "TXT", "nodata"),
    ("web.default.svc.cluster.local.", "A", "nxdomain"),  # wrong namespace
    ("web.nosuchns.svc.cluster.local.", "A", "nxdomain"),  # namespace does not exist
    ("wbe.shop.svc.cluster.local.", "A", "nxdomain"),  # no such Service
    ("shop.svc.cluster.local.", "A", "nodata"),  # the namespace's own name
    ("web.shop.cluster.local.", "A", "nxdomain"),  # svc label missing
    ("web.shop.", "A", "nxdomain"),  # outside the zone: forwarded, unknown upstream
])
def test_nxdomain_versus_nodata(shop_dns: ClusterDNS, qname: str, qtype: str, outcome: str) -> None:
    answer = shop_dns.query(qname, qtype)
    assert answer.outcome == outcome, answer.reason
    if answer.source == "cluster" and outcome != "answer":
        assert [r.type for r in answer.authority] == ["SOA"]


def test_every_listed_record_is_answered(shop: Cluster, shop_dns: ClusterDNS) -> None:
    records = shop_dns.zone_records()
    assert records, "the shop has records"
    for record in records:
        assert record in shop_dns.query(record.name, record.type).answer
    names = {r.name for r in records}
    assert {"web.shop.svc.cluster.local.", "db-0.db.shop.svc.cluster.local.",
            "_http._tcp.api.shop.svc.cluster.local.", "payments.shop.svc.cluster.local.",
            "dns-version.cluster.local.", "kube-dns.kube-system.svc.cluster.local."} <= names


def test_record_set_is_deterministic(shop: Cluster) -> None:
    again = Cluster.from_paths([str(EXAMPLES / "shop")])
    assert zone_records(shop.state) == zone_records(again.state)
    assert ClusterDNS(shop.state).serial == ClusterDNS(again.state).serial


def test_serial_changes_with_the_records() -> None:
    base = """
        apiVersion: v1
        kind: Service
        metadata: {name: a}
        spec: {clusterIP: 10.96.5.5, ports: [{port: 80}]}
    """
    one = ClusterDNS(cluster_from(base).state).serial
    two = ClusterDNS(cluster_from(base.replace("10.96.5.5", "10.96.5.6")).state).serial
    assert one != two


def test_lookup_and_custom_ttl(shop: Cluster) -> None:
    answer = lookup(shop.state, "web.shop.svc.cluster.local", ttl=30)
    assert [r.ttl for r in answer.answer] == [30]
    assert answer.authority == ()
    with pytest.raises(ValueError, match="pods"):
        ClusterDNS(shop.state, pods="sometimes")


def test_cluster_domain_from_config() -> None:
    from knetsim.cluster.config import ClusterConfig

    cluster = cluster_from("""
        apiVersion: v1
        kind: Service
        metadata: {name: a}
        spec: {clusterIP: 10.96.5.5, ports: [{port: 80}]}
    """, config=ClusterConfig(cluster_domain="corp.internal"))
    dns = ClusterDNS(cluster.state)
    assert dns.query("a.default.svc.corp.internal.").values() == ("10.96.5.5",)
    assert dns.query("a.default.svc.cluster.local.").source == "upstream"
    assert dns.soa().name == "corp.internal."
