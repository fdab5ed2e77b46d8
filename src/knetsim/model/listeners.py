"""Which ports a container listens on.

Kubernetes never checks this — ``containerPort`` is informational — but whether a
connection is refused depends on it. knetsim decides, in this order:

1. the pod annotation ``knetsim.io/listen`` (``"8080,9090/UDP"``; ``""`` listens on nothing),
2. every declared ``containerPort`` of the container, together with
3. the ports the command line binds for well-known server programs (``agnhost netexec
   --http-port 8080``, ``http-echo -listen=:8080``; ``model/programs.py``), else the default
   ports of a well-known image (``nginx`` → 80/TCP, ``redis`` → 6379/TCP, ...).

A container that matches none of these (``busybox`` running ``sleep``) listens on nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from .objects import Container, Pod
from .programs import image_repository, program_of

LISTEN_ANNOTATION = "knetsim.io/listen"
__all__ = ["LISTEN_ANNOTATION", "WELL_KNOWN_IMAGES", "container_listens", "image_repository", "listen_source",
           "parse_listen_annotation", "pod_listens"]

# image repository (last path element, no tag) → ports its default command binds
WELL_KNOWN_IMAGES: Mapping[str, tuple[tuple[int, str], ...]] = {
    "nginx": ((80, "TCP"),),
    "nginx-unprivileged": ((8080, "TCP"),),
    "httpd": ((80, "TCP"),),
    "caddy": ((80, "TCP"), (443, "TCP")),
    "traefik": ((80, "TCP"),),
    "haproxy": ((80, "TCP"),),
    "echoserver": ((8080, "TCP"),),
    "agnhost": ((80, "TCP"),),
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


def parse_listen_annotation(value: str) -> tuple[tuple[int, str], ...]:
    ports = []
    for item in value.replace(" ", "").split(","):
        if not item:
            continue
        number, _, protocol = item.partition("/")
        ports.append((int(number), (protocol or "TCP").upper()))
    return tuple(ports)


def container_listens(container: Container) -> tuple[tuple[int, str], ...]:
    # Declared ports and what the program binds together: CoreDNS serves /ready on 8181 without
    # declaring it, and a probe there must succeed. The command line's own flags
    # (`agnhost netexec --http-port 8080`) replace the image's default ports.
    declared = {(p.container_port, p.protocol) for p in container.ports}
    program = program_of(container)
    declared.update(program.ports if program is not None else
                    WELL_KNOWN_IMAGES.get(image_repository(container.image), ()))
    return tuple(sorted(declared))


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
    for container in pod.containers:
        for p in container.ports:
            if p.container_port == port and p.protocol == protocol:
                return f"container {container.name!r} declares containerPort {port}/{protocol}"
        program = program_of(container)
        if program is not None:
            if (port, protocol) in program.ports:
                return f"container {container.name!r} runs {program.describe()}, which listens on {port}/{protocol}"
        elif (port, protocol) in WELL_KNOWN_IMAGES.get(image_repository(container.image), ()):
            return f"image {container.image!r} listens on {port}/{protocol} by default"
    return "no container declares it, no annotation and no well-known image default"
