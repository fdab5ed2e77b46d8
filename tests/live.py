"""The live cluster the tests drive, in one place: a daemon or `knetsim up`, the real kubectl against it.

Two ways to start one, as a user does:

* ``start_server(state)``: ``python -m knetsim.daemon`` alone (the API server and its controllers, no DNS
  or ingress listener); the ``live`` fixture gives one per module as a :class:`Live`.
* ``start(base)``: ``knetsim up`` on free ports (API, DNS, ingress); the ``cluster`` fixture gives one per
  module as a :class:`Cluster`, and ``k`` empties it after each test.

A test that uses either fixture is marked ``live`` automatically (tests/conftest.py), and a module that
starts a cluster itself says ``pytestmark = pytest.mark.live``: ``pytest -m "not live"`` runs the
in-process suite alone. Every live test also fails when the daemon logged a controller loop during it
(``no_controller_loop``). kubectl gets ``HOME`` in a temp dir, so its discovery and OpenAPI caches never
leak between runs or into the user's.

Address plan: DESIGN defaults (nodes 172.18.0.2-4, pods 10.244.0.0/16 a /24 per node, services
10.96.0.0/12, kube-dns 10.96.0.10, NodePorts 30000-32767).
"""

from __future__ import annotations

import contextlib
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

KUBECTL = shutil.which("kubectl")
DIG = shutil.which("dig")
CURL = shutil.which("curl")
SYSTEM_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease", "ingress-nginx",
                     "local-path-storage"}
# The namespaced kinds a test may leave behind in `default` (Services: all but `kubernetes`).
CLEAN_KINDS = "cronjobs,deployments,replicasets,statefulsets,daemonsets,jobs,pods,ingresses,networkpolicies," \
              "endpointslices,configmaps,events"
# The fixtures' names the loop guard looks at; their values carry ``daemon_log``.
CLUSTER_FIXTURES = ("live", "cluster")

needs_curl = pytest.mark.skipif(CURL is None, reason="curl is not installed")

F = TypeVar("F", bound=Callable[..., Any])


def live_fixture(fn: F) -> F:
    """A module-scoped fixture that starts a cluster: the tests that use it are marked ``live``."""
    fn.starts_a_cluster = True  # type: ignore[attr-defined]  # read by tests/conftest.py at collection
    return pytest.fixture(scope="module")(fn)  # type: ignore[return-value]


def knetsim_argv(*args: str) -> list[str]:
    """``knetsim ARGS`` in a subprocess, with this interpreter (and so with PYTHONPATH's sources)."""
    return [sys.executable, "-c", "import sys; from knetsim.cli.main import main; sys.exit(main())", *args]


def kube_free_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment without the user's KUBE* variables, ``HOME`` in the test's temp dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(HOME=str(home), **extra)
    return env


def wait_for(fn: Callable[[], Any], timeout: float = 10, interval: float = 0.05) -> Any:
    """``fn()``'s first truthy answer within ``timeout`` seconds, else its last answer (asked at least once)."""
    deadline = time.monotonic() + timeout
    last = fn()
    while not last and time.monotonic() < deadline:
        time.sleep(interval)
        last = fn()
    return last


# --- the daemon alone -------------------------------------------------------------------------------------


@dataclass
class Live:
    """``python -m knetsim.daemon`` on a free port: the API server and its controllers."""

    state: Path
    home: Path
    proc: subprocess.Popen[bytes]
    info: dict[str, Any]

    @property
    def kubeconfig(self) -> str:
        return str(self.state / "kubeconfig")

    @property
    def daemon_log(self) -> Path:
        return self.state.parent / f"{self.state.name}.log"

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.info['api_port']}"

    @property
    def token(self) -> str:
        return (self.state / "token").read_text().strip()

    def env(self, **extra: str) -> dict[str, str]:
        return kube_free_env(self.home, KUBECONFIG=self.kubeconfig, **extra)

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
        """One HTTPS request to the API server: (status, the JSON answer or its text)."""
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
    """The daemon on ``state`` (port 0), once its ready.json is written; its log is ``<state>.log`` beside it."""
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


def start_live(base: Path) -> Live:
    """A daemon in ``base``/state with kubectl's HOME in ``base``/home."""
    state, home = base / "state", base / "home"
    state.mkdir()
    home.mkdir()
    proc, info = start_server(state)
    return Live(state, home, proc, info)


@live_fixture
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """One daemon per test module."""
    server = start_live(tmp_path_factory.mktemp("live"))
    try:
        yield server
    finally:
        stop_server(server.proc)


# --- `knetsim up` -----------------------------------------------------------------------------------------


