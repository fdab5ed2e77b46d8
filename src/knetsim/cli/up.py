"""``knetsim up | down | status``: the live cluster-in-a-box on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click

from .common import EXIT_BAD_INPUT, EXIT_NEGATIVE, EXIT_OK

DEFAULT_STATE = os.environ.get("KNETSIM_STATE") or str(Path.home() / ".knetsim")


def _state_option(fn: Any) -> Any:
    return click.option("--state", "state", default=DEFAULT_STATE, show_default=True,
                        type=click.Path(file_okay=False), help="State directory (SQLite store, kubeconfig).")(fn)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A daemon that has exited stays a zombie until its reaper (often PID 1, which may poll
    # only every second or so) collects it; kill(pid, 0) still succeeds on a zombie.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def _running(state: Path) -> dict[str, Any] | None:
    ready = state / "ready.json"
    try:
        info = json.loads(ready.read_text())
    except (FileNotFoundError, ValueError):
        return None
    pid = int(info.get("pid", 0))
    return info if _pid_alive(pid) and _is_our_daemon(pid, state) else None


def _is_our_daemon(pid: int, state: Path) -> bool:
    """After a kill -9 or a reboot ready.json outlives the daemon and its PID may be reused:
    only a process running knetsim's API server counts, so `down` never signals a stranger."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return True  # no /proc (not Linux): trust the PID as before
    return "knetsim.apiserver" in cmdline and str(state) in cmdline


def _print_ready(info: dict[str, Any]) -> None:
    click.echo(f"export KUBECONFIG={info['kubeconfig']}")
    click.echo(f"# API server  https://127.0.0.1:{info['api_port']}")
    if "dns_port" in info:
        click.echo(f"# DNS         127.0.0.1:{info['dns_port']} (dig @127.0.0.1 -p {info['dns_port']} "
                   "kubernetes.default.svc.cluster.local)")
    else:
        click.echo(f"# DNS         {info.get('dns', 'not started')}")
    if "ingress_port" in info:
        click.echo(f"# Ingress     http://127.0.0.1:{info['ingress_port']} (curl -H 'Host: NAME' ...)")
        gateway_port = info.get("gateway_port", info["ingress_port"])
        click.echo(f"# Gateway     http://127.0.0.1:{gateway_port} (curl -H 'Host: NAME[:LISTENER_PORT]' ...: a host "
                   "a Gateway names enters through its listener)")
    else:
        click.echo(f"# Ingress     {info.get('ingress', 'not started')}")


@click.command("up")
@click.option("--port", default=6443, show_default=True, type=int, help="API server port (0: any free port).")
@click.option("--dns-port", default=0, show_default=True, type=int, help="DNS port, UDP and TCP (0: any free port).")
@click.option("--ingress-port", default=0, show_default=True, type=int,
              help="Ingress/NodePort HTTP entry port (0: any free port).")
@_state_option
@click.option("--foreground", is_flag=True, help="Stay attached; Ctrl-C stops the cluster.")
def up(port: int, dns_port: int, ingress_port: int, state: str, foreground: bool) -> None:
    """Start the live cluster on 127.0.0.1: API server for kubectl, DNS for dig, Ingress entry for curl.

    Returns once it is ready and prints the `export KUBECONFIG=...` line.
    """
    state_dir = Path(state).resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    info = _running(state_dir)
    if info is not None:
        click.echo(f"# already running (pid {info['pid']})", err=True)
        _print_ready(info)
        sys.exit(EXIT_OK)
    ready = state_dir / "ready.json"
    ready.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "knetsim.apiserver", "--state", str(state_dir), "--port", str(port),
           "--dns-port", str(dns_port), "--ingress-port", str(ingress_port)]
    if foreground:
        os.execv(sys.executable, cmd)
    with open(state_dir / "daemon.log", "ab") as logfile:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logfile, stderr=logfile,
                                start_new_session=True, close_fds=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        info = _running(state_dir)
        if info is not None:
            _print_ready(info)
            sys.exit(EXIT_OK)
        if proc.poll() is not None:
            tail = (state_dir / "daemon.log").read_text(errors="replace").splitlines()[-5:]
            click.echo("error: the cluster did not start:\n" + "\n".join(tail), err=True)
            sys.exit(EXIT_BAD_INPUT)
        time.sleep(0.01)
    click.echo("error: the cluster did not become ready within 30s", err=True)
    sys.exit(EXIT_NEGATIVE)


@click.command("down")
@_state_option
def down(state: str) -> None:
    """Stop the live cluster (its state stays in the state directory)."""
    state_dir = Path(state).resolve()
    info = _running(state_dir)
    if info is None:
        click.echo("not running")
        sys.exit(EXIT_OK)
    pid = int(info["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _pid_alive(pid):
        time.sleep(0.02)
    if _pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
    (state_dir / "ready.json").unlink(missing_ok=True)
    click.echo(f"stopped (pid {pid})")


@click.command("status")
@_state_option
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def status(state: str, output: str) -> None:
    """Is the live cluster running, and on which ports? Exit 1 when it is not."""
    info = _running(Path(state).resolve())
    if output == "json":
        click.echo(json.dumps({"running": info is not None, **(info or {})}, indent=2, sort_keys=True))
    elif info is None:
        click.echo("not running")
    else:
        click.echo(f"running (pid {info['pid']})")
        _print_ready(info)
    sys.exit(EXIT_OK if info is not None else EXIT_NEGATIVE)


COMMANDS = [up, down, status]
