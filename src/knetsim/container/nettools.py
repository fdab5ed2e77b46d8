"""``wget``, ``nc``, ``curl``, ``nslookup`` for the simulated shell, answered by the core's trace.

Messages and exit codes are busybox 1.36's (curl 8's for curl). The trace outcome decides:

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

A request a pod answers is reported to ``ctx.served`` (the server's access log). Options busybox
(or curl) has but knetsim does not imitate are refused by name; unknown ones get the tool's own
complaint.
"""

from __future__ import annotations

import asyncio
import dataclasses
import posixpath
import re
import time
from collections.abc import Mapping
from email.utils import formatdate
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

from ..model.names import is_ip
from ..network.netexec import exit_request, raw_tcp_answer, shell_command, shell_reply, udp_answer
from ..network.trace import KERNEL_CONNECT_TIMEOUT, RESOLVER_TIMEOUT
from ..network.wire import header_lines
from .accesslog import Served
from .applets import options, usage
from .podfs import FsError
from .shell import Ctx, ToolError, register

# nginx's own reason phrases where they differ from the RFC's (the ingress controller's answers).
NGINX_REASONS = {503: "Service Temporarily Unavailable", 504: "Gateway Time-out", 308: "Permanent Redirect"}
WGET_USER_AGENT = "Wget"
DEFAULT_CURL_VERSION = "8.5.0"


def reason(status: int) -> str:
    if status in NGINX_REASONS:
        return NGINX_REASONS[status]
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def response_headers(reply: Any, *, keep_alive: bool = True) -> list[tuple[str, str]]:
    """The reply's header lines as the server sends them (Content-Length added). A proxy's own answer (the
    ingress controller's nginx, Envoy) has its writer's lines, Date included (``network.wire``)."""
    if getattr(reply, "writer", ""):
        return header_lines(reply, formatdate(usegmt=True), keep_alive=keep_alive)
    headers = [(k.title(), str(v)) for k, v in reply.headers.items() if k.lower() != "content-length"]
    headers.append(("Content-Length", str(len(reply.body.encode()))))
    return headers


def trace_request(ctx: Ctx, url: str, *, protocol: str = "TCP", method: str = "GET",
                  headers: Mapping[str, str] | None = None) -> Any:
    from ..network.trace import TraceInputError
    from ..network.tracer import trace

    try:
        t = trace(ctx.state, source=ctx.source, target=url, protocol=protocol, method=method,
                  headers=dict(headers or {}), balancer=ctx.balancer)
    except TraceInputError:
        # No host a resolver could be asked about (`wget /`, `wget http://[`): busybox's words.
        host = url.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0] if "://" in url else url
        raise ToolError(f"bad address '{host}'") from None
    if ctx.observed is not None:
        ctx.observed(t)
    return t


async def http_trace(ctx: Ctx, url: str, *, protocol: str = "TCP", method: str = "GET",
                     headers: Mapping[str, str] | None = None) -> Any:
    """``trace_request``, then what needs the reached pod's shell: agnhost netexec's ``/shell?cmd=`` runs the
    command in that pod (through the kubelet; where none runs pods it stays netexec's "not simulated")."""
    t = trace_request(ctx, url, protocol=protocol, method=method, headers=headers)
    command = shell_command(ctx.state, t, url) if ctx.peer_shell is not None else None
    if command is not None and ctx.peer_shell is not None:
        output, code = await ctx.peer_shell(t.backend.pod, command)
        t = dataclasses.replace(t, reply=shell_reply(output, code))
    exit_code = exit_request(ctx.state, t, url) if ctx.peer_exit is not None else None
    if exit_code is not None and ctx.peer_exit is not None:
        # netexec's /exit ends its process: the kubelet sees its container exit with that code.
        ctx.peer_exit(t.backend.pod, t.backend.port, exit_code)
    return t


