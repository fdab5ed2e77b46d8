"""The loopback DNS server, asked by the real dig and by dnspython's client.

One server per test on a free 127.0.0.1 port (UDP and TCP), serving examples/shop.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Awaitable, Callable

import dns.asyncquery
import dns.flags
import dns.message
import dns.rcode
import pytest
from tests.conftest import cluster_from

from knetsim import Cluster
from knetsim.dns import Upstream
from knetsim.dns.server import DNSServer

DIG = shutil.which("dig")
needs_dig = pytest.mark.skipif(DIG is None, reason="dig is not installed (Debian: apt-get install dnsutils)")


def serve(state, body: Callable[[DNSServer, int], Awaitable[None]], **kwargs) -> None:
    async def run() -> None:
        server = DNSServer(state, **kwargs)
        _, port = await server.start("127.0.0.1", 0)
        try:
            await asyncio.wait_for(body(server, port), timeout=30)
        finally:
            await server.close()

    asyncio.run(run())


async def dig(port: int, *args: str) -> str:
    assert DIG is not None
    proc = await asyncio.create_subprocess_exec(
        DIG, "@127.0.0.1", "-p", str(port), "+time=2", "+tries=1", *args,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out.decode()


def section(output: str, title: str) -> list[list[str]]:
    """The records of one dig section, each split into fields."""
    lines = output.splitlines()
    try:
        start = lines.index(f";; {title} SECTION:") + 1
    except ValueError:
        return []
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


@needs_dig
def test_dig_clusterip_headless_srv_ptr(shop: Cluster) -> None:
    web = shop.state.services["shop/web"].cluster_ip
    db0, db1 = (shop.state.pods[f"shop/db-{i}"].pod_ip for i in (0, 1))

    async def body(server: DNSServer, port: int) -> None:
        out = await dig(port, "web.shop.svc.cluster.local")
        assert "status: NOERROR" in out
        assert ";; flags: qr aa rd;" in out  # authoritative, no recursion: as kube-dns
        assert section(out, "ANSWER") == [["web.shop.svc.cluster.local.", "30", "IN", "A", web]]

        out = await dig(port, "db.shop.svc.cluster.local")
        assert sorted(r[4] for r in section(out, "ANSWER")) == sorted([db0, db1])

        out = await dig(port, "db-0.db.shop.svc.cluster.local")
        assert section(out, "ANSWER") == [["db-0.db.shop.svc.cluster.local.", "30", "IN", "A", db0]]

        out = await dig(port, "_postgres._tcp.db.shop.svc.cluster.local", "SRV")
        assert [r[3:] for r in section(out, "ANSWER")] == [
            ["SRV", "0", "50", "5432", "db-0.db.shop.svc.cluster.local."],
            ["SRV", "0", "50", "5432", "db-1.db.shop.svc.cluster.local."]]
        assert [r[0] for r in section(out, "ADDITIONAL")] == [
            "db-0.db.shop.svc.cluster.local.", "db-1.db.shop.svc.cluster.local."]

        out = await dig(port, "-x", db1)
        assert section(out, "ANSWER")[0][3:] == ["PTR", "db-1.db.shop.svc.cluster.local."]

        out = await dig(port, "dns-version.cluster.local", "TXT")
        assert section(out, "ANSWER") == [["dns-version.cluster.local.", "28800", "IN", "TXT", '"1.1.0"']]

    serve(shop.state, body)


@needs_dig
def test_dig_negative_answers_carry_the_soa(shop: Cluster) -> None:
    async def body(server: DNSServer, port: int) -> None:
        out = await dig(port, "nope.shop.svc.cluster.local")
        assert "status: NXDOMAIN" in out
        soa = section(out, "AUTHORITY")
        assert soa[0][:6] == ["cluster.local.", "30", "IN", "SOA", "ns.dns.cluster.local.", "hostmaster.cluster.local."]
        assert soa[0][7:] == ["7200", "1800", "86400", "30"]

        out = await dig(port, "web.shop.svc.cluster.local", "AAAA")
        assert "status: NOERROR" in out and "ANSWER: 0," in out
        assert section(out, "AUTHORITY")[0][3] == "SOA"

        # outside the cluster domain, with no upstream: SERVFAIL, as CoreDNS's forward gives
        out = await dig(port, "example.com")
        assert "status: SERVFAIL" in out

    serve(shop.state, body)


@needs_dig
def test_dig_over_tcp_and_truncation() -> None:
    """Given a headless Service with 60 ready pods, then UDP without EDNS truncates and TCP has all."""
    pods = "\n".join(f"""---
apiVersion: v1
kind: Pod
metadata: {{name: big-{i}, labels: {{app: big}}}}
spec: {{containers: [{{name: c, image: nginx}}]}}""" for i in range(60))
    cluster = cluster_from(pods + """
