"""kube-proxy's ``nodePortAddresses`` in the cluster config: which node addresses accept NodePorts, per mode, and so
whether ``localhost:<NodePort>`` is served (dataplane/nodeports.py). Restated from upstream: unset is every local
address in iptables mode (127.0.0.1 with route_localnet and the KUBE-FIREWALL guard) and ``primary`` in
nftables mode (server_linux.go platformApplyDefaults); a CIDR list gives one ``-d IP`` rule per node address it
takes (iptables proxier) or the ``nodeport-ips`` set without loopback (nftables proxier); every address is
``fib daddr type local`` minus loopback in nftables mode; from 1.38 nftables mode's userspace proxy accepts
``localhost:<NodePort>`` (TCP) where the addresses name loopback (KEP-6032)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from knetsim.cli.main import cli

SHOP = str(Path(__file__).resolve().parents[2] / "examples" / "shop")
WORKER = "172.18.0.3"  # node worker's InternalIP in kind's layout
NODEPORTS_RULE = '-m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain"'


# A cluster config with ``nodePortAddresses: VALUE`` (None: unset), as the flags that name it.
Config = Callable[[str | None], list[str]]


@pytest.fixture
def config(tmp_path: Path) -> Config:
    def write(addresses: str | None) -> list[str]:
        path = tmp_path / "cluster.yaml"
        path.write_text(f"nodePortAddresses: {addresses}\n" if addresses is not None else "{}\n")
        return ["--cluster-config", str(path)]
    return write


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def packet(dst: str, dataplane: str, flags: list[str], *extra: str) -> tuple[int, str]:
    src = "127.0.0.1" if dst.startswith("127.") else "172.18.0.9"
    return run("packet", "--src", src, "--dst", dst, "--dport", "30080", "--node", "worker", "-f", SHOP,
               "--dataplane", dataplane, *flags, *extra)


def test_iptables_default_serves_every_local_address_localhost_included(config: Config) -> None:
    code, out = packet("127.0.0.1", "iptables", config(None))
    assert code == 0 and "Verdict:     DNAT" in out
    _, rules = run("render", "iptables", "--node", "worker", "-f", SHOP, *config(None))
    assert f"-A KUBE-SERVICES {NODEPORTS_RULE} -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS" in rules
    assert "-A KUBE-FIREWALL -m comment --comment \"block incoming localnet connections\"" in rules


def test_iptables_primary_refuses_localhost_and_serves_the_node_address(config: Config) -> None:
    flags = config("[primary]")
    code, out = packet("127.0.0.1", "iptables", flags)
    assert code == 1 and "Verdict:     NONE" in out
    assert ("Note: 127.0.0.1:30080 is NodePort shop/web-np on localhost: kube-proxy's iptables mode accepts "
            "NodePorts on 127.0.0.1 only where nodePortAddresses takes it (--nodeport-addresses primary: it does "
            "not); the packet is routed unchanged and nothing listens there") in out
    code, out = packet(WORKER, "iptables", flags)
    assert code == 0 and "Verdict:     DNAT" in out
    _, rules = run("render", "iptables", "--node", "worker", "-f", SHOP, *flags)
    assert f"-A KUBE-SERVICES {NODEPORTS_RULE} -d {WORKER} -j KUBE-NODEPORTS" in rules
    assert "--dst-type LOCAL -j KUBE-NODEPORTS" not in rules
    assert "KUBE-FIREWALL" not in rules  # no route_localnet, no guard


def test_iptables_cidrs_naming_loopback_serve_localhost(config: Config) -> None:
    flags = config("[172.18.0.0/16, 127.0.0.0/8]")
    _, rules = run("render", "iptables", "--node", "worker", "-f", SHOP, *flags)
    assert [line for line in rules.splitlines() if line.endswith("-j KUBE-NODEPORTS") and "KUBE-SERVICES" in line] \
        == [f"-A KUBE-SERVICES {NODEPORTS_RULE} -d {WORKER} -j KUBE-NODEPORTS",
            f"-A KUBE-SERVICES {NODEPORTS_RULE} -d 127.0.0.1 -j KUBE-NODEPORTS"]
    assert "KUBE-FIREWALL" in rules
    code, out = packet("127.0.0.1", "iptables", flags)
    assert code == 0 and "Verdict:     DNAT" in out


def test_a_node_address_outside_the_cidrs_is_refused_with_the_reason(config: Config) -> None:
    code, out = packet(WORKER, "iptables", config("[127.0.0.0/8]"))
    assert code == 1
    assert (f"Note: {WORKER}:30080 is NodePort shop/web-np on node address {WORKER}, which kube-proxy does not "
            "accept NodePorts on (--nodeport-addresses 127.0.0.0/8)") in out


def test_nftables_cidrs_naming_loopback_serve_localhost_from_1_38_by_the_userspace_proxy(config: Config) -> None:
    flags = config("[172.18.0.0/16, 127.0.0.0/8]")
    _, rules = run("render", "nftables", "--node", "worker", "-f", SHOP, *flags)
    elements = rules.split("set nodeport-ips {", 1)[1].split("}", 1)[0]
    assert WORKER in elements and "127.0.0.1" not in elements  # no nft rule for a loopback address
    code, out = packet("127.0.0.1", "nftables", flags, "--kubernetes-version", "1.38")
    assert code == 0 and "Verdict:     DNAT" in out and "Service:     shop/web-np" in out
    assert ("127.0.0.1:30080 is NodePort shop/web-np on localhost: kube-proxy's userspace proxy (KEP-6032, "
            "KubeProxyNFTablesLocalhostNodePorts) accepts it (--nodeport-addresses 172.18.0.0/16,127.0.0.0/8 names "
            f"loopback) and connects on to {WORKER}:30080") in out
    code, out = packet("127.0.0.1", "nftables", flags, "--kubernetes-version", "1.37")  # alpha, off
    assert code == 1 and "Verdict:     NONE" in out
    assert "writes no NodePort rule for a loopback address, though nodePortAddresses takes one" in out
    assert "only with the alpha feature gate KubeProxyNFTablesLocalhostNodePorts enabled" in out


def test_nftables_userspace_proxy_serves_tcp_only(config: Config) -> None:
    code, out = packet("127.0.0.1", "nftables", config("[172.18.0.0/16, 127.0.0.0/8]"), "--proto", "UDP")
    assert code == 1 and "Verdict:     NONE" in out


def test_nftables_every_address_is_fib_local_but_never_loopback(config: Config) -> None:
    flags = config("[0.0.0.0/0]")
    _, rules = run("render", "nftables", "--node", "worker", "-f", SHOP, *flags)
    assert ("fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports"
            in rules)
    assert "nodeport-ips" not in rules
    assert packet(WORKER, "nftables", flags)[0] == 0
    assert packet("127.0.0.1", "nftables", flags)[0] == 1


@pytest.mark.parametrize(("value", "error"), [
    ("[primary, 10.0.0.0/8]", "nodePortAddresses[0]: Invalid value: \"primary\": can't use both 'primary' and CIDRs"),
    ("[10.0.0.0/8, primary]", "nodePortAddresses[1]: Invalid value: \"primary\": can't use both 'primary' and CIDRs"),
    ("[10.0.0.1]", "nodePortAddresses[0]: Invalid value: \"10.0.0.1\": must be a valid CIDR"),
    ("[localhost]", "nodePortAddresses[0]: Invalid value: \"localhost\": must be a valid CIDR"),
])
def test_an_invalid_setting_is_refused_in_kube_proxys_words(config: Config, value: str, error: str) -> None:
    code, out = packet(WORKER, "iptables", config(value))
    assert code == 2 and error in out


def kube_proxy_on_worker() -> str:
    """The hostNetwork kube-proxy pod of node worker: its localhost is the node's."""
    import json

    result = CliRunner().invoke(cli, ["get", "pods", "-n", "kube-system", "-f", SHOP, "-o", "json"])
    pods = json.loads(result.stdout)["items"]
    return next(f"kube-system/{p['metadata']['name']}" for p in pods
                if p["metadata"]["name"].startswith("kube-proxy-") and p["spec"]["nodeName"] == "worker")


