"""``knetsim up | down | status``: the live cluster-in-a-box on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click

from ..cluster.config import ConfigError
from ..daemon.clusterconfig import check as check_config
from ..daemon.clusterconfig import with_version
from ..daemon.statedir import StateDirInUse, make_private, owner, running, taken_ports
from .common import EXIT_BAD_INPUT, EXIT_NEGATIVE, EXIT_OK, running_knetsim
from .common import state_dir as default_state_dir

EXIT_STATE_IN_USE = 3  # the daemon's exit code when another daemon holds the state directory

DEFAULT_STATE = os.environ.get("KNETSIM_STATE") or str(Path.home() / ".knetsim")


def _state_option(fn: Any) -> Any:
    return click.option("--state", "state", default=DEFAULT_STATE, show_default=True,
                        type=click.Path(file_okay=False), help="State directory (SQLite store, kubeconfig).")(fn)


def _print_ready(info: dict[str, Any]) -> None:
    click.echo(f"export KUBECONFIG={info['kubeconfig']}")
    click.echo(f"# API server  https://127.0.0.1:{info['api_port']}")
    if isinstance(info.get("cluster"), dict):
        click.echo(f"# Cluster     {describe_cluster(info['cluster'])}")
        if info["cluster"].get("kubernetesVersion"):
            click.echo(f"# Kubernetes  {info['cluster']['kubernetesVersion']} (docs/versions.md)")
    token = Path(info["kubeconfig"]).with_name("token")
    if token.exists():  # the connectivity explorer, in a browser: the token is exchanged for a cookie
        click.echo(f"# Explorer    https://127.0.0.1:{info['api_port']}/explorer/?token={token.read_text().strip()}")
    if "dns_port" in info:
        click.echo(f"# DNS         127.0.0.1:{info['dns_port']} (dig @127.0.0.1 -p {info['dns_port']} "
                   "kubernetes.default.svc.cluster.local)")
    else:
        click.echo(f"# DNS         {info.get('dns', 'not started')}")
    if "kernel" in info:
        click.echo("# Kernel      pods are network namespaces (ip netns list | grep knetsim-): kubectl exec runs "
                   "wget/nslookup/nc for real")
    if "ingress_port" in info:
        click.echo(f"# Ingress     http://127.0.0.1:{info['ingress_port']} (curl -H 'Host: NAME' ...)")
        gateway_port = info.get("gateway_port", info["ingress_port"])
        click.echo(f"# Gateway     http://127.0.0.1:{gateway_port} (curl -H 'Host: NAME[:LISTENER_PORT]' ...: a host "
                   "a Gateway names enters through its listener)")
    else:
        click.echo(f"# Ingress     {info.get('ingress', 'not started')}")
    for row in info.get("gateway_listeners") or []:
        owner = f"{row['gateway']}" + (f" (ListenerSet {row['listener_set']})" if row.get("listener_set") else "")
        host = f" {row['hostname']}" if row.get("hostname") else ""
        click.echo(f"# Listener    {owner} {row['listener']}: {row['protocol']} {row['port']}{host} on "
                   f"{row['address']}")


_DATAPLANES = {"iptables": "kube-proxy iptables mode", "nftables": "kube-proxy nftables mode",
               "ebpf": "Cilium, no kube-proxy"}


def describe_cluster(cluster: dict[str, Any]) -> str:
    """One line of `knetsim up`/`status`: which cluster config is in force."""
    nodes = [str(n) for n in cluster.get("nodes") or []]
    plane = str(cluster.get("dataplane"))
    where = f"cluster config {cluster['config']}" if cluster.get("config") else "built-in defaults (kind)"
    return (f"{cluster.get('name')}: dataplane {plane} ({_DATAPLANES.get(plane, plane)}), {len(nodes)} node"
            f"{'s' if len(nodes) != 1 else ''} ({', '.join(nodes)}); {where}")


@click.command("up")
@click.option("--port", default=6443, show_default=True, type=click.IntRange(0, 65535),
              help="API server port (0: any free port).")
@click.option("--dns-port", default=0, show_default=True, type=click.IntRange(0, 65535),
              help="DNS port, UDP and TCP (0: any free port).")
@click.option("--ingress-port", default=0, show_default=True, type=click.IntRange(0, 65535),
              help="Ingress/NodePort HTTP entry port (0: any free port).")
@_state_option
@click.option("--foreground", is_flag=True, help="Stay attached; Ctrl-C stops the cluster.")
@click.option("--kernel", "kernel", is_flag=False, flag_value="config", default=None,
              type=click.Choice(["config", "iptables", "nftables"]),
              help="Root only: pods are real network namespaces with kube-proxy's rules (docs/kernel.md).")
@click.option("--cluster-config", "cluster_config", default=None, type=click.Path(dir_okay=False),
              help="Cluster shape (nodes, zones, CIDRs, data plane; docs/cluster-config.md). Kept in the state "
                   "directory: later starts run with it, and another config over that cluster is refused.")
@click.option("--kubernetes-version", "kubernetes_version", default=None, metavar="MAJOR.MINOR",
              help="The Kubernetes minor the cluster runs, 1.33 to 1.38 (over the cluster config's "
                   "kubernetesVersion; default the newest): what it admits and warns of, what `kubectl version` "
                   "reports, the discovery it serves (docs/versions.md).")
def up(port: int, dns_port: int, ingress_port: int, state: str, foreground: bool, kernel: str | None,
       cluster_config: str | None, kubernetes_version: str | None) -> None:
    """Start the live cluster on 127.0.0.1: API server for kubectl, DNS for dig, Ingress entry for curl.

    Returns once it is ready and prints the `export KUBECONFIG=...` line.
    """
    try:
        _up(port, dns_port, ingress_port, state, foreground, kernel, cluster_config, kubernetes_version)
    except KeyboardInterrupt:
        # Before any daemon was started (those that were are stopped where they are waited for).
        click.echo("interrupted: the cluster was not started", err=True)
        sys.exit(EXIT_INTERRUPTED)


def _up(port: int, dns_port: int, ingress_port: int, state: str, foreground: bool, kernel: str | None,
        cluster_config: str | None, kubernetes_version: str | None = None) -> None:
    state_dir = Path(state).resolve()
    try:
        in_force = with_version(check_config(state_dir, cluster_config), kubernetes_version)
    except ConfigError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if kernel is not None and (kernel if kernel != "config" else in_force.config.dataplane) == "ebpf":
        click.echo("error: knetsim up --kernel cannot run an ebpf cluster: the kernel form loads kube-proxy's rules "
                   "(iptables or nftables), and Cilium's BPF programs need its agent", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if kernel is not None:
        from ..kernel import missing_requirements

        missing = missing_requirements(in_force.config.dataplane if kernel == "config" else kernel)
        if missing:
            click.echo("error: knetsim up --kernel cannot run here:\n" + "\n".join(f"  - {m}" for m in missing),
                       err=True)
            sys.exit(EXIT_BAD_INPUT)
    make_private(state_dir)
    info = running(state_dir)
    if info is not None:
        running_version = (info.get("cluster") or {}).get("kubernetesVersion") if isinstance(
            info.get("cluster"), dict) else None
        asked = kubernetes_version is not None or cluster_config is not None
        if asked and running_version not in (None, in_force.config.kubernetes_version):
            # Asked for one version, running another: saying "ready" would leave the user testing the wrong one.
            click.echo(f"error: the cluster of {state_dir} is running Kubernetes {running_version} (pid "
                       f"{info['pid']}); `knetsim down --state {state_dir}` first to start it as "
                       f"{in_force.config.kubernetes_version}", err=True)
            sys.exit(EXIT_BAD_INPUT)
        click.echo(f"# already running (pid {info['pid']})", err=True)
        _print_ready(info)
        sys.exit(EXIT_OK)
    problems = taken_ports("127.0.0.1", {"API server": port, "DNS": dns_port, "Ingress": ingress_port},
                           udp=frozenset({"DNS"}))
    if problems:
        # Nothing on stdout: `eval "$(knetsim up)"` then leaves KUBECONFIG as it was.
        for problem in problems:
            click.echo(f"error: {problem}", err=True)
        sys.exit(EXIT_NEGATIVE)
    cmd = [sys.executable, "-m", "knetsim.daemon", "--state", str(state_dir), "--port", str(port),
           "--dns-port", str(dns_port), "--ingress-port", str(ingress_port),
           *(["--kernel", kernel] if kernel else []),
           *(["--cluster-config", str(Path(cluster_config).resolve())] if cluster_config else []),
           *(["--kubernetes-version", in_force.config.kubernetes_version] if kubernetes_version else [])]
    if foreground:
        _foreground(cmd, state_dir)
    with open(state_dir / "daemon.log", "ab") as logfile:
        proc = _spawn(cmd, stdout=logfile, stderr=logfile, close_fds=True)
    try:
        _release()  # a Ctrl-C held meanwhile is raised here, in this try
        info = _wait_ready(proc, state_dir, lambda: _log_tail(state_dir))
    except KeyboardInterrupt:
        # Ctrl-C while it starts: the daemon (in a session of its own, so it did not see the signal) is stopped
        # too, rather than left running with no `export` line printed.
        _stop(proc)
        click.echo(f"interrupted: the cluster was not started (daemon pid {proc.pid} stopped)", err=True)
        sys.exit(EXIT_INTERRUPTED)
    _print_ready(info)
    sys.exit(EXIT_OK)


EXIT_INTERRUPTED = 130  # as a shell reports a command ended by SIGINT
EXIT_PORT_IN_USE = 4  # the daemon's exit code when a port it was asked to bind is taken


def _log_tail(state_dir: Path) -> list[str]:
    return (state_dir / "daemon.log").read_text(errors="replace").splitlines()[-5:]


def _wait_ready(proc: subprocess.Popen[bytes], state_dir: Path, tail: Any) -> dict[str, Any]:
    """The daemon's ready.json once it is ready; exits with the daemon's own words when it is not."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        # Our daemon's own fate first: when another `up` won the state directory, ours exits 3 and this
        # run is a refusal, even if the winner is ready by now.
        if proc.poll() is not None:
            if proc.returncode == EXIT_STATE_IN_USE:
                holder = owner(state_dir)
                click.echo(f"error: {StateDirInUse(state_dir, holder)}; `knetsim status --state {state_dir}` "
                           "shows it", err=True)
                sys.exit(EXIT_NEGATIVE)
            if proc.returncode == EXIT_PORT_IN_USE:
                # A port was taken between our check and the daemon's bind: its sentences say which and by whom.
                for line in tail():
                    if line.startswith("error: "):
                        click.echo(line, err=True)
                sys.exit(EXIT_NEGATIVE)
            said = tail()
            click.echo(f"error: the cluster did not start (exit code {proc.returncode})" +
                       "".join(f"\n{line}" for line in said), err=True)
            sys.exit(EXIT_BAD_INPUT)
        info = running(state_dir)
        if info is not None and int(info.get("pid", 0)) == proc.pid:
            return info
        time.sleep(0.01)
    _stop(proc)
    click.echo("error: the cluster did not become ready within 30s (stopped)", err=True)
    sys.exit(EXIT_NEGATIVE)


