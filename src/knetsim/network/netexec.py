"""agnhost netexec's answers that reach further than its own pod: ``/dial`` and its UDP server.

``/dial?request=R&protocol=P&host=H&port=N&tries=T`` makes T requests from netexec's pod to H:N and answers JSON
``{"errors": [...], "responses": [...]}`` (test/images/agnhost/netexec/netexec.go, dialHandler): it is how
Kubernetes' network e2e tests check pod-to-pod and pod-to-Service reachability (test/e2e/framework/network/utils.go
DialFromContainer). Its quirks are kept: "responses" is written only when the *last* try answered, and the status is
200 whatever the tries gave; a missing ``request`` or a bad ``tries`` or ``protocol`` is a 400.

The UDP server answers ``hostname`` (and the older ``hostName``) with the pod's name, ``echo MSG`` with MSG and
``clientip`` with the client's address; anything else gets no answer.

Each try is one more traced connection, from netexec's pod, through the same layers as any other.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable, Mapping, Sequence
from html import escape
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

from ..cluster.state import ClusterState
from ..model.objects import Pod
from ..model.programs import Program, program_of
from .trace import Reply, Trace

# (url, protocol) → the trace of one connection from netexec's pod.
Dial = Callable[[str, str], Trace]


def serves_netexec(state: ClusterState, pod_key: str, port: int, protocol: str) -> bool:
    pod = state.pods.get(pod_key)
    if pod is None:
        return False
    return any((p := program_of(c)) is not None and p.name == "agnhost netexec" and (port, protocol) in p.ports
               for c in pod.containers)


def pod_hostname(pod: Pod) -> str:
    """What os.Hostname() gives inside the pod: spec.hostname, else the pod's name (the kubelet cuts it to 63)."""
    return (pod.hostname or pod.name)[:63]


def _program_on(pod: Pod, port: int, protocol: str) -> Program | None:
    for container in pod.containers:
        program = program_of(container)
        if program is not None and (port, protocol) in program.ports:
            return program
    return None


def udp_answer(state: ClusterState, trace: Trace, request: str) -> str | None:
    """What the backend a UDP trace reached answers to ``request`` (None: nothing comes back).

    netexec lower-cases and trims the datagram first (startUDPServer), so ``echo Hi`` answers ``hi``;
    serve-hostname --udp answers any datagram with the hostname; porter has no UDP server."""
    return _message_answer(state, trace, request, "UDP")


def sctp_answer(state: ClusterState, trace: Trace, request: str) -> str | None:
    """What the backend an SCTP trace reached writes back to ``request`` on the association (None: nothing).
    Only netexec serves SCTP among the known programs (``--sctp-port``; startSCTPServer answers the UDP
    server's commands: hostname, echo, clientip)."""
    return _message_answer(state, trace, request, "SCTP")


def _message_answer(state: ClusterState, trace: Trace, request: str, protocol: str) -> str | None:
    backend = trace.backend
    if trace.outcome != "connected" or backend is None or backend.pod not in state.pods:
        return None
    pod = state.pods[backend.pod]
    program = _program_on(pod, backend.port, protocol)
    if program is None:
        return None
    if program.name in ("agnhost serve-hostname", "serve_hostname"):
        return pod_hostname(pod)
    if program.name == "agnhost porter":
        return _porter_value(pod, "SERVE_UDP_PORT_", backend.port)
    if program.name != "agnhost netexec":
        return None
    command = request.strip().lower()
    if command == "hostname":
        return pod_hostname(pod)
    if command.startswith("echo "):
        return command[len("echo "):]
    if command == "clientip":
        return client_address(backend.client_ip)
    return None


def client_address(ip: str) -> str:
    """The client's ``ip:port`` as Go's RemoteAddr writes it (IPv6 in brackets)."""
    return f"[{ip}]:{_client_port(ip)}" if ":" in ip else f"{ip}:{_client_port(ip)}"


def tcp_banner(state: ClusterState, trace: Trace) -> str | None:
    """What a raw TCP server writes as soon as a client connects (serve-hostname --tcp: the hostname, then
    it closes, serve_hostname.go), None for servers that wait for a request."""
    backend = trace.backend
    if trace.outcome != "connected" or backend is None or backend.pod not in state.pods:
        return None
    pod = state.pods[backend.pod]
    program = _program_on(pod, backend.port, "TCP")
    if program is not None and raw_tcp(program):
        return pod_hostname(pod)
    return None


