"""Listeners from what the process does: known images and programs, and unknown images said to be unknown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.conftest import cluster_from

from knetsim.model.listeners import IMAGE_NOTES, WELL_KNOWN_IMAGES, pod_listens
from knetsim.model.programs import KNOWN_PROGRAMS

ROOT = Path(__file__).resolve().parents[2]

CLIENT = """
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: default}
spec:
  containers: [{name: c, image: busybox:1.36, command: [sleep, "3600"]}]
"""


def app(image: str, *, port: int = 80, target: int | str = 80, container_port: int | None = None,
        protocol: str = "TCP", extra: str = "") -> str:
    declared = f"ports: [{{containerPort: {container_port}}}]" if container_port else "ports: []"
    return CLIENT + f"""
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: default}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
        - name: web
          image: {image}
          {declared}
{extra}
---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: default}}
spec:
  selector: {{app: web}}
  ports: [{{port: {port}, targetPort: {target}, protocol: {protocol}}}]
"""


def codes(cluster) -> set[str]:
    return {f.code for f in cluster.doctor().findings if f.severity == "error"}


def test_nginx_declared_on_8080_still_listens_on_80_the_ckad_targetport_mistake():
    """`kubectl create deployment web --image=nginx --port=8080` + `expose --port=80 --target-port=8080`."""
    broken = cluster_from(app("nginx:1.27", target=8080, container_port=8080))
    trace = broken.trace("default/client", "http://web/")
    assert trace.outcome == "refused" and trace.failing_hop.layer == "listener"
    assert "listens on 80/TCP" in trace.failing_hop.detail
    found = [f for f in broken.doctor().findings if f.code == "TargetPortNotListening"]
    # The doctor's verified patch: targetPort to 80, where nginx listens whatever containerPort says.
    assert found and '"path":"/spec/ports/0/targetPort","value":80' in found[0].fix
    repaired = cluster_from(app("nginx:1.27", target=80, container_port=8080))
    assert repaired.trace("default/client", "http://web/").outcome == "connected"
    assert "TargetPortNotListening" not in codes(repaired)


def test_debug_services_hostnames_serve_hostname_on_9376():
    """The "Debug Services" page's backend: registry.k8s.io/serve_hostname, Service 80 → 9376."""
    healthy = cluster_from(app("registry.k8s.io/serve_hostname", target=9376, container_port=9376))
    trace = healthy.trace("default/client", "http://web/")
    assert trace.outcome == "connected" and trace.reply is not None
    assert trace.reply.body.startswith("web-")  # serve_hostname answers the pod's name
    assert codes(healthy) == set()
    # Without declaring the port, the image still listens there.
    assert codes(cluster_from(app("registry.k8s.io/serve_hostname", target=9376))) == set()
    # The page's wrong targetPort: refused, named.
    assert "TargetPortNotListening" in codes(cluster_from(app("registry.k8s.io/serve_hostname", target=9377)))


def test_protocol_mismatch_between_service_and_listener_is_seen():
    broken = cluster_from(app("registry.k8s.io/serve_hostname", target=9376, protocol="UDP"))
    found = [f for f in broken.doctor().findings if f.code == "ProtocolMismatch"]
    assert found and "protocol: TCP" in found[0].fix


def test_agnhost_subcommands_and_porter_env():
    netexec = cluster_from(app("registry.k8s.io/e2e-test-images/agnhost:2.53", target=8080, extra="""
          args: [netexec, --http-port=8080, --udp-port=-1]"""))
    pod = next(p for p in netexec.state.pods.values() if p.name.startswith("web-"))
    assert pod_listens(pod) == ((8080, "TCP"),)
    porter = cluster_from(app("registry.k8s.io/e2e-test-images/agnhost:2.53", target=8080, extra="""
          args: [porter]
          env: [{name: SERVE_PORT_8080, value: api}, {name: SERVE_SCTP_PORT_9000, value: x}]"""))
    pod = next(p for p in porter.state.pods.values() if p.name.startswith("web-"))
    assert pod_listens(pod) == ((8080, "TCP"), (9000, "SCTP"))
    assert porter.trace("default/client", "http://web/").outcome == "connected"
    # SERVE_PORT_8080's value "api" is reply text: no Service api, and no finding about reaching it either.
    assert not [f for f in porter.doctor().findings if f.code == "ClientCannotConnect"]


@pytest.mark.parametrize(("script", "ports"), [
    ("while true; do echo hi | nc -l -p 8080; done", ((8080, "TCP"),)),
    ("nc -lk -p 8080 -e cat", ((8080, "TCP"),)),
    ("nc -l -u -p 5353", ((5353, "UDP"),)),
    ("httpd -f -p 8081 -h /www", ((8081, "TCP"),)),
    ("cd /srv && python3 -m http.server 9000", ((9000, "TCP"),)),
    ("sleep 3600", ((8080, "TCP"),)),  # no server in the script: the declared port is assumed
])
def test_servers_started_by_a_shell_script(script, ports):
    cluster = cluster_from(app("busybox:1.36", target=8080, container_port=8080, extra=f"""
          command: [sh, -c, "{script}"]"""))
    pod = next(p for p in cluster.state.pods.values() if p.name.startswith("web-"))
    assert pod_listens(pod) == ports