# Held in this process from before the daemon starts until the try that stops it on Ctrl-C: a signal inside Popen
# (the child already forked) or before that try would leave the daemon running, with no `export` line printed and,
# under --foreground, holding the terminal's output.
_HELD = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def _spawn(cmd: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """The daemon, in a session of its own, started with ``_HELD`` held here (the caller ``_release``s them inside
    the try that stops it) and released in the child."""
    signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD), **kwargs)
    except BaseException:
        _release()
        raise


def _release() -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _foreground(cmd: list[str], state_dir: Path) -> None:
    """``up --foreground``: the daemon as a child writing to this terminal (its log on stderr); the ready lines,
    ports included, printed once it is ready, as a detached start prints them; Ctrl-C stops it, start-up
    included. The child has a session of its own, so the terminal's SIGINT reaches this process only, which
    stops the daemon with SIGTERM: a signal in the middle of its imports would otherwise end in a traceback."""
    proc = _spawn(cmd)

    def stop_on(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # `kill`, or the terminal closing: the daemon goes with this process, as Ctrl-C

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop_on)
    info = None
    try:
        _release()  # a signal held meanwhile is raised here, in this try
        info = _wait_ready(proc, state_dir, lambda: [])
        _print_ready(info)
        click.echo("# Ctrl-C stops the cluster", err=True)
        code = proc.wait()
    except KeyboardInterrupt:
        try:
            _stop(proc)
        except KeyboardInterrupt:  # a second Ctrl-C: no more waiting
            proc.kill()
            proc.wait()
        if info is None:  # interrupted before it was ready: as a shell reports SIGINT
            click.echo(f"interrupted: the cluster was stopped during start-up (pid {proc.pid})", err=True)
            sys.exit(EXIT_INTERRUPTED)
        click.echo(f"stopped (pid {proc.pid})", err=True)
        sys.exit(EXIT_OK)
    sys.exit(code)