def raw_tcp(program: Program) -> bool:
    """serve-hostname run with --tcp (or serve_hostname -tcp) speaks raw TCP on its port, not HTTP."""
    if program.name not in ("agnhost serve-hostname", "serve_hostname"):
        return False
    args = program.argv
    return any(a in ("--tcp", "-tcp", "--tcp=true", "-tcp=true") for a in args) and not any(
        a in ("--http=true", "-http=true") for a in args)


_STARTED = time.monotonic()
# The top of agnhost's image (a distroless-like base with busybox): what test-webserver lists for "/".
_ROOT_DIRS = ("bin", "dev", "etc", "home", "lib", "proc", "root", "sys", "tmp", "usr", "var")


# liveness.go: /healthz is healthy for this long after the server starts, then answers 500 for good.
LIVENESS_HEALTHY_SECONDS = 10.0


def _running_for(pod: Pod, program: Program) -> float | None:
    """Seconds since the container running ``program`` last started (its status' running.startedAt); None when
    the pod has no such status (offline manifests: such a server is taken as just started)."""
    statuses = (pod.raw.get("status") or {}).get("containerStatuses") or []
    for container in pod.containers:
        if program_of(container) != program:
            continue
        status = next((s for s in statuses if s.get("name") == container.name), None)
        started = (((status or {}).get("state") or {}).get("running") or {}).get("startedAt")
        if not started:
            return None
        try:
            when = dt.datetime.fromisoformat(str(started).replace("Z", "+00:00"))
        except ValueError:
            return None
        return max(0.0, (dt.datetime.now(dt.UTC) - when).total_seconds())
    return None


def _porter_value(pod: Pod, prefix: str, port: int) -> str | None:
    return next((c.env[f"{prefix}{port}"] for c in pod.containers if f"{prefix}{port}" in c.env), None)


def _porter_json(argv: Sequence[str]) -> bool:
    """porter's --json-response, a cobra bool flag: ``--json-response``, ``--json-response=true``."""
    for arg in argv:
        if arg == "--json-response":
            return True
        if arg.startswith("--json-response="):
            return arg.partition("=")[2].lower() in ("1", "t", "true")
    return False


def _go_now() -> str:
    # fmt's %v of time.Now(): wall clock, zone, then the monotonic reading Go appends ("m=+12.345678901").
    now = dt.datetime.now(dt.UTC)
    return f"{now:%Y-%m-%d %H:%M:%S.%f}000 +0000 UTC m=+{time.monotonic() - _STARTED:.9f}"


def _text(status: int, body: str, extra: Mapping[str, str] | None = None) -> Reply:
    # Go's net/http sniffs a handler's first bytes when it set no Content-Type (http.DetectContentType); an empty
    # body gets no Content-Type at all.
    headers = {"content-type": sniff_content_type(body)} if body else {}
    return Reply(status, body, {**headers, **(extra or {})})


# net/http/sniff.go's HTML signatures: after leading whitespace, one of these (ASCII case-insensitive) followed by
# a space or ">" is HTML.
_HTML_SIGNATURES = ("<!DOCTYPE HTML", "<HTML", "<HEAD", "<SCRIPT", "<IFRAME", "<H1", "<DIV", "<FONT", "<TABLE", "<A",
                    "<STYLE", "<TITLE", "<B", "<BODY", "<BR", "<P", "<!--")


def sniff_content_type(body: str) -> str:
    """http.DetectContentType for the text a Go handler writes: HTML, XML, else UTF-8 text (a simulated server
    writes no binary)."""
    data = body.lstrip("\t\n\x0c\r ")
    upper = data[:16].upper()
    for signature in _HTML_SIGNATURES:
        if upper.startswith(signature) and data[len(signature):len(signature) + 1] in (" ", ">"):
            return "text/html; charset=utf-8"
    if data.startswith("<?xml"):
        return "text/xml; charset=utf-8"
    return "text/plain; charset=utf-8"


def serves_tls(pod: Pod, port: int) -> bool | None:
    """Does the agnhost server on ``port`` of ``pod`` speak TLS (porter's ``SERVE_TLS_PORT_<n>``)? False for
    agnhost's plain HTTP servers, None when knetsim does not know what serves the port."""
    program = _program_on(pod, port, "TCP")
    if program is None:
        return None
    if program.name == "agnhost porter":
        return _porter_value(pod, "SERVE_TLS_PORT_", port) is not None
    if program.name in ("agnhost netexec", "agnhost serve-hostname", "agnhost liveness", "agnhost test-webserver"):
        return False
    return None


