"""Which ports a container listens on.

Kubernetes never checks this — ``containerPort`` is informational — but whether a
connection is refused depends on it. knetsim decides, in this order:

1. the pod annotation ``knetsim.io/listen`` (``"8080,9090/UDP"``; ``""`` listens on nothing);
2. the program the command line runs (``agnhost netexec --http-port 8080``, ``agnhost porter``
   with ``SERVE_PORT_8080``, ``http-echo -listen=:8080``, ``nc -l -p 8080`` in a shell script;
   ``model/programs.py``), else the ports a well-known image binds (``nginx`` → 80/TCP, ``redis`` →
   6379/TCP, ...). A known program or image decides alone: nginx declared on containerPort 8080
   still listens on 80 only, as on a real node;
3. an image knetsim does not know is *unknown*: its declared containerPorts are assumed, and
   every explanation says that it is an assumption.

A container that matches none of these and declares no port (``busybox`` running ``sleep``)
listens on nothing. docs/images.md lists every image and program known here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .objects import Container, Pod
from .programs import image_repository, program_of

LISTEN_ANNOTATION = "knetsim.io/listen"
__all__ = ["IMAGE_NOTES", "LISTEN_ANNOTATION", "WELL_KNOWN_IMAGES", "Listeners", "container_listeners",
           "container_listens", "image_repository", "listen_source", "listeners_known", "parse_listen_annotation",
           "pod_listens"]

# image repository (last path element, no tag) → ports its default command binds
WELL_KNOWN_IMAGES: Mapping[str, tuple[tuple[int, str], ...]] = {
    "nginx": ((80, "TCP"),),
    "nginx-unprivileged": ((8080, "TCP"),),
    "httpd": ((80, "TCP"),),
    "caddy": ((80, "TCP"), (443, "TCP")),
    "traefik": ((80, "TCP"),),
    "haproxy": ((80, "TCP"),),
    "echoserver": ((8080, "TCP"),),
    "serve_hostname": ((9376, "TCP"),),
    "http-echo": ((5678, "TCP"),),
    "whoami": ((80, "TCP"),),
    "podinfo": ((9898, "TCP"),),
    "redis": ((6379, "TCP"),),
    "memcached": ((11211, "TCP"),),
    "postgres": ((5432, "TCP"),),
    "mysql": ((3306, "TCP"),),
    "mariadb": ((3306, "TCP"),),
    "mongo": ((27017, "TCP"),),
    "rabbitmq": ((5672, "TCP"),),
    "coredns": ((53, "UDP"), (53, "TCP"), (9153, "TCP"), (8080, "TCP"), (8181, "TCP")),
    # registry.k8s.io/ingress-nginx/controller
    "controller": ((80, "TCP"), (443, "TCP"), (8443, "TCP"), (10254, "TCP")),
}

# Where a known image reads the configuration that says where it listens (each image's documentation on Docker
# Hub: "mount your own configuration at ..."). A volume mounted there, or over a file in it, replaces what the
# image ships: where the server listens is then that file's, which knetsim does not read.
# Paths ending in "/" hold configuration files (a mount there or under it counts); others are the file itself or
# the directory that holds it all (a mount of exactly that path counts): nginx's /etc/nginx/certs changes no port.
CONFIG_PATHS: Mapping[str, tuple[str, ...]] = {
    "nginx": ("/etc/nginx", "/etc/nginx/nginx.conf", "/etc/nginx/conf.d/", "/etc/nginx/templates/",
              "/etc/nginx/sites-enabled/"),
    "nginx-unprivileged": ("/etc/nginx", "/etc/nginx/nginx.conf", "/etc/nginx/conf.d/", "/etc/nginx/templates/"),
    "httpd": ("/usr/local/apache2/conf/",),
    "caddy": ("/etc/caddy/",),
    "traefik": ("/etc/traefik/",),
    "haproxy": ("/usr/local/etc/haproxy/",),
}


def _config_mounted(container: Container, repository: str) -> str:
    """The mountPath that replaces a known image's configuration ("" when none does)."""
    for mount in container.mount_paths:
        path = mount.rstrip("/") or "/"
        for config in CONFIG_PATHS.get(repository, ()):
            if path == config.rstrip("/") or (config.endswith("/") and path.startswith(config)):
                return mount
    return ""


# Why a known image listens where it does, where users expect otherwise.
IMAGE_NOTES: Mapping[str, str] = {
    "nginx": "from /etc/nginx/conf.d/default.conf; nginx has no port flag, containerPort changes nothing",
    "httpd": "Listen 80 in httpd.conf",
    "controller": "registry.k8s.io/ingress-nginx/controller",
    "coredns": "8080 /health, 8181 /ready, 9153 metrics, whether declared or not",
}


