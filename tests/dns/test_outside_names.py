"""Names outside the cluster domain: CoreDNS's `forward . /etc/resolv.conf`, answered by the outside.

Given a cluster with the built-in outside (cluster/outside.py), then public names resolve to their
published addresses in both families, the public resolvers' addresses have their PTR records, an unlisted
name is NXDOMAIN from the upstream (not authoritative, recursion available), and the cluster config's
`outside.hosts` replaces, adds and removes names.
"""

from __future__ import annotations

from click.testing import CliRunner
from tests.conftest import cluster_from

from knetsim.cli.main import cli
from knetsim.cluster.config import config_from_dict
from knetsim.dns import lookup


def test_public_names_resolve_in_both_families_from_the_upstream() -> None:
    state = cluster_from("").state
    a = lookup(state, "example.com", "A")
    assert (a.rcode, a.values("A"), a.source, a.authoritative) == ("NOERROR", ("93.184.215.14",), "upstream",
                                                                   False)
    assert "ra" in a.flags
    assert lookup(state, "example.com.", "AAAA").values("AAAA") == ("2606:2800:21f:cb07:6820:80da:af6b:8b2c",)
    assert lookup(state, "one.one.one.one", "A").values("A") == ("1.1.1.1", "1.0.0.1")  # as published
    assert lookup(state, "dns.google", "AAAA").values("AAAA") == ("2001:4860:4860::8888", "2001:4860:4860::8844")


def test_the_public_resolvers_have_their_ptr_records_and_unlisted_names_do_not_exist() -> None:
    state = cluster_from("").state
    assert lookup(state, "1.1.1.1.in-addr.arpa.", "PTR").values("PTR") == ("one.one.one.one.",)
    assert lookup(state, "8.8.8.8.in-addr.arpa.", "PTR").values("PTR") == ("dns.google.",)
    assert lookup(state, "14.215.184.93.in-addr.arpa.", "PTR").rcode == "NXDOMAIN"
    assert lookup(state, "no-such-name.example.org", "A").rcode == "NXDOMAIN"


def test_the_cluster_config_replaces_adds_and_removes_outside_names() -> None:
    config = config_from_dict({"outside": {"hosts": {"example.com": ["192.0.2.80"], "intranet.corp": ["10.1.2.3",
                                                                                                         "fd00::3"],
                                                     "one.one.one.one": []}}})
    state = cluster_from("", config=config).state
    assert lookup(state, "example.com", "A").values("A") == ("192.0.2.80",)
    assert lookup(state, "example.com", "AAAA").nodata  # replaced: no AAAA any more
    assert lookup(state, "intranet.corp", "AAAA").values("AAAA") == ("fd00::3",)
    assert lookup(state, "one.one.one.one", "A").rcode == "NXDOMAIN"
    assert lookup(state, "1.1.1.1.in-addr.arpa.", "PTR").rcode == "NXDOMAIN"  # its PTR went with it


def test_knetsim_dns_from_a_pod_resolves_a_public_name(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pod = tmp_path / "pod.yaml"
    pod.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: client}\n"
                   "spec: {containers: [{name: c, image: busybox:1.36}]}\n")
    result = CliRunner().invoke(cli, ["dns", "example.com", "-f", str(pod), "--from", "default/client"])
    assert result.exit_code == 0, result.output
    assert "93.184.215.14" in result.output