def _found_state_option(fn: Any) -> Any:
    return click.option("--state", "state", default=None, type=click.Path(file_okay=False),
                        help="State directory of the cluster. Default: the running knetsim every other command "
                             "reads: the one of $KNETSIM_STATE (else ~/.knetsim), or the one $KUBECONFIG names.")(fn)


def _found_state(state: str | None) -> Path:
    """The state directory ``--state`` names; without it, the running knetsim's that analyses read
    (``common.running_knetsim``: the default state dir, then the one of ``$KUBECONFIG``), else the default."""
    if state is not None:
        return Path(state).resolve()
    found = running_knetsim()
    return (found[0] if found is not None else default_state_dir()).resolve()


@click.command("down")
@_found_state_option
def down(state: str | None) -> None:
    """Stop the live cluster (its state stays in the state directory)."""
    state_dir = _found_state(state)
    pid = owner(state_dir)
    if pid == 0:  # locked a moment ago, PID not yet written
        time.sleep(0.1)
        pid = owner(state_dir)
    if not pid:
        click.echo("not running")
        click.echo(f"# state dir {state_dir}", err=True)
        sys.exit(EXIT_OK)
    os.kill(pid, signal.SIGTERM)
    # Stopped means the lock is free: the kernel drops it when the daemon exits, however it exits.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and owner(state_dir):
        time.sleep(0.02)
    if owner(state_dir):
        os.kill(pid, signal.SIGKILL)
    (state_dir / "ready.json").unlink(missing_ok=True)
    click.echo(f"stopped (pid {pid}, state dir {state_dir})")