def report_served(ctx: Ctx, t: Any, method: str, url: str, headers: Mapping[str, str]) -> None:
    """Tell the server's access log about a request a pod answered."""
    if ctx.served is None or t.outcome != "connected" or t.backend is None or t.reply is None \
            or t.reply.status is None:
        return
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lower = {k.lower(): v for k, v in headers.items()}
    ctx.served(Served(t.backend.pod, t.backend.port, t.backend.client_ip or ctx.pod.pod_ip or "", method, target,
                      t.reply.status,
                      len(t.reply.body.encode()), lower.get("user-agent", ""), lower.get("referer", ""),
                      lower.get("x-forwarded-for", "")))


def resolved_ip(t: Any, host: str) -> str:
    for hop in t.hops:
        if hop.layer != "dns":
            continue
        for q in (hop.data or {}).get("queries") or []:
            for rr in (q.get("response") or {}).get("answer") or []:
                if rr.get("type") == "A":
                    return str(rr["data"])
    return host


def split_url(url: str) -> tuple[str, str, int, str]:
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


def _write_file(ctx: Ctx, name: str, body: str) -> str | None:
    assert ctx.fs is not None
    try:
        ctx.fs.write(ctx.path(name), body)
    except FsError as exc:
        return exc.strerror_text
    return None


# --- wget -----------------------------------------------------------------------------------


@register("wget")
async def wget(ctx: Ctx, argv: list[str]) -> int:
    parsed = await options(ctx, "wget", argv[1:], "cqSO:o:P:Y:U:T:t:n:",
                           ["continue", "quiet", "server-response", "output-document=", "output-file=",
                            "directory-prefix=", "proxy=", "user-agent=", "timeout=", "tries=", "header=",
                            "post-data=", "spider", "no-check-certificate", "post-file=", "passive-ftp", "no-cache",
                            "no-verbose", "no-clobber", "no-host-directories", "no-parent"])
    if isinstance(parsed, int):
        return parsed
    opts, urls = parsed
    refused = [o for o, _ in opts if o in ("-c", "--continue", "-o", "--output-file", "-P", "--directory-prefix",
                                           "-Y", "--proxy", "--post-file")]
    if refused:
        await ctx.err(f"wget: option {refused[0]} is not simulated by knetsim\n")
        return 1
    quiet = any(o in ("-q", "--quiet") for o, _ in opts)
    show = any(o in ("-S", "--server-response") for o, _ in opts)
    spider = any(o == "--spider" for o, _ in opts)
    out_file = next((v for o, v in opts if o in ("-O", "--output-document")), None)
    timeout: float | None = None
    for o, v in opts:
        if o in ("-T", "--timeout"):
            try:
                timeout = float(v)
            except ValueError:
                await ctx.err(f"wget: invalid number '{v}'\n")
                return 1
    post = next((v for o, v in opts if o == "--post-data"), None)
    headers: dict[str, str] = {"User-Agent": next((v for o, v in opts if o in ("-U", "--user-agent")),
                                                  WGET_USER_AGENT)}
    for o, v in opts:
        if o == "--header" and ":" in v:
            name, _, value = v.partition(":")
            headers[name.strip()] = value.strip()
    if not urls:
        return await usage(ctx, "wget")
    code = 0
    for url in urls:
        code = await _wget_one(ctx, url, quiet, show, spider, out_file, timeout, headers,
                               "POST" if post is not None else "GET")
        if code:
            return code
    return code


