"""Kubernetes' own Service e2e tests, restated for the real kubectl against `knetsim up`.

Each test is one upstream test of kubernetes/kubernetes ``test/e2e/network/service.go`` (named in its docstring),
with the same objects (agnhost pods and ReplicationControllers, as the e2e framework's Service jig creates them)
and the same checks: the exec pod's ``echo hostName | nc -v -t -w 2 HOST PORT`` and ``curl -q -s`` commands.
docs/e2e.md lists them.
"""

from __future__ import annotations

import json
import time
from urllib.parse import quote

from .conftest import Cluster, wait_for

AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"


def exec_pod(k: Cluster, ns: str) -> str:
    # The framework's exec pod: agnhost running pause, used for `kubectl exec -- /bin/sh -x -c CMD`.
    k.kubectl("run", "execpod", "-n", ns, f"--image={AGNHOST}", "--restart=Never", "--", "pause")
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/execpod", "--timeout=30s")
    return "execpod"


def reachable(k: Cluster, ns: str, host: str, port: int | str) -> bool:
    # jig.go's checkServiceReachability: the exit status of nc is what counts.
    out = k.kubectl("exec", "-n", ns, "execpod", "--", "/bin/sh", "-x", "-c",
                    f"echo hostName | nc -v -t -w 2 {host} {port}", check=False)
    return out.returncode == 0


def endpoints(k: Cluster, ns: str, name: str) -> dict[str, list[int]]:
    """pod name → ports, from the Service's EndpointSlices (validateEndpointsPortsOrFail): each port of a slice
    for each of its endpoints, so a pod in a slice of no ports (one that has none of the Service's named target
    ports, as the EndpointSlice controller groups it) counts for none."""
    found: dict[str, list[int]] = {}
    for s in k.get_json("endpointslices", "-n", ns, "-l", f"kubernetes.io/service-name={name}")["items"]:
        ports = sorted(p["port"] for p in s.get("ports") or [])
        for e in s.get("endpoints") or []:
            ref = (e.get("targetRef") or {}).get("name")
            if ref and ports:
                found[ref] = sorted({*found.get(ref, []), *ports})
    return found


def agnhost_pod(name: str, ns: str, labels: dict[str, str], args: list[str], ports: list[int]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns,
                                                                      "labels": labels},
                       "spec": {"containers": [{"name": "agnhost", "image": AGNHOST, "args": args,
                                                "ports": [{"containerPort": p} for p in ports]}]}})


def rc(name: str, ns: str, replicas: int, args: list[str]) -> str:
    """The Service jig's backend: a ReplicationController of agnhost (jig.go newRCTemplate)."""
    return json.dumps({"apiVersion": "v1", "kind": "ReplicationController",
                       "metadata": {"name": name, "namespace": ns},
                       "spec": {"replicas": replicas, "selector": {"name": name},
                                "template": {"metadata": {"labels": {"name": name}},
                                             "spec": {"containers": [{"name": "agnhost", "image": AGNHOST,
                                                                      "args": args}]}}}})


def test_should_serve_a_basic_endpoint_from_pods(k: Cluster) -> None:
    """service.go "Services should serve a basic endpoint from pods [Conformance]"."""
    ns = k.namespace("services-basic")
    labels = {"foo": "bar", "baz": "blah"}
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "endpoint-test2", "namespace": ns},
        "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 80}]}}))
    exec_pod(k, ns)
    assert endpoints(k, ns, "endpoint-test2") == {}
    k.kubectl("apply", "-f", "-", input=agnhost_pod("pod1", ns, labels, ["netexec", "--http-port", "80"], [80]))
    assert wait_for(lambda: endpoints(k, ns, "endpoint-test2") == {"pod1": [80]})
    assert reachable(k, ns, "endpoint-test2", 80)
    k.kubectl("apply", "-f", "-", input=agnhost_pod("pod2", ns, labels, ["netexec", "--http-port", "80"], [80]))
    assert wait_for(lambda: endpoints(k, ns, "endpoint-test2") == {"pod1": [80], "pod2": [80]})
    k.kubectl("delete", "pod", "pod1", "-n", ns)
    assert wait_for(lambda: endpoints(k, ns, "endpoint-test2") == {"pod2": [80]})
    assert reachable(k, ns, "endpoint-test2", 80)
    k.kubectl("delete", "pod", "pod2", "-n", ns)
    assert wait_for(lambda: endpoints(k, ns, "endpoint-test2") == {})


def test_should_serve_multiport_endpoints_from_pods(k: Cluster) -> None:
    """service.go "Services should serve multiport endpoints from pods [Conformance]"."""
    ns = k.namespace("services-multiport")
    labels = {"foo": "bar", "baz": "blah"}
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "multi-endpoint-test", "namespace": ns},
        "spec": {"selector": labels, "ports": [
            {"name": "portname1", "port": 80, "targetPort": "svc1"},
            {"name": "portname2", "port": 81, "targetPort": "svc2"}]}}))
    exec_pod(k, ns)
    pod1 = json.loads(agnhost_pod("pod1", ns, labels, ["netexec", "--http-port", "8080", "--udp-port", "8080"], []))
    pod1["spec"]["containers"][0]["ports"] = [{"name": "svc1", "containerPort": 8080}]
    pod2 = json.loads(agnhost_pod("pod2", ns, labels, ["netexec", "--http-port", "8081", "--udp-port", "8081"], []))
    pod2["spec"]["containers"][0]["ports"] = [{"name": "svc2", "containerPort": 8081}]
    k.kubectl("apply", "-f", "-", input=json.dumps(pod1))
    k.kubectl("apply", "-f", "-", input=json.dumps(pod2))

    def by_port() -> dict[str, int]:
        found: dict[str, int] = {}
        for s in k.get_json("endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=multi-endpoint-test")[
                "items"]:
            for e in s.get("endpoints") or []:
                for p in s.get("ports") or []:
                    found[e["targetRef"]["name"]] = p["port"]
        return found

    assert wait_for(lambda: by_port() == {"pod1": 8080, "pod2": 8081}, timeout=20)
    assert reachable(k, ns, "multi-endpoint-test", 80)
    assert reachable(k, ns, "multi-endpoint-test", 81)


def test_should_be_able_to_create_a_functioning_nodeport_service(k: Cluster) -> None:
    """service.go "Services should be able to create a functioning NodePort service [Conformance]"."""
    ns = k.namespace("services-nodeport")
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "nodeport-test", "namespace": ns},
        "spec": {"type": "NodePort", "selector": {"name": "nodeport-test"},
                 "ports": [{"name": "http", "port": 80, "targetPort": 9376}]}}))
    k.kubectl("apply", "-f", "-", input=rc("nodeport-test", ns, 2, ["serve-hostname"]))
    exec_pod(k, ns)
    svc = k.get_json("service", "nodeport-test", "-n", ns)
    node_port = svc["spec"]["ports"][0]["nodePort"]
    assert 30000 <= node_port <= 32767
    assert wait_for(lambda: len(endpoints(k, ns, "nodeport-test")) == 2, timeout=20)
    assert reachable(k, ns, "nodeport-test", 80)
    assert reachable(k, ns, svc["spec"]["clusterIP"], 80)
    nodes = k.get_json("nodes")["items"]
    for node in nodes:
        internal = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
        assert reachable(k, ns, internal, node_port), node["metadata"]["name"]