@click.command("status")
@_found_state_option
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def status(state: str | None, output: str) -> None:
    """Is the live cluster running, and on which ports? Exit 1 when it is not."""
    state_dir = _found_state(state)
    info = running(state_dir)
    if output == "json":
        click.echo(json.dumps({"running": info is not None, **(info or {})}, indent=2, sort_keys=True))
    elif info is None:
        click.echo("not running")
        click.echo(f"# state dir {state_dir}", err=True)
    else:
        click.echo(f"running (pid {info['pid']})")
        for source, kinds in _definitions_in_force(info).items():
            click.echo(f"# {', '.join(kinds)}: {source}")
        _print_ready(info)
    sys.exit(EXIT_OK if info is not None else EXIT_NEGATIVE)


def _definitions_in_force(info: dict[str, Any]) -> dict[str, list[str]]:
    """Which definition admits each custom kind on the running cluster: knetsim's own, or a CRD a client applied
    (read from the API: the CRDs it lists). Empty when the API does not answer."""
    import ssl
    import urllib.request

    from ..model.crd import in_force

    state = Path(info["kubeconfig"]).parent
    try:
        request = urllib.request.Request(
            f"https://127.0.0.1:{info['api_port']}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            headers={"Authorization": f"Bearer {(state / 'token').read_text().strip()}"})
        context = ssl.create_default_context(cafile=str(state / "serving.crt"))
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            items = json.loads(response.read()).get("items") or []
    except (OSError, ValueError, KeyError):
        return {}
    return in_force([i for i in items if isinstance(i, dict)])


COMMANDS = [up, down, status]
