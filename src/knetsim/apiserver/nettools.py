"""``wget``, ``nc``, ``curl``, ``nslookup`` for exec sessions, answered by the core's trace.

Messages and exit codes are busybox 1.36's (curl's for curl). The trace outcome decides:

=========== ============================================ =============================
outcome     busybox wget -qO-                            exit
=========== ============================================ =============================
connected   the body (``server returned error`` on 4xx+) 0 (1 on HTTP errors)
refused     ``can't connect to remote host (IP): Connection refused``  1
timeout     waits ``-T`` (else 127 s), ``download timed out``          1
dns-timeout waits 10 s (resolver), ``bad address 'NAME'``               1
nxdomain    ``bad address 'NAME'``                                    1
no-route    ``can't connect to remote host (IP): Host is unreachable`` 1
=========== ============================================ =============================
"""

from __future__ import annotations

import asyncio
import getopt
from typing import Any

from .shell import KERNEL_CONNECT_TIMEOUT, RESOLVER_TIMEOUT, Ctx, register

HTTP_REASONS = {200: "OK", 301: "Moved Permanently", 302: "Found", 400: "Bad Request", 403: "Forbidden",
                404: "Not Found", 500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Temporarily "
                "Unavailable", 504: "Gateway Timeout"}


def _trace(ctx: Ctx, target: str, protocol: str = "TCP", method: str = "GET",
           headers: dict[str, str] | None = None) -> Any:
    from ..network import trace

    return trace(ctx.state, source=ctx.source, target=target, protocol=protocol, method=method,
                 headers=headers or {})


def _resolved_ip(t: Any, host: str) -> str:
    for hop in t.hops:
        if hop.layer != "dns":
            continue
        for q in (hop.data or {}).get("queries") or []:
            for rr in (q.get("response") or {}).get("answer") or []:
                if rr.get("type") == "A":
                    return str(rr["data"])
    return host


def _split_url(url: str) -> tuple[str, str, int, str]:
    scheme = "http"
    rest = url
    if "://" in url:
        scheme, rest = url.split("://", 1)
    hostport, _, path = rest.partition("/")
    host, _, port = hostport.partition(":")
    default = 443 if scheme == "https" else 80
    return scheme, host, int(port) if port.isdigit() else default, "/" + path


async def _wait(seconds: float) -> None:
    await asyncio.sleep(max(0.0, seconds))


@register("wget")
async def wget(ctx: Ctx, argv: list[str]) -> int:
    try:
        opts, args = getopt.gnu_getopt(argv[1:], "qO:T:SsU:Y:Ph:", ["spider", "timeout=", "header=", "quiet"])
    except getopt.GetoptError as exc:
        await ctx.err(f"wget: {exc.msg}\n")
        return 1
    quiet = any(o in ("-q", "--quiet") for o, _ in opts)
    spider = any(o in ("--spider", "-s") for o, _ in opts)
    out_file = next((v for o, v in opts if o == "-O"), None)
    timeout = next((float(v) for o, v in opts if o in ("-T", "--timeout")), None)
    headers = dict(v.split(":", 1) for o, v in opts if o == "--header" and ":" in v)
    if not args:
        await ctx.err("BusyBox v1.36.1 (2023-05-18 22:34:17 UTC) multi-call binary.\n\nUsage: wget [-cqS] [--spider] "
                      "[-O FILE] [-o LOGFILE] [--header STR] [-T SEC] URL...\n")
        return 1
    url = args[0] if "://" in args[0] else f"http://{args[0]}"
    _scheme, host, port, _path = _split_url(url)
    t = _trace(ctx, url, headers={k.strip(): v.strip() for k, v in headers.items()})
    ip = _resolved_ip(t, host)
    if t.outcome == "nxdomain":
        await ctx.err(f"wget: bad address '{host}'\n")
        return 1
    if t.outcome == "dns-timeout":
        await _wait(RESOLVER_TIMEOUT)
        await ctx.err(f"wget: bad address '{host}'\n")
        return 1
    if not quiet:
        await ctx.err(f"Connecting to {host}{'' if port == 80 else f':{port}'} ({ip}:{port})\n")
    if t.outcome == "refused":
        await ctx.err(f"wget: can't connect to remote host ({ip}): Connection refused\n")
        return 1
    if t.outcome == "no-route":
        await ctx.err(f"wget: can't connect to remote host ({ip}): Host is unreachable\n")
        return 1
    if t.outcome == "timeout":
        await _wait(timeout if timeout is not None else KERNEL_CONNECT_TIMEOUT)
        await ctx.err("wget: download timed out\n" if timeout is not None else
                      f"wget: can't connect to remote host ({ip}): Connection timed out\n")
        return 1
    reply = t.reply
    status = reply.status if reply is not None else None
    body = reply.body if reply is not None else ""
    if status is None:
        # Connected to something that does not speak HTTP.
        await _wait(timeout if timeout is not None else 900)
        await ctx.err("wget: download timed out\n")
        return 1
    if status >= 400:
        await ctx.err(f"wget: server returned error: HTTP/1.1 {status} {HTTP_REASONS.get(status, '')}\n")
        return 1
    if spider:
        if not quiet:
            await ctx.err("remote file exists\n")
        return 0
    if out_file in ("-", None) and out_file == "-":
        if not quiet:
            await ctx.err("writing to stdout\n")
        await ctx.out(body)
        if not quiet:
            await ctx.err("written to stdout\n")
        return 0
    name = out_file or "index.html"
    if not quiet:
        await ctx.err(f"saving to '{name}'\n'{name}' saved\n")
    return 0


