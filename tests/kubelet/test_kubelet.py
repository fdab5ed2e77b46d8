"""The simulated kubelet: pods run their command, `kubectl logs` shows it, the pod ends as on a cluster.

Driven with the real kubectl against a live server (see conftest); the `runnable` rules are unit-tested.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from tests.live import Live, wait_for

from knetsim.kubelet.containerlog import Log, Renderer
from knetsim.kubelet.kubelet import container_argv, go_duration, runnable

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live


@pytest.mark.parametrize(("container", "argv"), [
    # kubectl run ... -- CMD sets args; busybox has no entrypoint, so args are the command.
    ({"image": "busybox:1.36", "args": ["wget", "-qO-", "-T", "2", "http://web"]},
     ["wget", "-qO-", "-T", "2", "http://web"]),
    ({"image": "docker.io/library/busybox:1.36", "command": ["sh", "-c"], "args": ["nslookup web; echo done"]},
     ["sh", "-c", "nslookup web; echo done"]),
    ({"image": "busybox", "command": ["sleep", "3600"]}, ["sleep", "3600"]),
    ({"image": "alpine:3.20", "command": ["sh", "-c", "exec sleep infinity"]}, ["sh", "-c", "exec sleep infinity"]),
    # curlimages/curl's entrypoint puts `curl` in front of options and URLs.
    ({"image": "curlimages/curl:8.5.0", "args": ["-s", "http://web"]}, ["curl", "-s", "http://web"]),
    ({"image": "curlimages/curl:8.5.0", "args": ["curl", "-s", "http://web"]}, ["curl", "-s", "http://web"]),
    ({"image": "nicolaka/netshoot", "command": ["nc", "-zv", "-w", "2", "db", "5432"]},
     ["nc", "-zv", "-w", "2", "db", "5432"]),
    # Servers and what the shell cannot imitate keep running untouched.
    ({"image": "nginx:1.27"}, None),
    ({"image": "nginx:1.27", "command": ["sh", "-c", "echo hi"]}, None),
    ({"image": "myapp:1", "args": ["sleep", "10"]}, None),
    ({"image": "busybox:1.36"}, None),
    ({"image": "busybox:1.36", "command": ["dig", "web"]}, None),
    # A script of busybox applets knetsim does not imitate, or whose commands are only known when
    # it runs, would print what knetsim cannot tell: left running.
    ({"image": "busybox:1.36", "command": ["sh", "-c", "ping -c 1 web"]}, None),
    ({"image": "busybox:1.36", "command": ["sh", "-c", "$CMD web"]}, None),
    ({"image": "busybox:1.36", "command": ["sh", "-c", "echo 'unterminated"]}, None),
    # The shell's own syntax runs: loops, pipes, redirections, background jobs, substitutions; a
    # name busybox lacks is `not found` there too.
    *[({"image": "busybox:1.36", "command": ["sh", "-c", script]}, ["sh", "-c", script]) for script in (
        "while true; do wget -qO- http://web; sleep 5; done", "wget -qO- http://web | grep nginx",
        "wget -qO- http://web > /tmp/x", "sleep 5 &", "echo $(hostname)", "dig web || echo no dig")],
    # Quoted operators are text, not syntax.
    ({"image": "busybox:1.36", "command": ["sh", "-c", "echo 'a | b > c' && echo \"x & y\""]},
     ["sh", "-c", "echo 'a | b > c' && echo \"x & y\""]),
    # Someone attaches (kubectl run -i): whatever it is runs, and an interactive shell reads stdin.
    ({"image": "busybox:1.36", "stdin": True}, ["sh"]),
    ({"image": "nginx:1.27", "stdin": True, "args": ["sh"]}, ["sh"]),
    ({"image": "busybox:1.36", "stdin": True, "args": ["dig", "web"]}, ["dig", "web"]),
])
def test_runnable(container: dict[str, Any], argv: list[str] | None) -> None:
    assert runnable(container) == argv


def test_container_argv_defaults_to_the_image_cmd() -> None:
    assert container_argv({"image": "busybox:1.36"}) == ["sh"]
    assert container_argv({"image": "nginx:1.27"}) is None


@pytest.mark.parametrize(("seconds", "text"), [(10, "10s"), (40, "40s"), (80, "1m20s"), (300, "5m0s")])
def test_backoff_message_durations_are_go_durations(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_log_renderer_tail_timestamps_and_limit() -> None:
    log = Log()
    for text in ("a\n", "b\nc", "\nd\n"):
        log.write(text)
    assert [s for _t, s in log.lines()] == ["a\n", "b\n", "c\n", "d\n"]
    assert Renderer({"tailLines": "2"}).backlog(log.lines()) == "c\nd\n"
    assert Renderer({"tailLines": "0"}).backlog(log.lines()) == ""
    assert Renderer({"limitBytes": "3"}).backlog(log.lines()) == "a\nb"
    stamped = Renderer({"timestamps": "true"}).backlog(log.lines()).splitlines()
    assert len(stamped) == 4 and stamped[0].endswith("Z a") and len(stamped[0].split()[0]) == 30


# --- with kubectl -------------------------------------------------------------------------


def pod(live: Live, name: str) -> dict[str, Any]:
    proc = live.kubectl("get", "pod", name, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else {}


def phase(live: Live, name: str) -> str:
    return str((pod(live, name).get("status") or {}).get("phase") or "")


def finished(live: Live, name: str, timeout: float = 10) -> dict[str, Any]:
    done = wait_for(lambda: phase(live, name) in ("Succeeded", "Failed"), timeout)
    assert done, f"pod {name} did not finish: {pod(live, name).get('status')}"
    return pod(live, name)


@pytest.fixture(scope="module")
def web(live: Live) -> Live:
    live.kubectl("create", "deployment", "web", "--image=nginx:1.27", "--port=80")
    live.kubectl("expose", "deployment", "web", "--port=80")
    return live


@pytest.mark.parametrize(("name", "cmd", "log", "code"), [
    ("ok", ["wget", "-qO-", "-T", "2", "http://web"], "<title>Welcome to nginx!</title>", 0),
    ("nxdomain", ["wget", "-qO-", "-T", "1", "http://nosuch"], "wget: bad address 'nosuch'\n", 1),
    ("open", ["nc", "-zv", "-w", "1", "web", "80"], ":80) open\n", 0),
    ("timeout", ["nc", "-zv", "-w", "1", "web", "81"], "nc: timeout\n", 1),  # no such Service port: dropped
    ("script", ["sh", "-c", "echo one; nslookup web.default.svc.cluster.local >/dev/null || echo two; exit 3"],
     "one\n", 3),
    ("pipes", ["sh", "-c", "wget -qO- -T 2 http://web | head -1 | wc -c; echo $(hostname) > /tmp/h; cat /tmp/h"],
     "pipes\n", 0),
    ("exits", ["sh", "-c", "echo one && exit 3"], "one\n", 3),
    ("resolv", ["cat", "/etc/resolv.conf"], "nameserver 10.96.0.10\n", 0),
])
def test_run_restart_never_then_logs(web: Live, name: str, cmd: list[str], log: str, code: int) -> None:
    web.kubectl("run", name, "--restart=Never", "--image=busybox:1.36", "--", *cmd)
    body = finished(web, name)
    assert body["status"]["phase"] == ("Succeeded" if code == 0 else "Failed")
    term = body["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == code and term["reason"] == ("Completed" if code == 0 else "Error")
    assert term["startedAt"] <= term["finishedAt"]
    assert log in web.kubectl("logs", name).stdout
    row = web.kubectl("get", "pod", name, "--no-headers").stdout.split()
    assert row[1:3] == ["0/1", "Completed" if code == 0 else "Error"]


def test_run_rm_i_streams_stdout_and_stderr_and_reports_the_exit_code(web: Live) -> None:
    proc = web.kubectl("run", "tmp", "--rm", "-i", "--image=busybox:1.36", "--restart=Never", "--", "sh", "-c",
                       "echo to-stdout; wget -qO- -T 1 http://nosuch", check=False)
    assert proc.returncode == 1
    assert "to-stdout\n" in proc.stdout and 'pod "tmp" deleted' in proc.stdout
    assert "wget: bad address 'nosuch'" in proc.stderr and "pod default/tmp terminated (Error)" in proc.stderr
    assert "couldn't attach" not in proc.stderr


def test_run_i_without_rm_keeps_the_log(web: Live) -> None:
    proc = web.kubectl("run", "kept", "-i", "--image=busybox:1.36", "--restart=Never", "--", "echo", "hello")
    assert "hello\n" in proc.stdout
    assert finished(web, "kept")["status"]["phase"] == "Succeeded"
    assert web.kubectl("logs", "kept").stdout == "hello\n"


def test_piped_stdin_reaches_the_container(web: Live) -> None:
    proc = web.kubectl("run", "cat", "--rm", "-i", "--image=busybox:1.36", "--restart=Never", "--", "cat",
                       input="line one\nline two\n")
    assert "line one\nline two\n" in proc.stdout


def test_sleeping_pods_keep_running_without_blocking_others(web: Live) -> None:
    web.kubectl("run", "inf", "--image=busybox:1.36", "--", "sleep", "infinity")
    web.kubectl("run", "hour", "--image=busybox:1.36", "--restart=Never", "--", "sleep", "3600")
    started = time.monotonic()
    web.kubectl("run", "quick", "--image=busybox:1.36", "--restart=Never", "--", "echo", "quick")
    assert finished(web, "quick")["status"]["phase"] == "Succeeded"
    assert time.monotonic() - started < 5
    for name in ("inf", "hour"):
        st = pod(web, name)["status"]
        assert st["phase"] == "Running"
        assert st["containerStatuses"][0]["ready"] is True and "running" in st["containerStatuses"][0]["state"]
    assert web.kubectl("exec", "hour", "--", "echo", "alive").stdout == "alive\n"


def test_logs_follow_until_exit_and_tail(web: Live) -> None:
    web.kubectl("run", "follow", "--restart=Never", "--image=busybox:1.36", "--", "sh", "-c",
                "echo a; sleep 1; echo b; sleep 0.5; echo c")
    wait_for(lambda: phase(web, "follow") == "Running", 5)
    started = time.monotonic()
    proc = web.kubectl("logs", "-f", "follow", timeout=20)
    assert proc.stdout == "a\nb\nc\n"
    assert time.monotonic() - started >= 1.0  # it waited for the command, not just the backlog
    assert web.kubectl("logs", "follow", "--tail=1").stdout == "c\n"
    stamped = web.kubectl("logs", "follow", "--timestamps").stdout.splitlines()
    assert [line.split(" ", 1)[1] for line in stamped] == ["a", "b", "c"]


def test_restart_always_crash_loops_and_keeps_the_previous_log(web: Live) -> None:
    web.kubectl("run", "crash", "--image=busybox:1.36", "--", "sh", "-c", "echo boom; exit 2")

    def looping() -> dict[str, Any] | None:
        cs = (pod(web, "crash").get("status") or {}).get("containerStatuses") or [{}]
        return cs[0] if "waiting" in (cs[0].get("state") or {}) else None
    cs = wait_for(looping, 10)
    assert cs, pod(web, "crash").get("status")
    assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert cs["state"]["waiting"]["message"].startswith("back-off 10s restarting failed container=crash pod=crash_")
    assert cs["restartCount"] == 1 and cs["lastState"]["terminated"]["exitCode"] == 2
    body = pod(web, "crash")
    assert body["status"]["phase"] == "Running"
    ready = next(c for c in body["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False" and ready["reason"] == "ContainersNotReady"
    assert web.kubectl("get", "pod", "crash", "--no-headers").stdout.split()[2] == "CrashLoopBackOff"
    assert web.kubectl("logs", "crash", "--previous").stdout == "boom\n"


def test_job_completes_and_logs_by_job(web: Live) -> None:
    web.kubectl("apply", "-f", "-", input="""
