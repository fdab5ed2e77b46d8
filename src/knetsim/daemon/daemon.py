"""Running the live cluster: the API server plus the DNS and ingress entry points, on loopback.

``python -m knetsim.daemon --state DIR --port N`` runs in the foreground; ``knetsim
up`` starts it detached and returns once ``<state>/ready.json`` appears. Files in the state
dir (0700, every file 0600: the store holds Secrets): ``store.db`` (SQLite WAL), ``token``,
``kubeconfig``, ``lock`` (held by the daemon: one daemon per state dir), ``daemon.pid``,
``ready.json`` (ports, the cluster config in force), ``daemon.log``, ``cluster-config.yaml`` (the config the
cluster was created with, see clusterconfig.py).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import errno
import json
import logging
import os
import secrets
import signal
import socket
import ssl
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from ..apiserver import httplog
from ..apiserver.bootstrap import PHASES, bootstrap
from ..apiserver.recheck import recheck
from ..apiserver.server import ApiServer, Mount
from ..cluster.config import ClusterConfig, ConfigError
from ..controllers import AFTER_POD_START, UNTIL_SCHEDULED, Context, ControllerManager, RootCACertPublisher
from ..controllers.clusterview import ClusterView
from ..controllers.informer import Informer
from ..kubelet.kubelet import Kubelet
from ..kubelet.podstart import PodStart
from ..kubelet.streams import NodeStreams
from ..model.timestamps import now_rfc3339
from ..model.versions import serve_as
from . import explorer, flows
from .apiproxy import ApiProxy
from .clusterconfig import InForce, adopt, with_version
from .statedir import StateDirInUse, acquire, make_private, taken_ports
from .tlscert import Pending, ensure_cert

log = logging.getLogger("knetsim.daemon")


def read_or_create_token(state_dir: Path) -> str:
    path = state_dir / "token"
    if path.exists():
        return path.read_text().strip()
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token)
    return token


def write_kubeconfig(state_dir: Path, port: int, token: str, ca: Path) -> Path:
    path = state_dir / "kubeconfig"
    ca_data = base64.b64encode(ca.read_bytes()).decode()
    text = (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: knetsim\n  cluster:\n    server: https://127.0.0.1:{port}\n"
        f"    certificate-authority-data: {ca_data}\n"
        "contexts:\n- name: knetsim\n  context:\n    cluster: knetsim\n    user: knetsim\n    namespace: default\n"
        "current-context: knetsim\n"
        f"users:\n- name: knetsim\n  user:\n    token: {token}\n"
    )
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


@dataclass
class Running:
    server: ApiServer
    runner: web.AppRunner
    port: int
    kubeconfig: Path
    extra: dict[str, Any] = field(default_factory=dict)
    closers: list[Callable[[], Any]] = field(default_factory=list)
    ready_path: Path | None = None  # where ready.json is kept, once the daemon has written it
    gateway_listeners: Any = None  # gatewaylisteners.GatewayListeners, once a Gateway exists

    def write_ready(self) -> None:
        """(Re)write ready.json atomically: its Gateway listeners change while the cluster runs."""
        if self.ready_path is None:
            return
        tmp = self.ready_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(ready_info(self), indent=2))
        os.replace(tmp, self.ready_path)

    async def close(self) -> None:
        for fn in reversed(self.closers):
            with contextlib.suppress(Exception):
                result = fn()
                if asyncio.iscoroutine(result):
                    await result
        await self.server.close()
        await self.runner.cleanup()


def wire(server: ApiServer) -> ControllerManager:
    """Connect the consumers of the store to the server: the controllers (whose ``settle`` the server
    awaits before reads that need them) and the ClusterState view (``server.state``, published to
    ``server.state_listeners`` whenever the controllers are idle). The server imports none of them.

    Call it once the store holds what can be served (after the start-up recheck); ``start`` of the
    returned manager queues every object for its controllers."""
    informer = Informer(server.store)
    view = ClusterView(informer, server.config, server.state_listeners)
    controllers = (*UNTIL_SCHEDULED, PodStart, *AFTER_POD_START)
    manager = ControllerManager(Context(server.store, informer, server.config, server.registry, view.state,
                                        root_ca=_root_ca(server.state_dir)), controllers)
    manager.idle_hooks.append(view.publish_soon)
    manager.close_hooks.append(view.close)
    server.state_source = view.state
    server.mounts.append(Mount(explorer.handles, explorer.authorized, explorer.handle))
    server.consistency.append(manager.settle)
    return manager


def _root_ca(state_dir: Path) -> Callable[[], str | None]:
    """The bundle kube-root-ca.crt publishes: the serving certificate, which the kubeconfig trusts as the cluster's
    CA (knetsim signs nothing else). None until the daemon has installed it (a new state dir's is made while the
    cluster comes up); read once, since a state dir's certificate never changes."""
    known: list[str] = []

    def read() -> str | None:
        if not known:
            try:
                known.append((state_dir / "serving.crt").read_text())
            except OSError:
                return None
        return known[0]
    return read


