"""End-to-end fixtures: one `knetsim up` per test module, and the real kubectl, dig and curl against it.

Each module gets its own cluster started exactly as a user starts it (`knetsim up --port 0` with a
temporary `--state` dir, free DNS and ingress ports) and `HOME` pointing at a temporary directory, so
kubectl's discovery and OpenAPI caches never leak between runs. Between tests the `default` namespace
is emptied and every namespace a test created is deleted, so each test starts from a fresh cluster's
objects while paying the 0.5 s startup once per module.

Commands from the seeds (/work/shared/seeds/003_*: the "例" section and "接続できないときの確認手順")
are typed through ``Cluster.sh`` as the notes write them, with a shell, so a test reads like the note.

Address plan: DESIGN defaults (nodes 172.18.0.2-4, pods 10.244.0.0/16 a /24 per node, services
10.96.0.0/12, kube-dns 10.96.0.10, NodePorts 30000-32767).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from knetsim.apiserver.store import LOOP_MARK

KUBECTL = shutil.which("kubectl")
DIG = shutil.which("dig")
CURL = shutil.which("curl")
SYSTEM_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease", "ingress-nginx",
                     "local-path-storage"}
# The namespaced kinds a test may leave behind in `default` (Services: all but `kubernetes`).
CLEAN_KINDS = "cronjobs,deployments,replicasets,statefulsets,daemonsets,jobs,pods,ingresses,networkpolicies," \
              "endpointslices,configmaps,events"


def knetsim_argv(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from knetsim.cli.main import main; sys.exit(main())", *args]


@dataclass
class Cluster:
    state: Path
    home: Path
    info: dict[str, Any]
    workdir: Path
    namespaces: set[str] = field(default_factory=set)

    @property
    def kubeconfig(self) -> str:
        return str(self.state / "kubeconfig")

    @property
    def dns_port(self) -> int:
        return int(self.info["dns_port"])

    @property
    def ingress(self) -> str:
        return f"http://127.0.0.1:{self.info['ingress_port']}"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env.update(KUBECONFIG=self.kubeconfig, HOME=str(self.home), LC_ALL="C.UTF-8")
        return env

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


def start(base: Path, cluster_config: str | None = None) -> Cluster:
    """`knetsim up` in ``base``; ``cluster_config`` is the text of a cluster config file to start it with."""
    state, home, work = base / "state", base / "home", base / "work"
    for d in (home, work):
        d.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["HOME"] = str(home)
    extra: list[str] = []
    if cluster_config is not None:
        (base / "cluster-config.yaml").write_text(cluster_config)
        extra = ["--cluster-config", str(base / "cluster-config.yaml")]
    out = subprocess.run(knetsim_argv("up", "--port", "0", "--dns-port", "0", "--ingress-port", "0",
                                      "--state", str(state), *extra), capture_output=True, text=True, env=env,
                         timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"knetsim up failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    assert out.stdout.startswith(f"export KUBECONFIG={state / 'kubeconfig'}\n"), out.stdout
    info = json.loads((state / "ready.json").read_text())
    return Cluster(state, home, info, work)


def stop(cluster: Cluster) -> None:
    subprocess.run(knetsim_argv("down", "--state", str(cluster.state)), capture_output=True, text=True, timeout=30)


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
    if "cluster" not in request.fixturenames:
        yield
        return
    cluster = request.getfixturevalue("cluster")
    log = cluster.state / "daemon.log"
    offset = log.stat().st_size if log.exists() else 0
    yield
    loops = controller_loops(log, offset)
    assert not loops, "the controllers wrote in a loop:\n" + "\n".join(loops)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed: the end-to-end suite drives the real kubectl")
    c = start(tmp_path_factory.mktemp("e2e"))
    try:
        yield c
    finally:
        stop(c)
        log = c.state / "daemon.log"
        # An unexpected server error is logged with a traceback; no test may cause one.
        text = log.read_text(errors="replace") if log.exists() else ""
        assert "Traceback" not in text, text


@pytest.fixture
def k(cluster: Cluster) -> Iterator[Cluster]:
    """The module's cluster, emptied after the test."""
    try:
        yield cluster
    finally:
        cluster.cleanup()


def wait_for(fn: Callable[[], Any], timeout: float = 10, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    last = fn()
    while not last and time.monotonic() < deadline:
        time.sleep(interval)
        last = fn()
    return last


def dig(cluster: Cluster, *args: str) -> str:
    if DIG is None:
        pytest.skip("dig is not installed")
    return cluster.sh(f"dig @127.0.0.1 -p {cluster.dns_port} " + " ".join(args)).stdout


needs_curl = pytest.mark.skipif(CURL is None, reason="curl is not installed")