async def _wget_one(ctx: Ctx, raw_url: str, quiet: bool, show: bool, spider: bool, out_file: str | None,
                    timeout: float | None, headers: dict[str, str], method: str) -> int:
    url = raw_url if "://" in raw_url else f"http://{raw_url}"
    scheme, host, port, path = split_url(url)
    if scheme not in ("http", "https"):
        await ctx.err(f"wget: not an http or ftp url: {raw_url}\n")
        return 1
    t = await http_trace(ctx, url, method=method, headers=headers)
    ip = resolved_ip(t, host)
    if t.outcome in ("nxdomain", "dns-timeout"):
        if t.outcome == "dns-timeout":
            await _wait(RESOLVER_TIMEOUT)
        await ctx.err(f"wget: bad address '{host}'\n")
        return 1
    if not quiet:
        await ctx.err(f"Connecting to {host}{'' if port == (443 if scheme == 'https' else 80) else f':{port}'} "
                      f"({ip}:{port})\n")
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
    if status is None:
        # Connected to something that does not speak HTTP: nothing comes back until the timeout.
        await _wait(timeout if timeout is not None else 900)
        await ctx.err("wget: download timed out\n")
        return 1
    report_served(ctx, t, method, url, headers)
    if show:
        await ctx.err(f"  HTTP/1.1 {status} {reason(status)}\n" +
                      "".join(f"  {k}: {v}\n" for k, v in response_headers(reply)))
    if status >= 400:
        await ctx.err(f"wget: server returned error: HTTP/1.1 {status} {reason(status)}\n")
        return 1
    if spider:
        if not quiet:
            await ctx.err("remote file exists\n")
        return 0
    body = reply.body if reply is not None else ""
    if out_file == "-":
        if not quiet:
            await ctx.err("writing to stdout\n")
        await ctx.out(body)
        if not quiet:
            await ctx.err("written to stdout\n")
        return 0
    name = out_file or (posixpath.basename(path.split("?", 1)[0]) or "index.html")
    if not quiet:
        await ctx.err(f"saving to '{name}'\n")
    problem = _write_file(ctx, name, body)
    if problem is not None:
        await ctx.err(f"wget: can't open '{name}': {problem}\n")
        return 1
    if not quiet:
        await ctx.err(f"'{name}' saved\n")
    return 0


# --- nc ---------------------------------------------------------------------------------------


@register("nc")
async def nc(ctx: Ctx, argv: list[str]) -> int:
    # -t (answer telnet negotiation) changes nothing for a server that does not negotiate, as none here does.
    parsed = await options(ctx, "nc", argv[1:], "46CDFLNRSXa:b:c:e:f:g:hi:lnp:rs:tuvw:z",
                           simulated="nuvwz46t")
    if isinstance(parsed, int):
        return parsed
    opts, args = parsed
    flags = {o for o, _ in opts}
    wait = next((float(v) for o, v in opts if o == "-w" and re.fullmatch(r"\d+(\.\d+)?", v)), None)
    if len(args) < 2:
        return await usage(ctx, "nc")
    if not args[1].isdigit():
        await ctx.err(f"nc: bad port spec '{args[1]}'\n")
        return 1
    host, port = args[0], int(args[1])
    proto = "UDP" if "-u" in flags else "TCP"
    request = b""
    if "-z" not in flags and ctx.stdin is not None:
        request = await ctx.stdin.all()
    method, path, headers = _parse_request(request)
    url = f"http://{host}:{port}{path}" if method else f"{host}:{port}"
    t = await http_trace(ctx, url, protocol=proto, method=method or "GET", headers=headers)
    ip = resolved_ip(t, host)
    verbose = "-v" in flags
    if t.outcome in ("nxdomain", "dns-timeout"):
        if t.outcome == "dns-timeout":
            await _wait(RESOLVER_TIMEOUT)
        await ctx.err(f"nc: bad address '{host}'\n")
        return 1
    if t.outcome == "connected":
        if verbose:
            await ctx.err(f"{host} ({ip}:{port}) open\n")
        if method and t.reply is not None and t.reply.status is not None:
            report_served(ctx, t, method, url, headers)
            reply = t.reply
            lines = response_headers(reply, keep_alive=False)
            if not getattr(reply, "writer", ""):
                lines.append(("Connection", "close"))
            head = f"HTTP/1.1 {reply.status} {reason(reply.status)}\r\n" + "".join(
                f"{k}: {v}\r\n" for k, v in lines) + "\r\n"
            await ctx.out(head + (reply.body if method != "HEAD" else ""))
        elif proto == "UDP" and request and (answer := udp_answer(ctx.state, t, request.decode(errors="replace"))):
            await ctx.out(answer)  # a UDP server that answers datagrams (agnhost netexec's hostname, echo)
        elif proto == "TCP" and "-z" not in flags and (answer := raw_tcp_answer(ctx.state, t, request)):
            await ctx.out(answer)  # serve-hostname --tcp's hostname; a Go server's 400 to what is not HTTP
        elif request and wait is not None:
            await _wait(wait)  # a request the app does not answer: nc waits out -w of idle
        return 0
    if t.outcome == "timeout":
        await _wait(wait if wait is not None else KERNEL_CONNECT_TIMEOUT)
        await ctx.err("nc: timeout\n" if wait is not None else f"nc: {host} ({ip}:{port}): Connection timed out\n")
        return 1
    what = "Connection refused" if t.outcome == "refused" else "Host is unreachable"
    await ctx.err(f"nc: {host} ({ip}:{port}): {what}\n")
    return 1


