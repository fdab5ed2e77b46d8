"""Where a lab image listens and what it answers, read from its command line as its flag parser reads it.

The anchor is kind's Ingress guide: `/agnhost netexec --http-port 8080` behind a Service on 8080, no
containerPort declared. The image's bare default (agnhost: 80) made the doctor call that Service
broken and suggest targetPort 80.
"""

from __future__ import annotations

import pytest
from tests.conftest import cluster_from

from knetsim.model.objects import Container
from knetsim.model.programs import program_of


def container(image: str, command: tuple[str, ...] = (), args: tuple[str, ...] = ()) -> Container:
    return Container(name="c", image=image, command=command, args=args)


AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.39"


@pytest.mark.parametrize(("image", "command", "args", "name", "ports"), [
    (AGNHOST, ("/agnhost", "netexec", "--http-port", "8080"), (), "agnhost netexec",
     ((8080, "TCP"), (8081, "UDP"))),
    (AGNHOST, (), ("netexec", "--http-port=9000", "--udp-port=-1"), "agnhost netexec", ((9000, "TCP"),)),
    (AGNHOST, ("/agnhost", "serve-hostname"), (), "agnhost serve-hostname", ((9376, "TCP"),)),
    (AGNHOST, ("/agnhost", "serve-hostname", "--udp", "--http=false", "--port", "53"), (),
     "agnhost serve-hostname", ((53, "UDP"),)),
    ("hashicorp/http-echo:1.0", (), ("-text=hello",), "http-echo", ((5678, "TCP"),)),
    ("hashicorp/http-echo:1.0", ("/http-echo", "-listen=:8080", "-text", "foo"), (), "http-echo", ((8080, "TCP"),)),
    ("traefik/whoami:v1.10", (), ("--port", "8000"), "whoami", ((8000, "TCP"),)),
    ("python:3.12", ("python", "-m", "http.server", "9000"), (), "python http.server", ((9000, "TCP"),)),
    ("busybox:1.36", ("httpd", "-f", "-p", "8080"), (), "busybox httpd", ((8080, "TCP"),)),
])
def test_the_command_line_says_where_it_listens(image, command, args, name, ports) -> None:
    program = program_of(container(image, command, args))
    assert program is not None and (program.name, program.ports) == (name, ports)


def test_other_commands_keep_the_images_defaults() -> None:
    assert program_of(container("nginx:1.27")) is None
    assert program_of(container("busybox:1.36", ("sleep", "3600"))) is None
    assert program_of(container(AGNHOST, ("/agnhost", "pause"))) is None


KIND_INGRESS_GUIDE = f"""
kind: Pod
apiVersion: v1
metadata: {{name: foo-app, labels: {{app: foo}}}}
spec:
  containers:
  - {{name: foo-app, image: "{AGNHOST}", command: [/agnhost, netexec, --http-port, "8080"]}}
---
kind: Service
apiVersion: v1
metadata: {{name: foo-service}}
spec: {{selector: {{app: foo}}, ports: [{{port: 8080}}]}}
---
kind: Pod
apiVersion: v1
metadata: {{name: echo, labels: {{app: echo}}}}
spec:
  containers:
  - {{name: echo, image: "hashicorp/http-echo:1.0", args: [-text=hello from echo]}}
---
kind: Pod
apiVersion: v1
metadata: {{name: client}}
spec:
  containers: [{{name: c, image: "busybox:1.36", command: [sleep, "3600"]}}]
"""


def test_kinds_ingress_guide_backend_is_not_reported_broken_and_answers_as_agnhost() -> None:
    c = cluster_from(KIND_INGRESS_GUIDE)
    assert [f.code for f in c.doctor().findings if f.code == "TargetPortNotListening"] == []
    t = c.trace("default/client", "http://foo-service:8080/hostname")
    assert t.outcome == "connected" and t.reply is not None and t.reply.body == "foo-app"
    listener = next(h for h in t.hops if h.layer == "listener")
    assert "runs agnhost netexec (`/agnhost netexec --http-port 8080`), which listens on 8080/TCP" in listener.detail
    t = c.trace("default/client", "http://foo-service:8080/echo?msg=hi")
    assert t.reply is not None and t.reply.body == "hi"

    echo_ip = c.state.pods["default/echo"].pod_ip
    t = c.trace("default/client", f"http://{echo_ip}:5678/")
    assert t.reply is not None and t.reply.body == "hello from echo\n"