def agnhost_http(pod: Pod, port: int, method: str, path: str, client_ip: str,
                 headers: Mapping[str, str]) -> Reply | None:
    """The reply of an agnhost HTTP server on ``port`` of ``pod`` (netexec, serve-hostname, porter, test-webserver,
    liveness), in its own words; None when no agnhost HTTP server listens there.

    netexec (test/images/agnhost/netexec/netexec.go): ``/`` and every unknown path (Go's ServeMux falls back to "/")
    → ``NOW: <time.Now()>``; ``/hostname`` and ``/hostName`` → the hostname; ``/clientip`` → the client's ip:port;
    ``/echo?msg=&code=`` → msg with that status; ``/header?key=K`` → that request header (all of them as JSON
    without key); ``/healthz`` → 200 (the UDP server is up); ``/redirect?location=&code=`` → http.Redirect;
    ``/exit`` and ``/shutdown`` → an empty 200 (asked by a tool in a live pod, they also end netexec's
    container: ``exit_request``); ``/shell`` is 501 here: a tool in a live pod runs the command in netexec's pod
    instead (``shell_command``, ``shell_reply``; the trace alone has no shell to run it in). ``/dial`` is answered
    by the tracer (``dial``)."""
    program = _program_on(pod, port, "TCP")
    if program is None:
        return None
    url = urlsplit(path)
    query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
    if program.name in ("agnhost serve-hostname", "serve_hostname"):
        return None if raw_tcp(program) else _text(200, pod_hostname(pod))
    if program.name == "agnhost porter":
        # porter.go: every path answers the variable's value as it is (no newline); with --json-response, the
        # jsonResponse struct {Method, Body} as application/json, whatever the method (the proxy e2e tests'
        # check of each verb, test/e2e/network/proxy.go validateProxyVerbRequest).
        value = _porter_value(pod, "SERVE_PORT_", port) or _porter_value(pod, "SERVE_TCP_PORT_", port) \
            or _porter_value(pod, "SERVE_TLS_PORT_", port)
        if value is None:
            return None
        if _porter_json(program.argv):
            return Reply(200, _go_json({"Method": method, "Body": value}), {"content-type": "application/json"})
        return _text(200, value)
    if program.name == "agnhost test-webserver":
        # test-webserver.go: http.FileServer over the container's "/": a directory is listed as Go's dirList
        # writes it; a path the image does not have is Go's 404.
        extra = {"cache-control": "private", "access-control-allow-origin": "*"}
        if url.path == "/":
            listing = "".join(f'<a href="{d}/">{d}/</a>\n' for d in _ROOT_DIRS)
            return _text(200, f"<pre>\n{listing}</pre>\n", {**extra, "content-type": "text/html; charset=utf-8"})
        return _text(404, "404 page not found\n", {**extra, "x-content-type-options": "nosniff"})
    if program.name == "agnhost liveness":
        # liveness.go: /healthz answers "ok" for its first 10 s, then 500 "error: <seconds>" (by the container's
        # startedAt; with no status, as offline, it has just started); /started; no handler for "/" (Go's 404).
        if url.path == "/healthz":
            alive = _running_for(pod, program)
            if alive is not None and alive > LIVENESS_HEALTHY_SECONDS:
                # fmt's %v of a float64: the shortest text that reads back the same.
                return _text(500, f"error: {alive!r}")
            return _text(200, "ok")
        if url.path == "/started":
            return _text(200, f"{time.monotonic() - _STARTED:.6f}s")
        if url.path == "/redirect":
            return _redirect({"location": query.get("loc", ""), "code": "302"}, method)
        return _text(404, "404 page not found\n", {"x-content-type-options": "nosniff"})
    if program.name != "agnhost netexec":
        return None
    return _netexec_http(pod, url.path, query, method, client_ip, headers)