def _parse_request(data: bytes) -> tuple[str, str, dict[str, str]]:
    """An HTTP request typed into nc (``printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc web 80``), if it is one."""
    text = data.decode(errors="replace")
    m = re.match(r"([A-Z]+) (\S+) HTTP/1\.[01]\r?\n", text)
    if m is None:
        return "", "/", {}
    headers = {}
    for line in text[m.end():].splitlines():
        if not line.strip():
            break
        name, _, value = line.partition(":")
        headers[name.strip()] = value.strip()
    return m.group(1), m.group(2), headers


# --- curl ---------------------------------------------------------------------------------------

CURL_LONG = ["silent", "show-error", "fail", "fail-with-body", "output=", "remote-name", "write-out=", "head",
             "include", "max-time=", "connect-timeout=", "header=", "request=", "location", "verbose", "insecure",
             "data=", "data-raw=", "data-binary=", "user-agent=", "referer=", "ipv4", "ipv6", "http1.1",
             "http1.0", "http2", "retry=", "retry-delay=", "retry-max-time=", "compressed", "no-progress-meter",
             "progress-bar", "resolve=", "proxy=", "noproxy=", "cacert=", "cert=", "key=", "user=", "form=",
             "get", "globoff", "trace=", "trace-ascii=", "unix-socket=", "interface=", "limit-rate=",
             "max-redirs=", "dump-header=", "stderr=", "url=", "disable"]
# curl's options that knetsim runs; the others of CURL_LONG are refused by name.
CURL_SIMULATED = {"-s", "--silent", "-S", "--show-error", "-f", "--fail", "--fail-with-body", "-o", "--output",
                  "-O", "--remote-name", "-w", "--write-out", "-I", "--head", "-i", "--include", "-m",
                  "--max-time", "--connect-timeout", "-H", "--header", "-X", "--request", "-L", "--location",
                  "-v", "--verbose", "-k", "--insecure", "-d", "--data", "--data-raw", "--data-binary", "-A",
                  "--user-agent", "-e", "--referer", "-4", "--ipv4", "-6", "--ipv6", "--http1.1", "--http1.0",
                  "--no-progress-meter", "--compressed", "-G", "--get", "--max-redirs", "--url", "-g", "--globoff",
                  # -q only stops curl reading ~/.curlrc, which a container does not have.
                  "-q", "--disable", "--interface"}
CURL_EXIT_TEXT = {6: "Could not resolve host", 7: "Couldn't connect to server", 22: "HTTP response code said error",
                  28: "Timeout was reached", 47: "Number of redirects hit maximum amount", 52: "Server returned "
                  "nothing (no headers, no data)"}


def curl_version(ctx: Ctx) -> str:
    for c in ctx.pod.raw.get("spec", {}).get("containers") or []:
        if c.get("name") == ctx.container:
            m = re.search(r"curl:(\d+\.\d+\.\d+)", str(c.get("image") or ""))
            if m:
                return m.group(1)
    return DEFAULT_CURL_VERSION


