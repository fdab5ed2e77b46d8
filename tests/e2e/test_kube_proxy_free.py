"""Seed 000 end to end: a kube-proxy-free Cilium cluster from `knetsim up --cluster-config`, driven by the
real kubectl and curl.

Given examples/kube-proxy-free (kubeadm without kube-proxy, Cilium with kubeProxyReplacement, the seed's
API server 10.0.0.120:6443), then: kube-system runs Cilium and neither kube-proxy nor kindnet;
`cilium-dbg bpf lb list` / `service list` in the agent's pod answer from that node's maps, in Cilium's
layout; the node itself, seen through `kubectl debug node/NAME`, has Cilium's own CILIUM_* iptables
chains and no KUBE- rule; and the CiliumNetworkPolicy's HTTP rule splits one address and port by method
(GET 200, POST 403 with Envoy's "Access denied"), for a pod and for a client coming in through the NodePort.

Address plan: the example's (nodes cp 10.0.0.120, node1 .121, node2 .122; pods 10.244.0.0/16; Services
10.96.0.0/12). The transcript of docs/dataplane.md's "A kube-proxy-free cluster, live" is replayed here.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from knetsim import Cluster as Model
from knetsim.cluster.config import load_config
from knetsim.dataplane import render
from knetsim.dataplane.ciliumhost import save_text
from knetsim.sources import Live

from .conftest import Cluster, knetsim_argv, running, wait_for

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "kube-proxy-free"
DOC = ROOT / "docs" / "dataplane.md"


@pytest.fixture(scope="module")
def kpr(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(tmp_path_factory.mktemp("kpr"), (EXAMPLE / "cluster-config.yaml").read_text()) as c:
        yield c


def transcript(doc: Path, heading: str) -> list[tuple[str, str]]:
    """(command, expected stdout) of the first console block after ``heading``."""
    text = doc.read_text()
    section = text[text.index(heading):]
    block = re.search(r"^```console\n(.*?)^```", section, re.S | re.M)
    assert block is not None
    out: list[tuple[str, str]] = []
    for line in block.group(1).splitlines():
        if line.startswith("$ "):
            out.append((line[2:], ""))
        else:
            command, expected = out[-1]
            out[-1] = (command, expected + line + "\n")
    return out


def debugger_names(text: str) -> str:
    """kubectl names a node's debug pod with a random suffix."""
    return re.sub(r"node-debugger-(\S+)-[a-z0-9]{5}\b", r"node-debugger-\1-XXXXX", text)


def test_the_docs_transcript_is_what_the_cluster_answers(kpr: Cluster) -> None:
    steps = transcript(DOC, "## A kube-proxy-free cluster, live")
    assert len(steps) >= 8
    ingress = str(kpr.info["ingress_port"])
    for command, expected in steps:
        proc = subprocess.run(["bash", "-c", command.replace("$INGRESS", ingress)], capture_output=True, text=True,
                              env=kpr.env(), cwd=ROOT, timeout=60)
        if command.startswith("kubectl apply"):
            wait_for(lambda: "Running" in kpr.kubectl("get", "pod", "client", "-o",
                                                      "jsonpath={.status.phase}").stdout)
        assert debugger_names(proc.stdout) == debugger_names(expected), f"$ {command}\n{proc.stderr}"


def test_status_says_which_config_is_in_force(kpr: Cluster) -> None:
    status = json.loads(subprocess.run(knetsim_argv("status", "--state", str(kpr.state), "-o", "json"),
                                       capture_output=True, text=True, timeout=30).stdout)
    assert status["cluster"] == {"name": "homelab", "dataplane": "ebpf", "kubernetesVersion": "1.38",
                                 "nodes": ["cp", "node1", "node2"],
                                 "clusterDomain": "cluster.local",
                                 "config": str(kpr.state / "cluster-config.yaml")}
    text = subprocess.run(knetsim_argv("status", "--state", str(kpr.state)), capture_output=True, text=True,
                          timeout=30).stdout
    assert "# Cluster     homelab: dataplane ebpf (Cilium, no kube-proxy), 3 nodes (cp, node1, node2)" in text
    # The analysis commands read the running cluster with the config it runs with.
    env = {**kpr.env(), "KNETSIM_STATE": str(kpr.state)}
    refused = subprocess.run(knetsim_argv("render", "iptables"), capture_output=True, text=True, env=env,
                             timeout=60)
    assert refused.returncode == 1 and "runs no kube-proxy" in refused.stderr


