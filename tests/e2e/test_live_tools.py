"""The live cluster for real work (issue 13): pull failures, port-forward, logs, and exec's shell.

Given a fresh `knetsim up` and the real kubectl: a mistyped tag reaches ImagePullBackOff with the
kubelet's events and recovers when fixed; `kubectl port-forward` (WebSocket, and SPDY where kubectl
falls back) carries curl's request to the simulated app; nginx's log shows every request it
served; `kubectl exec` runs pipes, redirections and substitutions as busybox sh does.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from .conftest import CURL, KUBECTL, Cluster, wait_for


def web(k: Cluster, image: str = "nginx:1.27") -> None:
    k.kubectl("create", "deployment", "web", f"--image={image}", "--port=80")
    k.kubectl("expose", "deployment", "web", "--port=80")


def waiting(k: Cluster, selector: str) -> dict[str, str]:
    for pod in k.get_json("pods", "-l", selector)["items"]:
        for cs in (pod.get("status") or {}).get("containerStatuses") or []:
            state = (cs.get("state") or {}).get("waiting")
            if state:
                return {"pod": pod["metadata"]["name"], **state}
    return {}


def test_a_mistyped_tag_backs_off_and_fixing_it_recovers(k: Cluster) -> None:
    web(k)
    k.kubectl("wait", "--for=condition=available", "deploy/web", "--timeout=20s")
    k.sh("kubectl set image deployment/web nginx=nginx:doesnotexist-xyz")
    first = wait_for(lambda: waiting(k, "app=web").get("reason") == "ErrImagePull" and waiting(k, "app=web"), 10)
    assert first, k.sh("kubectl get pods").stdout
    assert first["message"].startswith('rpc error: code = NotFound desc = failed to pull and unpack image '
                                       '"docker.io/library/nginx:doesnotexist-xyz"')
    backoff = wait_for(lambda: waiting(k, "app=web").get("reason") == "ImagePullBackOff" and waiting(k, "app=web"),
                       10)
    assert backoff["message"] == f'Back-off pulling image "nginx:doesnotexist-xyz": ErrImagePull: {first["message"]}'
    pod = backoff["pod"]
    row = k.sh(f"kubectl get pod {pod} --no-headers").stdout.split()
    assert row[1:3] == ["0/1", "ImagePullBackOff"]
    assert json.loads(k.kubectl("get", "pod", pod, "-o", "json").stdout)["status"]["phase"] == "Pending"
    events = k.sh(f"kubectl describe pod {pod}").stdout.split("Events:", 1)[1]
    lines = [re.split(r"\s{2,}", line.strip()) for line in events.strip().splitlines()[2:]]
    reasons = [(line[0], line[1], line[-1]) for line in lines]
    assert reasons[:6] == [
        ("Normal", "Scheduled", f"Successfully assigned default/{pod} to " + reasons[0][2].rsplit(" ", 1)[-1]),
        ("Normal", "Pulling", 'Pulling image "nginx:doesnotexist-xyz"'),
        ("Warning", "Failed", f'Failed to pull image "nginx:doesnotexist-xyz": {first["message"]}'),
        ("Warning", "Failed", "Error: ErrImagePull"),
        ("Normal", "BackOff", 'Back-off pulling image "nginx:doesnotexist-xyz"'),
        ("Warning", "Failed", "Error: ImagePullBackOff"),
    ]
    logs = k.kubectl("logs", pod, check=False)
    assert logs.returncode == 1
    assert f'container "nginx" in pod "{pod}" is waiting to start: trying and failing to pull image' in logs.stderr
    # The next pull comes 10 s after the failure: the same events again, counted.
    again = wait_for(lambda: "(x2 over" in k.sh(f"kubectl describe pod {pod}").stdout, 20, 0.5)
    assert again, k.sh(f"kubectl describe pod {pod}").stdout
    k.sh("kubectl set image deployment/web nginx=nginx:1.27")
    k.kubectl("rollout", "status", "deployment/web", "--timeout=30s")
    assert waiting(k, "app=web") == {}
    assert [p["status"]["phase"] for p in k.get_json("pods", "-l", "app=web")["items"]] == ["Running"]


def test_a_bare_pod_recovers_when_its_image_is_fixed(k: Cluster) -> None:
    k.kubectl("run", "typo", "--image=ngnix:1.27")
    assert wait_for(lambda: waiting(k, "run=typo").get("reason") == "ImagePullBackOff", 10)
    assert "pull access denied, repository does not exist" in waiting(k, "run=typo")["message"]
    k.kubectl("set", "image", "pod/typo", "typo=nginx:1.27")
    assert wait_for(lambda: k.kubectl("get", "pod", "typo", "--no-headers").stdout.split()[1:3] ==
                    ["1/1", "Running"], 10)
    events = k.sh("kubectl describe pod typo").stdout
    assert 'Container image "nginx:1.27" already present on machine' in events
    assert "Started container typo" in events


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def port_forward(k: Cluster, target: str, ports: str, **env: str) -> Iterator[subprocess.Popen[str]]:
    assert KUBECTL is not None
    with subprocess.Popen([KUBECTL, "port-forward", target, ports], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env={**k.env(), **env}) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("Forwarding from 127.0.0.1:"), line
            yield proc
        finally:
            proc.terminate()
            proc.wait(10)


@pytest.mark.skipif(CURL is None, reason="curl is not installed")
@pytest.mark.parametrize("websockets", ["true", "false"])
def test_port_forward_then_curl_gets_the_apps_reply(k: Cluster, websockets: str) -> None:
    web(k)
    k.kubectl("wait", "--for=condition=available", "deploy/web", "--timeout=20s")
    port = free_port()
    # KUBECTL_PORT_FORWARD_WEBSOCKETS=false makes kubectl use the SPDY upgrade it falls back to.
    with port_forward(k, "svc/web", f"{port}:80", KUBECTL_PORT_FORWARD_WEBSOCKETS=websockets):
        out = k.sh(f"curl -s http://127.0.0.1:{port}/hello; curl -s -o /dev/null -w '%{{http_code}}' "
                   f"http://127.0.0.1:{port}/").stdout
    pod = k.get_json("pods", "-l", "app=web")["items"][0]["metadata"]["name"]
    assert "<title>Welcome to nginx!</title>" in out and f"default/{pod}" in out and out.endswith("200")
    log = k.kubectl("logs", "deploy/web").stdout.splitlines()
    assert re.fullmatch(r'127\.0\.0\.1 - - \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d \+0000\] "GET /hello HTTP/1\.1" 200 \d+ '
                        r'"-" "curl/[\d.]+" "-"', log[0]), log


@pytest.mark.skipif(CURL is None, reason="curl is not installed")
def test_port_forward_to_a_port_nothing_listens_on_reports_the_runtimes_error(k: Cluster) -> None:
    web(k)
    k.kubectl("wait", "--for=condition=available", "deploy/web", "--timeout=20s")
    port = free_port()
    with port_forward(k, "deploy/web", f"{port}:81") as proc:
        got = k.sh(f"curl -s http://127.0.0.1:{port}/", check=False)
        assert got.returncode != 0 and got.stdout == ""
        assert proc.wait(10) == 1
        assert proc.stderr is not None
        err = proc.stderr.read()
    assert "failed to connect to localhost:81 inside namespace" in err
    assert "dial tcp4 127.0.0.1:81: connect: connection refused" in err


def test_logs_show_the_requests_a_server_answered(k: Cluster) -> None:
    web(k)
    k.kubectl("run", "client", "--image=busybox:1.36", "--", "sleep", "3600")
    k.kubectl("wait", "--for=condition=ready", "pod/client", "--timeout=20s")
    k.kubectl("wait", "--for=condition=available", "deploy/web", "--timeout=20s")
    k.sh("kubectl exec client -- wget -qO- http://web")
    client_ip = k.get_json("pod", "client")["status"]["podIP"]
    line = k.kubectl("logs", "deploy/web").stdout.splitlines()[-1]
    assert re.fullmatch(rf'{re.escape(client_ip)} - - \[[^]]+\] "GET / HTTP/1\.1" 200 \d+ "-" "Wget" "-"', line), line


@pytest.mark.parametrize(("command", "stdout"), [
    ("sh -c 'wget -qO- http://web | head -1'", "<!DOCTYPE html>\n"),
    ("sh -c 'wget -qO- http://web > /dev/null && echo fetched'", "fetched\n"),
    ("sh -c 'echo \"I am $(hostname)\"'", "I am client\n"),
    ("sh -c 'wget -q -O /tmp/page http://web; grep -c nginx < /tmp/page 2>&1'", "2\n"),
    ("sh -c 'curl -sf http://nosuch || echo \"curl said $?\"'", "curl said 6\n"),
])
def test_exec_runs_pipes_redirections_and_substitutions(k: Cluster, command: str, stdout: str) -> None:
    web(k)
    k.kubectl("run", "client", "--image=busybox:1.36", "--", "sleep", "3600")
    k.kubectl("wait", "--for=condition=ready", "pod/client", "--timeout=20s")
    k.kubectl("wait", "--for=condition=available", "deploy/web", "--timeout=20s")
    got = k.sh(f"kubectl exec client -- {command}")
    assert (got.stdout, got.stderr) == (stdout, "")


def test_exec_says_what_it_cannot_do(k: Cluster) -> None:
    k.kubectl("run", "client", "--image=busybox:1.36", "--", "sleep", "3600")
    k.kubectl("wait", "--for=condition=ready", "pod/client", "--timeout=20s")
    got = k.sh("kubectl exec client -- sh -c 'diff <(echo a) <(echo b)'", check=False)
    assert got.returncode == 2
    assert "sh: process substitution <(...) is not simulated by knetsim" in got.stderr
    assert "command terminated with exit code 2" in got.stderr


@pytest.mark.skipif(CURL is None, reason="curl is not installed")
def test_a_request_through_the_ingress_is_logged_from_the_controller(k: Cluster) -> None:
    web(k)
    k.kubectl("create", "ingress", "web", "--class=nginx", "--rule=web.example.com/*=web:80")
    k.kubectl("wait", "--for=condition=available", "deploy/web", "--timeout=20s")
    got = k.sh(f"curl -s -A lab-browser -H 'Host: web.example.com' {k.ingress}/shop?x=1")
    assert "<title>Welcome to nginx!</title>" in got.stdout
    controller_ip = k.get_json("pods", "-n", "ingress-nginx", "-l",
                               "app.kubernetes.io/component=controller")["items"][0]["status"]["podIP"]
    line = k.kubectl("logs", "deploy/web").stdout.splitlines()[-1]
    # ingress-nginx proxies: the pod sees the controller's address, the client in X-Forwarded-For.
    assert re.fullmatch(rf'{re.escape(controller_ip)} - - \[[^]]+\] "GET /shop\?x=1 HTTP/1\.1" 200 \d+ "-" '
                        r'"lab-browser" "203\.0\.113\.10"', line), line


def test_kubectl_cp_copies_files_both_ways_byte_for_byte(k: Cluster) -> None:
    """kubectl cp runs tar in the container: a text file and a binary one go in, come back the same."""
    k.kubectl("run", "box", "--image=busybox:1.36", "--", "sleep", "3600")
    k.kubectl("wait", "--for=condition=Ready", "pod/box", "--timeout=30s")
    (k.workdir / "notes.txt").write_text("hello from the laptop\n")
    (k.workdir / "blob.bin").write_bytes(bytes(range(256)) * 4)
    k.sh("kubectl cp notes.txt box:/tmp/notes.txt && kubectl cp blob.bin box:/tmp/blob.bin")
    assert k.kubectl("exec", "box", "--", "cat", "/tmp/notes.txt").stdout == "hello from the laptop\n"
    k.sh("kubectl exec box -- sh -c 'echo made in the pod > /tmp/made.txt'")
    k.sh("kubectl cp box:/tmp/made.txt made.txt && kubectl cp box:/tmp/blob.bin back.bin")
    assert (k.workdir / "made.txt").read_text() == "made in the pod\n"
    assert (k.workdir / "back.bin").read_bytes() == bytes(range(256)) * 4


def test_kubectl_debug_copy_to_creates_the_copy_with_the_debugger(k: Cluster) -> None:
    """`kubectl debug --copy-to` posts the whole Pod, defaults and all, as protobuf."""
    k.kubectl("run", "web", "--image=nginx:1.27", "--port=80", "--env=MODE=a", "--labels=app=web")
    k.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")
    out = k.kubectl("debug", "web", "--image=busybox:1.36", "--copy-to=web-debug", "--container=debugger",
                    "--profile=general", "--", "sleep", "3600")
    assert out.returncode == 0, out.stderr
    copy = k.get_json("pod", "web-debug")
    assert [(c["name"], c["image"]) for c in copy["spec"]["containers"]] == [("web", "nginx:1.27"),
                                                                           ("debugger", "busybox:1.36")]
    assert copy["spec"]["containers"][0]["env"] == [{"name": "MODE", "value": "a"}]


def test_kubectl_debug_runs_an_ephemeral_container_in_the_pods_network(k: Cluster) -> None:
    """`kubectl debug -i POD --image=busybox --target=C`: the ephemeral container starts, kubectl attaches
    to it, and it shares the pod's network (localhost is the app); then it ends, never restarted."""
    k.kubectl("run", "web", "--image=nginx:1.27")
    k.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")
    out = k.kubectl("debug", "-i", "web", "--image=busybox:1.36", "--target=web", "--container=dbg",
                    "--profile=general", "--", "sh",
                    input="hostname\nwget -qO- localhost | grep -o '<title>.*</title>'\nexit\n", timeout=60)
    assert out.returncode == 0, out.stderr
    assert "web\n<title>Welcome to nginx!</title>\n" in out.stdout
    pod = k.get_json("pod", "web")
    assert [c["name"] for c in pod["spec"]["ephemeralContainers"]] == ["dbg"]
    status = wait_for(lambda: next((s for s in k.get_json("pod", "web")["status"].get("ephemeralContainerStatuses")
                                    or [] if "terminated" in s["state"]), None))
    assert status["state"]["terminated"]["exitCode"] == 0 and status["restartCount"] == 0
    assert k.get_json("pod", "web")["status"]["containerStatuses"][0]["ready"] is True
    # Changing an ephemeral container once added is refused, as upstream refuses it.
    patch = '{"spec":{"ephemeralContainers":[{"name":"dbg","image":"busybox:1.37"}]}}'
    refused = k.kubectl("patch", "pod", "web", "--subresource=ephemeralcontainers", "-p", patch, check=False)
    assert refused.returncode == 1
    assert 'spec.ephemeralContainers: Forbidden: existing ephemeral containers "dbg" may not be changed' \
        in refused.stderr