apiVersion: batch/v1
kind: Job
metadata: {name: probe}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: busybox:1.36, command: [sh, -c, "wget -qO- -T 2 http://web:80/ && echo reached"]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: unreachable}
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: busybox:1.36, command: [nc, -zv, -w, "1", web, "81"]}
""")
    web.kubectl("wait", "--for=condition=complete", "job/probe", "--timeout=15s", timeout=30)
    assert web.kubectl("logs", "job/probe").stdout.endswith("</html>\nreached\n")
    status = json.loads(web.kubectl("get", "job", "probe", "-o", "json").stdout)["status"]
    assert status["succeeded"] == 1 and "active" not in status and status["completionTime"]
    web.kubectl("wait", "--for=condition=failed", "job/unreachable", "--timeout=15s", timeout=30)
    status = json.loads(web.kubectl("get", "job", "unreachable", "-o", "json").stdout)["status"]
    assert status["failed"] == 2  # the first try and one retry (backoffLimit 1)
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "BackoffLimitExceeded"
    events = web.kubectl("get", "events", "--field-selector", "involvedObject.name=probe").stdout
    assert "Job completed" in events


def test_servers_keep_running_and_log_errors_are_the_kubelets(web: Live) -> None:
    web.kubectl("apply", "-f", "-", input="""
