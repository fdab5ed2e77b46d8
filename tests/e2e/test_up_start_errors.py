"""`knetsim up`, `status` and `down` as a newcomer meets them (issue 34, points 6, 8 and 11).

- A taken port is said in one sentence on stderr: which port, who holds it (a knetsim, with its state dir,
  or another program) and that ``--port 0`` picks a free one; no traceback, exit 1, nothing on stdout, so
  ``eval "$(knetsim up ...)"`` leaves KUBECONFIG as it was.
- ``status`` and ``down`` find the cluster through ``$KUBECONFIG`` as every other command does.
- Ctrl-C while ``up`` waits stops the daemon it started; ``--foreground`` prints the ports, and Ctrl-C
  during its start-up ends without a traceback.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e.conftest import Cluster, knetsim_argv

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(KNETSIM_STATE=str(tmp_path / "default-state"), HOME=str(tmp_path), **extra)
    return env


def _knetsim(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(knetsim_argv(*args), capture_output=True, text=True, env=env, timeout=timeout)


def _daemons(state: Path) -> list[str]:
    return subprocess.run(["pgrep", "-f", f"knetsim.daemon --state {state.resolve()}"], capture_output=True,
                          text=True).stdout.split()


def _gone(state: Path, timeout: float = 5) -> bool:
    """No daemon of ``state`` runs (a stopped daemon frees its lock a moment before its process ends)."""
    deadline = time.monotonic() + timeout
    while _daemons(state) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _daemons(state)


@pytest.fixture
def listener() -> Iterator[int]:
    """A port another program listens on."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def test_a_port_another_program_holds_is_named_with_the_way_out(tmp_path: Path, listener: int) -> None:
    state = tmp_path / "s"
    got = _knetsim("up", "--state", str(state), "--port", str(listener), env=_env(tmp_path))
    assert got.returncode == 1
    assert got.stdout == ""  # eval "$(knetsim up ...)" sets nothing
    assert got.stderr == (f"error: API server port 127.0.0.1:{listener} is already in use by another program "
                          f"(pid {os.getpid()}); `knetsim up --port 0` picks a free port\n")
    assert _daemons(state) == []
    shell = subprocess.run(["bash", "-c", f'export KUBECONFIG=/before; eval "$({shlex.join(knetsim_argv())} up '
                           f'--state {state} --port {listener})"; echo "KUBECONFIG=$KUBECONFIG"'],
                           capture_output=True, text=True, env=_env(tmp_path), timeout=60)
    assert shell.stdout == "KUBECONFIG=/before\n"


def test_the_daemon_itself_names_a_taken_port_without_a_traceback(tmp_path: Path, listener: int) -> None:
    """The daemon checks too (`up` and the daemon race for a port; `python -m knetsim.daemon` is run alone)."""
    got = subprocess.run([sys.executable, "-m", "knetsim.daemon", "--state", str(tmp_path / "s"), "--port",
                          str(listener)], capture_output=True, text=True, timeout=60)
    assert got.returncode == 4
    assert "Traceback" not in got.stderr and "Errno" not in got.stderr
    assert f"error: API server port 127.0.0.1:{listener} is already in use" in got.stderr


def test_a_port_a_knetsim_holds_names_its_state_dir_and_status_and_down_find_it_through_kubeconfig(
        cluster: Cluster, tmp_path: Path) -> None:
    port = cluster.info["api_port"]
    env = _env(tmp_path)
    got = _knetsim("up", "--state", str(tmp_path / "other"), "--port", str(port), env=env)
    assert got.returncode == 1 and got.stdout == ""
    assert (f"error: API server port 127.0.0.1:{port} is already in use by a running knetsim (pid "
            f"{cluster.info['pid']}, state dir {cluster.state.resolve()}") in got.stderr
    assert f"`knetsim down --state {cluster.state.resolve()}` stops it" in got.stderr
    assert "`knetsim up --port 0` picks a free port" in got.stderr

    # $KNETSIM_STATE names a directory where nothing runs; $KUBECONFIG names the running cluster's kubeconfig.
    exported = _env(tmp_path, KUBECONFIG=cluster.kubeconfig)
    status = _knetsim("status", env=exported)
    assert status.returncode == 0
    assert status.stdout.startswith(f"running (pid {cluster.info['pid']})")
    assert f"# API server  https://127.0.0.1:{port}" in status.stdout
    assert _knetsim("status", env=env).stdout == "not running\n"