def test_unknown_image_is_an_assumption_and_the_trace_says_so():
    cluster = cluster_from(app("ghcr.io/example/shop:1.0", target=8080, container_port=8080))
    trace = cluster.trace("default/client", "http://web/")
    listener = next(h for h in trace.hops if h.layer == "listener")
    assert trace.outcome == "connected"
    assert "assumed: its image is not one knetsim knows" in listener.detail
    known = cluster_from(app("nginx:1.27", container_port=80))
    listener = next(h for h in known.trace("default/client", "http://web/").hops if h.layer == "listener")
    assert "assumed" not in listener.detail


def test_readiness_probe_on_a_path_nginx_answers_404_keeps_the_pod_unready():
    probe = """
          readinessProbe: {httpGet: {path: PATH, port: 80}}"""
    broken = cluster_from(app("nginx:1.27", container_port=80, extra=probe.replace("PATH", "/healthz")))
    pod = next(p for p in broken.state.pods.values() if p.name.startswith("web-"))
    assert not pod.ready
    found = [f for f in broken.doctor().findings if f.code == "PodsNotReady"]
    assert found and "statuscode: 404" in " ".join(found[0].evidence)
    assert broken.trace("default/client", "http://web/").outcome == "refused"  # no ready endpoint
    repaired = cluster_from(app("nginx:1.27", container_port=80, extra=probe.replace("PATH", "/")))
    assert next(p for p in repaired.state.pods.values() if p.name.startswith("web-")).ready
    # A probe on a port nothing listens on fails too.
    deaf = cluster_from(app("nginx:1.27", container_port=80, extra=probe.replace("PATH", "/").replace(
        "port: 80", "port: 8080")))
    assert not next(p for p in deaf.state.pods.values() if p.name.startswith("web-")).ready


def _table(section: str) -> dict[str, str]:
    text = (ROOT / "docs" / "images.md").read_text()
    part = text.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^\| `([^`]+)` \| ([^|]*) \|", part, re.M)}


def test_docs_list_every_image_and_program_knetsim_knows():
    images = _table("Images")
    assert set(images) == set(WELL_KNOWN_IMAGES)
    for name, ports in WELL_KNOWN_IMAGES.items():
        assert images[name] == ", ".join(f"{a}/{b}" for a, b in ports), name
    assert set(IMAGE_NOTES) <= set(WELL_KNOWN_IMAGES)
    programs = _table("Programs")
    assert set(programs) == set(KNOWN_PROGRAMS)
    for name, (ports, _) in KNOWN_PROGRAMS.items():
        assert programs[name] == ports, name


def test_the_live_kubelets_prober_gets_the_same_404():
    from knetsim.kubelet.prober import network_result
    from knetsim.model.objects import Pod

    container = {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}
    pod = Pod.parse({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
                     "spec": {"containers": [container]}, "status": {"podIP": "10.244.1.5"}})
    assert network_result(None, pod, container, {"httpGet": {"port": 80, "path": "/healthz"}}) == (
        False, "HTTP probe failed with statuscode: 404")
    assert network_result(None, pod, container, {"httpGet": {"port": 80, "path": "/"}}) == (True, "")


def test_a_targetport_an_unknown_image_does_not_declare_is_a_caveat_beside_the_error():
    broken = cluster_from(app("ghcr.io/example/shop:1.0", target=9090, container_port=8080))
    findings = broken.doctor().findings
    assert "TargetPortNotListening" in {f.code for f in findings if f.severity == "error"}
    caveat = next(f for f in findings if f.code == "ListenerAssumed")
    assert caveat.severity == "info" and "assumption" in caveat.message and "knetsim.io/listen" in caveat.fix
    # A known image gets no caveat: nginx's 80 is knowledge.
    assert not [f for f in cluster_from(app("nginx:1.27", target=8080, container_port=8080)).doctor().findings
                if f.code == "ListenerAssumed"]


def test_an_https_readiness_probe_on_plain_http_nginx_fails():
    extra = """
          readinessProbe: {httpGet: {path: /, port: 80, scheme: HTTPS}}"""
    cluster = cluster_from(app("nginx:1.27", container_port=80, extra=extra))
    assert not next(p for p in cluster.state.pods.values() if p.name.startswith("web-")).ready
    from knetsim.kubelet.prober import network_result

    container = {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}
    pod = next(p for p in cluster.state.pods.values() if p.name.startswith("web-"))
    ok, output = network_result(None, pod, container, {"httpGet": {"port": 80, "path": "/", "scheme": "HTTPS"}})
    assert not ok and output.endswith("http: server gave HTTP response to HTTPS client")


def test_a_refusal_on_an_unknown_image_says_it_is_assumed():
    trace = cluster_from(app("ghcr.io/example/shop:1.0", target=9090, container_port=8080)).trace(
        "default/client", "http://web/")
    assert trace.outcome == "refused"
    assert "assumed: ghcr.io/example/shop:1.0 is not an image knetsim knows" in trace.failing_hop.detail
    known = cluster_from(app("nginx:1.27", target=9090, container_port=80)).trace("default/client", "http://web/")
    assert "assumed" not in known.failing_hop.detail