apiVersion: v1
kind: Pod
metadata: {name: two}
spec:
  restartPolicy: Never
  containers:
  - {name: web, image: nginx:1.27}
  - {name: once, image: curlimages/curl:8.5.0, args: ["-s", "http://web"]}
""")
    def once_done() -> bool:
        statuses = (pod(web, "two").get("status") or {}).get("containerStatuses") or []
        return any("terminated" in (c.get("state") or {}) for c in statuses)
    assert wait_for(once_done, 10)
    body = pod(web, "two")
    assert body["status"]["phase"] == "Running"  # nginx still runs
    assert web.kubectl("get", "pod", "two", "--no-headers").stdout.split()[1] == "1/2"
    assert "Welcome to nginx!" in web.kubectl("logs", "two", "-c", "once").stdout
    assert web.kubectl("logs", "two", "-c", "web").stdout == ""
    proc = web.kubectl("logs", "two", "-c", "nope", check=False)
    assert proc.returncode == 1 and "container nope is not valid for pod two" in proc.stderr
    proc = web.kubectl("logs", "two", "-c", "once", "--previous", check=False)
    assert proc.returncode == 1 and 'previous terminated container "once" in pod "two" not found' in proc.stderr
    code, text = web.request("GET", "/api/v1/namespaces/default/pods/two/log")
    assert code == 400 and "a container name must be specified for pod two, choose one of: [web once]" in \
        text["message"]


def test_container_logs_stay_on_the_node_across_a_server_restart(tmp_path: Any) -> None:
    """A real node keeps its containers' logs when the API server restarts; so does knetsim's state dir."""
    from tests.live import start_server, stop_server

    state, home = tmp_path / "state", tmp_path / "home"
    state.mkdir()
    home.mkdir()
    proc, info = start_server(state)
    live = Live(state, home, proc, info)
    try:
        live.kubectl("create", "deployment", "web", "--image=nginx:1.27", "--port=80")
        live.kubectl("expose", "deployment", "web", "--port=80")
        live.kubectl("run", "once", "--restart=Never", "--image=busybox:1.36", "--", "sh", "-c",
                     "wget -qO- -T 2 http://web/first | head -1")
        finished(live, "once")
        before = live.kubectl("logs", "deploy/web").stdout
        assert '"GET /first HTTP/1.1" 200' in before and '"Wget"' in before
        files = list((state / "pods").glob("default_web-*/nginx/0.log"))
        assert len(files) == 1 and " stdout F " in files[0].read_text()
    finally:
        stop_server(proc)
    proc, info = start_server(state)
    live = Live(state, home, proc, info)
    try:
        assert live.kubectl("logs", "deploy/web").stdout == before
        assert live.kubectl("logs", "once").stdout == "<!DOCTYPE html>\n"
        live.kubectl("delete", "pod", "once")
        assert not list((state / "pods").glob("default_once_*"))
    finally:
        stop_server(proc)


def test_containers_waiting_for_config_wait_across_a_server_restart(tmp_path: Any) -> None:
    """The kubelet picks up what it was waiting for after a restart: a ConfigMap that comes later
    still starts the container whose env needs it and the pod whose volume needs it."""
    from tests.live import start_server, stop_server

    state, home = tmp_path / "state", tmp_path / "home"
    state.mkdir()
    home.mkdir()
    manifest = """\
