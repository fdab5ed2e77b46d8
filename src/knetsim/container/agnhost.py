"""``/agnhost`` run in a pod (``kubectl exec POD -- /agnhost connect HOST:PORT``) and iproute2's ``ss``.

agnhost (kubernetes/kubernetes ``test/images/agnhost/``) is one cobra binary with a subcommand per tool.
The network e2e tests exec its client subcommands in their pods and read the exit code and stderr:

* ``connect HOST:PORT [--timeout D] [--protocol tcp|udp|sctp] [--udp-data S] [--sctp-data S]``
  (connect/connect.go): exit 0 and silent when the connection opens (UDP and SCTP: when the server answered,
  SCTP within --timeout, which it needs); otherwise exit 1 with one line on
  stderr that starts with a fixed word: ``UNKNOWN:`` (bad argument), ``DNS:``, ``TIMEOUT``, ``REFUSED``,
  ``OTHER:``.
* ``dns-suffix``, ``dns-server-list`` (dns/common.go, dns/dns.go): the search list and the nameservers of
  ``/etc/resolv.conf``, comma-separated; ``etc-hosts``: ``/etc/hosts``.
* the servers (``netexec``, ``serve-hostname``, ``porter``, ``test-webserver``, ``liveness``, ``pause``) run
  until they are stopped, printing their start-up log line; what they answer is the program model's
  (``model/programs.py``, ``network/netexec.py``), the same whether the container runs them or an exec does.

An agnhost subcommand knetsim does not simulate is refused in knetsim's words (exit 1), never run as another.
Errors about arguments are cobra's (``Error: unknown flag: --x``, ``Error: accepts 1 arg(s), received 0``).

``ss`` lists the pod's listening sockets from the program model (``model/listeners.py``): ``-t``/``-u``
with ``-l`` and ``-n`` (and ``-p``, ``-a``, ``-4``/``-6``, ``-H``), columns as iproute2 prints them.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from typing import Any

from ..model.listeners import container_listens
from ..network.netexec import sctp_answer, udp_answer
from ..network.trace import KERNEL_CONNECT_TIMEOUT, RESOLVER_TIMEOUT
from .applets import options
from .nettools import resolved_ip, trace_request
from .podfs import FsError
from .shell import Ctx, register

# Subcommands that serve until stopped: the line each logs when it starts (their log.Printf, without the
# timestamp prefix the log package adds).
_SERVERS = {"netexec", "serve-hostname", "porter", "test-webserver", "liveness", "pause"}
_CLIENTS = ("connect", "dns-suffix", "dns-server-list", "etc-hosts")
SIMULATED = frozenset((*_SERVERS, *_CLIENTS))


async def _cobra_error(ctx: Ctx, message: str, usage: str) -> int:
    await ctx.err(f"Error: {message}\nUsage:\n  agnhost {usage}\n\n")
    return 1


@register("agnhost")
async def agnhost(ctx: Ctx, argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] in ("-h", "--help", "help"):
        await ctx.out("Usage:\n  agnhost [command]\n\nAvailable Commands:\n"
                      + "".join(f"  {name}\n" for name in sorted((*_CLIENTS, *_SERVERS))) + "\n")
        return 0
    sub, args = argv[1], argv[2:]
    if sub == "connect":
        return await _connect(ctx, args)
    if sub in ("dns-suffix", "dns-server-list", "etc-hosts"):
        if args:
            return await _cobra_error(ctx, f"accepts at most 0 arg(s), received {len(args)}", f"{sub} [flags]")
        return await _resolv(ctx, sub)
    if sub in _SERVERS:
        return await _serve(ctx, sub, args)
    if sub.startswith("-"):
        await ctx.err(f"Error: unknown shorthand flag: '{sub.lstrip('-')[:1]}' in {sub}\n")
        return 1
    await ctx.err(f"agnhost: subcommand {sub} is not simulated by knetsim\n")
    return 1


# --- connect --------------------------------------------------------------------------------------

_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration(text: str) -> float | None:
    """time.ParseDuration: ``5s``, ``1m30s``, ``500ms``, ``0``; None when it is not one."""
    if text == "0":
        return 0.0
    parts = re.findall(r"(\d+(?:\.\d*)?)(ns|us|µs|ms|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _DURATION_UNITS[u] for n, u in parts)


def _long_flags(args: list[str], known: tuple[str, ...]) -> tuple[dict[str, str], list[str], str]:
    """pflag's ``--name=value`` / ``--name value``: (flags, positional, error)."""
    flags: dict[str, str] = {}
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--") and len(arg) > 2:
            name, eq, value = arg[2:].partition("=")
            if name not in known:
                return flags, positional, f"unknown flag: --{name}"
            if not eq:
                if i + 1 >= len(args):
                    return flags, positional, f"flag needs an argument: --{name}"
                value = args[i + 1]
                i += 1
            flags[name] = value
        elif arg.startswith("-") and len(arg) > 1:
            return flags, positional, f"unknown shorthand flag: '{arg[1]}' in {arg}"
        else:
            positional.append(arg)
        i += 1
    return flags, positional, ""


