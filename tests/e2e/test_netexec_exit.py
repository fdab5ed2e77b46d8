"""agnhost netexec's `/exit?code=N` ends its container, as agnhost's exitHandler calls os.Exit
(test/images/agnhost/netexec/netexec.go): the kubelet reports the exit code and restarts the container under the
pod's restartPolicy. Asked with curl from another pod, through the real kubectl against `knetsim up`."""

from __future__ import annotations

import json
import time

import pytest

from .conftest import Cluster, wait_for

AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"


def netexec(name: str, policy: str) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                       "spec": {"restartPolicy": policy,
                                "containers": [{"name": "agnhost", "image": AGNHOST,
                                                "args": ["netexec", "--http-port=8080"],
                                                "ports": [{"containerPort": 8080}]}]}})


def ask_exit(k: Cluster, target: str, query: str) -> None:
    k.kubectl("wait", "--for=condition=Ready", f"pod/{target}", "pod/client", "--timeout=30s")
    ip = k.kubectl("get", "pod", target, "-o", "jsonpath={.status.podIP}").stdout
    k.kubectl("exec", "client", "--", "/bin/sh", "-c", f"curl -q -s http://{ip}:8080/exit{query}; true")


def status(k: Cluster, name: str) -> dict:
    return k.get_json("pod", name)["status"]["containerStatuses"][0]


@pytest.mark.parametrize(("policy", "query", "code"), [("Always", "?code=3", 3), ("OnFailure", "?code=7", 7)])
def test_exit_restarts_the_container_with_its_code(k: Cluster, policy: str, query: str, code: int) -> None:
    k.kubectl("apply", "-f", "-", input=netexec("server", policy))
    k.kubectl("run", "client", f"--image={AGNHOST}", "--restart=Never", "--", "pause")
    ask_exit(k, "server", query)
    assert wait_for(lambda: status(k, "server").get("restartCount") == 1, timeout=20), status(k, "server")
    terminated = status(k, "server")["lastState"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (code, "Error")
    # Restarted: it serves again.
    assert wait_for(lambda: "running" in status(k, "server")["state"], timeout=20)


def test_exit_zero_under_never_leaves_the_pod_succeeded(k: Cluster) -> None:
    k.kubectl("apply", "-f", "-", input=netexec("server", "Never"))
    k.kubectl("run", "client", f"--image={AGNHOST}", "--restart=Never", "--", "pause")
    ask_exit(k, "server", "")
    assert wait_for(lambda: k.get_json("pod", "server")["status"]["phase"] == "Succeeded", timeout=20), \
        status(k, "server")
    terminated = status(k, "server")["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert status(k, "server")["restartCount"] == 0


def test_shutdown_exits_zero_and_always_restarts(k: Cluster) -> None:
    k.kubectl("apply", "-f", "-", input=netexec("server", "Always"))
    k.kubectl("run", "client", f"--image={AGNHOST}", "--restart=Never", "--", "pause")
    k.kubectl("wait", "--for=condition=Ready", "pod/server", "pod/client", "--timeout=30s")
    ip = k.kubectl("get", "pod", "server", "-o", "jsonpath={.status.podIP}").stdout
    k.kubectl("exec", "client", "--", "/bin/sh", "-c", f"curl -q -s http://{ip}:8080/shutdown; true")
    assert wait_for(lambda: status(k, "server").get("restartCount") == 1, timeout=20), status(k, "server")
    terminated = status(k, "server")["lastState"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")


def test_a_code_that_is_no_integer_is_answered_and_nothing_exits(k: Cluster) -> None:
    k.kubectl("apply", "-f", "-", input=netexec("server", "Always"))
    k.kubectl("run", "client", f"--image={AGNHOST}", "--restart=Never", "--", "pause")
    k.kubectl("wait", "--for=condition=Ready", "pod/server", "pod/client", "--timeout=30s")
    ip = k.kubectl("get", "pod", "server", "-o", "jsonpath={.status.podIP}").stdout
    out = k.kubectl("exec", "client", "--", "curl", "-q", "-s", f"http://{ip}:8080/exit?code=x").stdout
    assert out == "argument 'code' must be an integer [0-127] or empty, got \"x\"\n"
    time.sleep(1)  # an exit would have been reported by now (a restart follows an exit at once)
    assert status(k, "server")["restartCount"] == 0 and "running" in status(k, "server")["state"]


def test_exit_and_shell_through_the_api_servers_pod_proxy(k: Cluster) -> None:
    """The e2e framework also reaches netexec through `pods/NAME:PORT/proxy/` (test/e2e/network/proxy.go): /shell runs
    in netexec's pod and /exit ends its container, as when a pod's curl asks."""
    k.kubectl("apply", "-f", "-", input=netexec("server", "Always"))
    k.kubectl("wait", "--for=condition=Ready", "pod/server", "--timeout=30s")
    proxy = "/api/v1/namespaces/default/pods/server:8080/proxy"
    shell = json.loads(k.kubectl("get", "--raw", f"{proxy}/shell?cmd=hostname").stdout)
    assert shell == {"output": "server\n"}
    k.kubectl("get", "--raw", f"{proxy}/exit?code=5")
    assert wait_for(lambda: status(k, "server").get("restartCount") == 1, timeout=20), status(k, "server")
    assert status(k, "server")["lastState"]["terminated"]["exitCode"] == 5
