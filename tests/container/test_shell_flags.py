"""Flags that Kubernetes' own network e2e tests and the docs' commands pass to the pod's tools.

The e2e framework runs `sh -x -c CMD` in its exec pods, `curl -g -q -s --interface ADDR URL` and
`echo hostName | nc -v -t -w 2 HOST PORT` (kubernetes/kubernetes test/e2e/framework/service/jig.go,
test/e2e/network/service.go): each must work as the real tool does, or be refused in knetsim's words —
never run with a different meaning. Given examples/shop and a shell in its web pod.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest
from tests.helpers import shop_web_shell as run

from knetsim import Cluster


@pytest.fixture(scope="module")
def shop() -> Any:
    return Cluster.from_paths(["examples/shop"]).state


# `sh -x`: each simple command, expanded, on stderr after "+ ", quoted as ash quotes (busybox shell/ash.c).
XTRACE = [
    ('a="x y"; b=2 echo $a', "x y\n", "+ a='x y'\n+ b=2 echo x y\n"),
    ("""echo "it's" "" ok""", "it's  ok\n", """+ echo 'it'"'"'s'  ok\n"""),
    ('x=[a]; echo "$x" "a;b" "a=b" "~h" -n/.:@', "[a] a;b a=b ~h -n/.:@\n",
     "+ x='[a]'\n+ echo '[a]' 'a;b' 'a=b' '~h' -n/.:@\n"),
    ("for i in 1 2; do echo $i; done; set +x; echo quiet", "1\n2\nquiet\n", "+ echo 1\n+ echo 2\n+ set +x\n"),
]


@pytest.mark.parametrize(("script", "stdout", "stderr"), XTRACE)
def test_sh_x_traces_each_command_as_ash_does(shop: Any, script: str, stdout: str, stderr: str) -> None:
    assert run(shop, ["sh", "-x", "-c", script]) == (0, stdout, stderr)


def test_set_x_turns_the_trace_on_from_there(shop: Any) -> None:
    assert run(shop, "echo a; set -x; echo b") == (0, "a\nb\n", "+ echo b\n")


@pytest.mark.skipif(shutil.which("busybox") is None, reason="busybox is not installed")
@pytest.mark.parametrize(("script", "stdout", "stderr"), XTRACE)
def test_xtrace_expectations_are_busyboxs(script: str, stdout: str, stderr: str) -> None:
    real = subprocess.run(["busybox", "sh", "-x", "-c", script], capture_output=True, text=True, timeout=10)
    assert (real.returncode, real.stdout, real.stderr) == (0, stdout, stderr)


def test_sh_e_is_refused_not_ignored(shop: Any) -> None:
    code, _, err = run(shop, ["sh", "-e", "-c", "false; echo after"])
    assert code != 0 and "not simulated" in err


def _web_ip(state: Any) -> str:
    return next(p.pod_ip for p in state.pods.values() if p.namespace == "shop" and p.name.startswith("web"))


def test_curl_q_and_the_pods_own_interface_reach_the_service(shop: Any) -> None:
    for script in ("curl -g -q -s http://api:8080/", f"curl -q -s --interface {_web_ip(shop)} http://api:8080/",
                   "curl -s --interface eth0 http://api:8080/"):
        code, out, err = run(shop, script)
        assert (code, err) == (0, "") and out.startswith("Hello from shop/api-"), script


@pytest.mark.parametrize(("interface", "stderr"), [
    ("10.9.9.9", "curl: (45) bind failed with errno 99: Cannot assign requested address\n"),
    ("eth7", "curl: (45) Couldn't bind to 'eth7'\n"),
])
def test_curl_cannot_bind_to_what_the_pod_does_not_have(shop: Any, interface: str, stderr: str) -> None:
    assert run(shop, f"curl -sS --interface {interface} http://api:8080/") == (45, "", stderr)


def test_nc_t_connects_as_the_e2e_jig_checks_reachability(shop: Any) -> None:
    code, _, err = run(shop, "echo hostName | nc -v -t -w 2 api 8080")
    assert code == 0 and "open" in err
    # A port the Service does not have: kube-proxy has no rule for it, the ClusterIP drops it.
    code, _, err = run(shop, "echo hostName | nc -v -t -w 1 api 9999")
    assert (code, err) == (1, "nc: timeout\n")