def test_should_be_able_to_change_the_type_from_externalname_to_clusterip(k: Cluster) -> None:
    """service.go "Services should be able to change the type from ExternalName to ClusterIP [Conformance]"."""
    ns = k.namespace("services-extname")
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "externalname-service", "namespace": ns},
        "spec": {"type": "ExternalName", "externalName": "foo.example.com"}}))
    assert "clusterIP" not in k.get_json("service", "externalname-service", "-n", ns)["spec"] or \
        k.get_json("service", "externalname-service", "-n", ns)["spec"].get("clusterIP") in (None, "", "None")
    k.kubectl("patch", "service", "externalname-service", "-n", ns, "--type=merge", "-p", json.dumps({
        "spec": {"type": "ClusterIP", "externalName": None, "selector": {"name": "externalname-service"},
                 "ports": [{"name": "http", "port": 80, "targetPort": 9376, "protocol": "TCP"}]}}))
    spec = k.get_json("service", "externalname-service", "-n", ns)["spec"]
    assert spec["type"] == "ClusterIP" and spec["clusterIP"] not in ("", "None")
    k.kubectl("apply", "-f", "-", input=rc("externalname-service", ns, 2, ["serve-hostname"]))
    exec_pod(k, ns)
    assert wait_for(lambda: len(endpoints(k, ns, "externalname-service")) == 2, timeout=20)
    assert reachable(k, ns, "externalname-service", 80)
    assert reachable(k, ns, spec["clusterIP"], 80)


def test_should_have_session_affinity_work_for_service_with_type_clusterip(k: Cluster) -> None:
    """service.go "Services should have session affinity work for service with type clusterIP [LinuxOnly]
    [Conformance]": every request of the exec pod reaches the same backend (checkAffinity: 15 tries)."""
    ns = k.namespace("services-affinity")
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "affinity-clusterip", "namespace": ns},
        "spec": {"selector": {"name": "affinity-clusterip"}, "sessionAffinity": "ClientIP",
                 "ports": [{"port": 80, "targetPort": 9376}]}}))
    k.kubectl("apply", "-f", "-", input=rc("affinity-clusterip", ns, 3, ["serve-hostname"]))
    exec_pod(k, ns)
    assert wait_for(lambda: len(endpoints(k, ns, "affinity-clusterip")) == 3, timeout=20)
    ip = k.get_json("service", "affinity-clusterip", "-n", ns)["spec"]["clusterIP"]
    script = f"for i in $(seq 0 14); do echo; curl -q -s --connect-timeout 2 http://{ip}:80/ ; done"
    out = k.kubectl("exec", "-n", ns, "execpod", "--", "/bin/sh", "-x", "-c", script).stdout
    hosts = [line for line in out.splitlines() if line]
    pods = {p["metadata"]["name"] for p in k.get_json("pods", "-n", ns, "-l", "name=affinity-clusterip")["items"]}
    assert len(hosts) == 15 and len(set(hosts)) == 1 and hosts[0] in pods


def test_should_create_endpoints_for_unready_pods(k: Cluster) -> None:
    """service.go "Services should create endpoints for unready pods": a pod whose readiness never passes is an
    endpoint (ready in its slice) of a Service with publishNotReadyAddresses, and the Service reaches it."""
    ns = k.namespace("services-unready")
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "tolerate-unready", "namespace": ns},
        "spec": {"publishNotReadyAddresses": True, "selector": {"name": "tolerate-unready"},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}))
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "unready", "namespace": ns, "labels": {"name": "tolerate-unready"}},
           "spec": {"containers": [{"name": "agnhost", "image": AGNHOST, "args": ["netexec", "--http-port=8080"],
                                    "readinessProbe": {"exec": {"command": ["/bin/false"]},
                                                       "periodSeconds": 1}}]}}
    k.kubectl("apply", "-f", "-", input=json.dumps(pod))
    exec_pod(k, ns)

    def conditions() -> list[dict[str, bool]]:
        return [e.get("conditions") or {} for s in k.get_json(
            "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=tolerate-unready")["items"]
            for e in s.get("endpoints") or []]

    assert wait_for(lambda: conditions() == [{"ready": True, "serving": False, "terminating": False}], timeout=20), \
        conditions()
    time.sleep(1)
    out = k.kubectl("exec", "-n", ns, "execpod", "--", "/bin/sh", "-c",
                    "curl -q -s --connect-timeout 2 http://tolerate-unready/hostname").stdout
    assert out == "unready"


def test_a_shell_loop_in_an_agnhost_pod_writes_log_lines(k: Cluster) -> None:
    """The e2e framework's pods often run `while true; do echo ...; sleep 1; done` in agnhost's image."""
    ns = k.namespace("logs-loop")
    k.kubectl("run", "looper", "-n", ns, f"--image={AGNHOST}", "--restart=Never", "--command", "--",
              "/bin/sh", "-c", "while true; do echo hi; sleep 1; done")
    assert wait_for(lambda: k.kubectl("logs", "-n", ns, "looper", check=False).stdout.startswith("hi\nhi\n"),
                    timeout=15)


def test_agnhost_connect_exec_d_in_a_pod(k: Cluster) -> None:
    """`kubectl exec POD -- /agnhost connect HOST:PORT --timeout=5s`, as the network policy e2e tests probe."""
    ns = k.namespace("agnhost-connect")
    k.kubectl("apply", "-f", "-", input=agnhost_pod("server", ns, {"app": "server"},
                                                       ["netexec", "--http-port=8080"], [8080]))
    k.kubectl("expose", "pod", "server", "-n", ns, "--port=80", "--target-port=8080")
    exec_pod(k, ns)
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/server", "--timeout=30s")
    ok = k.kubectl("exec", "-n", ns, "execpod", "--", "/agnhost", "connect", "server:80", "--timeout=5s", check=False)
    assert (ok.returncode, ok.stderr) == (0, "")
    bad = k.kubectl("exec", "-n", ns, "execpod", "--", "/agnhost", "connect", "nosuch:80", "--timeout=1s",
                    check=False)
    assert bad.returncode == 1 and bad.stderr.startswith("DNS: lookup nosuch on ")
    # netexec's log.Printf lines: stderr, after Go's date and time.
    logs = k.kubectl("logs", "-n", ns, "server").stdout.splitlines()
    assert [line.split(" ", 2)[2] for line in logs] == ["Started HTTP server on port 8080",
                                                         "Started UDP server on port  8081"]