@register("curl")
async def curl(ctx: Ctx, argv: list[str]) -> int:
    try:
        import getopt

        opts, urls = getopt.gnu_getopt(argv[1:], "qsSfo:Ow:Iim:H:X:Lvkd:e:46GgA:u:F:x:D:", CURL_LONG)
    except getopt.GetoptError as exc:
        opt = exc.opt
        prefix = "--" if len(opt) > 1 else "-"
        if "requires argument" in exc.msg:
            await ctx.err(f"curl: option {prefix}{opt}: requires parameter\n")
        else:
            await ctx.err(f"curl: option {prefix}{opt}: is unknown\n")
        await ctx.err("curl: try 'curl --help' or 'curl --manual' for more information\n")
        return 2
    for o, _ in opts:
        if o not in CURL_SIMULATED:
            await ctx.err(f"curl: option {o} is not simulated by knetsim\n")
            return 2
    o = {k: v for k, v in opts}
    urls += [v for k, v in opts if k == "--url"]
    silent = "-s" in o or "--silent" in o
    show_error = ("-S" in o or "--show-error" in o) or not silent
    fail = "-f" in o or "--fail" in o
    head = "-I" in o or "--head" in o
    include = "-i" in o or "--include" in o
    verbose = "-v" in o or "--verbose" in o
    follow = "-L" in o or "--location" in o
    max_time = connect_timeout = None
    for k, v in opts:
        try:
            if k in ("-m", "--max-time"):
                max_time = float(v)
            elif k == "--connect-timeout":
                connect_timeout = float(v)
        except ValueError:
            await ctx.err(f"curl: option {k}: expected a proper numerical parameter\n")
            return 2
    data = next((v for k, v in opts if k in ("-d", "--data", "--data-raw", "--data-binary")), None)
    headers = {"User-Agent": f"curl/{curl_version(ctx)}", "Accept": "*/*"}
    for k, v in opts:
        if k in ("-H", "--header") and ":" in v:
            name, _, value = v.partition(":")
            headers[name.strip()] = value.strip()
        elif k in ("-A", "--user-agent"):
            headers["User-Agent"] = v
        elif k in ("-e", "--referer"):
            headers["Referer"] = v
    method = o.get("-X") or o.get("--request") or ("HEAD" if head else "POST" if data is not None else "GET")
    interface = o.get("--interface")
    if interface in ("lo", "127.0.0.1", "::1"):
        await ctx.err(f"curl: option --interface {interface} is not simulated by knetsim\n")
        return 2
    if interface is not None and interface not in _own_interfaces(ctx):
        # curl binds its socket before connecting: a name or address the pod does not have fails there
        # (lib/cf-socket.c: an unknown interface name, or bind()'s EADDRNOTAVAIL for a foreign address).
        text = (f"Couldn't bind to '{interface}'" if not re.fullmatch(r"[0-9a-fA-F.:]+", interface)
                else "bind failed with errno 99: Cannot assign requested address")
        return await _curl_error(ctx, show_error, 45, text)
    if not urls:
        await ctx.err("curl: no URL specified\ncurl: try 'curl --help' or 'curl --manual' for more information\n")
        return 2
    code = 0
    for raw in urls:
        started = time.monotonic()
        code = await _curl_one(ctx, raw, o, method, headers, silent, show_error, fail, head, include, verbose,
                               follow, max_time, connect_timeout, started)
    return code


def _own_interfaces(ctx: Ctx) -> set[str]:
    """What ``curl --interface`` may name in a pod to leave from its own address (the one a trace starts from):
    its interface eth0 or one of its IPs."""
    pod = ctx.pod
    return {"eth0", *(ip for ip in (pod.pod_ip, *pod.pod_ips) if ip)}


async def _curl_error(ctx: Ctx, show: bool, code: int, text: str) -> int:
    if show:
        await ctx.err(f"curl: ({code}) {text}\n")
    return code


