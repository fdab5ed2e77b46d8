"""agnhost (registry.k8s.io/e2e-test-images/agnhost) as its sources say it answers, and the pod tools that talk to it.

Each expectation is a fact of kubernetes/kubernetes ``test/images/agnhost/``: netexec/netexec.go (its HTTP
endpoints and UDP commands), serve-hostname/serve_hostname.go, porter/porter.go, liveness/server.go,
connect/connect.go, dns/common.go. The e2e framework reads exactly these replies and exit codes.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from tests.helpers import exec_in_pod

from knetsim import Cluster
from knetsim.container.podfs import PodFS
from knetsim.kubelet.podconfig import pod_env, pod_files

AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"
APP = f"""
apiVersion: v1
kind: Pod
metadata: {{name: netexec, namespace: e2e, labels: {{app: netexec}}}}
spec:
  hostname: netexec-host
  containers:
  - name: c
    image: {AGNHOST}
    args: [netexec, --http-port=8080, --udp-port=8081]
---
apiVersion: v1
kind: Service
metadata: {{name: netexec, namespace: e2e}}
spec:
  selector: {{app: netexec}}
  ports:
  - {{name: http, port: 80, targetPort: 8080}}
  - {{name: udp, port: 81, targetPort: 8081, protocol: UDP}}
  - {{name: closed, port: 82, targetPort: 9999}}
---
apiVersion: v1
kind: Pod
metadata: {{name: hostname-tcp, namespace: e2e}}
spec:
  containers:
  - {{name: c, image: {AGNHOST}, args: [serve-hostname, --tcp, --http=false, --port=9000]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: hostname-udp, namespace: e2e}}
spec:
  containers:
  - {{name: c, image: {AGNHOST}, args: [serve-hostname, --udp, --http=false, --port=9001]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: hostname-http, namespace: e2e}}
spec:
  containers:
  - {{name: c, image: {AGNHOST}, args: [serve-hostname]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: porter, namespace: e2e}}
spec:
  containers:
  - name: c
    image: {AGNHOST}
    args: [porter]
    env: [{{name: SERVE_PORT_8090, value: foo}}, {{name: SERVE_UDP_PORT_8091, value: bar}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: liveness, namespace: e2e}}
spec:
  containers:
  - {{name: c, image: {AGNHOST}, args: [liveness]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: client, namespace: e2e}}
spec:
  containers:
  - {{name: c, image: {AGNHOST}, command: [sleep, "3600"]}}