def test_another_config_over_the_cluster_is_refused(kpr: Cluster, tmp_path: Path) -> None:
    other = tmp_path / "iptables.yaml"
    other.write_text("dataplane: iptables\n")
    proc = subprocess.run(knetsim_argv("up", "--state", str(kpr.state), "--cluster-config", str(other)),
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert "holds a cluster built with the cluster config" in proc.stderr
    assert "dataplane ebpf" in proc.stderr


def test_every_agent_lists_its_own_nodes_maps(kpr: Cluster) -> None:
    """Each agent pod answers for its node: NodePort frontends carry that node's address, and the listing is
    `knetsim render ebpf --node` of it, line for line."""
    kpr.kubectl("apply", "-f", str(EXAMPLE / "app.yaml"))
    model = Model.from_sources([Live(kpr.kubeconfig)], config=load_config(str(EXAMPLE / "cluster-config.yaml")),
                               strict=False)
    for pod in kpr.get_json("pods", "-n", "kube-system", "-l", "k8s-app=cilium")["items"]:
        name, node = pod["metadata"]["name"], pod["spec"]["nodeName"]
        listing = kpr.kubectl("exec", "-n", "kube-system", name, "--", "cilium-dbg", "bpf", "lb", "list").stdout
        text = render(model.state, "ebpf", node).text
        section = text.split("# cilium bpf lb list\n", 1)[1].split("\n\n", 1)[0] + "\n"
        assert listing == section
        node_ip = next(a["address"] for a in kpr.get_json("node", node)["status"]["addresses"]
                       if a["type"] == "InternalIP")
        assert f"{node_ip}:30080/TCP (0)" in listing
        services = kpr.kubectl("exec", "-n", "kube-system", name, "--", "cilium-dbg", "service", "list").stdout
        assert re.search(rf"^\d+ +{re.escape(node_ip)}:30080/TCP +NodePort +1 => 10\.244\.\d+\.\d+:80/TCP \(active\)$",
                         services, re.M), services


def test_cilium_dbg_is_only_in_the_agents_image(kpr: Cluster) -> None:
    kpr.kubectl("apply", "-f", str(EXAMPLE / "app.yaml"))
    wait_for(lambda: "Running" in kpr.kubectl("get", "pod", "client", "-o", "jsonpath={.status.phase}").stdout)
    proc = kpr.kubectl("exec", "client", "--", "cilium-dbg", "service", "list", check=False)
    assert proc.returncode == 127 and "cilium-dbg: not found" in proc.stderr


def test_a_debug_shell_on_the_node_sees_the_nodes_root(kpr: Cluster) -> None:
    script = "hostname; cat /host/etc/hostname; chroot /host cat /etc/os-release | head -1; " \
             "chroot /host nft list ruleset | wc -l; iptables-save"
    proc = kpr.kubectl("debug", "node/node2", "-i", "--image=busybox", "--", "sh", "-c", script, check=False)
    lines = [line for line in proc.stdout.splitlines() if not line.startswith("Creating debugging pod")]
    assert lines == ["node2", "node2", 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"', "0"]
    # busybox has no iptables: only the node's root does.
    assert "sh: iptables-save: not found" in proc.stderr


def test_the_nodes_iptables_are_ciliums_own_chains_and_nothing_of_kube_proxy(kpr: Cluster) -> None:
    """`chroot /host iptables-save` on a node lists the rules Cilium's agent keeps there: its CILIUM_* chains
    fed from the built-in ones, the masquerade of that node's pod CIDR; no KUBE- line at all."""
    proc = kpr.kubectl("debug", "node/node2", "-i", "--image=busybox", "--", "chroot", "/host", "iptables-save")
    saved = proc.stdout.split("\n", 1)[1] if proc.stdout.startswith("Creating debugging pod") else proc.stdout
    assert "KUBE-" not in saved
    for table, chain, hook in (("filter", "CILIUM_FORWARD", "FORWARD"), ("nat", "CILIUM_POST_nat", "POSTROUTING"),
                               ("mangle", "CILIUM_PRE_mangle", "PREROUTING"), ("raw", "CILIUM_PRE_raw", "PREROUTING")):
        assert f"*{table}\n" in saved and f":{chain} - [0:0]\n" in saved
        assert f'-A {hook} -m comment --comment "cilium-feeder: {chain}" -j {chain}\n' in saved
    pod_cidr = kpr.get_json("node", "node2")["spec"]["podCIDR"]
    assert (f"-A CILIUM_POST_nat -s {pod_cidr} ! -d {pod_cidr} ! -o cilium_+ "
            '-m comment --comment "cilium masquerade non-cluster" -j MASQUERADE\n') in saved
    model = Model.from_sources([Live(kpr.kubeconfig)], config=load_config(str(EXAMPLE / "cluster-config.yaml")),
                               strict=False)
    assert saved == save_text(model.state, "node2", "IPv4")


def test_analysing_it_through_its_kubeconfig_reads_its_cluster_config(kpr: Cluster) -> None:
    """`--kubeconfig DIR/kubeconfig` of a running knetsim is that cluster, with the shape it was started with:
    its data plane is Cilium's (not the default iptables), offline commands and diff alike."""
    env = kpr.env()
    env.pop("KNETSIM_STATE", None)  # found through the kubeconfig alone
    rendered = subprocess.run(knetsim_argv("render", "--kubeconfig", kpr.kubeconfig, "--node", "node1"),
                              capture_output=True, text=True, env=env, cwd=kpr.workdir, timeout=120, check=True)
    assert rendered.stdout.startswith("# knetsim: Cilium kube-proxy replacement (BPF maps), node node1 (10.0.0.121)")
    change = kpr.workdir / "nothing.yaml"
    change.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nothing}\n")
    diffed = subprocess.run(knetsim_argv("diff", "--kubeconfig", kpr.kubeconfig, "--after", str(change),
                                         "--layers", "dataplane", "-o", "json"),
                            capture_output=True, text=True, env=env, cwd=kpr.workdir, timeout=120, check=True)
    assert json.loads(diffed.stdout)["layers"]["dataplane"]["title"].startswith("data plane (what Cilium programs")


def test_observe_records_what_ciliums_proxy_read_of_each_request(kpr: Cluster) -> None:
    """Hubble records an HTTP request Cilium's proxy judged as an L7 flow: the POST the rule denies as an
    http-request DROPPED (the proxy answered 403 itself), the GET as an http-request FORWARDED and the backend's
    http-response."""
    kpr.kubectl("apply", "-f", str(EXAMPLE / "app.yaml"))
    wait_for(lambda: "Running" in kpr.kubectl("get", "pod", "client", "-o", "jsonpath={.status.phase}").stdout,
             timeout=30)
    wait_for(lambda: kpr.kubectl("get", "deployment", "web", "-o",
                                 "jsonpath={.status.readyReplicas}").stdout == "2", timeout=30)
    kpr.kubectl("exec", "client", "--", "curl", "-s", "-X", "POST", "http://web/")
    kpr.kubectl("exec", "client", "--", "curl", "-s", "http://web/")
    observed = subprocess.run(knetsim_argv("observe", "--last", "12"), capture_output=True, text=True,
                              env=kpr.env(), cwd=kpr.workdir, timeout=60, check=True).stdout
    http = [line.split(" -> ", 1)[1].split(" ", 1)[1] for line in observed.splitlines() if " http-" in line]
    assert http[-3:] == ["http-request DROPPED (HTTP/1.1 POST http://web/)",
                         "http-request FORWARDED (HTTP/1.1 GET http://web/)",
                         "http-response FORWARDED (HTTP/1.1 200 (GET http://web/))"], observed