@register("nc")
async def nc(ctx: Ctx, argv: list[str]) -> int:
    try:
        opts, args = getopt.gnu_getopt(argv[1:], "zvuw:nl")
    except getopt.GetoptError as exc:
        await ctx.err(f"nc: {exc.msg}\n")
        return 1
    flags = {o for o, _ in opts}
    wait = next((float(v) for o, v in opts if o == "-w"), None)
    if len(args) < 2 or not args[1].isdigit():
        await ctx.err("BusyBox v1.36.1 (2023-05-18 22:34:17 UTC) multi-call binary.\n\nUsage: nc [OPTIONS] HOST PORT"
                      "  - connect\n")
        return 1
    host, port = args[0], int(args[1])
    proto = "UDP" if "-u" in flags else "TCP"
    t = _trace(ctx, f"{host}:{port}", protocol=proto)
    ip = _resolved_ip(t, host)
    verbose = "-v" in flags
    if t.outcome in ("nxdomain", "dns-timeout"):
        if t.outcome == "dns-timeout":
            await _wait(RESOLVER_TIMEOUT)
        await ctx.err(f"nc: bad address '{host}'\n")
        return 1
    if t.outcome == "connected":
        if verbose:
            await ctx.err(f"{host} ({ip}:{port}) open\n")
        return 0
    if t.outcome == "timeout":
        await _wait(wait if wait is not None else KERNEL_CONNECT_TIMEOUT)
        await ctx.err("nc: timeout\n" if wait is not None else f"nc: {host} ({ip}:{port}): Connection timed out\n")
        return 1
    reason = "Connection refused" if t.outcome == "refused" else "Host is unreachable"
    await ctx.err(f"nc: {host} ({ip}:{port}): {reason}\n")
    return 1


@register("curl")
async def curl(ctx: Ctx, argv: list[str]) -> int:
    try:
        opts, args = getopt.gnu_getopt(argv[1:], "svkIo:w:m:H:X:L",
                                       ["silent", "verbose", "max-time=", "connect-timeout=", "header=",
                                        "request=", "head", "output=", "write-out=", "insecure", "location"])
    except getopt.GetoptError as exc:
        await ctx.err(f"curl: {exc.msg}\n")
        return 2
    if not args:
        await ctx.err("curl: no URL specified!\n")
        return 2
    o = dict(opts)
    max_time = next((float(v) for k, v in opts if k in ("-m", "--max-time", "--connect-timeout")), None)
    headers = {v.split(":", 1)[0].strip(): v.split(":", 1)[1].strip() for k, v in opts
               if k in ("-H", "--header") and ":" in v}
    method = o.get("-X") or o.get("--request") or ("HEAD" if ("-I" in o or "--head" in o) else "GET")
    url = args[0] if "://" in args[0] else f"http://{args[0]}"
    _scheme, host, port, _ = _split_url(url)
    t = _trace(ctx, url, method=method, headers=headers)
    silent = "-s" in o or "--silent" in o
    if t.outcome in ("nxdomain", "dns-timeout"):
        if t.outcome == "dns-timeout":
            await _wait(min(RESOLVER_TIMEOUT, max_time) if max_time is not None else RESOLVER_TIMEOUT)
            if max_time is not None and max_time < RESOLVER_TIMEOUT:
                await ctx.err(f"curl: (28) Resolving timed out after {int(max_time * 1000)} milliseconds\n")
                return 28
        await ctx.err(f"curl: (6) Could not resolve host: {host}\n")
        return 6
    if t.outcome in ("refused", "no-route"):
        if not silent:
            await ctx.err(f"curl: (7) Failed to connect to {host} port {port} after 0 ms: Couldn't connect to "
                          "server\n")
        return 7
    if t.outcome == "timeout":
        limit = max_time if max_time is not None else KERNEL_CONNECT_TIMEOUT
        await _wait(limit)
        await ctx.err(f"curl: (28) Failed to connect to {host} port {port} after {int(limit * 1000)} ms: "
                      "Timeout was reached\n")
        return 28
    reply = t.reply
    status = reply.status if reply is not None else None
    if status is None:
        await ctx.err("curl: (52) Empty reply from server\n")
        return 52
    body = reply.body if reply is not None else ""
    out = o.get("-o") or o.get("--output")
    if method == "HEAD":
        await ctx.out(f"HTTP/1.1 {status} {HTTP_REASONS.get(status, '')}\r\n\r\n")
    elif out != "/dev/null":
        await ctx.out(body)
    fmt = o.get("-w") or o.get("--write-out")
    if fmt:
        await ctx.out(fmt.replace("%{http_code}", str(status)).replace("\\n", "\n"))
    return 0


@register("nslookup")
async def nslookup(ctx: Ctx, argv: list[str]) -> int:
    from ..dns.resolver import resolve
    from ..network import dns_reachable

    args = [a for a in argv[1:] if not a.startswith("-")]
    qtype = next((a.split("=", 1)[1].upper() for a in argv[1:] if a.startswith("-type=") or a.startswith("-q=")),
                 "A")
    if not args:
        await ctx.err("BusyBox v1.36.1 (2023-05-18 22:34:17 UTC) multi-call binary.\n\n"
                      "Usage: nslookup [-type=QUERY_TYPE]"
                      " [-debug] HOST [DNS_SERVER]\n")
        return 1

    def reachable(ip: str, port: int, protocol: str) -> bool:
        return bool(dns_reachable(ctx.state, ctx.pod, ip, port, protocol)[0])

    res = resolve(ctx.state, ctx.pod, args[0], qtype, mode="busybox-nslookup", reachable=reachable)
    if not any(q.answer is not None for q in res.queries):
        await _wait(RESOLVER_TIMEOUT)
    await ctx.out("\n".join(res.messages) + "\n")
    return 0 if res.ok else 1
