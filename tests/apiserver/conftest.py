"""Fixtures: a live ``knetsim`` API server in a subprocess, and the real kubectl against it.

Address plan: DESIGN defaults (nodes 172.18.0.2-4, pods 10.244.0.0/16, services 10.96.0.0/12).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from knetsim.apiserver.store import LOOP_MARK

KUBECTL = shutil.which("kubectl")


@dataclass
class Live:
    state: Path
    home: Path
    proc: subprocess.Popen[bytes]
    info: dict[str, Any]

    @property
    def kubeconfig(self) -> str:
        return str(self.state / "kubeconfig")

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.info['api_port']}"

    @property
    def token(self) -> str:
        return (self.state / "token").read_text().strip()

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env.update(KUBECONFIG=self.kubeconfig, HOME=str(self.home), **extra)
        return env

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60,
                **env: str) -> subprocess.CompletedProcess[str]:
        if KUBECTL is None:
            pytest.skip("kubectl is not installed")
        proc = subprocess.run([KUBECTL, *args], input=input, capture_output=True, text=True, env=self.env(**env),
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                token: str | None = "default", headers: dict[str, str] | None = None) -> tuple[int, Any]:
        data = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        if token is not None:
            req.add_header("Authorization", f"Bearer {self.token if token == 'default' else token}")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        ctx = ssl.create_default_context(cafile=str(self.state / "serving.crt"))
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
                raw = resp.read()
                code = resp.status
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            code = exc.code
        try:
            return code, json.loads(raw)
        except ValueError:
            return code, raw.decode(errors="replace")


def start_server(state: Path, timeout: float = 20) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    ready = state / "ready.json"
    ready.unlink(missing_ok=True)
    with open(state.parent / f"{state.name}.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "knetsim.daemon", "--state", str(state), "--port", "0"],
                                stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready.exists():
            return proc, json.loads(ready.read_text())
        if proc.poll() is not None:
            raise RuntimeError((state.parent / f"{state.name}.log").read_text())
        time.sleep(0.02)
    proc.kill()
    raise RuntimeError("server did not become ready")


def stop_server(proc: subprocess.Popen[bytes], hard: bool = False) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL if hard else signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def controller_loops(log: Path, offset: int) -> list[str]:
    """The controller loops (``LOOP_MARK`` lines, see knetsim.apiserver.store) the daemon logged after ``offset``."""
    if not log.exists():
        return []
    with open(log, "rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    return [line for line in text.splitlines() if LOOP_MARK in line]


@pytest.fixture(autouse=True)
def no_controller_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a test during which the cluster's controllers wrote one object in a loop (the store's write
    counter logs it: more than LOOP_BOUND writes within LOOP_WINDOW seconds, far above any legitimate
    writer). A loop the test's last command starts may be reported by the module's next test instead."""
    if "live" not in request.fixturenames:
        yield
        return
    cluster = request.getfixturevalue("live")
    log = cluster.state.parent / f"{cluster.state.name}.log"
    offset = log.stat().st_size if log.exists() else 0
    yield
    loops = controller_loops(log, offset)
    assert not loops, "the controllers wrote in a loop:\n" + "\n".join(loops)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    base = tmp_path_factory.mktemp("live")
    state, home = base / "state", base / "home"
    state.mkdir()
    home.mkdir()
    proc, info = start_server(state)
    try:
        yield Live(state, home, proc, info)
    finally:
        stop_server(proc)


def wait_for(fn: Any, timeout: float = 10, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    return last