def test_netexec_shell_runs_the_command_in_its_pod(k: Cluster) -> None:
    """netexec's /shell?cmd= (netexec.go shellHandler): the command runs in netexec's pod; JSON "output" and, when it
    fails, "error" ("exit status N"); Go's encoder writes < > & as \\u003c \\u003e \\u0026."""
    ns = k.namespace("netexec-shell")
    k.kubectl("apply", "-f", "-", input=agnhost_pod("server", ns, {"app": "server"},
                                                       ["netexec", "--http-port=8080"], [8080]))
    k.kubectl("expose", "pod", "server", "-n", ns, "--port=80", "--target-port=8080")
    exec_pod(k, ns)
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/server", "--timeout=30s")

    def shell(cmd: str) -> str:
        return k.kubectl("exec", "-n", ns, "execpod", "--", "curl", "-s",
                         f"http://server/shell?cmd={quote(cmd)}").stdout

    assert shell("hostname") == '{"output":"server\\n"}'
    assert shell("echo '<a&b>'; exit 3") == '{"error":"exit status 3","output":"\\u003ca\\u0026b\\u003e\\n"}'


def affinity_hosts(k: Cluster, ns: str, host: str, port: int | str) -> list[str]:
    script = f"for i in $(seq 0 14); do echo; curl -q -s --connect-timeout 2 http://{host}:{port}/ ; done"
    out = k.kubectl("exec", "-n", ns, "execpod", "--", "/bin/sh", "-x", "-c", script).stdout
    return [line for line in out.splitlines() if line]


def test_should_have_session_affinity_work_for_nodeport_service(k: Cluster) -> None:
    """service.go "Services should have session affinity work for NodePort service [LinuxOnly] [Conformance]"."""
    ns = k.namespace("services-affinity-np")
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "affinity-nodeport", "namespace": ns},
        "spec": {"type": "NodePort", "selector": {"name": "affinity-nodeport"}, "sessionAffinity": "ClientIP",
                 "ports": [{"port": 80, "targetPort": 9376}]}}))
    k.kubectl("apply", "-f", "-", input=rc("affinity-nodeport", ns, 3, ["serve-hostname"]))
    exec_pod(k, ns)
    assert wait_for(lambda: len(endpoints(k, ns, "affinity-nodeport")) == 3, timeout=20)
    node_port = k.get_json("service", "affinity-nodeport", "-n", ns)["spec"]["ports"][0]["nodePort"]
    node = k.get_json("nodes")["items"][-1]
    node_ip = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
    hosts = affinity_hosts(k, ns, node_ip, node_port)
    assert len(hosts) == 15 and len(set(hosts)) == 1, hosts


def test_should_be_able_to_switch_session_affinity_for_service_with_type_clusterip(k: Cluster) -> None:
    """service.go "Services should be able to switch session affinity for service with type clusterIP [LinuxOnly]
    [Conformance]": without affinity the requests spread over the backends; with ClientIP they stick to one."""
    ns = k.namespace("services-affinity-switch")
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "affinity-clusterip-transition", "namespace": ns},
        "spec": {"selector": {"name": "affinity-clusterip-transition"}, "sessionAffinity": "None",
                 "ports": [{"port": 80, "targetPort": 9376}]}}))
    k.kubectl("apply", "-f", "-", input=rc("affinity-clusterip-transition", ns, 3, ["serve-hostname"]))
    exec_pod(k, ns)
    assert wait_for(lambda: len(endpoints(k, ns, "affinity-clusterip-transition")) == 3, timeout=20)
    ip = k.get_json("service", "affinity-clusterip-transition", "-n", ns)["spec"]["clusterIP"]
    assert len(set(affinity_hosts(k, ns, ip, 80))) > 1
    k.kubectl("patch", "service", "affinity-clusterip-transition", "-n", ns, "-p",
              '{"spec":{"sessionAffinity":"ClientIP"}}')
    assert wait_for(lambda: len(set(affinity_hosts(k, ns, ip, 80))) == 1, timeout=10)


def test_should_serve_endpoints_on_same_port_and_different_protocols(k: Cluster) -> None:
    """service.go "Services should serve endpoints on same port and different protocols [Conformance]": one Service
    port 80 over TCP and over UDP, both reaching netexec."""
    ns = k.namespace("services-protocols")
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "multiprotocol-test", "namespace": ns},
        "spec": {"selector": {"app": "multiprotocol-test"}, "ports": [
            {"name": "tcp-port", "port": 80, "protocol": "TCP", "targetPort": 80},
            {"name": "udp-port", "port": 80, "protocol": "UDP", "targetPort": 80}]}}))
    k.kubectl("apply", "-f", "-", input=agnhost_pod("pod1", ns, {"app": "multiprotocol-test"},
                                                       ["netexec", "--http-port=80", "--udp-port=80"], []))
    exec_pod(k, ns)
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/pod1", "--timeout=30s")
    ports = wait_for(lambda: sorted((p["protocol"], p["port"]) for s in k.get_json(
        "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=multiprotocol-test")["items"]
        for p in s.get("ports") or []) == [("TCP", 80), ("UDP", 80)], timeout=20)
    assert ports
    assert reachable(k, ns, "multiprotocol-test", 80)
    udp = k.kubectl("exec", "-n", ns, "execpod", "--", "/bin/sh", "-x", "-c",
                    "echo hostName | nc -v -u -w 2 multiprotocol-test 80", check=False)
    assert (udp.returncode, udp.stdout) == (0, "pod1")


def test_should_be_able_to_change_the_type_from_clusterip_to_externalname(k: Cluster) -> None:
    """service.go "Services should be able to change the type from ClusterIP to ExternalName [Conformance]": the
    Service becomes a CNAME for another Service's name, which the exec pod then reaches through it."""
    ns = k.namespace("services-to-extname")
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "externalsvc", "namespace": ns},
        "spec": {"selector": {"name": "externalsvc"}, "ports": [{"port": 80, "targetPort": 9376}]}}))
    k.kubectl("apply", "-f", "-", input=rc("externalsvc", ns, 2, ["serve-hostname"]))
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "clusterip-service", "namespace": ns},
        "spec": {"ports": [{"port": 80}]}}))
    exec_pod(k, ns)
    target = f"externalsvc.{ns}.svc.cluster.local"
    k.kubectl("patch", "service", "clusterip-service", "-n", ns, "--type=merge", "-p", json.dumps({
        "spec": {"type": "ExternalName", "externalName": target, "clusterIP": "", "clusterIPs": None,
                 "ports": None}}))
    spec = k.get_json("service", "clusterip-service", "-n", ns)["spec"]
    assert spec["type"] == "ExternalName" and not spec.get("clusterIP")
    out = k.kubectl("exec", "-n", ns, "execpod", "--", "nslookup", f"clusterip-service.{ns}.svc.cluster.local").stdout
    assert f"canonical name = {target}" in out
    assert wait_for(lambda: len(endpoints(k, ns, "externalsvc")) == 2, timeout=20)
    assert reachable(k, ns, "clusterip-service", 80)


def test_should_be_rejected_when_no_endpoints_exist(k: Cluster) -> None:
    """service.go "Services should be rejected when no endpoints exist": kube-proxy rejects a connection to a
    Service with no endpoints at once, which `/agnhost connect` reports as REFUSED (not a TIMEOUT)."""
    ns = k.namespace("services-no-pods")
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "no-pods", "namespace": ns},
        "spec": {"selector": {"name": "no-pods"}, "ports": [{"port": 80, "targetPort": 80}]}}))
    exec_pod(k, ns)
    ip = k.get_json("service", "no-pods", "-n", ns)["spec"]["clusterIP"]
    started = time.monotonic()
    out = k.kubectl("exec", "-n", ns, "execpod", "--", "/bin/sh", "-x", "-c",
                    f"/agnhost connect --timeout=3s {ip}:80", check=False)
    assert out.returncode != 0 and "REFUSED" in out.stderr, out.stderr
    assert time.monotonic() - started < 3