def _netexec_http(pod: Pod, route: str, query: dict[str, str], method: str, client_ip: str,
                  headers: Mapping[str, str]) -> Reply:
    if route in ("/hostname", "/hostName"):
        return _text(200, pod_hostname(pod))
    if route == "/clientip":
        return _text(200, client_address(client_ip))
    if route == "/healthz":
        return _text(200, "")
    if route == "/echo":
        msg, code = query.get("msg", ""), query.get("code", "")
        if code:
            if not code.lstrip("-").isdigit():
                return _text(200, f"argument 'code' must be an integer or empty, got {json.dumps(code)}\n")
            return _text(int(code), msg)
        return _text(200, msg)
    if route == "/header":
        key = query.get("key", "")
        if key:
            return _text(200, next((v for k, v in headers.items() if k.lower() == key.lower()), ""))
        canonical = {"-".join(p.capitalize() for p in k.split("-")): [v] for k, v in headers.items()}
        return _text(200, json.dumps(canonical, separators=(",", ":"), sort_keys=True))
    if route == "/redirect":
        return _redirect(query, method)
    if route == "/exit":
        # exitHandler's argument checks: a bad one is answered, and netexec goes on (os.Exit otherwise).
        code = query.get("code", "")
        if code and not code.lstrip("-").isdigit():
            return _text(200, f"argument 'code' must be an integer [0-127] or empty, got {json.dumps(code)}\n")
        return _text(200, "")
    if route == "/shutdown":
        return _text(200, "")
    if route == "/shell":
        return _text(501, "knetsim runs netexec's /shell commands only when a tool in a live pod asks\n")
    if route == "/upload":
        return _text(200, json.dumps({"error": "Unable to upload file."}, separators=(",", ":")))
    return _text(200, "NOW: " + _go_now())


def _redirect(query: dict[str, str], method: str) -> Reply:
    location, code_text = query.get("location", ""), query.get("code", "")
    code = 302
    if code_text:
        if not code_text.lstrip("-").isdigit():
            return _text(200, f"argument 'code' must be an integer or empty, got {json.dumps(code_text)}\n")
        code = int(code_text)
    # http.Redirect: a GET or HEAD gets a short HTML note naming the target; other methods an empty body.
    try:
        phrase = HTTPStatus(code).phrase
    except ValueError:
        phrase = ""
    body = f'<a href="{escape(location)}">{phrase}</a>.\n\n' if method in ("GET", "HEAD") else ""
    headers = {"location": location}
    if body:
        headers["content-type"] = "text/html; charset=utf-8"
    return Reply(code, body, headers)


def _client_port(ip: str) -> int:
    # An ephemeral port as Linux picks them (32768-60999), fixed per client so answers repeat.
    return 32768 + sum(ip.encode()) * 7919 % 28232


def dial(state: ClusterState, query: str, connect: Dial) -> tuple[int, str]:
    """(status, body) of ``/dial?QUERY`` on a netexec server whose pod ``connect`` dials from."""
    args = {k: v[0] for k, v in parse_qs(query, keep_blank_values=True).items()}
    request, protocol = args.get("request", ""), args.get("protocol", "").lower() or "http"
    tries_text = args.get("tries", "")
    if tries_text and not tries_text.lstrip("-").isdigit():
        return 400, f'tries parameter is invalid. strconv.Atoi: parsing "{tries_text}": invalid syntax\n'
    tries = int(tries_text) if tries_text else 1
    if not request:
        return 400, "request parameter not specified. <nil>\n"
    if protocol not in ("http", "udp", "sctp"):
        return 400, f"unsupported protocol. {protocol}\n"
    host, port = args.get("host", ""), args.get("port", "")
    if not port.isdigit():
        return 400, f'host and/or port param are invalid. lookup port "{port}": invalid port\n'
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    responses: list[str] = []
    errors: list[str] = []
    last = ""
    for _ in range(max(0, min(tries, 100))):
        answer, error = _one(state, protocol, target, request, connect)
        last = answer
        if error:
            errors.append(error)
        else:
            responses.append(answer)
    output: dict[str, list[str]] = {}
    if errors:
        output["errors"] = errors
    if last:
        output["responses"] = responses
    return 200, json.dumps(output, separators=(",", ":"), sort_keys=True)


def _one(state: ClusterState, protocol: str, target: str, request: str, connect: Dial) -> tuple[str, str]:
    """(answer, error) of one try, in dialHTTP's / dialUDP's words."""
    if protocol == "http":
        url = f"http://{target}/{request.lstrip('/')}"
        t = connect(url, "TCP")
        if t.outcome == "connected" and t.reply is not None and t.reply.status is not None:
            return t.reply.body, ""
        if t.outcome == "refused":
            return "", f'Get "{url}": dial tcp {target}: connect: connection refused'
        return "", f'Get "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
    if protocol == "sctp":
        # dialSCTP: an association (refused at once by an ABORT when nothing listens), the request written, one
        # read with a 5 s deadline.
        t = connect(target, "SCTP")
        if t.outcome == "refused":
            return "", "sctp dial failed. err:connection refused"
        if t.outcome != "connected":
            return "", "sctp dial failed. err:connection timed out"
        answer = sctp_answer(state, t, request)
        if answer:
            return answer, ""
        return "", "reading from sctp connection failed. err:'i/o timeout'"
    t = connect(f"udp://{target}", "UDP")
    answer = udp_answer(state, t, request)
    if answer:
        return answer, ""
    return "", f"reading from udp connection failed. err:'read udp {target}: i/o timeout'"