async def _connect(ctx: Ctx, args: list[str]) -> int:
    usage = "connect [host:port] [flags]"
    flags, positional, problem = _long_flags(args, ("timeout", "protocol", "udp-data", "sctp-data"))
    if problem:
        return await _cobra_error(ctx, problem, usage)
    if len(positional) != 1:
        return await _cobra_error(ctx, f"accepts 1 arg(s), received {len(positional)}", usage)
    timeout_text = flags.get("timeout", "0s")
    timeout = go_duration(timeout_text)
    if timeout is None:
        return await _cobra_error(ctx, f'invalid argument "{timeout_text}" for "--timeout" flag: time: invalid '
                                       f'duration "{timeout_text}"', usage)
    protocol = flags.get("protocol", "tcp")
    dest = positional[0]
    if protocol not in ("", "tcp", "udp", "sctp"):
        await ctx.err(f"Unsupported protocol\n{protocol}")  # connect.go's Fprint: no space, no newline after
        return 1
    host, sep, port = dest.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep:
        await ctx.err(f"UNKNOWN: address {dest}: missing port in address\n")
        return 1
    if not port.isdigit():
        await ctx.err(f"DNS: lookup {'tcp' if protocol in ('', 'tcp') else protocol}/{port}: unknown port\n")
        return 1
    proto = {"udp": "UDP", "sctp": "SCTP"}.get(protocol, "TCP")
    t = trace_request(ctx, f"{host}:{port}", protocol=proto)
    if t.outcome in ("nxdomain", "dns-timeout"):
        if t.outcome == "dns-timeout":
            await asyncio.sleep(RESOLVER_TIMEOUT)
        await ctx.err(f"DNS: lookup {host} on {_nameserver(ctx)}:53: no such host\n")
        return 1
    ip = resolved_ip(t, host)
    remote = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
    if proto == "UDP":
        return await _connect_udp(ctx, t, remote, timeout, flags.get("udp-data", "hostname"))
    if proto == "SCTP":
        return await _connect_sctp(ctx, t, timeout, flags.get("sctp-data", "hostname"))
    if t.outcome == "connected":
        return 0
    if t.outcome == "timeout":
        await asyncio.sleep(timeout if timeout > 0 else KERNEL_CONNECT_TIMEOUT)
        await ctx.err("TIMEOUT\n")
        return 1
    if t.outcome == "refused":
        await ctx.err("REFUSED\n")
        return 1
    await ctx.err(f"OTHER: dial tcp {remote}: connect: no route to host\n")
    return 1


async def _connect_udp(ctx: Ctx, t: Any, remote: str, timeout: float, data: str) -> int:
    local = f"{ctx.pod.pod_ip}:{_ephemeral(ctx.pod.pod_ip, remote)}"
    if t.outcome == "connected" and udp_answer(ctx.state, t, data + "\n"):
        return 0
    if t.outcome == "refused":
        # The ICMP port-unreachable surfaces on the read.
        await ctx.err(f"REFUSED: read udp {local}->{remote}: read: connection refused\n")
        return 1
    # No answer: connect.go reads until --timeout (for ever without one; the kernel's connect timeout here).
    await asyncio.sleep(timeout if timeout > 0 else KERNEL_CONNECT_TIMEOUT)
    await ctx.err(f"TIMEOUT: read udp {local}->{remote}: i/o timeout\n")
    return 1


async def _connect_sctp(ctx: Ctx, t: Any, timeout: float, data: str) -> int:
    """connectSCTP: dial, write the data, read one answer, all within --timeout. Its timer starts at once, so with
    no --timeout (0) it has fired before anything comes back: TIMEOUT, as the real command prints."""
    if timeout <= 0:
        await ctx.err("TIMEOUT\n")
        return 1
    if t.outcome == "connected" and sctp_answer(ctx.state, t, data + "\n"):
        return 0
    if t.outcome == "refused":
        await ctx.err("OTHER: connection refused\n")  # the association's ABORT: ECONNREFUSED from sctp_connectx
        return 1
    await asyncio.sleep(timeout)
    await ctx.err("TIMEOUT\n")
    return 1


def _ephemeral(local: str, remote: str) -> int:
    # A source port in Linux's ephemeral range, fixed per pair so messages repeat.
    return 32768 + sum((local + remote).encode()) * 7919 % 28232


# --- dns-suffix, dns-server-list, etc-hosts -------------------------------------------------------


def _read(ctx: Ctx, path: str) -> str:
    try:
        return ctx.fs.read(path)
    except FsError:  # a file the pod does not have reads as empty, as the Go code's split of it does
        return ""


def _nameserver(ctx: Ctx) -> str:
    servers = _resolv_field(_read(ctx, "/etc/resolv.conf"), "nameserver")
    return servers[0] if servers else "127.0.0.1"