def netservers(k: Cluster, ns: str, count: int = 2) -> list[tuple[str, str]]:
    """The networking utils' netserver pods (test/e2e/framework/network/utils.go): agnhost netexec, HTTP on 8083,
    UDP on 8081; (name, IP) of each once Ready."""
    for i in range(count):
        pod = json.loads(agnhost_pod(f"netserver-{i}", ns, {"selector": "netserver"},
                                     ["netexec", "--http-port=8083", "--udp-port=8081"], []))
        pod["spec"]["containers"][0]["ports"] = [{"name": "http", "containerPort": 8083},
                                                 {"name": "udp", "containerPort": 8081, "protocol": "UDP"}]
        k.kubectl("apply", "-f", "-", input=json.dumps(pod))
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod", "-l", "selector=netserver", "--timeout=30s")
    return [(p["metadata"]["name"], p["status"]["podIP"])
            for p in k.get_json("pods", "-n", ns, "-l", "selector=netserver")["items"]]


def test_granular_checks_pods_should_function_for_intra_pod_communication_http(k: Cluster) -> None:
    """networking.go (test/e2e/common/network/) "Granular Checks: Pods should function for intra-pod communication:
    http [NodeConformance] [Conformance]": the test container's netexec /dial reaches each netserver by HTTP."""
    ns = k.namespace("pod-network-test")
    servers = netservers(k, ns)
    k.kubectl("apply", "-f", "-", input=agnhost_pod("test-container-pod", ns, {}, ["netexec", "--http-port=9080",
                                                                                     "--udp-port=8081"], [9080]))
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/test-container-pod", "--timeout=30s")
    tester = k.get_json("pod", "test-container-pod", "-n", ns)["status"]["podIP"]
    for name, ip in servers:
        for protocol, port in (("http", 8083), ("udp", 8081)):
            cmd = (f"curl -g -q -s 'http://{tester}:9080/dial?request=hostname&protocol={protocol}&host={ip}"
                   f"&port={port}&tries=1'")
            out = k.kubectl("exec", "-n", ns, "test-container-pod", "--", "/bin/sh", "-c", cmd).stdout
            assert json.loads(out) == {"responses": [name]}, (protocol, out)


def host_test_container_pod(k: Cluster, ns: str) -> None:
    """The framework's host-test-container-pod: agnhost pausing on the node's network, Ready."""
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "host-test-container-pod", "namespace": ns},
        "spec": {"hostNetwork": True, "containers": [{"name": "agnhost-container", "image": AGNHOST,
                                                      "args": ["pause"]}]}}))
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/host-test-container-pod", "--timeout=30s")


def test_granular_checks_pods_should_function_for_node_pod_communication_http(k: Cluster) -> None:
    """networking.go "Granular Checks: Pods should function for node-pod communication: http [LinuxOnly]
    [NodeConformance] [Conformance]": a hostNetwork pod curls each netserver's /hostName."""
    ns = k.namespace("node-pod-test")
    servers = netservers(k, ns)
    host_test_container_pod(k, ns)
    for name, ip in servers:
        cmd = f"curl -g -q -s --max-time 15 --connect-timeout 1 http://{ip}:8083/hostName | grep -v '^\\s*$'"
        out = k.kubectl("exec", "-n", ns, "host-test-container-pod", "--", "/bin/sh", "-c", cmd).stdout
        assert out.strip() == name


def test_should_find_a_service_from_listing_all_namespaces(k: Cluster) -> None:
    """service.go "Services should find a service from listing all namespaces [Conformance]"."""
    ns = k.namespace("services-listing")
    k.kubectl("create", "service", "clusterip", "test-service", "-n", ns, "--tcp=80:80")
    names = {(i["metadata"]["namespace"], i["metadata"]["name"])
             for i in k.get_json("services", "--all-namespaces")["items"]}
    assert (ns, "test-service") in names and ("default", "kubernetes") in names


def test_agnhost_connect_as_the_containers_program(k: Cluster) -> None:
    """`kubectl run --image=agnhost -- connect HOST:PORT`: the pod runs /agnhost (the image's entrypoint) and ends
    Completed or Error by connect's exit code, its message in the log."""
    ns = k.namespace("agnhost-program")
    k.kubectl("apply", "-f", "-", input=agnhost_pod("server", ns, {"app": "server"},
                                                       ["netexec", "--http-port=8080"], [8080]))
    k.kubectl("expose", "pod", "server", "-n", ns, "--port=80", "--target-port=8080")
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/server", "--timeout=30s")
    for name, target in (("conn-ok", "server:80"), ("conn-bad", "nosuch:80")):
        k.kubectl("run", name, "-n", ns, f"--image={AGNHOST}", "--restart=Never", "--", "connect", target,
                  "--timeout=2s")

    def phase(name: str) -> str:
        return str(k.get_json("pod", name, "-n", ns)["status"].get("phase"))

    assert wait_for(lambda: phase("conn-ok") == "Succeeded" and phase("conn-bad") == "Failed", timeout=15)
    assert k.kubectl("logs", "-n", ns, "conn-bad").stdout == "DNS: lookup nosuch on 10.96.0.10:53: no such host\n"


def test_the_docs_liveness_example_restarts_after_ten_seconds(k: Cluster) -> None:
    """kubernetes.io "Configure Liveness, Readiness and Startup Probes": agnhost liveness answers /healthz 500 once
    it has run 10 s, so the kubelet restarts it (container_probe.go's "should be restarted with a /healthz http
    liveness probe" waits for the same)."""
    ns = k.namespace("liveness-docs")
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "liveness-http", "namespace": ns},
        "spec": {"containers": [{"name": "liveness", "image": AGNHOST, "args": ["liveness"], "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": 8080}, "initialDelaySeconds": 3, "periodSeconds": 3}}]}}))

    def restarts() -> int:
        statuses = k.get_json("pod", "liveness-http", "-n", ns)["status"].get("containerStatuses") or []
        return int(statuses[0].get("restartCount", 0)) if statuses else 0

    assert restarts() == 0
    assert wait_for(lambda: restarts() >= 1, timeout=30)
    events = k.kubectl("get", "events", "-n", ns, "-o", "json").stdout
    assert "Liveness probe failed: HTTP probe failed with statuscode: 500" in events