def parse_listen_annotation(value: str) -> tuple[tuple[int, str], ...]:
    ports = []
    for item in value.replace(" ", "").split(","):
        if not item:
            continue
        number, _, protocol = item.partition("/")
        ports.append((int(number), (protocol or "TCP").upper()))
    return tuple(ports)


@dataclass(frozen=True, slots=True)
class Listeners:
    """Where one container listens, and how knetsim knows it."""

    ports: tuple[tuple[int, str], ...]
    known: bool  # the program or the image says so; False: an unknown image, its containerPorts assumed
    why: str  # "runs agnhost netexec (`...`)", "image nginx listens on 80/TCP (its config; no port flag)"


def container_listeners(container: Container) -> Listeners:
    """The ports the container's process binds.

    A known program (its command line, ``model/programs.py``) or a known image decides alone: a declared
    ``containerPort`` is informational and never opens a socket (nginx declared on 8080 still listens on
    80 only). An image knetsim does not know is *unknown*: its declared containerPorts are assumed, and
    ``why`` says it is an assumption."""
    program = program_of(container)
    if program is not None:
        return Listeners(program.ports, True, f"runs {program.describe()}")
    repository = image_repository(container.image)
    image_ports = WELL_KNOWN_IMAGES.get(repository)
    declared = tuple(sorted({(p.container_port, p.protocol) for p in container.ports}))
    mounted = _config_mounted(container, repository) if image_ports is not None else ""
    if image_ports is not None and not container.command and not mounted:
        return Listeners(tuple(sorted(image_ports)), True,
                         f"image {repository} listens on {', '.join(f'{a}/{b}' for a, b in image_ports)}"
                         + (f" ({IMAGE_NOTES[repository]})" if repository in IMAGE_NOTES else ""))
    what = (f"image {container.image!r} with its configuration mounted at {mounted}" if mounted
            else f"image {container.image!r} with command {' '.join(container.command)!r}" if image_ports is not None
            else f"image {container.image!r}")
    return Listeners(declared, False,
                     f"{what} is not a program knetsim knows: where it listens is unknown; its declared "
                     "containerPorts are assumed (Kubernetes never checks them). Set the pod annotation "
                     f"{LISTEN_ANNOTATION} to say where it listens")


def container_listens(container: Container) -> tuple[tuple[int, str], ...]:
    """``container_listeners(container).ports``, without building the explanation (this runs per connection)."""
    program = program_of(container)
    if program is not None:
        return program.ports
    repository = image_repository(container.image)
    image_ports = WELL_KNOWN_IMAGES.get(repository)
    if image_ports is not None and not container.command and not (
            container.mount_paths and _config_mounted(container, repository)):
        return image_ports
    return tuple(sorted({(p.container_port, p.protocol) for p in container.ports}))


def pod_listens(pod: Pod) -> tuple[tuple[int, str], ...]:
    """Every (port, protocol) some container of the pod listens on, sorted."""
    annotation = pod.meta.annotations.get(LISTEN_ANNOTATION)
    if annotation is not None:
        return tuple(sorted(set(parse_listen_annotation(annotation))))
    found: set[tuple[int, str]] = set()
    for container in pod.containers:
        found.update(container_listens(container))
    return tuple(sorted(found))


def listen_source(pod: Pod, port: int, protocol: str) -> str:
    """Why knetsim believes the pod listens (or not) on ``port`` — for explanations."""
    annotation = pod.meta.annotations.get(LISTEN_ANNOTATION)
    if annotation is not None:
        return f"annotation {LISTEN_ANNOTATION}={annotation!r}"
    unknown = []
    for container in pod.containers:
        found = container_listeners(container)
        if (port, protocol) in found.ports:
            if any(p.container_port == port and p.protocol == protocol for p in container.ports):
                said = f"container {container.name!r} declares containerPort {port}/{protocol}"
                return said if found.known else f"{said}; assumed: its image is not one knetsim knows"
            program = program_of(container)
            if program is not None:
                return f"container {container.name!r} runs {program.describe()}, which listens on {port}/{protocol}"
            return f"image {container.image!r} listens on {port}/{protocol} by default"
        if not found.known:
            unknown.append(f"container {container.name!r}: {found.why}")
    if unknown:
        return "; ".join(unknown)
    return "no container's program or image listens there, and there is no annotation"


def listeners_known(pod: Pod) -> bool:
    """Does knetsim know every container's listeners (annotation, program or image), or assume some?"""
    if pod.meta.annotations.get(LISTEN_ANNOTATION) is not None:
        return True
    return all(container_listeners(c).known for c in pod.containers)