@dataclass
class Cluster:
    """``knetsim up`` on free ports (API, DNS, ingress), started as a user starts it."""

    state: Path
    home: Path
    info: dict[str, Any]
    workdir: Path
    namespaces: set[str] = field(default_factory=set)

    @property
    def kubeconfig(self) -> str:
        return str(self.state / "kubeconfig")

    @property
    def daemon_log(self) -> Path:
        return self.state / "daemon.log"

    @property
    def dns_port(self) -> int:
        return int(self.info["dns_port"])

    @property
    def ingress(self) -> str:
        return f"http://127.0.0.1:{self.info['ingress_port']}"

    def env(self) -> dict[str, str]:
        return kube_free_env(self.home, KUBECONFIG=self.kubeconfig, LC_ALL="C.UTF-8")

    def sh(self, command: str, *, input: str | None = None, check: bool = True,
           timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run a command line as a user types it (bash, cwd = a scratch dir holding the test's files)."""
        proc = subprocess.run(["bash", "-c", command], input=input, capture_output=True, text=True, env=self.env(),
                              cwd=self.workdir, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"$ {command}\nexit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 60) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        proc = subprocess.run([KUBECTL, *args], input=input, capture_output=True, text=True, env=self.env(),
                              cwd=self.workdir, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc

    def get_json(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def write(self, name: str, text: str) -> Path:
        path = self.workdir / name
        path.write_text(text)
        return path

    def use_corefile(self, text: str | None = None) -> None:
        """kube-system/coredns (kubeadm's ConfigMap, there from the start) with this Corefile, as a user edits it;
        None puts kubeadm's own back."""
        from knetsim.model.corefile import default_corefile

        path = self.write("Corefile", default_corefile() if text is None else text)
        self.sh(f"kubectl -n kube-system create configmap coredns --from-file=Corefile={path} --dry-run=client "
                "-o yaml | kubectl replace -f -")

    def namespace(self, name: str) -> str:
        """Create a namespace the cleanup deletes after the test."""
        self.kubectl("create", "namespace", name)
        self.namespaces.add(name)
        return name

    def client(self) -> Any:
        """The official Python client, configured from the kubeconfig knetsim wrote."""
        kubernetes = pytest.importorskip("kubernetes", reason="the kubernetes Python client is not installed")
        return kubernetes.config.new_client_from_config(config_file=self.kubeconfig)

    def cleanup(self) -> None:
        self.kubectl("delete", CLEAN_KINDS, "--all", "-n", "default", "--wait=false", check=False)
        self.kubectl("delete", "services", "-n", "default", "--field-selector", "metadata.name!=kubernetes",
                     "--wait=false", check=False)
        names = self.kubectl("get", "namespaces", "-o", "jsonpath={.items[*].metadata.name}").stdout.split()
        extra = sorted(set(names) - SYSTEM_NAMESPACES)
        if extra:
            self.kubectl("delete", "namespace", *extra, "--wait=false")
        self.namespaces.clear()
        for f in self.workdir.iterdir():
            if f.is_file():
                f.unlink()


def up(state: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``knetsim up --port 0 --dns-port 0 --ingress-port 0 --state STATE ARGS``, HOME at ``home``."""
    return subprocess.run(knetsim_argv("up", "--port", "0", "--dns-port", "0", "--ingress-port", "0",
                                       "--state", str(state), *args), capture_output=True, text=True,
                          env=kube_free_env(home), timeout=60)


def start(base: Path, cluster_config: str | None = None) -> Cluster:
    """`knetsim up` in ``base``; ``cluster_config`` is the text of a cluster config file to start it with."""
    state, home, work = base / "state", base / "home", base / "work"
    for d in (home, work):
        d.mkdir()
    extra: list[str] = []
    if cluster_config is not None:
        (base / "cluster-config.yaml").write_text(cluster_config)
        extra = ["--cluster-config", str(base / "cluster-config.yaml")]
    out = up(state, home, *extra)
    if out.returncode != 0:
        raise RuntimeError(f"knetsim up failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    assert out.stdout.startswith(f"export KUBECONFIG={state / 'kubeconfig'}\n"), out.stdout
    info = json.loads((state / "ready.json").read_text())
    return Cluster(state, home, info, work)


def down(state: Path) -> None:
    """Stop the daemon of ``state`` as `knetsim down` does (SIGTERM, then wait for its lock to be free), in this
    process: a `knetsim down` process per test module cost the suite half a second each; `knetsim down` itself
    is tested as a command (tests/e2e/test_up_start_errors.py)."""
    from knetsim.daemon.statedir import owner

    pid = owner(state)
    if not pid:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and owner(state):
        time.sleep(0.02)
    if owner(state):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def stop(cluster: Cluster) -> None:
    down(cluster.state)


@contextlib.contextmanager
def running(base: Path, cluster_config: str | None = None) -> Iterator[Cluster]:
    """`knetsim up` in ``base`` (with the cluster config's text, if any) for the block, stopped after it; no test
    may cause a traceback in its log. A module whose cluster needs a config of its own makes its fixture of it."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed: the end-to-end suite drives the real kubectl")
    c = start(base, cluster_config)
    try:
        yield c
    finally:
        stop(c)
        # An unexpected server error is logged with a traceback; no test may cause one.
        text = c.daemon_log.read_text(errors="replace") if c.daemon_log.exists() else ""
        assert "Traceback" not in text, text


@live_fixture
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One `knetsim up` per test module."""
    with running(tmp_path_factory.mktemp("e2e")) as c:
        yield c


@pytest.fixture
def k(cluster: Cluster) -> Iterator[Cluster]:
    """The module's cluster, emptied after the test."""
    try:
        yield cluster
    finally:
        cluster.cleanup()


def dig(cluster: Cluster, *args: str) -> str:
    if DIG is None:
        pytest.skip("dig is not installed")
    return cluster.sh(f"dig @127.0.0.1 -p {cluster.dns_port} " + " ".join(args)).stdout


# --- the loop guard ---------------------------------------------------------------------------------------


def controller_loops(log: Path, offset: int) -> list[str]:
    """The controller loops (``LOOP_MARK`` lines, see knetsim.apiserver.store) the daemon logged after ``offset``."""
    from knetsim.apiserver.store import LOOP_MARK  # here: the root conftest imports this module for every test

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
    logs = []
    for name in CLUSTER_FIXTURES:
        if name in request.fixturenames:
            log = getattr(request.getfixturevalue(name), "daemon_log", None)
            if isinstance(log, Path):
                logs.append((log, log.stat().st_size if log.exists() else 0))
    yield
    loops = [line for log, offset in logs for line in controller_loops(log, offset)]
    assert not loops, "the controllers wrote in a loop:\n" + "\n".join(loops)