def test_should_be_able_to_change_the_type_from_externalname_to_nodeport(k: Cluster) -> None:
    """service.go "Services should be able to change the type from ExternalName to NodePort [Conformance]": the
    Service gets a ClusterIP and a node port, and is reached through both and through a node's address."""
    ns = k.namespace("services-extname-np")
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "externalname-service", "namespace": ns},
        "spec": {"type": "ExternalName", "externalName": "foo.example.com"}}))
    k.kubectl("patch", "service", "externalname-service", "-n", ns, "--type=merge", "-p", json.dumps({
        "spec": {"type": "NodePort", "externalName": None, "selector": {"name": "externalname-service"},
                 "ports": [{"name": "http", "port": 80, "targetPort": 9376, "protocol": "TCP"}]}}))
    spec = k.get_json("service", "externalname-service", "-n", ns)["spec"]
    node_port = spec["ports"][0]["nodePort"]
    assert spec["type"] == "NodePort" and spec["clusterIP"] not in ("", "None") and 30000 <= node_port <= 32767
    k.kubectl("apply", "-f", "-", input=rc("externalname-service", ns, 2, ["serve-hostname"]))
    exec_pod(k, ns)
    assert wait_for(lambda: len(endpoints(k, ns, "externalname-service")) == 2, timeout=20)
    assert reachable(k, ns, "externalname-service", 80)
    node_ip = k.kubectl("get", "nodes", "-o", "jsonpath={.items[1].status.addresses[0].address}").stdout
    assert reachable(k, ns, node_ip, node_port)


def test_should_be_able_to_change_the_type_from_nodeport_to_externalname(k: Cluster) -> None:
    """service.go "Services should be able to change the type from NodePort to ExternalName [Conformance]": the
    node port is released and the name becomes a CNAME to another Service, reached through it."""
    ns = k.namespace("services-np-extname")
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "externalsvc", "namespace": ns},
        "spec": {"selector": {"name": "externalsvc"}, "ports": [{"port": 80, "targetPort": 9376}]}}))
    k.kubectl("apply", "-f", "-", input=rc("externalsvc", ns, 2, ["serve-hostname"]))
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "nodeport-service", "namespace": ns},
        "spec": {"type": "NodePort", "ports": [{"port": 80}]}}))
    exec_pod(k, ns)
    target = f"externalsvc.{ns}.svc.cluster.local"
    k.kubectl("patch", "service", "nodeport-service", "-n", ns, "--type=merge", "-p", json.dumps({
        "spec": {"type": "ExternalName", "externalName": target, "clusterIP": "", "clusterIPs": None,
                 "ports": None}}))
    spec = k.get_json("service", "nodeport-service", "-n", ns)["spec"]
    assert spec["type"] == "ExternalName" and not spec.get("clusterIP") and not spec.get("ports")
    out = k.kubectl("exec", "-n", ns, "execpod", "--", "nslookup", f"nodeport-service.{ns}.svc.cluster.local").stdout
    assert f"canonical name = {target}" in out
    assert wait_for(lambda: len(endpoints(k, ns, "externalsvc")) == 2, timeout=20)
    assert reachable(k, ns, "nodeport-service", 80)


def test_granular_checks_pods_should_function_for_node_pod_communication_udp(k: Cluster) -> None:
    """networking.go (test/e2e/common/network/networking.go) "Granular Checks: Pods should function for node-pod
    communication: udp [LinuxOnly] [NodeConformance] [Conformance]": a hostNetwork pod sends `hostName` to each
    netserver's UDP port with nc (the framework's DialFromNode, test/e2e/framework/network/utils.go) and reads back
    its name."""
    ns = k.namespace("node-pod-udp")
    servers = netservers(k, ns)
    host_test_container_pod(k, ns)
    for name, ip in servers:
        cmd = f"echo hostName | nc -w 1 -u {ip} 8081 | grep -v '^\\s*$'"
        out = k.kubectl("exec", "-n", ns, "host-test-container-pod", "--", "/bin/sh", "-x", "-c", cmd)
        assert out.stdout.strip() == name


def affinity_timeout_backends(k: Cluster, ns: str, name: str, service_type: str, timeout: int) -> None:
    """service.go execAffinityTestForSessionAffinityTimeout: a Service of three serve-hostname pods with ClientIP
    affinity of ``timeout`` seconds sticks (checkAffinity's 15 tries); past the timeout, a request may reach
    another backend: up to 10 single requests, each after waiting timeout+1 s, until two differ."""
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
        "spec": {"type": service_type, "selector": {"name": name}, "sessionAffinity": "ClientIP",
                 "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": timeout}},
                 "ports": [{"port": 80, "targetPort": 9376}]}}))
    k.kubectl("apply", "-f", "-", input=rc(name, ns, 3, ["serve-hostname"]))
    exec_pod(k, ns)
    assert wait_for(lambda: len(endpoints(k, ns, name)) == 3, timeout=20)
    svc = k.get_json("service", name, "-n", ns)
    if service_type == "NodePort":
        node = k.get_json("nodes")["items"][-1]
        host = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
        port = svc["spec"]["ports"][0]["nodePort"]
    else:
        host, port = svc["spec"]["clusterIP"], 80
    hosts = affinity_hosts(k, ns, host, port)
    assert len(hosts) == 15 and len(set(hosts)) == 1, hosts
    seen = set()
    for _ in range(10):
        out = k.kubectl("exec", "-n", ns, "execpod", "--", "/bin/sh", "-x", "-c",
                        f"curl -q -s --connect-timeout 2 http://{host}:{port}/", check=False)
        if out.returncode == 0:
            seen.add(out.stdout)
            if len(seen) > 1:
                return
            time.sleep(timeout + 1)
    raise AssertionError(f"the same backend after the affinity timeout every time: {seen}")


def test_should_have_session_affinity_timeout_work_for_service_with_type_clusterip(k: Cluster) -> None:
    """service.go (test/e2e/network/service.go) "Services should have session affinity timeout work for service
    with type clusterIP [LinuxOnly] [Conformance]", with a 2 s timeout where upstream waits 15 s: the data plane's
    affinity entry expires on its clock (network/balance.py), not after a fixed number of requests."""
    affinity_timeout_backends(k, k.namespace("services-affinity-timeout"), "affinity-clusterip-timeout", "ClusterIP",
                              2)


def test_should_have_session_affinity_timeout_work_for_nodeport_service(k: Cluster) -> None:
    """service.go "Services should have session affinity timeout work for NodePort service [LinuxOnly]
    [Conformance]", with a 2 s timeout: through a node's address and the NodePort."""
    affinity_timeout_backends(k, k.namespace("services-affinity-np-timeout"), "affinity-nodeport-timeout", "NodePort",
                              2)


def test_should_be_able_to_switch_session_affinity_for_nodeport_service(k: Cluster) -> None:
    """service.go "Services should be able to switch session affinity for NodePort service [LinuxOnly]
    [Conformance]": through a node's address and the NodePort, requests spread over the backends without
    affinity and stick to one with ClientIP."""
    ns = k.namespace("services-affinity-np-switch")
    name = "affinity-nodeport-transition"
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
        "spec": {"type": "NodePort", "selector": {"name": name}, "sessionAffinity": "None",
                 "ports": [{"port": 80, "targetPort": 9376}]}}))
    k.kubectl("apply", "-f", "-", input=rc(name, ns, 3, ["serve-hostname"]))
    exec_pod(k, ns)
    assert wait_for(lambda: len(endpoints(k, ns, name)) == 3, timeout=20)
    node_port = k.get_json("service", name, "-n", ns)["spec"]["ports"][0]["nodePort"]
    node = k.get_json("nodes")["items"][-1]
    node_ip = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
    assert len(set(affinity_hosts(k, ns, node_ip, node_port))) > 1
    k.kubectl("patch", "service", name, "-n", ns, "-p", '{"spec":{"sessionAffinity":"ClientIP"}}')
    assert wait_for(lambda: len(set(affinity_hosts(k, ns, node_ip, node_port))) == 1, timeout=10)