def test_down_stops_the_cluster_kubeconfig_names(tmp_path: Path) -> None:
    state = tmp_path / "s"
    env = _env(tmp_path)
    up = _knetsim("up", "--state", str(state), "--port", "0", env=env)
    assert up.returncode == 0, up.stderr
    try:
        down = _knetsim("down", env={**env, "KUBECONFIG": str(state / "kubeconfig")})
        assert down.stdout.startswith("stopped (pid ")
        assert _gone(state)
    finally:
        _knetsim("down", "--state", str(state), env=env)


def _terminal_sigint() -> None:
    """In the child, before exec: SIGINT as a terminal's foreground job has it. A test run started as a background
    job of a non-interactive shell (`make test &`) inherits SIGINT ignored, which would pass to `up` and make every
    Ctrl-C here a no-op."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt_after_start(argv: list[str], env: dict[str, str], state: Path) -> subprocess.CompletedProcess[str]:
    """Start ``argv``, Ctrl-C it (SIGINT to it alone, as `kill -INT`) once its daemon process exists."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=_terminal_sigint)
    deadline = time.monotonic() + 20
    while not _daemons(state) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def test_ctrl_c_while_up_waits_stops_the_daemon_it_started(tmp_path: Path) -> None:
    state = tmp_path / "s"
    got = _interrupt_after_start(knetsim_argv("up", "--state", str(state), "--port", "0"), _env(tmp_path), state)
    assert got.returncode == 130
    assert got.stdout == "" and "Aborted!" not in got.stderr
    assert "interrupted: the cluster was not started (daemon pid" in got.stderr
    assert _daemons(state) == []


def test_foreground_prints_its_ports_and_ctrl_c_during_start_up_leaves_no_traceback(tmp_path: Path) -> None:
    state = tmp_path / "s"
    env = _env(tmp_path)
    got = _interrupt_after_start(knetsim_argv("up", "--foreground", "--state", str(state), "--port", "0"),
                                 env, state)
    assert "Traceback" not in got.stderr, got.stderr
    assert got.returncode == 130 and got.stdout == ""
    assert _daemons(state) == []

    proc = subprocess.Popen(knetsim_argv("up", "--foreground", "--state", str(state), "--port", "0"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=_terminal_sigint)
    assert proc.stdout is not None
    lines = [proc.stdout.readline()]
    while lines[-1] and not lines[-1].startswith("# Ingress"):
        lines.append(proc.stdout.readline())
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert lines[0] == f"export KUBECONFIG={state.resolve()}/kubeconfig\n"
    assert lines[1].startswith("# API server  https://127.0.0.1:")
    assert any(line.startswith("# DNS         127.0.0.1:") for line in lines)
    assert lines[-1].startswith("# Ingress     http://127.0.0.1:")
    assert proc.returncode == 0 and "Traceback" not in err
    assert _daemons(state) == []


def test_foreground_stopped_by_kill_takes_its_daemon_along(tmp_path: Path) -> None:
    """The daemon runs in a session of its own (so that a terminal's SIGINT cannot hit it mid-import): a SIGTERM
    to `up --foreground` (a service manager's stop) must still stop it."""
    state = tmp_path / "s"
    proc = subprocess.Popen(knetsim_argv("up", "--foreground", "--state", str(state), "--port", "0"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tmp_path))
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("export KUBECONFIG=")
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert _gone(state)