def _resolv_field(text: str, key: str) -> list[str]:
    values: list[str] = []
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == key:
            values.extend(fields[1:])
    return values


async def _resolv(ctx: Ctx, sub: str) -> int:
    if sub == "etc-hosts":
        await ctx.out(_read(ctx, "/etc/hosts") + "\n")  # fmt.Println of the file's text
        return 0
    key = "search" if sub == "dns-suffix" else "nameserver"
    await ctx.out(",".join(_resolv_field(_read(ctx, "/etc/resolv.conf"), key)) + "\n")
    return 0


# --- the servers ----------------------------------------------------------------------------------


async def _serve(ctx: Ctx, sub: str, args: list[str]) -> int:
    flags, _, _ = _long_flags([a for a in args if a.startswith("--")], tuple(
        a[2:].partition("=")[0] for a in args if a.startswith("--")))
    lines: list[str] = []
    if sub == "netexec":
        lines.append(f"Started HTTP server on port {flags.get('http-port', '8080')}")
        if flags.get("udp-port", "8081") != "-1":
            lines.append(f"Started UDP server on port  {flags.get('udp-port', '8081')}")  # its address "" between
    elif sub == "serve-hostname":
        lines.append(f"Serving on port {flags.get('port', '9376')}.")
    # Go's log package: stderr, each line after the local date and time.
    stamp = dt.datetime.now(dt.UTC).strftime("%Y/%m/%d %H:%M:%S")
    if lines:
        await ctx.err("".join(f"{stamp} {line}\n" for line in lines))
    await asyncio.Event().wait()  # serves until the container (or the exec) is stopped
    return 0


# --- ss -------------------------------------------------------------------------------------------


@register("ss")
async def ss(ctx: Ctx, argv: list[str]) -> int:
    parsed = await options(ctx, "ss", argv[1:], "hVHnrametoiKsZNbEluxw0SpD:F:46f:A:",
                           simulated="tulnpaH46")
    if isinstance(parsed, int):
        return parsed
    opts, _ = parsed
    flags = {o for o, _ in opts}
    protocols = [p for p, f in (("TCP", "-t"), ("UDP", "-u")) if f in flags] or ["TCP", "UDP"]
    if "-l" not in flags and "-a" not in flags:
        # Without -l, ss lists established connections: a simulated pod holds none between commands.
        protocols = []
    families = [f for f, flag in (("4", "-4"), ("6", "-6")) if flag in flags] or ["4", "6"]
    rows: list[tuple[str, ...]] = []
    for container in ctx.pod.containers:
        for port, protocol in sorted(container_listens(container)):
            if protocol not in protocols:
                continue
            # Servers in Go (and most others) bind ":PORT": one dual-stack socket, shown as "*".
            address = "*" if "6" in families else "0.0.0.0"
            process = f'users:(("{_process_name(container)}",pid=1,fd={3 + len(rows)}))' if "-p" in flags else ""
            rows.append(("tcp" if protocol == "TCP" else "udp", "LISTEN" if protocol == "TCP" else "UNCONN", "0",
                         "4096" if protocol == "TCP" else "0", address, str(port), "*", "*", process))
    await ctx.out(_ss_table(rows, netid=len(protocols) > 1, header="-H" not in flags))
    return 0


def _ss_table(rows: list[tuple[str, ...]], netid: bool, header: bool) -> str:
    """iproute2's columns: Netid and State left-aligned, the queues in 6, each address right-aligned up to its
    ":" and its port left-aligned after it; the header's "Process" follows "Port" without a space."""
    titles = ("Netid", "State", "Recv-Q", "Send-Q", "Local Address", "Port", "Peer Address", "Port", "Process")
    table = [titles, *rows] if header else rows
    widths = [max(len(r[i]) for r in table) for i in range(8)]

    def line(r: tuple[str, ...], is_header: bool) -> str:
        cells = [r[1].ljust(widths[1]), r[2].ljust(widths[2]), r[3].ljust(widths[3])]
        if netid:
            cells.insert(0, r[0].ljust(widths[0]))
        text = " ".join(cells) + f" {r[4].rjust(widths[4])}:{r[5].ljust(widths[5])} {r[6].rjust(widths[6])}:"
        if is_header:
            return text + r[7] + r[8]
        return (text + (r[7].ljust(widths[7]) + " " + r[8] if r[8] else r[7])).rstrip()

    return "".join(line(r, header and i == 0) + "\n" for i, r in enumerate(table))


def _process_name(container: Any) -> str:
    # Only args: the image's entrypoint runs (agnhost's is /agnhost), named like the image.
    name = container.command[0].rsplit("/", 1)[-1] if container.command else \
        container.image.rsplit("/", 1)[-1].split(":", 1)[0].split("@", 1)[0]
    return name[:15]  # the kernel's comm is 15 characters