def jig_pod(name: str, ns: str, labels: dict[str, str], ports: list[dict[str, object]], args: list[str]) -> str:
    """service.go createPodOrFail: an agnhost pod with the jig's labels and the given container ports."""
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns,
                                                                      "labels": labels},
                       "spec": {"containers": [{"name": "agnhost", "image": AGNHOST, "args": args,
                                                "ports": ports}]}})


def service_reachable(k: Cluster, ns: str, pod: str, name: str) -> bool:
    """jig.CheckServiceReachability for a ClusterIP Service: each of its ports by name and by ClusterIP, with the
    framework's `echo hostName | nc -v -t -w 2 HOST PORT` from ``pod``."""
    svc = k.get_json("service", name, "-n", ns)
    for port in svc["spec"]["ports"]:
        for host in (name, svc["spec"]["clusterIP"]):
            out = k.kubectl("exec", "-n", ns, pod, "--", "/bin/sh", "-x", "-c",
                            f"echo hostName | nc -v -t -w 2 {host} {port['port']}", check=False)
            if out.returncode != 0:
                return False
    return True


def test_should_be_updated_after_adding_or_deleting_ports(k: Cluster) -> None:
    """service.go "Services should be updated after adding or deleting ports": a second Service port (81 → the
    named port svc2) gets pod2 as its endpoint and is reached; once the port is deleted only pod1 is left."""
    ns = k.namespace("services-edit-port")
    labels = {"testid": "edit-port-test-7b1d"}
    name = "edit-port-test"
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"selector": labels, "ports": [{"name": "portname1", "port": 80, "targetPort": "svc1"}]}}))
    assert endpoints(k, ns, name) == {}
    k.kubectl("apply", "-f", "-", input=jig_pod("pod1", ns, labels, [{"name": "svc1", "containerPort": 100}],
                                                   ["netexec", "--http-port", "100"]))
    assert wait_for(lambda: endpoints(k, ns, name) == {"pod1": [100]}, timeout=20)
    exec_pod(k, ns)
    assert service_reachable(k, ns, "execpod", name)
    k.kubectl("patch", "service", name, "-n", ns, "--type=merge", "-p", json.dumps({"spec": {"ports": [
        {"name": "portname1", "port": 80, "targetPort": "svc1"},
        {"name": "portname2", "port": 81, "targetPort": "svc2"}]}}))
    k.kubectl("apply", "-f", "-", input=jig_pod("pod2", ns, labels, [{"name": "svc2", "containerPort": 101}],
                                                   ["netexec", "--http-port", "101"]))
    assert wait_for(lambda: endpoints(k, ns, name) == {"pod1": [100], "pod2": [101]}, timeout=20), \
        endpoints(k, ns, name)
    assert wait_for(lambda: service_reachable(k, ns, "execpod", name))
    k.kubectl("patch", "service", name, "-n", ns, "--type=merge", "-p", json.dumps({"spec": {"ports": [
        {"name": "portname1", "port": 80, "targetPort": "svc1"}]}}))
    assert wait_for(lambda: endpoints(k, ns, name) == {"pod1": [100]}, timeout=20), endpoints(k, ns, name)
    assert service_reachable(k, ns, "execpod", name)
    ip = k.get_json("service", name, "-n", ns)["spec"]["clusterIP"]
    gone = k.kubectl("exec", "-n", ns, "execpod", "--", "/bin/sh", "-x", "-c",
                     f"echo hostName | nc -v -t -w 2 {ip} 81", check=False)
    assert gone.returncode != 0


def test_should_allow_pods_to_hairpin_back_to_themselves_through_services(k: Cluster) -> None:
    """service.go "Services should allow pods to hairpin back to themselves through services": the Service's only
    backend reaches itself through the Service's name and ClusterIP."""
    ns = k.namespace("services-hairpin")
    labels = {"testid": "hairpin-test-2c4e"}
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "hairpin-test", "namespace": ns},
        "spec": {"selector": labels, "ports": [{"port": 8080, "targetPort": 8080, "protocol": "TCP"}]}}))
    k.kubectl("apply", "-f", "-", input=jig_pod("hairpin", ns, labels, [], ["netexec", "--http-port", "8080"]))
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/hairpin", "--timeout=30s")
    assert wait_for(lambda: endpoints(k, ns, "hairpin-test") == {"hairpin": [8080]}, timeout=20)
    assert service_reachable(k, ns, "hairpin", "hairpin-test")


def test_should_preserve_source_pod_ip_for_traffic_thru_service_cluster_ip(k: Cluster) -> None:
    """service.go "Services should preserve source pod IP for traffic thru service cluster IP [LinuxOnly]": from
    pause pods on two nodes, netexec's /clientip through the ClusterIP names each pod's own IP (execSourceIPTest)."""
    ns = k.namespace("services-sourceip")
    labels = {"testid": "sourceip-test-91aa"}
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "sourceip-test", "namespace": ns},
        "spec": {"selector": labels, "ports": [{"port": 8080, "targetPort": 8080, "protocol": "TCP"}]}}))
    k.kubectl("apply", "-f", "-", input=jig_pod("echo-sourceip", ns, labels, [], ["netexec", "--http-port", "8080"]))
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/echo-sourceip", "--timeout=30s")
    # createPausePodDeployment: one pause pod per node (required anti-affinity on the hostname).
    pause = {"app": "pause-pod"}
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "pause-pod", "namespace": ns},
        "spec": {"replicas": 2, "selector": {"matchLabels": pause}, "template": {
            "metadata": {"labels": pause},
            "spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": pause}, "topologyKey": "kubernetes.io/hostname"}]}},
                "containers": [{"name": "agnhost-pause", "image": AGNHOST, "args": ["pause"]}]}}}}))
    k.kubectl("rollout", "status", "-n", ns, "deployment/pause-pod", "--timeout=30s")
    pods = k.get_json("pods", "-n", ns, "-l", "app=pause-pod")["items"]
    assert len({p["spec"]["nodeName"] for p in pods}) == 2
    ip = k.get_json("service", "sourceip-test", "-n", ns)["spec"]["clusterIP"]
    for pod in pods:
        out = k.kubectl("exec", "-n", ns, pod["metadata"]["name"], "--", "/bin/sh", "-x", "-c",
                        f"curl -q -s --connect-timeout 30 {ip}:8080/clientip").stdout
        assert out.rsplit(":", 1)[0] == pod["status"]["podIP"], out