def bring_up(server: ApiServer) -> ControllerManager:
    """The store made servable and its consumers started: the start-up recheck (quarantine what today's
    admission refuses), the controllers wired, every stored object queued for them once (whatever changed
    while the server was down), and the system objects a fresh cluster has, written through the registry
    phase by phase. A controller failure there is a 500 naming it for the readers that need it, never a
    cluster that stays down."""
    recheck(server.registry, now_rfc3339())
    manager = wire(server)
    # A new cluster comes up as kind's does (bootstrap.PHASES): the control plane with its add-ons, then
    # the workers, then ingress-nginx, the controllers acting in between.
    for phase in PHASES:
        bootstrap(server.registry, phase)
        if phase == PHASES[0]:
            manager.start()
        manager.drain_now()
    return manager


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def start(state_dir: str | Path, port: int = 6443, host: str = "127.0.0.1",
                config: ClusterConfig | None = None, dns_port: int | None = 0,
                ingress_port: int | None = 0, kernel: str | None = None,
                config_path: Path | None = None, pending_cert: Pending | None = None) -> Running:
    """Start everything on ``host``; ports 0 pick free ones. Returns once all listeners are bound.
    ``config_path`` is where ``config`` was read from (None: the built-in defaults), for ready.json."""
    state = Path(state_dir)
    make_private(state)
    token = read_or_create_token(state)
    server = ApiServer(state, config, token)
    # The controllers, the kubelet and every request: one version from start to stop (model/versions.py).
    serve_as(server.kubernetes_version)
    manager = bring_up(server)
    tools = None  # the container's own (loaded with the first container that runs a command)
    kernel_mode = None
    if kernel is not None:  # `knetsim up --kernel`: pods are network namespaces (kernelmode.py)
        from ..container.proc import builtin_tools
        from ..kubelet.kernelmode import install as install_kernel
        kernel_mode = install_kernel(server, None if kernel == "config" else kernel)
        tools = kernel_mode.tool_table(builtin_tools())
    kubelet = Kubelet(server, tools)
    server.mounts.append(Mount(flows.handles, flows.bearer_only, flows.handler(kubelet.flows)))
    server.node = NodeStreams(kubelet)
    server.proxy = ApiProxy(lambda: kubelet.sandboxes.peer_shell, lambda: kubelet.sandboxes.peer_exit)
    runner = web.AppRunner(server.app(), access_log=None, handle_signals=False, shutdown_timeout=0.5,
                           logger=httplog.logger)
    await runner.setup()
    cert, key = ensure_cert(state, pending_cert)
    manager.start(only=RootCACertPublisher)  # a new state dir's certificate exists only now
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    sock = _bind(host, port)
    site = web.SockSite(runner, sock, ssl_context=ctx)
    await site.start()
    actual = sock.getsockname()[1]
    running = Running(server, runner, actual, write_kubeconfig(state, actual, token, cert))
    running.closers.append(manager.close)
    running.closers.append(kubelet.close)
    running.extra["api_port"] = actual
    running.extra["cluster"] = InForce(server.config, config_path).summary()
    if kernel_mode is not None:
        running.closers.append(kernel_mode.close)
        running.extra["kernel"] = kernel
    if dns_port is not None:
        await _start_dns(running, host, dns_port)
    if ingress_port is not None:
        await _start_ingress(running, host, ingress_port, kubelet)
    _start_gateway_listeners(running, host, kubelet)
    # The node comes up a moment after the control plane, as on kind: once this returns (and the caller
    # has announced the cluster), the kubelet takes over the pods: their commands, logs and probes.
    asyncio.get_running_loop().call_soon(kubelet.install)
    return running


def _start_gateway_listeners(running: Running, host: str, kubelet: Kubelet) -> None:
    """Every Gateway listener on its own loopback port (gatewaylisteners.py), listed in ready.json; started
    with the first Gateway, so a cluster without one never loads the Gateway API's data plane."""
    server = running.server

    def first_gateway(state: Any) -> None:
        if running.gateway_listeners is not None or state is None or not state.gateways:
            return
        from .gatewaylisteners import GatewayListeners

        server.state_listeners.remove(first_gateway)
        listeners = GatewayListeners(server, host, kubelet.served, on_change=running.write_ready)
        listeners.follow()
        running.gateway_listeners = listeners
        running.closers.append(listeners.close)
    server.state_listeners.append(first_gateway)
    first_gateway(server.state)


