"""The node's root in a `kubectl debug node/NAME` pod, in-process: `chroot` and the node's tools.

Given the debug pod kubectl makes (hostNetwork, the node's `/` as a hostPath volume at /host) on worker of
the shop (DESIGN defaults), then: /host holds the node's files; `chroot /host` runs a command with them
at / and with the node's tools; `iptables-save -t nat` prints only that table of the node's render; a
directory that is not the node's root has no programs; busybox itself has no iptables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.helpers import exec_in_pod

from knetsim import Cluster
from knetsim.cluster.config import config_from_dict
from knetsim.container.nodetools import node_root_files
from knetsim.container.podfs import PodFS
from knetsim.dataplane import render
from knetsim.dataplane.ciliumhost import save_text
from knetsim.model.objects import Pod

SHOP = str(Path(__file__).resolve().parents[2] / "examples" / "shop")
DEBUGGER = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "node-debugger-worker-abcde", "namespace": "default"},
    "spec": {"nodeName": "worker", "hostNetwork": True, "hostPID": True, "hostIPC": True,
             "containers": [{"name": "debugger", "image": "busybox", "stdin": True, "tty": True,
                             "volumeMounts": [{"name": "host-root", "mountPath": "/host"}]}],
             "volumes": [{"name": "host-root", "hostPath": {"path": "/"}}]},
}


@pytest.fixture(scope="module")
def state() -> Any:
    return Cluster.from_paths([SHOP]).state


def run(state: Any, script: str) -> tuple[int, str, str]:
    files = {"/host" + path: text for path, text in node_root_files(state, "worker").items()}
    fs = PodFS(lambda: files)
    fs.mkdir("/host/etc", parents=True)
    return exec_in_pod(state, Pod.parse(DEBUGGER), ["sh", "-c", script], container="debugger", fs=fs)


def test_the_node_root_and_chroot(state: Any) -> None:
    code, out, err = run(state, "cat /host/etc/hostname; chroot /host cat /etc/hostname; chroot /host hostname; "
                                "chroot /host/etc iptables-save; echo $?")
    assert (code, out) == (0, "worker\nworker\nworker\n127\n")
    assert err == "chroot: can't execute 'iptables-save': No such file or directory\n"


def test_iptables_save_of_one_table(state: Any) -> None:
    code, out, _ = run(state, "chroot /host iptables-save -t nat")
    whole = render(state, "iptables", "worker").text
    nat = whole[whole.index("*nat\n"):]
    assert code == 0 and out == nat
    code, _, err = run(state, "chroot /host iptables-save -t raw")
    assert code == 1 and "Table does not exist" in err
    code, _, err = run(state, "iptables-save")
    assert code == 127 and err == "sh: iptables-save: not found\n"


@pytest.fixture(scope="module")
def cilium_state() -> Any:
    return Cluster.from_yaml("", config=config_from_dict({"dataplane": "ebpf"})).state


def test_iptables_save_on_a_kube_proxy_free_node_lists_ciliums_chains(cilium_state: Any) -> None:
    code, out, _ = run(cilium_state, "chroot /host iptables-save")
    assert code == 0 and out == save_text(cilium_state, "worker", "IPv4")
    assert ":CILIUM_POST_nat - [0:0]" in out and "KUBE-" not in out
    code, out, _ = run(cilium_state, "chroot /host iptables-save -t raw")
    assert code == 0 and out.startswith("*raw\n") and out.count("*") == 1 and "CILIUM_PRE_raw" in out
    code, out, _ = run(cilium_state, "chroot /host ip6tables-save; chroot /host iptables-save | grep -c KUBE-")
    assert out == "0\n"  # no IPv6 (Helm's default) and nothing of kube-proxy's
