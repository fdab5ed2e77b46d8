"""The server programs of well-known lab images, read from the container's command line.

Tutorials rarely declare ``containerPort``; the port is in the arguments. kind's own Ingress guide
runs ``/agnhost netexec --http-port 8080`` behind a Service on 8080, and Ingress examples everywhere
run ``hashicorp/http-echo -text=foo``. Reading those flags (as the programs' own flag parsers do)
says where the container listens and what it answers, instead of the image's bare default.

    agnhost netexec         --http-port (8080), --udp-port (8081, -1 off), --sctp-port (-1)
                            GET /hostname → the pod's name, /echo?msg=X → X
    agnhost serve-hostname  --port (9376), --http (true) / --tcp / --udp → the pod's name
    agnhost test-webserver  --port (80)
    agnhost liveness        8080
    http-echo               -listen (":5678"), -text → the text and a newline
    traefik/whoami          --port (80) → "Hostname: <pod>" and the pod's IP
    python -m http.server   [port] (8000)
    busybox httpd           -p [ip:]port (80)
    httpbin                 kennethreitz/httpbin (80), mccutchen/go-httpbin (8080, -port / $PORT):
                            /status/CODE → that status, /basic-auth/USER/PASS and /bearer → 401
                            unless the Authorization header matches, /get, /headers, /anything → 200

Anything else (another agnhost subcommand, an unknown program) returns None: the image's default
ports apply (``model/listeners.py``).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import parse_qs, urlsplit

from .objects import Container

Port = tuple[int, str]


@dataclass(frozen=True, slots=True)
class Program:
    name: str  # "agnhost netexec", "http-echo", ...
    ports: tuple[Port, ...]
    argv: tuple[str, ...]
    text: str = ""  # http-echo's -text

    def describe(self) -> str:
        return f"{self.name} (`{' '.join(self.argv)}`)"


# The image's entrypoint when the container gives only args (the image's ENTRYPOINT, as its Dockerfile sets).
_ENTRYPOINTS = {"agnhost": ("/agnhost",), "http-echo": ("/http-echo",), "whoami": ("/whoami",),
                "serve_hostname": ("/serve_hostname",)}


def image_repository(image: str) -> str:
    """``registry.k8s.io/e2e-test-images/agnhost:2.39`` → ``agnhost``: the name a program is known by."""
    return image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]


def _flags(tokens: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """Go flag / pflag parsing: ``-x=v``, ``--x=v``, ``-x v``, ``--x v``; a flag followed by another flag
    (or nothing) is a boolean ``true``."""
    flags: dict[str, str] = {}
    positional: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.startswith("-") and len(token) > 1 and token != "--":
            name, eq, value = token.lstrip("-").partition("=")
            if not eq:
                if i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
                    value = tokens[i + 1]
                    i += 1
                else:
                    value = "true"
            flags[name] = value
        else:
            positional.append(token)
        i += 1
    return flags, positional


def _port(text: str | None, default: int) -> int:
    if text is None:
        return default
    try:
        return int(text.rsplit(":", 1)[-1])
    except ValueError:
        return default


def _program_name(argv: Sequence[str]) -> str:
    return argv[0].rsplit("/", 1)[-1] if argv else ""


def _agnhost(argv: Sequence[str]) -> Program | None:
    if len(argv) < 2:
        return None
    sub = argv[1]
    flags, _ = _flags(argv[2:])
    ports: list[Port] = []
    if sub == "netexec":
        ports.append((_port(flags.get("http-port"), 8080), "TCP"))
        udp = _port(flags.get("udp-port"), 8081)
        if udp > 0:
            ports.append((udp, "UDP"))
        sctp = _port(flags.get("sctp-port"), -1)
        if sctp > 0:
            ports.append((sctp, "SCTP"))
    elif sub == "serve-hostname":
        port = _port(flags.get("port"), 9376)
        if flags.get("http", "true") == "true" or flags.get("tcp") == "true":
            ports.append((port, "TCP"))
        if flags.get("udp") == "true":
            ports.append((port, "UDP"))
    elif sub == "test-webserver":
        ports.append((_port(flags.get("port"), 80), "TCP"))
    elif sub == "liveness":
        ports.append((8080, "TCP"))
    else:
        return None
    return Program(f"agnhost {sub}", tuple(sorted(set(ports))), tuple(argv))


def _python(argv: Sequence[str]) -> Program | None:
    args = list(argv[1:])
    if args[:2] != ["-m", "http.server"]:
        return None
    _, positional = _flags(args[2:])
    port = _port(positional[0] if positional else None, 8000)
    return Program("python http.server", ((port, "TCP"),), tuple(argv))


# Images whose own CMD is a known program (no command line to read): name → (program, default port).
_IMAGE_PROGRAMS = {"httpbin": ("httpbin", 80), "go-httpbin": ("httpbin", 8080)}


# agnhost porter (test/images/agnhost/porter/porter.go): every env var named SERVE_PORT_<n> (or SERVE_TCP_PORT_<n>)
# opens an HTTP listener on <n> that answers with the variable's VALUE; SERVE_TLS_PORT_<n> the same over TLS,
# SERVE_UDP_PORT_<n> over UDP, SERVE_SCTP_PORT_<n> over SCTP. The values are reply text, never addresses the
# container talks to.
PORTER_ENV = (("SERVE_PORT_", "TCP"), ("SERVE_TCP_PORT_", "TCP"), ("SERVE_TLS_PORT_", "TCP"),
              ("SERVE_UDP_PORT_", "UDP"), ("SERVE_SCTP_PORT_", "SCTP"))


def _porter(argv: Sequence[str], env: Mapping[str, str]) -> Program:
    ports: set[Port] = set()
    for key in env:
        for prefix, protocol in PORTER_ENV:
            if key.startswith(prefix) and key[len(prefix):].isdigit():
                ports.add((int(key[len(prefix):]), protocol))
    return Program("agnhost porter", tuple(sorted(ports)), tuple(argv))


def program_data_env(container: Container) -> frozenset[str]:
    """Env vars whose values the program reads as data (reply text), not as hosts to connect to."""
    program = program_of(container)
    if program is None or program.name != "agnhost porter":
        return frozenset()
    return frozenset(k for k in container.env if any(k.startswith(p) for p, _ in PORTER_ENV))


# Shell scripts (`sh -c "..."`): the server a script starts, found by its words.
_SCRIPT_SERVERS: tuple[tuple[str, re.Pattern[str], str, int], ...] = (
    # busybox/netcat: nc -l -p 8080, nc -lk -p 8080, nc -l -u -p 53 (-u: UDP); nc -l 8080 (OpenBSD netcat)
    ("nc -l", re.compile(r"\bnc\s+((?:-[a-zA-Z]+\s+)*)-[a-zA-Z]*l[a-zA-Z]*\s+((?:-[a-zA-Z]+\s+)*)(?:-p\s*)?(\d+)"),
     "nc", 0),
    ("busybox httpd", re.compile(r"\bhttpd\b[^;&|]*?-p\s*(?:[\d.]+:)?(\d+)"), "httpd", 80),
    ("python http.server", re.compile(r"\bpython3?\s+-m\s+http\.server(?:\s+(\d+))?"), "http.server", 8000),
)


@lru_cache(maxsize=4096)  # every replica of a template runs the same script
def script_program(script: str) -> Program | None:
    """The server a shell script starts (``nc -l -p 8080``, ``httpd -p 8080``, ``python -m http.server``)."""
    ports: set[Port] = set()
    names: list[str] = []
    for name, pattern, kind, default in _SCRIPT_SERVERS:
        for m in pattern.finditer(script):
            if kind == "nc":
                flags = (m.group(1) or "") + (m.group(2) or "") + m.group(0)
                protocol = "UDP" if re.search(r"-[a-zA-Z]*u", flags) else "TCP"
                ports.add((int(m.group(3)), protocol))
            else:
                ports.add((int(m.group(1)) if m.group(1) else default, "TCP"))
            names.append(name)
    if not ports:
        return None
    return Program(" + ".join(dict.fromkeys(names)), tuple(sorted(ports)), ("sh", "-c", script))


# Every program the command line is read for: name → (default ports, what decides them). docs/images.md lists
# the same rows (a test compares them).
KNOWN_PROGRAMS: dict[str, tuple[str, str]] = {
    "agnhost netexec": ("8080/TCP, 8081/UDP", "--http-port, --udp-port (-1: off), --sctp-port"),
    "agnhost serve-hostname": ("9376/TCP", "--port; --udp adds UDP, --tcp/--http TCP"),
    "agnhost test-webserver": ("80/TCP", "--port"),
    "agnhost liveness": ("8080/TCP", "fixed"),
    "agnhost porter": ("none", "one listener per env var SERVE_PORT_<n> (TCP), SERVE_TLS_PORT_<n>, "
                               "SERVE_UDP_PORT_<n>, SERVE_SCTP_PORT_<n>; the value is the reply text"),
    "serve_hostname": ("9376/TCP", "-port; -udp serves UDP instead, -tcp both"),
    "http-echo": ("5678/TCP", "-listen=:PORT; -text is the reply"),
    "whoami": ("80/TCP", "--port"),
    "httpbin": ("80/TCP (go-httpbin: 8080/TCP)", "-port or $PORT"),
    "python http.server": ("8000/TCP", "python -m http.server PORT"),
    "busybox httpd": ("80/TCP", "httpd -p [IP:]PORT"),
    "redis-server": ("6379/TCP", "--port"),
    "postgres": ("5432/TCP", "-p"),
    "nc -l": ("none", "nc -l -p PORT (busybox) or nc -l PORT; -u: UDP (in a sh -c script)"),
}

_LOOKUP = re.compile(r"\b(?:nslookup|host|dig|getent\s+(?:hosts|ahosts))((?:\s+[-+@]\S*)*)"
                     r"\s+([A-Za-z0-9][A-Za-z0-9.-]*)")


# `until nslookup NAME`, `while ! getent hosts NAME`, `until nc -z NAME PORT`...: a loop that waits for a name.
_WAIT = re.compile(r"\b(?:until|while\s+!)\s+(nslookup|getent\s+hosts|host|dig(?:\s+\+\S+)*|nc\s+-[a-z]*z[a-z]*)"
                   r"\s+([A-Za-z0-9][A-Za-z0-9.-]*)")
_NAMESPACE_FILE = re.compile(r"\$\(\s*cat\s+/var/run/secrets/kubernetes\.io/serviceaccount/namespace\s*\)")


def waited_names(command: Sequence[str], namespace: str) -> tuple[tuple[str, str, str], ...]:
    """(tool, name, the loop's words) of every loop in ``command`` that waits until a name resolves; the
    service account's namespace file (``$(cat .../namespace)``) reads as the pod's namespace."""
    script = _NAMESPACE_FILE.sub(namespace, " ".join(str(w) for w in command))
    return tuple((m.group(1).split()[0], m.group(2).rstrip("."), m.group(0)) for m in _WAIT.finditer(script))


def dns_lookup_names(text: str) -> tuple[str, ...]:
    """Names a command line only looks up (``nslookup kubernetes.default``, ``dig +short web``,
    ``getent hosts db``): DNS queries, not connections."""
    return tuple(dict.fromkeys(m.group(2).rstrip(".") for m in _LOOKUP.finditer(text)))


def program_of(container: Container) -> Program | None:
    """The server program this container runs, when its command line (or, for a few images, the image) says so."""
    repository = image_repository(container.image)
    if not container.command and repository not in _ENTRYPOINTS and repository not in _IMAGE_PROGRAMS:
        return None  # the common case (an image's own CMD), answered without parsing
    argv = (*container.command, *container.args) if container.command else (
        *_ENTRYPOINTS.get(repository, ()), *container.args)
    if _program_name(argv) == "agnhost" and argv[1:2] == ("porter",):
        return _porter(argv, container.env)
    if len(argv) >= 3 and _program_name(argv) in ("sh", "bash", "ash") and "-c" in argv[1:-1]:
        return script_program(" ".join(argv[argv.index("-c") + 1:]))
    if repository in _IMAGE_PROGRAMS and not container.command:
        name, port = _IMAGE_PROGRAMS[repository]
        flags, _ = _flags(container.args)
        return Program(name, ((_port(flags.get("port") or container.env.get("PORT"), port), "TCP"),),
                       tuple(container.args))
    if not container.command and repository not in _ENTRYPOINTS:
        return None  # the common case (an image's own CMD), answered without parsing
    return _program(container.image, container.command, container.args)


@lru_cache(maxsize=4096)
def _program(image: str, command: tuple[str, ...], args: tuple[str, ...]) -> Program | None:
    argv = (*command, *args) if command else (*_ENTRYPOINTS.get(image_repository(image), ()), *args)
    name = _program_name(argv)
    if name == "agnhost":
        return _agnhost(argv)
    if name == "http-echo":
        flags, _ = _flags(argv[1:])
        return Program("http-echo", ((_port(flags.get("listen"), 5678), "TCP"),), tuple(argv), flags.get("text", ""))
    if name == "whoami":
        flags, _ = _flags(argv[1:])
        return Program("whoami", ((_port(flags.get("port"), 80), "TCP"),), tuple(argv))
    if name == "redis-server":
        flags, _ = _flags(argv[1:])
        return Program("redis-server", ((_port(flags.get("port"), 6379), "TCP"),), tuple(argv))
    if name in ("postgres", "docker-entrypoint.sh") and "postgres" in argv[:2]:
        flags, _ = _flags(argv[1:])
        return Program("postgres", ((_port(flags.get("p"), 5432), "TCP"),), tuple(argv))
    if name == "serve_hostname":
        # registry.k8s.io/serve_hostname (the "Debug Services" page's backend): -port 9376, -tcp/-udp/-http.
        flags, _ = _flags(argv[1:])
        port = _port(flags.get("port"), 9376)
        ports = [(port, "TCP")] if flags.get("udp") != "true" or flags.get("tcp") == "true" else []
        if flags.get("udp") == "true":
            ports.append((port, "UDP"))
        return Program("serve_hostname", tuple(sorted(ports)), tuple(argv))
    if name in ("python", "python3"):
        return _python(argv)
    if name == "httpd" or (name == "busybox" and argv[1:2] == ("httpd",)):
        flags, _ = _flags(argv[1:] if name == "httpd" else argv[2:])
        return Program("busybox httpd", ((_port(flags.get("p"), 80), "TCP"),), tuple(argv))
    return None


def http_status(program: Program, method: str, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
    """The status (and headers) a program answers with; every program but httpbin answers 200.

    httpbin: ``/status/CODE`` (the first of a comma list), ``/basic-auth/USER/PASS`` (401 with
    ``WWW-Authenticate: Basic realm="Fake Realm"`` unless the Basic credentials match), ``/bearer``
    (401 unless ``Authorization: Bearer ...``); ``/``, ``/get``, ``/headers``, ``/ip``, ``/anything...``
    answer 200 and any other path 404.
    """
    if program.name != "httpbin":
        return 200, {}
    parts = [p for p in urlsplit(path).path.split("/") if p]
    auth = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
    if len(parts) == 2 and parts[0] == "status":
        code = parts[1].split(",", 1)[0]
        return (int(code), {}) if code.isdigit() and 100 <= int(code) <= 599 else (400, {})
    if len(parts) == 3 and parts[0] == "basic-auth":
        expected = "Basic " + base64.b64encode(f"{parts[1]}:{parts[2]}".encode()).decode()
        return (200, {}) if auth == expected else (401, {"WWW-Authenticate": 'Basic realm="Fake Realm"'})
    if parts[:1] == ["bearer"]:
        return (200, {}) if auth.startswith("Bearer ") else (401, {"WWW-Authenticate": "Bearer"})
    if not parts or parts[0] in ("get", "headers", "ip", "anything", "user-agent", "uuid", "post", "put", "delete",
                                 "patch", "cookies", "response-headers"):
        return 200, {}
    return 404, {}


# Paths nginx's default server (/etc/nginx/conf.d/default.conf: `root /usr/share/nginx/html`) has files for;
# any other path is 404. httpd's default htdocs holds index.html only.
_STATIC_SITES: dict[str, frozenset[str]] = {
    "nginx": frozenset({"/", "/index.html", "/50x.html"}),
    "httpd": frozenset({"/", "/index.html"}),
}


# Programs that answer plain HTTP on every port they bind (porter's TLS ports, nc, redis and postgres do not).
_HTTP_PROGRAMS = frozenset({"agnhost netexec", "agnhost serve-hostname", "agnhost test-webserver", "agnhost liveness",
                            "serve_hostname", "http-echo", "whoami", "httpbin", "python http.server", "busybox httpd"})


def probe_status(container: Container, port: int, path: str) -> tuple[int, str] | None:
    """The HTTP status the container's app answers an httpGet probe of ``path`` on ``port`` with, and who
    answers; None when knetsim does not know the app (the probe is then assumed to pass)."""
    program = program_of(container)
    if program is not None:
        if (port, "TCP") not in program.ports or program.name not in _HTTP_PROGRAMS:
            return None
        status, _ = http_status(program, "GET", path, {})
        return status, program.name
    repository = image_repository(container.image)
    files = _STATIC_SITES.get(repository)
    if files is None or container.command:
        return None
    clean = urlsplit(path or "/").path or "/"
    return (200 if clean in files else 404), f"{repository}'s default site"


def http_answer(program: Program, pod_name: str, pod_ip: str, path: str) -> str | None:
    """What the program answers to GET ``path``; None where it answers as any web server (the generic page)."""
    url = urlsplit(path)
    if program.name == "http-echo":
        return program.text + "\n"
    if program.name == "agnhost netexec":
        if url.path == "/hostname":
            return pod_name
        if url.path == "/echo":
            return (parse_qs(url.query).get("msg") or [""])[0]
        return None
    if program.name in ("agnhost serve-hostname", "serve_hostname"):
        return pod_name
    if program.name == "whoami":
        return f"Hostname: {pod_name}\nIP: 127.0.0.1\nIP: {pod_ip}\n"
    return None