def serve_hostname_service(k: Cluster, ns: str, name: str, replicas: int,
                           labels: dict[str, str] | None = None) -> tuple[set[str], str]:
    """service.go StartServeHostnameService: a ReplicationController of serve-hostname and its Service (with
    ``labels``) on port 80 (target 9376); (the pods' names, the ClusterIP) once every pod is an endpoint."""
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
        "spec": {"selector": {"name": name}, "ports": [{"port": 80, "targetPort": 9376, "protocol": "TCP"}]}}))
    k.kubectl("apply", "-f", "-", input=rc(name, ns, replicas, ["serve-hostname"]))
    assert wait_for(lambda: len(endpoints(k, ns, name)) == replicas, timeout=30)
    pods = {p["metadata"]["name"] for p in k.get_json("pods", "-n", ns, "-l", f"name={name}")["items"]}
    return pods, str(k.get_json("service", name, "-n", ns)["spec"]["clusterIP"])


def served_hostnames(k: Cluster, ns: str, ip: str, expected: int) -> set[str]:
    """verifyServeHostnameServiceUp's command from the exec pod: 50 times per expected pod,
    `wget -q -T 1 -O - http://IP:80 | grep -v '^\\s*$'`, the answers as a set."""
    script = (f"for i in $(seq 1 {50 * expected}); do wget -q -T 1 -O - http://{ip}:80 2>&1 || true; echo; done")
    out = k.kubectl("exec", "-n", ns, "execpod", "--", "/bin/sh", "-c", script, check=False).stdout
    return {line for line in out.splitlines() if line.strip()}


def served_down(k: Cluster, ns: str, ip: str) -> bool:
    """verifyServeHostnameServiceDown's command from the exec pod: the ClusterIP answers nothing."""
    down = k.kubectl("exec", "-n", ns, "execpod", "--", "/bin/sh", "-c",
                     f"curl -g -s --connect-timeout 2 http://{ip}:80 && echo service-down-failed", check=False)
    return down.returncode != 0 and "service-down-failed" not in down.stdout


def test_should_work_after_the_service_has_been_recreated(k: Cluster) -> None:
    """service.go "Services should work after the service has been recreated": the pods answer through a new
    ClusterIP once the Service is deleted and created again."""
    ns = k.namespace("services-recreated")
    pods, ip = serve_hostname_service(k, ns, "service-deletion", 1)
    exec_pod(k, ns)
    assert served_hostnames(k, ns, ip, 1) == pods
    k.kubectl("delete", "service", "service-deletion", "-n", ns)
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "service-deletion", "namespace": ns},
        "spec": {"selector": {"name": "service-deletion"},
                 "ports": [{"port": 80, "targetPort": 9376, "protocol": "TCP"}]}}))
    new_ip = k.get_json("service", "service-deletion", "-n", ns)["spec"]["clusterIP"]
    assert wait_for(lambda: served_hostnames(k, ns, new_ip, 1) == pods, timeout=20)


def test_should_be_able_to_up_and_down_services(k: Cluster) -> None:
    """service.go "Services should be able to up and down services": of two Services, the stopped one's ClusterIP
    answers no more while the other still serves all its pods; a third gets another ClusterIP and serves."""
    ns = k.namespace("services-up-down")
    exec_pod(k, ns)
    pods1, ip1 = serve_hostname_service(k, ns, "up-down-1", 3)
    pods2, ip2 = serve_hostname_service(k, ns, "up-down-2", 3)
    assert served_hostnames(k, ns, ip1, 3) == pods1
    assert served_hostnames(k, ns, ip2, 3) == pods2
    # StopServeHostnameService: the RC and the Service go.
    k.kubectl("delete", "rc,service", "up-down-1", "-n", ns)
    assert served_down(k, ns, ip1)
    assert served_hostnames(k, ns, ip2, 3) == pods2
    pods3, ip3 = serve_hostname_service(k, ns, "up-down-3", 3)
    assert ip3 != ip2
    assert served_hostnames(k, ns, ip2, 3) == pods2
    assert served_hostnames(k, ns, ip3, 3) == pods3


def test_should_be_able_to_update_service_type_to_nodeport_listening_on_same_port_number_but_different_protocols(
        k: Cluster) -> None:
    """service.go "Services should be able to update service type to NodePort listening on same port number but
    different protocols": a ClusterIP Service becomes NodePort with port 80 over TCP and over UDP, each with its own
    node port, and the jig's netexec pods answer on both, through the name, the ClusterIP and every node's port
    (jig.CheckServiceReachability: `nc -t` for TCP, `nc -u` reading the hostname back for UDP)."""
    ns = k.namespace("services-np-tcp-udp")
    name = "nodeport-update-service"
    labels = {"testid": "nodeport-update-service-3c9d"}
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": labels, "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}]}}))
    k.kubectl("patch", "service", name, "-n", ns, "--type=merge", "-p", json.dumps({"spec": {
        "type": "NodePort", "ports": [
            {"name": "tcp-port", "port": 80, "protocol": "TCP", "targetPort": 9376},
            {"name": "udp-port", "port": 80, "protocol": "UDP", "targetPort": 9376}]}}))
    svc = k.get_json("service", name, "-n", ns)
    node_ports = {p["protocol"]: p["nodePort"] for p in svc["spec"]["ports"]}
    assert set(node_ports) == {"TCP", "UDP"} and all(30000 <= p <= 32767 for p in node_ports.values())
    # CreateTCPUDPServicePods: the jig's RC of netexec serving HTTP and UDP on the target port.
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": 2, "selector": labels, "template": {"metadata": {"labels": labels}, "spec": {
            "containers": [{"name": "netexec", "image": AGNHOST,
                            "args": ["netexec", "--http-port=9376", "--udp-port=9376"]}]}}}}))
    exec_pod(k, ns)
    pods = {p["metadata"]["name"] for p in k.get_json("pods", "-n", ns, "-l", "testid=" + labels["testid"])["items"]}
    assert wait_for(lambda: len(endpoints(k, ns, name)) == 2, timeout=20)
    nodes = [next(a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP")
             for n in k.get_json("nodes")["items"]]
    for protocol, flag in (("TCP", "-t"), ("UDP", "-u")):
        targets = [(name, 80), (svc["spec"]["clusterIP"], 80)] + [(ip, node_ports[protocol]) for ip in nodes]
        for host, port in targets:
            out = k.kubectl("exec", "-n", ns, "execpod", "--", "/bin/sh", "-x", "-c",
                            f"echo hostName | nc -v {flag} -w 2 {host} {port}", check=False)
            assert out.returncode == 0, (protocol, host, port, out.stderr)
            if protocol == "UDP":
                assert out.stdout in pods, (host, port, out.stdout)


def proxy_label_toggle(k: Cluster, ns: str, label: dict[str, str], disabled: str, toggled: str) -> None:
    """service.go's two tests of the labels kube-proxy ignores a Service by: the Service created with the label is
    never served; the other is served, then not once labelled, then again once the label is removed."""
    exec_pod(k, ns)
    _, disabled_ip = serve_hostname_service(k, ns, disabled, 3, label)
    pods, toggled_ip = serve_hostname_service(k, ns, toggled, 3)
    assert served_hostnames(k, ns, toggled_ip, 3) == pods
    assert served_down(k, ns, disabled_ip)
    k.kubectl("patch", "service", toggled, "-n", ns, "--type=merge", "-p",
              json.dumps({"metadata": {"labels": label}}))
    assert wait_for(lambda: served_down(k, ns, toggled_ip), timeout=10)
    k.kubectl("patch", "service", toggled, "-n", ns, "--type=merge", "-p",
              json.dumps({"metadata": {"labels": {key: None for key in label}}}))
    assert wait_for(lambda: served_hostnames(k, ns, toggled_ip, 3) == pods, timeout=10)
    assert served_down(k, ns, disabled_ip)


def test_should_implement_service_kubernetes_io_service_proxy_name(k: Cluster) -> None:
    """service.go "Services should implement service.kubernetes.io/service-proxy-name": a Service labelled for
    another proxy (foo-bar) is not served by kube-proxy, live and as the label comes and goes."""
    proxy_label_toggle(k, k.namespace("services-proxy-name"), {"service.kubernetes.io/service-proxy-name": "foo-bar"},
                       "service-proxy-disabled", "service-proxy-toggled")


def test_should_implement_service_kubernetes_io_headless(k: Cluster) -> None:
    """service.go "Services should implement service.kubernetes.io/headless": a Service labelled headless is not
    served by kube-proxy, live and as the label comes and goes."""
    proxy_label_toggle(k, k.namespace("services-headless-label"), {"service.kubernetes.io/headless": ""},
                       "service-headless", "service-headless-toggled")


def nodeport_service(name: str, ns: str, node_port: int | None = None) -> str:
    port: dict[str, object] = {"port": 80, "protocol": "TCP"}
    if node_port is not None:
        port["nodePort"] = node_port
    return json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
                       "spec": {"type": "NodePort", "selector": {"testid": name}, "ports": [port]}})