---
apiVersion: v1
kind: Service
metadata: {name: big}
spec: {clusterIP: None, selector: {app: big}, ports: [{port: 80}]}
""")

    async def body(server: DNSServer, port: int) -> None:
        out = await dig(port, "+noedns", "+ignore", "big.default.svc.cluster.local")
        assert " tc " in out.split(";; flags:")[1].split(";")[0] + " "
        out = await dig(port, "+tcp", "big.default.svc.cluster.local")
        assert len(section(out, "ANSWER")) == 60
        assert "(TCP)" in out

    serve(cluster.state, body)


def test_dnspython_client_udp_tcp_and_update(shop: Cluster) -> None:
    web = shop.state.services["shop/web"].cluster_ip
    changed = cluster_from("""
        apiVersion: v1
        kind: Service
        metadata: {name: web, namespace: shop}
        spec: {clusterIP: 10.96.77.77, ports: [{port: 80}]}
        ---
        apiVersion: v1
        kind: Namespace
        metadata: {name: shop}
    """)

    async def body(server: DNSServer, port: int) -> None:
        query = dns.message.make_query("web.shop.svc.cluster.local.", "A")
        reply = await dns.asyncquery.udp(query, "127.0.0.1", port=port, timeout=2)
        assert reply.rcode() == dns.rcode.NOERROR and reply.flags & dns.flags.AA
        assert [rd.address for rd in reply.answer[0]] == [web]
        reply = await dns.asyncquery.tcp(query, "127.0.0.1", port=port, timeout=2)
        assert [rd.address for rd in reply.answer[0]] == [web]

        server.update(changed.state)
        reply = await dns.asyncquery.udp(query, "127.0.0.1", port=port, timeout=2)
        assert [rd.address for rd in reply.answer[0]] == ["10.96.77.77"]

        missing = dns.message.make_query("api.shop.svc.cluster.local.", "A")
        reply = await dns.asyncquery.udp(missing, "127.0.0.1", port=port, timeout=2)
        assert reply.rcode() == dns.rcode.NXDOMAIN
        assert reply.authority[0].rdtype == dns.rdatatype.SOA

    serve(shop.state, body)


def test_upstream_hosts_are_served(shop: Cluster) -> None:
    upstream = Upstream(hosts={"api.payments.example.com.": ("203.0.113.7",)})

    async def body(server: DNSServer, port: int) -> None:
        query = dns.message.make_query("payments.shop.svc.cluster.local.", "A")
        reply = await dns.asyncquery.udp(query, "127.0.0.1", port=port, timeout=2)
        assert [(rrset.rdtype, [rd.to_text() for rd in rrset]) for rrset in reply.answer] == [
            (dns.rdatatype.CNAME, ["api.payments.example.com."]), (dns.rdatatype.A, ["203.0.113.7"])]

    serve(shop.state, body, upstream=upstream)


def test_handle_rejects_what_it_cannot_answer(shop: Cluster) -> None:
    server = DNSServer(shop.state)
    axfr = dns.message.make_query("cluster.local.", "AXFR")
    assert dns.message.from_wire(server.handle(axfr.to_wire())).rcode() == dns.rcode.REFUSED
    chaos = dns.message.make_query("version.bind.", "TXT", rdclass="CH")
    assert dns.message.from_wire(server.handle(chaos.to_wire())).rcode() == dns.rcode.REFUSED
    garbage = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\xff"
    reply = server.handle(garbage)
    assert reply is not None and reply[:2] == b"\x12\x34" and reply[3] & 0x0F == dns.rcode.FORMERR
    assert server.handle(b"\x00") is None
    response = dns.message.make_response(axfr)
    assert server.handle(response.to_wire()) is None  # never answer a response


def test_start_on_a_taken_port_fails(shop: Cluster) -> None:
    async def run() -> None:
        first = DNSServer(shop.state)
        _, port = await first.start("127.0.0.1", 0)
        try:
            with pytest.raises(OSError):
                await DNSServer(shop.state).start("127.0.0.1", port)
        finally:
            await first.close()

    asyncio.run(run())


DUAL_APP = """
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  ipFamilyPolicy: RequireDualStack
  clusterIP: 10.96.0.80
  clusterIPs: [10.96.0.80, "fd00:10:96::80"]
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: web-headless}
spec: {clusterIP: None, ipFamilyPolicy: RequireDualStack, selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-0, labels: {app: web}}
spec: {nodeName: worker, containers: [{name: web, image: nginx:1.27}]}
"""


@needs_dig
def test_dig_aaaa_and_ip6_arpa_on_a_dual_stack_cluster() -> None:
    from knetsim.cluster.config import config_from_dict

    state = cluster_from(DUAL_APP, config=config_from_dict({"ipFamily": "dual"})).state
    pod_v4, pod_v6 = state.pods["default/web-0"].pod_ips

    async def body(server: DNSServer, port: int) -> None:
        out = await dig(port, "AAAA", "web.default.svc.cluster.local")
        assert section(out, "ANSWER") == [["web.default.svc.cluster.local.", "30", "IN", "AAAA", "fd00:10:96::80"]]
        out = await dig(port, "A", "web.default.svc.cluster.local")
        assert section(out, "ANSWER") == [["web.default.svc.cluster.local.", "30", "IN", "A", "10.96.0.80"]]
        out = await dig(port, "AAAA", "web-headless.default.svc.cluster.local")
        assert section(out, "ANSWER") == [["web-headless.default.svc.cluster.local.", "30", "IN", "AAAA", pod_v6]]
        out = await dig(port, "-x", "fd00:10:96::80")
        assert section(out, "ANSWER")[0][3:] == ["PTR", "web.default.svc.cluster.local."]
        out = await dig(port, "-x", pod_v4)
        assert section(out, "ANSWER")[0][4].endswith(".web-headless.default.svc.cluster.local.")

    serve(state, body)