# Servers written in Go on net/http: to bytes that are not an HTTP request they answer net/http's own 400.
_GO_HTTP = frozenset({"agnhost netexec", "agnhost serve-hostname", "agnhost test-webserver", "agnhost liveness",
                      "agnhost porter", "serve_hostname", "http-echo", "whoami"})
# What net/http writes before closing a connection whose first line is not a request (server.go, on a
# malformed request line).
GO_BAD_REQUEST = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" \
                 "400 Bad Request"


def raw_tcp_answer(state: ClusterState, trace: Trace, data: bytes) -> str | None:
    """What a TCP server a trace reached writes back to ``data`` that is not an HTTP request (``echo hostName |
    nc HOST PORT``): serve-hostname --tcp's hostname on connect, Go's 400 from a net/http server; None for the
    rest (which wait for more, or that knetsim does not know)."""
    banner = tcp_banner(state, trace)
    if banner is not None:
        return banner
    backend = trace.backend
    if not data.strip() or backend is None or backend.pod not in state.pods:
        return None
    program = _program_on(state.pods[backend.pod], backend.port, "TCP")
    if program is not None and program.name in _GO_HTTP:
        return GO_BAD_REQUEST
    return None


def shell_command(state: ClusterState, trace: Trace, url: str) -> str | None:
    """The command of a ``/shell?cmd=`` (or ``shellCommand=``) request a trace delivered to netexec, else None."""
    backend = trace.backend
    if trace.outcome != "connected" or backend is None or not serves_netexec(state, backend.pod, backend.port, "TCP"):
        return None
    parts = urlsplit(url)
    if parts.path != "/shell":
        return None
    query = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
    return query.get("shellCommand") or query.get("cmd") or ""


def exit_request(state: ClusterState, trace: Trace, url: str) -> int | None:
    """The exit code of a ``/exit?code=N`` (or ``/shutdown``) request a trace delivered to netexec, else None:
    exitHandler (test/images/agnhost/netexec/netexec.go) calls os.Exit with ``code`` (empty: 0) before it
    answers (after ``wait``, and a graceful ``timeout``, which the simulation does not wait out); a code that is
    no integer is answered instead, and the server goes on; shutdownHandler exits 0."""
    backend = trace.backend
    if trace.outcome != "connected" or backend is None or not serves_netexec(state, backend.pod, backend.port, "TCP"):
        return None
    parts = urlsplit(url)
    if parts.path == "/shutdown":
        return 0  # shutdownHandler: os.Exit(0)
    if parts.path != "/exit":
        return None
    code = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}.get("code", "")
    if code == "":
        return 0
    if not code.lstrip("-").isdigit():
        return None
    # os.Exit's status reaches the parent as one byte, as a process's exit status does.
    return int(code) & 0xFF


def shell_reply(output: str, code: int) -> Reply:
    """shellHandler's answer: JSON of "output" (when any) and "error" (exec's "exit status N"), 200 either way
    (it writes the JSON with Fprint; only a failed Marshal would be a 417). Go's encoder escapes <, > and &."""
    result: dict[str, str] = {}
    if code != 0:
        result["error"] = f"exit status {code}"
    if output:
        result["output"] = output
    return Reply(200, _go_json(result, sort_keys=True), {"content-type": "text/plain; charset=utf-8"})


def _go_json(value: Mapping[str, str], sort_keys: bool = False) -> str:
    """``value`` as Go's json.Marshal writes it: compact, UTF-8 as it is, and <, >, &, U+2028 and U+2029 escaped
    (its HTML-safe default). A map's keys are sorted; a struct's fields keep their order (``sort_keys`` False)."""
    body = json.dumps(value, separators=(",", ":"), sort_keys=sort_keys, ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                          ("\u2029", "\\u2029")):
        body = body.replace(char, escaped)
    return body
