"""A small busybox-like shell for ``kubectl exec`` into simulated pods.

Commands are looked up in ``TOOLS`` (name → async function), so more tools plug in with
``register("name")``. Network tools (``wget``, ``nc``, ``curl``, ``nslookup``) ask the core's
end-to-end trace (``knetsim.network.trace``) and the resolver (``knetsim.dns.resolver``) and
print what busybox (or curl) prints for that outcome, with its exit code. A trace that says
``timeout`` makes the tool wait: for its ``-T``/``-w``/``-m`` when given, otherwise for the
kernel's connect timeout (127 s: 6 SYN retries), as the real tool would.

Shell grammar kept: ``;``, ``&&``, ``||``, quotes, ``$VAR``/``${VAR}``/``$?``, ``sh -c``,
``exit N``. Unknown commands: ``sh: foo: not found``, exit 127.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

KERNEL_CONNECT_TIMEOUT = 127.0  # tcp_syn_retries=6: 1+2+4+8+16+32+64 s
RESOLVER_TIMEOUT = 10.0  # musl/busybox: timeout 5 s, attempts 2

Tool = Callable[["Ctx", list[str]], Awaitable[int]]
TOOLS: dict[str, Tool] = {}


def register(name: str) -> Callable[[Tool], Tool]:
    def wrap(fn: Tool) -> Tool:
        TOOLS[name] = fn
        return fn
    return wrap


class ExitShell(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@dataclass
class Ctx:
    """What a command sees: the cluster, its pod, environment and I/O."""

    state: Any  # ClusterState
    pod: Any  # model.objects.Pod
    container: str
    out: Callable[[str], Awaitable[None]]
    err: Callable[[str], Awaitable[None]]
    env: dict[str, str] = field(default_factory=dict)
    stdin: Callable[[], Awaitable[bytes]] | None = None
    last: int = 0

    @property
    def source(self) -> str:
        return str(self.pod.key)


def pod_env(state: Any, pod: Any, container: str) -> dict[str, str]:
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME": pod.name,
           "HOME": "/root", "SHLVL": "1", "PWD": "/"}
    if pod.raw.get("spec", {}).get("enableServiceLinks", True):
        # The kubelet's service links: every Service of the pod's namespace, then `kubernetes`.
        services = [s for s in state.services.values() if s.namespace == pod.namespace]
        for svc in sorted(services, key=lambda s: s.name):
            ip = svc.raw.get("spec", {}).get("clusterIP")
            if not ip or ip == "None":
                continue
            prefix = svc.name.upper().replace("-", "_")
            ports = svc.raw.get("spec", {}).get("ports") or []
            if not ports:
                continue
            env[f"{prefix}_SERVICE_HOST"] = ip
            env[f"{prefix}_SERVICE_PORT"] = str(ports[0]["port"])
            for p in ports:
                proto = p.get("protocol", "TCP")
                if p.get("name"):
                    env[f"{prefix}_SERVICE_PORT_{p['name'].upper().replace('-', '_')}"] = str(p["port"])
                env[f"{prefix}_PORT_{p['port']}_{proto}"] = f"{proto.lower()}://{ip}:{p['port']}"
            env[f"{prefix}_PORT"] = f"{ports[0].get('protocol', 'TCP').lower()}://{ip}:{ports[0]['port']}"
    env.setdefault("KUBERNETES_SERVICE_HOST", state.config.kubernetes_service_ip)
    env.setdefault("KUBERNETES_SERVICE_PORT", "443")
    for c in pod.raw.get("spec", {}).get("containers") or []:
        if c.get("name") == container:
            for e in c.get("env") or []:
                if "value" in e:
                    env[e["name"]] = str(e["value"])
    return env


_VAR = re.compile(r"\$(\?|\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)")


def _expand(word: str, ctx: Ctx) -> str:
    def sub(m: re.Match[str]) -> str:
        name = m.group(1).strip("{}")
        return str(ctx.last) if name == "?" else ctx.env.get(name, "")
    return _VAR.sub(sub, word)


def split_commands(line: str) -> list[tuple[str, str]]:
    """``a; b && c || d`` → [(";", "a"), (";", "b"), ("&&", "c"), ("||", "d")], quotes respected."""
    out: list[tuple[str, str]] = []
    buf, op, quote, i = "", ";", "", 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == quote:
                quote = ""
            buf += ch
        elif ch in "'\"":
            quote = ch
            buf += ch
        elif line.startswith("&&", i) or line.startswith("||", i):
            out.append((op, buf))
            op, buf = line[i:i + 2], ""
            i += 1
        elif ch in ";\n":
            out.append((op, buf))
            op, buf = ";", ""
        elif ch == "#" and (not buf or buf[-1].isspace()):
            break
        else:
            buf += ch
        i += 1
    out.append((op, buf))
    return [(o, c.strip()) for o, c in out if c.strip()]


async def run_line(ctx: Ctx, line: str) -> int:
    for op, command in split_commands(line):
        if (op == "&&" and ctx.last != 0) or (op == "||" and ctx.last == 0):
            continue
        try:
            words = shlex.split(command, posix=True)
        except ValueError:
            await ctx.err("sh: syntax error: unterminated quoted string\n")
            ctx.last = 2
            continue
        # Expansion after splitting loses word-splitting of $VAR; enough for the lab commands.
        ctx.last = await run_argv(ctx, [_expand(w, ctx) for w in words])
    return ctx.last


async def run_argv(ctx: Ctx, argv: list[str]) -> int:
    if not argv:
        return 0
    assignments = []
    while argv and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", argv[0]):
        assignments.append(argv.pop(0))
    for a in assignments:
        k, v = a.split("=", 1)
        ctx.env[k] = v
    if not argv:
        return 0
    name = argv[0].rsplit("/", 1)[-1] if argv[0].startswith("/") else argv[0]
    tool = TOOLS.get(name)
    if tool is None:
        await ctx.err(f"sh: {argv[0]}: not found\n")
        return 127
    return await tool(ctx, argv)


# --- built-ins ---------------------------------------------------------------------------


@register("sh")
async def _sh(ctx: Ctx, argv: list[str]) -> int:
    if len(argv) >= 3 and argv[1] == "-c":
        try:
            return await run_line(ctx, argv[2])
        except ExitShell as exc:
            return exc.code
    if len(argv) >= 2 and argv[1] != "-c":
        await ctx.err(f"sh: can't open '{argv[1]}': No such file or directory\n")
        return 2
    return 0  # an interactive shell is driven by the exec session, not here


TOOLS["bash"] = TOOLS["ash"] = TOOLS["zsh"] = _sh


@register("exec")
async def _exec(ctx: Ctx, argv: list[str]) -> int:
    # The shell's process is replaced: whatever the command returns is the shell's exit.
    if len(argv) < 2:
        return 0
    raise ExitShell(await run_argv(ctx, argv[1:]))


@register("exit")
async def _exit(ctx: Ctx, argv: list[str]) -> int:
    try:
        code = int(argv[1]) if len(argv) > 1 else ctx.last
    except ValueError:
        await ctx.err(f"sh: exit: Illegal number: {argv[1]}\n")
        code = 2
    raise ExitShell(code & 0xFF)


@register("echo")
async def _echo(ctx: Ctx, argv: list[str]) -> int:
    args = argv[1:]
    newline = True
    if args and args[0] == "-n":
        newline, args = False, args[1:]
    await ctx.out(" ".join(args) + ("\n" if newline else ""))
    return 0


@register("true")
async def _true(ctx: Ctx, argv: list[str]) -> int:
    return 0


@register("false")
async def _false(ctx: Ctx, argv: list[str]) -> int:
    return 1


@register("hostname")
async def _hostname(ctx: Ctx, argv: list[str]) -> int:
    if "-i" in argv:
        await ctx.out(f"{ctx.pod.pod_ip}\n")
    else:
        await ctx.out(f"{ctx.pod.raw.get('spec', {}).get('hostname') or ctx.pod.name}\n")
    return 0


@register("env")
async def _env(ctx: Ctx, argv: list[str]) -> int:
    if len(argv) > 1:
        return await run_argv(ctx, argv[1:])
    await ctx.out("".join(f"{k}={v}\n" for k, v in sorted(ctx.env.items())))
    return 0


TOOLS["printenv"] = _env


@register("pwd")
async def _pwd(ctx: Ctx, argv: list[str]) -> int:
    await ctx.out("/\n")
    return 0


def _files(ctx: Ctx) -> dict[str, str]:
    from ..dns.resolver import resolv_conf

    pod = ctx.pod
    hostname = pod.raw.get("spec", {}).get("hostname") or pod.name
    hosts = "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" \
            "fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"
    if pod.pod_ip:
        sub = pod.raw.get("spec", {}).get("subdomain")
        fq = f"{hostname}.{sub}.{pod.namespace}.svc.{ctx.state.config.cluster_domain}\t{hostname}" if sub \
            else hostname
        hosts += f"{pod.pod_ip}\t{fq}\n"
    return {"/etc/resolv.conf": resolv_conf(ctx.state, pod).text(), "/etc/hosts": hosts,
            "/etc/hostname": hostname + "\n"}


@register("cat")
async def _cat(ctx: Ctx, argv: list[str]) -> int:
    if len(argv) == 1 or argv[1:] == ["-"]:
        if ctx.stdin is not None:
            while True:
                data = await ctx.stdin()
                if not data:
                    break
                await ctx.out(data.decode(errors="replace"))
        return 0
    files = _files(ctx)
    code = 0
    for path in argv[1:]:
        if path in files:
            await ctx.out(files[path])
        else:
            await ctx.err(f"cat: can't open '{path}': No such file or directory\n")
            code = 1
    return code


@register("sleep")
async def _sleep(ctx: Ctx, argv: list[str]) -> int:
    if len(argv) < 2:
        await ctx.err("BusyBox v1.36.1 (2023-05-18 22:34:17 UTC) multi-call binary.\n\nUsage: sleep [N]...\n")
        return 1
    total = 0.0
    for arg in argv[1:]:
        if arg in ("inf", "infinity"):
            await asyncio.Event().wait()  # never set: sleeps until the pod (or the session) goes away
        m = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd]?)", arg)
        if not m:
            await ctx.err(f"sleep: invalid number '{arg}'\n")
            return 1
        total += float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    await asyncio.sleep(total)
    return 0


# Network tools live in their own module; importing it registers them.
from . import nettools  # noqa: E402,F401