async def _curl_one(ctx: Ctx, raw: str, o: dict[str, str], method: str, headers: dict[str, str], silent: bool,
                    show_error: bool, fail: bool, head: bool, include: bool, verbose: bool, follow: bool,
                    max_time: float | None, connect_timeout: float | None, started: float) -> int:
    url = raw if "://" in raw else f"http://{raw}"
    redirects = 0
    while True:
        scheme, host, port, path = split_url(url)
        if scheme not in ("http", "https"):
            return await _curl_error(ctx, show_error, 1, f'Protocol "{scheme}" not supported')
        t = await http_trace(ctx, url, method=method, headers=headers)
        ip = resolved_ip(t, host)
        limit = min(x for x in (max_time, connect_timeout) if x is not None) if (max_time or connect_timeout) \
            else None
        if t.outcome in ("nxdomain", "dns-timeout"):
            if t.outcome == "dns-timeout":
                await _wait(min(RESOLVER_TIMEOUT, limit) if limit is not None else RESOLVER_TIMEOUT)
                if limit is not None and limit < RESOLVER_TIMEOUT:
                    return await _curl_error(ctx, show_error, 28,
                                             f"Resolving timed out after {int(limit * 1000)} milliseconds")
            return await _curl_error(ctx, show_error, 6, f"Could not resolve host: {host}")
        if verbose:
            await ctx.err(f"*   Trying {ip}:{port}...\n")
        if t.outcome in ("refused", "no-route"):
            elapsed = int((time.monotonic() - started) * 1000)
            return await _curl_error(ctx, show_error, 7, f"Failed to connect to {host} port {port} after {elapsed} "
                                                         "ms: Couldn't connect to server")
        if t.outcome == "timeout":
            wait = limit if limit is not None else KERNEL_CONNECT_TIMEOUT
            await _wait(wait)
            return await _curl_error(ctx, show_error, 28, f"Failed to connect to {host} port {port} after "
                                                          f"{int(wait * 1000)} ms: Timeout was reached")
        reply = t.reply
        if reply is None or reply.status is None:
            if verbose:
                await ctx.err(f"* Connected to {host} ({ip}) port {port}\n")
            if limit is not None:
                await _wait(limit)
                return await _curl_error(ctx, show_error, 28, f"Operation timed out after {int(limit * 1000)} "
                                                              "milliseconds with 0 bytes received")
            return await _curl_error(ctx, show_error, 52, "Empty reply from server")
        report_served(ctx, t, method, url, headers)
        status = reply.status
        head_lines = [f"HTTP/1.1 {status} {reason(status)}"] + [f"{k}: {v}" for k, v in response_headers(reply)]
        if verbose:
            request_lines = [f"{method} {urlsplit(url).path or '/'} HTTP/1.1", f"Host: {host}" + (
                f":{port}" if port not in (80, 443) else "")] + [f"{k}: {v}" for k, v in headers.items()]
            await ctx.err(f"* Connected to {host} ({ip}) port {port}\n" + "".join(f"> {x}\r\n" for x in
                                                                                    request_lines) + "> \r\n" +
                          "".join(f"< {x}\r\n" for x in head_lines) + "< \r\n")
        location = next((v for k, v in reply.headers.items() if k.lower() == "location"), None)
        if follow and location and 300 <= status < 400:
            redirects += 1
            if redirects > 50:
                return await _curl_error(ctx, show_error, 47, "Maximum (50) redirects followed")
            url = location if "://" in location else f"{scheme}://{host}:{port}{location}"
            continue
        if fail and status >= 400 and "--fail-with-body" not in o:
            return await _curl_error(ctx, show_error, 22, f"The requested URL returned error: {status}")
        out_name = o.get("-o") or o.get("--output")
        if "-O" in o or "--remote-name" in o:
            out_name = posixpath.basename(path.split("?", 1)[0])
            if not out_name:
                return await _curl_error(ctx, show_error, 23, "Failure writing output to destination")
        body = "" if method == "HEAD" else reply.body
        text = ("\r\n".join(head_lines) + "\r\n\r\n" if head or include else "") + body
        if out_name and out_name != "-":
            problem = _write_file(ctx, out_name, text)
            if problem is not None:
                return await _curl_error(ctx, show_error, 23, f"Failure writing output to destination, passed "
                                                              f"{len(text)} returned 0")
        else:
            await ctx.out(text)
        fmt = o.get("-w") or o.get("--write-out")
        if fmt:
            await ctx.out(_write_out(ctx, fmt, status, reply, url, ip, port, started))
        if verbose:
            await ctx.err(f"* Connection #0 to host {host} left intact\n")
        if "--fail-with-body" in o and status >= 400:
            return await _curl_error(ctx, show_error, 22, f"The requested URL returned error: {status}")
        return 0


