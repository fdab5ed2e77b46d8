"""`knetsim migrate ingress` on ingress-nginx's timeout annotations says what each bounds and what to set by hand.

Given an Ingress with proxy-read-timeout, proxy-send-timeout and proxy-connect-timeout, when it is converted,
then each is noted as not converted with nginx's meaning (the gap between two reads, between two writes,
the connection's establishment) against the Gateway field a user might reach for: HTTPRoute
timeouts.backendRequest bounds the whole backend request (the fix for a whole-request bound). The connect
bound has its equivalent, so it is written: Envoy Gateway's BackendTrafficPolicy timeout.tcp.connectTimeout.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from knetsim.cli.main import cli

INGRESS = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: slow
  annotations:
    nginx.ingress.kubernetes.io/proxy-read-timeout: "300"
    nginx.ingress.kubernetes.io/proxy-send-timeout: "120"
    nginx.ingress.kubernetes.io/proxy-connect-timeout: "15"
spec:
  ingressClassName: nginx
  rules:
  - host: slow.example
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
"""


def notes(tmp_path: Path, severity: str = "inexpressible") -> dict[str, str]:
    path = tmp_path / "ingress.yaml"
    path.write_text(INGRESS)
    out = CliRunner().invoke(cli, ["migrate", "ingress", "-f", str(path)]).output
    prefix = f"# [{severity}] Ingress default/slow metadata.annotations: "
    found = {}
    for line in out.splitlines():
        if line.startswith(prefix):
            name, _, text = line[len(prefix):].partition(": ")
            found[name] = text
    return found


def test_each_timeout_says_what_it_bounds(tmp_path: Path) -> None:
    found = notes(tmp_path)
    read, send = found["proxy-read-timeout"], found["proxy-send-timeout"]
    assert "proxy-connect-timeout" not in found
    connect = notes(tmp_path, "explicit")["proxy-connect-timeout 15"]
    assert "between two successive reads from the backend" in read
    assert "timeouts.backendRequest bounds the whole backend request, so it is not the same limit" in read
    assert "set the HTTPRoute rule's timeouts.backendRequest by hand" in read
    assert "between two successive writes of the request to the backend" in send
    assert "BackendTrafficPolicy timeout.tcp.connectTimeout 15s" in connect
    assert not any("no equivalent written by this conversion" in text for text in found.values())