def test_should_prevent_nodeport_collisions(k: Cluster) -> None:
    """service.go "Services should prevent NodePort collisions": a second Service asking for the first one's node
    port is refused ("port is already allocated"), then gets it once the first is deleted."""
    ns = k.namespace("services-np-collision")
    k.kubectl("create", "-f", "-", input=nodeport_service("nodeport-collision-1", ns))
    port = k.get_json("service", "nodeport-collision-1", "-n", ns)["spec"]["ports"][0]["nodePort"]
    out = k.kubectl("create", "-f", "-", input=nodeport_service("nodeport-collision-2", ns, port), check=False)
    assert out.returncode == 1 and f"spec.ports[0].nodePort: Invalid value: {port}: provided port is already " \
        "allocated" in out.stderr, out.stderr
    k.kubectl("delete", "service", "nodeport-collision-1", "-n", ns)
    k.kubectl("create", "-f", "-", input=nodeport_service("nodeport-collision-2", ns, port))


def test_should_check_nodeport_out_of_range(k: Cluster) -> None:
    """service.go "Services should check NodePort out-of-range": a node port outside 30000-32767 is refused on
    create and on update, in the API server's words."""
    ns = k.namespace("services-np-range")
    words = "provided port is not in the valid range. The range of valid ports is 30000-32767"
    out = k.kubectl("create", "-f", "-", input=nodeport_service("nodeport-range-test", ns, 29999), check=False)
    assert out.returncode == 1 and f"Invalid value: 29999: {words}" in out.stderr, out.stderr
    k.kubectl("create", "-f", "-", input=nodeport_service("nodeport-range-test", ns))
    out = k.kubectl("patch", "service", "nodeport-range-test", "-n", ns, "--type=json", "-p",
                    '[{"op":"replace","path":"/spec/ports/0/nodePort","value":29999}]', check=False)
    assert out.returncode == 1 and f"Invalid value: 29999: {words}" in out.stderr, out.stderr


def test_should_release_nodeports_on_delete(k: Cluster) -> None:
    """service.go "Services should release NodePorts on delete": once the Service is deleted nothing on the node
    listens on its port (the framework's host exec pod runs `! ss -ant46 'sport = :PORT' | tail -n +2 | grep
    LISTEN`), and a new Service gets the same node port."""
    ns = k.namespace("services-np-release")
    k.kubectl("create", "-f", "-", input=nodeport_service("nodeport-reuse", ns))
    port = k.get_json("service", "nodeport-reuse", "-n", ns)["spec"]["ports"][0]["nodePort"]
    k.kubectl("delete", "service", "nodeport-reuse", "-n", ns)
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hostexec", "namespace": ns},
        "spec": {"hostNetwork": True, "containers": [{"name": "agnhost-container", "image": AGNHOST,
                                                      "args": ["pause"]}]}}))
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/hostexec", "--timeout=30s")
    k.kubectl("exec", "-n", ns, "hostexec", "--", "/bin/sh", "-x", "-c",
              f"! ss -ant46 'sport = :{port}' | tail -n +2 | grep LISTEN")
    k.kubectl("create", "-f", "-", input=nodeport_service("nodeport-reuse", ns, port))


def test_should_be_possible_to_connect_to_a_service_via_externalip_when_the_external_ip_is_not_assigned_to_a_node(
        k: Cluster) -> None:
    """service.go "Services should be possible to connect to a service via ExternalIP when the external IP is not
    assigned to a node": a ClusterIP Service with externalIPs 203.0.113.250 is reached on that address from a pod
    (kube-proxy's rules take it, though no node holds it)."""
    ns = k.namespace("services-externalip")
    labels = {"testid": "externalip-test-8d21"}
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "externalip-test", "namespace": ns},
        "spec": {"selector": labels, "externalIPs": ["203.0.113.250"],
                 "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 9376}]}}))
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "externalip-test", "namespace": ns},
        "spec": {"replicas": 2, "selector": labels, "template": {"metadata": {"labels": labels}, "spec": {
            "containers": [{"name": "agnhost", "image": AGNHOST, "args": ["serve-hostname"]}]}}}}))
    exec_pod(k, ns)
    assert wait_for(lambda: len(endpoints(k, ns, "externalip-test")) == 2, timeout=20)
    assert reachable(k, ns, "203.0.113.250", 80)
    assert reachable(k, ns, "externalip-test", 80)


def test_should_connect_to_the_ports_exposed_by_restartable_init_containers(k: Cluster) -> None:
    """service.go "Services should connect to the ports exposed by restartable init containers": a Service's
    target port served by a sidecar (an init container with restartPolicy Always) next to a main container that
    serves nothing; the exec pod reaches the sidecar's netexec through the Service."""
    ns = k.namespace("services-sidecar-port")
    labels = {"app": "sidecar-with-port"}
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "sidecar-with-port", "namespace": ns},
        "spec": {"selector": labels, "ports": [{"protocol": "TCP", "port": 80, "targetPort": 80}]}}))
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sidecar-with-port", "namespace": ns, "labels": labels},
        "spec": {"initContainers": [{"name": "sidecar", "image": AGNHOST, "restartPolicy": "Always",
                                     "args": ["netexec", "--http-port", "80"],
                                     "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
                 "containers": [{"name": "main", "image": AGNHOST, "args": ["pause"]}]}}))
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/sidecar-with-port", "--timeout=30s")
    exec_pod(k, ns)
    assert wait_for(lambda: k.kubectl("exec", "-n", ns, "execpod", "--", "/bin/sh", "-x", "-c",
                                      "curl -q -s --connect-timeout 5 sidecar-with-port:80/hostname",
                                      check=False).stdout == "sidecar-with-port", timeout=20)