def _write_out(ctx: Ctx, fmt: str, status: int, reply: Any, url: str, ip: str, port: int, started: float) -> str:
    elapsed = f"{time.monotonic() - started:.6f}"
    content_type = next((v for k, v in reply.headers.items() if k.lower() == "content-type"), "")
    values = {"http_code": str(status), "response_code": str(status), "size_download": str(len(reply.body.encode())),
              "remote_ip": ip, "remote_port": str(port), "url_effective": url, "content_type": content_type,
              "exitcode": "0", "errormsg": "", "http_version": "1.1", "num_redirects": "0", "scheme": "HTTP",
              "time_total": elapsed, "time_connect": elapsed, "time_namelookup": elapsed,
              "time_starttransfer": elapsed}
    fmt = fmt.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")

    def sub(m: re.Match[str]) -> str:
        return values.get(m.group(1), "")
    return re.sub(r"%\{([a-z_]+)\}", sub, fmt)


# --- nslookup -------------------------------------------------------------------------------------


@register("nslookup")
async def nslookup(ctx: Ctx, argv: list[str]) -> int:
    from ..dns.resolver import resolve
    from ..network.connect import dns_reachable

    args, qtype = [], ""
    for a in argv[1:]:
        if a.startswith("-type=") or a.startswith("-query=") or a.startswith("-q="):
            qtype = a.split("=", 1)[1].upper()
        elif a in ("-debug", "-nodebug") or re.fullmatch(r"-(timeout|retry)=\d+", a):
            continue
        elif a.startswith("-"):
            await ctx.err(f"nslookup: option {a} is not simulated by knetsim\n" if re.fullmatch(
                r"-(port|domain|novc|vc|class)=?.*", a) else f"nslookup: invalid option -- '{a[1:2]}'\n")
            return 1
        else:
            args.append(a)
    if not args:
        return await usage(ctx, "nslookup")
    if len(args) > 1:
        from ..dns.resolver import resolv_conf

        servers = {*resolv_conf(ctx.state, ctx.pod).nameservers, ctx.state.config.dns_service_ip}
        if args[1] not in servers:
            await ctx.err(f"nslookup: asking {args[1]} instead of the pod's nameserver is not simulated by "
                          "knetsim\n")
            return 1

    def reachable(ip: str, port: int, protocol: str) -> bool:
        return bool(dns_reachable(ctx.state, ctx.pod, ip, port, protocol)[0])

    # Without -type, busybox 1.36 asks PTR for an address, else A and then AAAA, and prints every
    # reply: a dual-stack Service shows both ClusterIPs, a single-stack one an empty AAAA answer.
    qtypes = [qtype] if qtype else ["PTR"] if is_ip(args[0]) else ["A", "AAAA"]
    results = [resolve(ctx.state, ctx.pod, args[0], t, mode="busybox-nslookup", reachable=reachable)
               for t in qtypes]
    if ctx.observed is not None:
        for res in results:
            ctx.observed(res)
    if not any(q.answer is not None for res in results for q in res.queries):
        await _wait(RESOLVER_TIMEOUT)
        await ctx.out("\n".join(results[0].messages) + "\n")
        return 1
    # The server is named once, before the first reply; each reply follows in the order asked.
    served = next(res for res in results if any(q.answer is not None for q in res.queries))
    lines = [*served.messages[:3], *(line for res in results for line in res.messages[3:])]
    await ctx.out("\n".join(lines) + "\n")
    return 0 if any(res.ok for res in results) else 1