@pytest.mark.parametrize(("setting", "dataplane", "version", "outcome"), [
    (None, "iptables", "1.38", "Outcome: connected (HTTP 200)"),
    ("[primary]", "iptables", "1.38", "Outcome: refused"),
    (None, "nftables", "1.38", "Outcome: refused"),
    ("[172.18.0.0/16, 127.0.0.0/8]", "nftables", "1.38", "Outcome: connected (HTTP 200)"),
    ("[172.18.0.0/16, 127.0.0.0/8]", "nftables", "1.37", "Outcome: refused"),
])
def test_trace_from_the_node_to_localhost_nodeport_follows_the_setting(
        config: Config, setting: str | None, dataplane: str, version: str, outcome: str) -> None:
    code, out = run("trace", "--from", kube_proxy_on_worker(), "http://localhost:30080/", "-f", SHOP,
                    "--dataplane", dataplane, "--kubernetes-version", version, *config(setting))
    assert outcome in out, out
    assert code == (0 if "connected" in outcome else 1)
    assert "127.0.0.1:30080 is NodePort 30080 of Service shop/web-np on node worker" in out
    if "refused" in outcome:
        assert "127.0.0.1:30080 is NodePort shop/web-np on localhost: kube-proxy's" in out  # and why


def test_a_pods_own_localhost_is_still_the_pod(config: Config) -> None:
    # Not a hostNetwork pod: localhost is its own network namespace, never kube-proxy's NodePort.
    _, out = run("trace", "--from", "shop/deploy/web", "http://localhost:30080/", "-f", SHOP, *config(None))
    assert "is the loopback address of" in out and "NodePort" not in out


def test_ipv6_loopback_never_takes_a_nodeport() -> None:
    # iptables mode's every-local-address rule leaves ::1 out (no route_localnet for IPv6).
    dual = str(Path(SHOP).parent / "dual-stack")
    flags = ["-f", f"{dual}/app", "--cluster-config", f"{dual}/cluster.yaml"]
    _, rules = run("render", "iptables", "--node", "worker", *flags)
    assert f"{NODEPORTS_RULE} -m addrtype --dst-type LOCAL ! -d ::1/128 -j KUBE-NODEPORTS" in rules
    code, out = run("packet", "--src", "::1", "--dst", "::1", "--dport", "31215", "--node", "worker", *flags)
    assert code == 1 and "Verdict:     NONE" in out
    assert ("[::1]:31215 is NodePort dual/web6 on localhost: kube-proxy never serves NodePorts on IPv6 loopback "
            "(there is no route_localnet)") in out