"""


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster.from_yaml(APP)


def ip(cluster: Cluster, name: str) -> str:
    return cluster.state.pods[f"e2e/{name}"].pod_ip


def get(cluster: Cluster, url: str, **kw: Any) -> tuple[int, str, dict[str, str]]:
    t = cluster.trace("e2e/client", url, **kw)
    assert t.outcome == "connected" and t.reply is not None, t.outcome
    return t.reply.status, t.reply.body, dict(t.reply.headers)


def sh(cluster: Cluster, script: str, pod: str = "client") -> tuple[int, str, str]:
    state = cluster.state
    target = state.pods[f"e2e/{pod}"]
    return exec_in_pod(state, target, ["sh", "-c", script], env=pod_env(state, target, target.containers[0].name),
                       fs=PodFS(lambda: pod_files(state, target)))


# --- netexec's HTTP endpoints ----------------------------------------------------------------------


def test_netexec_hostname_is_the_pods_hostname(cluster: Cluster) -> None:
    # os.Hostname() in the pod: spec.hostname when set; both spellings of the route answer it, no newline.
    for route in ("/hostname", "/hostName"):
        assert get(cluster, f"http://netexec.e2e{route}")[:2] == (200, "netexec-host")


def test_netexec_root_and_unknown_paths_answer_the_time(cluster: Cluster) -> None:
    # Go's ServeMux sends every unregistered path to "/": fmt's %v of time.Now().
    for path in ("/", "/no/such/path"):
        status, body, _ = get(cluster, f"http://netexec.e2e{path}")
        assert status == 200
        assert re.fullmatch(r"NOW: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{9} \+0000 UTC m=\+\d+\.\d{9}", body), body


def test_netexec_clientip_is_the_clients_address_and_port(cluster: Cluster) -> None:
    status, body, _ = get(cluster, f"http://{ip(cluster, 'netexec')}:8080/clientip")
    host, _, port = body.rpartition(":")
    assert status == 200 and host == ip(cluster, "client") and 32768 <= int(port) <= 60999


def test_netexec_echo_answers_the_message_with_the_status_asked(cluster: Cluster) -> None:
    assert get(cluster, "http://netexec.e2e/echo?msg=hello")[:2] == (200, "hello")
    assert get(cluster, "http://netexec.e2e/echo?msg=gone&code=404")[:2] == (404, "gone")
    assert get(cluster, "http://netexec.e2e/echo?msg=x&code=abc")[:2] == (
        200, "argument 'code' must be an integer or empty, got \"abc\"\n")


def test_netexec_header_returns_the_request_header(cluster: Cluster) -> None:
    assert get(cluster, "http://netexec.e2e/header?key=X-Probe", headers={"X-Probe": "e2e"})[:2] == (200, "e2e")


def test_netexec_healthz_is_an_empty_200(cluster: Cluster) -> None:
    status, body, headers = get(cluster, "http://netexec.e2e/healthz")
    assert (status, body) == (200, "") and "content-type" not in headers


def test_netexec_redirect_is_gos_http_redirect(cluster: Cluster) -> None:
    status, body, headers = get(cluster, "http://netexec.e2e/redirect?location=/echo%3Fmsg%3Dfoobar&code=307")
    assert status == 307 and headers["location"] == "/echo?msg=foobar"
    assert body == '<a href="/echo?msg=foobar">Temporary Redirect</a>.\n\n'
    assert get(cluster, "http://netexec.e2e/redirect?location=/x")[0] == 302


# --- the other servers ---------------------------------------------------------------------------


def test_serve_hostname_http_answers_the_hostname(cluster: Cluster) -> None:
    assert get(cluster, f"http://{ip(cluster, 'hostname-http')}:9376/anything")[:2] == (200, "hostname-http")


def test_serve_hostname_tcp_writes_the_hostname_on_connect(cluster: Cluster) -> None:
    assert sh(cluster, f"nc {ip(cluster, 'hostname-tcp')} 9000 </dev/null") == (0, "hostname-tcp", "")


def test_serve_hostname_udp_answers_any_datagram(cluster: Cluster) -> None:
    assert sh(cluster, f"echo x | nc -u -w 1 {ip(cluster, 'hostname-udp')} 9001") == (0, "hostname-udp", "")


def test_porter_answers_each_ports_env_value(cluster: Cluster) -> None:
    assert get(cluster, f"http://{ip(cluster, 'porter')}:8090/any")[:2] == (200, "foo")
    assert sh(cluster, f"echo x | nc -u -w 1 {ip(cluster, 'porter')} 8091") == (0, "bar", "")


def test_liveness_healthz_is_ok_and_root_is_gos_404(cluster: Cluster) -> None:
    assert get(cluster, f"http://{ip(cluster, 'liveness')}:8080/healthz")[:2] == (200, "ok")
    assert get(cluster, f"http://{ip(cluster, 'liveness')}:8080/")[:2] == (404, "404 page not found\n")


def test_netexec_udp_lowercases_what_it_echoes(cluster: Cluster) -> None:
    # startUDPServer lower-cases and trims the datagram before it answers.
    assert sh(cluster, "echo 'echo Hello' | nc -u -w 1 netexec.e2e 81") == (0, "hello", "")


# --- nc against servers that answer without a request -------------------------------------------


def test_nc_prints_gos_400_to_what_is_not_http(cluster: Cluster) -> None:
    # The e2e framework's `echo hostName | nc -v -t -w 2 HOST PORT` against netexec's HTTP port.
    code, out, err = sh(cluster, "echo hostName | nc -v -t -w 2 netexec.e2e 80")
    assert code == 0 and "open" in err
    assert out == ("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
                   "400 Bad Request")


# --- /agnhost exec'd in a pod ----------------------------------------------------------------------


@pytest.mark.parametrize(("script", "code", "stderr"), [
    ("/agnhost connect netexec.e2e:80 --timeout=5s", 0, ""),
    # The Service's targetPort has no listener: the pod answers with a reset.
    ("/agnhost connect netexec.e2e:82 --timeout=1s", 1, "REFUSED\n"),
    ("agnhost connect nosuch:80 --timeout=1s", 1, "DNS: lookup nosuch on 10.96.0.10:53: no such host\n"),
    ("agnhost connect netexec.e2e --timeout=1s", 1, "UNKNOWN: address netexec.e2e: missing port in address\n"),
    ("agnhost connect netexec.e2e:81 --protocol=udp --timeout=1s", 0, ""),
    ("agnhost connect", 1, "Error: accepts 1 arg(s), received 0\nUsage:\n  agnhost connect [host:port] [flags]\n\n"),
    ("agnhost connect a:1 --bogus", 1,
     "Error: unknown flag: --bogus\nUsage:\n  agnhost connect [host:port] [flags]\n\n"),
    ("agnhost no-such-subcommand", 1, "agnhost: subcommand no-such-subcommand is not simulated by knetsim\n"),
])
def test_agnhost_connect_exit_codes_and_messages(cluster: Cluster, script: str, code: int, stderr: str) -> None:
    assert sh(cluster, script) == (code, "", stderr)


def test_agnhost_connect_refused_pod_port(cluster: Cluster) -> None:
    assert sh(cluster, f"/agnhost connect {ip(cluster, 'netexec')}:9999 --timeout=1s") == (1, "", "REFUSED\n")


def test_agnhost_dns_suffix_and_server_list(cluster: Cluster) -> None:
    assert sh(cluster, "/agnhost dns-suffix; /agnhost dns-server-list") == (
        0, "e2e.svc.cluster.local,svc.cluster.local,cluster.local\n10.96.0.10\n", "")


# --- ss ------------------------------------------------------------------------------------------


def test_ss_lists_the_pods_listeners(cluster: Cluster) -> None:
    code, out, _ = sh(cluster, "ss -tln", pod="netexec")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["State", "Recv-Q", "Send-Q", "Local", "Address:Port", "Peer", "Address:PortProcess"]
    # iproute2's table: the address right-aligned up to its ":" under "Local Address", its port after it.
    assert lines == ["State  Recv-Q Send-Q Local Address:Port Peer Address:PortProcess",
                     "LISTEN 0      4096               *:8080            *:*"]
    _, udp, _ = sh(cluster, "ss -uln", pod="netexec")
    assert [line.split() for line in udp.splitlines()[1:]] == [["UNCONN", "0", "0", "*:8081", "*:*"]]
    _, both, _ = sh(cluster, "ss -tulnp", pod="netexec")
    assert both.splitlines()[0].startswith("Netid")
    assert 'users:(("agnhost",pid=1,' in both


def test_ss_refuses_what_it_does_not_simulate(cluster: Cluster) -> None:
    assert sh(cluster, "ss -x") == (1, "", "ss: option -x is not simulated by knetsim\n")


def test_dial_json_is_unchanged_by_the_new_endpoints(cluster: Cluster) -> None:
    # /dial still goes through the tracer: the pod's own hostname comes back, not netexec's clock.
    query = f"request=hostname&protocol=http&host={ip(cluster, 'netexec')}&port=8080&tries=1"
    status, body, _ = get(cluster, f"http://{ip(cluster, 'netexec')}:8080/dial?{query}")
    assert status == 200 and json.loads(body) == {"responses": ["netexec-host"]}


def test_agnhost_connect_times_out_where_policy_drops(cluster: Cluster) -> None:
    deny = APP + """
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, namespace: e2e}
spec:
  podSelector: {matchLabels: {app: netexec}}
  policyTypes: [Ingress]
"""
    assert sh(Cluster.from_yaml(deny), "/agnhost connect netexec.e2e:80 --timeout=1s") == (1, "", "TIMEOUT\n")


def test_liveness_healthz_fails_ten_seconds_after_the_container_started() -> None:
    # liveness.go: healthy for 10 s after start, then 500 "error: <seconds>" (the docs' liveness example).
    old = APP + f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: aged, namespace: e2e}}
spec:
  containers:
  - {{name: liveness, image: {AGNHOST}, args: [liveness]}}
status:
  phase: Running
  podIP: 10.244.1.77
  containerStatuses:
  - name: liveness
    state: {{running: {{startedAt: "2026-01-01T00:00:00Z"}}}}
"""
    cluster = Cluster.from_yaml(old)
    status, body, _ = get(cluster, "http://10.244.1.77:8080/healthz")
    assert status == 500 and re.fullmatch(r"error: \d+\.\d+", body), body
