"""busybox nslookup without -type, as busybox 1.36 asks: A then AAAA for a name (every reply printed, so a
dual-stack Service shows both ClusterIPs and a single-stack one an empty AAAA reply), PTR for an address."""

from __future__ import annotations

import asyncio

import pytest
from tests.conftest import cluster_from

from knetsim.cluster.config import config_from_dict
from knetsim.container import proc, shell
from knetsim.container.podfs import PodFS
from knetsim.kubelet.podconfig import pod_env, pod_files

APP = """
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  ipFamilyPolicy: PreferDualStack
  clusterIP: 10.96.0.80
  clusterIPs: [10.96.0.80, "fd00:10:96::80"]
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec: {nodeName: worker, containers: [{name: c, image: busybox:1.36}]}
"""


def nslookup(state, *args: str) -> tuple[int, str]:
    pod = next(p for p in state.pods_in("default") if p.name == "client")
    out: list[str] = []

    async def collect(text: str) -> None:
        out.append(text)

    async def go() -> int:
        ctx = shell.Ctx(state, pod, "c", collect, collect, pod_env(state, pod, "c"),
                        fs=PodFS(lambda: pod_files(state, pod)))
        return await asyncio.wait_for(proc.Proc(ctx, False, False).run(["nslookup", *args]), 30)
    code = asyncio.run(go())
    return code, "".join(out)


@pytest.fixture(scope="module")
def dual():
    return cluster_from(APP, config=config_from_dict({"ipFamily": "dual"})).state


@pytest.fixture(scope="module")
def single():
    return cluster_from(APP.replace("PreferDualStack", "SingleStack").replace(', "fd00:10:96::80"', ""),
                        config=config_from_dict({})).state


def test_a_dual_stack_service_answers_both_families(dual) -> None:
    code, out = nslookup(dual, "web.default.svc.cluster.local")
    assert code == 0
    assert out == ("Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n"
                   "Name:\tweb.default.svc.cluster.local\nAddress: 10.96.0.80\n\n"
                   "Name:\tweb.default.svc.cluster.local\nAddress: fd00:10:96::80\n\n")


def test_a_single_stack_service_has_an_empty_aaaa_reply(single) -> None:
    code, out = nslookup(single, "web.default.svc.cluster.local")
    assert code == 0
    assert out == ("Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n"
                   "Name:\tweb.default.svc.cluster.local\nAddress: 10.96.0.80\n\n"
                   "*** Can't find web.default.svc.cluster.local: No answer\n\n")


def test_an_explicit_type_asks_that_type_only(dual) -> None:
    assert nslookup(dual, "-type=AAAA", "web.default.svc.cluster.local") == (0, (
        "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n"
        "Name:\tweb.default.svc.cluster.local\nAddress: fd00:10:96::80\n\n"))


def test_an_address_is_a_reverse_lookup(dual) -> None:
    code, out = nslookup(dual, "10.96.0.80")
    assert code == 0
    assert "80.0.96.10.in-addr.arpa\tname = web.default.svc.cluster.local." in out


def test_a_name_outside_every_zone_fails_in_both_queries(single) -> None:
    code, out = nslookup(single, "web.nowhere")
    assert code == 1
    assert out.count("** server can't find web.nowhere: NXDOMAIN") == 2


def test_an_ipv6_nameserver_is_bracketed_with_its_port() -> None:
    state = cluster_from(APP.replace("PreferDualStack", "SingleStack").replace("10.96.0.80, ", "")
                         .replace("clusterIP: 10.96.0.80", 'clusterIP: "fd00:10:96::80"'),
                         config=config_from_dict({"ipFamily": "ipv6"})).state
    code, out = nslookup(state, "-type=AAAA", "web.default.svc.cluster.local")
    assert code == 0
    assert out.startswith("Server:\t\tfd00:10:96::a\nAddress:\t[fd00:10:96::a]:53\n\n")
