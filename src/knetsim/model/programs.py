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
from collections.abc import Sequence
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
_ENTRYPOINTS = {"agnhost": ("/agnhost",), "http-echo": ("/http-echo",), "whoami": ("/whoami",)}


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


def program_of(container: Container) -> Program | None:
    """The server program this container runs, when its command line (or, for a few images, the image) says so."""
    repository = image_repository(container.image)
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
    if program.name == "agnhost serve-hostname":
        return pod_name
    if program.name == "whoami":
        return f"Hostname: {pod_name}\nIP: 127.0.0.1\nIP: {pod_ip}\n"
    return None