apiVersion: v1
kind: Pod
metadata: {name: env}
spec:
  containers:
  - {name: app, image: busybox:1.36, command: [sleep, "3600"],
     env: [{name: MODE, valueFrom: {configMapKeyRef: {name: cfg, key: mode}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: vol}
spec:
  containers:
  - {name: app, image: busybox:1.36, command: [sleep, "3600"], volumeMounts: [{name: c, mountPath: /etc/c}]}
  volumes: [{name: c, configMap: {name: cfg}}]
"""

    def reasons(live: Live) -> list[str]:
        return [str(pod(live, name)["status"]["containerStatuses"][0]["state"].get("waiting", {}).get("reason"))
                for name in ("env", "vol")]
    proc, info = start_server(state)
    live = Live(state, home, proc, info)
    try:
        live.kubectl("apply", "-f", "-", input=manifest)
        assert wait_for(lambda: reasons(live) == ["CreateContainerConfigError", "ContainerCreating"], 5)
    finally:
        stop_server(proc)
    proc, info = start_server(state)
    live = Live(state, home, proc, info)
    try:
        assert reasons(live) == ["CreateContainerConfigError", "ContainerCreating"]
        live.kubectl("create", "configmap", "cfg", "--from-literal=mode=fast")
        assert wait_for(lambda: [phase(live, "env"), phase(live, "vol")] == ["Running", "Running"], 5), \
            reasons(live)
        assert live.kubectl("exec", "env", "--", "printenv", "MODE").stdout == "fast\n"
        assert live.kubectl("exec", "vol", "--", "cat", "/etc/c/mode").stdout == "fast"
    finally:
        stop_server(proc)


def test_a_log_keeps_its_newest_bytes(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from knetsim.kubelet import containerlog

    monkeypatch.setattr(containerlog, "LOG_LIMIT", 100)
    path = tmp_path / "0.log"
    log = Log(path)
    for i in range(50):
        log.write(f"line {i:03d}\n")
    assert log.size <= 100 and log.lines()[-1][1] == "line 049\n"
    reloaded = Log.load(path)
    assert [s for _t, s in reloaded.lines()] == [s for _t, s in log.lines()]
    # The file is cut back to the newest lines whenever it holds twice the limit.
    assert 0 < len(path.read_text().splitlines()) <= 2 * len(log.lines()) + 1