async def _start_dns(running: Running, host: str, port: int) -> None:
    try:
        from ..dns.records import Upstream
        from ..dns.server import DNSServer
    except ImportError:
        running.extra["dns"] = "unavailable: knetsim.dns.server is not installed"
        return
    server = running.server
    # CoreDNS's `forward . /etc/resolv.conf` reaches the cluster config's outside (cluster/outside.py).
    outside = server.config.outside
    try:
        dns_server = DNSServer(server.state, upstream=Upstream(hosts=outside.dns_hosts(), reverse=outside.reverse()))
        _, bound = await dns_server.start(host, port)
    except Exception as exc:  # a DNS problem must not keep the API server down
        running.extra["dns"] = f"unavailable: {type(exc).__name__}: {exc}"
        return
    if server.state_source is not None:
        dns_server.follow(server.state_source)
    else:
        server.state_listeners.append(dns_server.update)
    running.extra["dns_port"] = bound
    running.closers.append(dns_server.close)


async def _start_ingress(running: Running, host: str, port: int, kubelet: Kubelet) -> None:
    from . import entry
    runner = await entry.start(running.server, host, port, kubelet.served, kubelet.flows.observe)
    if runner is None:
        running.extra["ingress"] = "unavailable: knetsim.network is not installed"
        return
    running.extra["ingress_port"] = runner.addresses[0][1]
    # Gateway listeners share the front door: the Host header (and its port) selects Gateway and listener.
    running.extra["gateway_port"] = runner.addresses[0][1]
    running.closers.append(runner.cleanup)


def ready_info(running: Running) -> dict[str, Any]:
    gateways = running.gateway_listeners.describe() if running.gateway_listeners is not None else []
    return {"pid": os.getpid(), "api_port": running.port, "kubeconfig": str(running.kubeconfig), **running.extra,
            "gateway_listeners": gateways}


EXIT_STATE_IN_USE = 3
EXIT_BAD_CONFIG = 2
EXIT_PORT_IN_USE = 4  # a port asked for is taken: said in one sentence on stderr, no traceback
EXIT_INTERRUPTED = 130  # Ctrl-C during start-up, as a shell reports SIGINT


class PortInUse(Exception):
    """Ports the daemon was asked to bind are taken (``statedir.taken_ports``' sentences)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def _check_ports(host: str, args: argparse.Namespace) -> None:
    problems = taken_ports(host, {"API server": args.port, "DNS": args.dns_port, "Ingress": args.ingress_port},
                           udp=frozenset({"DNS"}))
    if problems:
        raise PortInUse(problems)


async def _main(args: argparse.Namespace, pending_cert: Pending | None = None) -> None:
    state = Path(args.state)
    make_private(state)
    try:
        lock_fd = acquire(state)
        in_force = with_version(adopt(state, args.cluster_config), args.kubernetes_version)
    except (StateDirInUse, ConfigError) as exc:
        log.error("%s", exc)
        if pending_cert is not None:
            pending_cert.discard()
        raise SystemExit(EXIT_STATE_IN_USE if isinstance(exc, StateDirInUse) else EXIT_BAD_CONFIG) from None
    try:
        # Before the cluster is built: a taken port is said at once, naming the port and who holds it.
        _check_ports("127.0.0.1", args)
        running = await start(state, args.port, config=in_force.config, dns_port=args.dns_port,
                              ingress_port=args.ingress_port, kernel=args.kernel, config_path=in_force.path,
                              pending_cert=pending_cert)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        # Taken between the check and the bind: the check names who took it.
        problems = taken_ports("127.0.0.1", {"API server": args.port, "DNS": args.dns_port,
                                             "Ingress": args.ingress_port}, udp=frozenset({"DNS"}))
        raise PortInUse(problems or [f"a port asked for is already in use ({exc.strerror}); `knetsim up --port 0` "
                                     "picks a free port"]) from None
    (state / "daemon.pid").write_text(str(os.getpid()))
    ready = state / "ready.json"
    running.ready_path = ready
    running.write_ready()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    with contextlib.suppress(FileNotFoundError):
        ready.unlink()
    await running.close()
    with contextlib.suppress(FileNotFoundError):
        (state / "daemon.pid").unlink()
    os.close(lock_fd)


def main(argv: list[str] | None = None, pending_cert: Pending | None = None) -> None:
    parser = argparse.ArgumentParser(prog="knetsim-daemon")
    parser.add_argument("--state", required=True)
    parser.add_argument("--port", type=int, default=6443)
    parser.add_argument("--dns-port", type=int, default=0)
    parser.add_argument("--ingress-port", type=int, default=0)
    parser.add_argument("--kernel", default=None, help="iptables, nftables or config: pods as network namespaces")
    parser.add_argument("--cluster-config", default=None,
                        help="the cluster's shape, kept in the state directory the first time")
    parser.add_argument("--kubernetes-version", default=None,
                        help="MAJOR.MINOR the cluster runs (over the config's kubernetesVersion)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(_main(args, pending_cert))
    except PortInUse as exc:
        if pending_cert is not None:
            pending_cert.discard()
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_PORT_IN_USE) from None
    except KeyboardInterrupt:
        # Ctrl-C before the signal handlers were installed (start-up): stopped, and no traceback.
        print("interrupted: the cluster was stopped during start-up", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_INTERRUPTED) from None


if __name__ == "__main__":
    main()
