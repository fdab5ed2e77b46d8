"""Kubernetes' own network e2e tests beyond the Service tests, restated for the real kubectl against `knetsim up`.

Each test is one upstream test of kubernetes/kubernetes (file and the commit read named in its docstring), with the
same objects, images, arguments and commands, run as the e2e framework runs them: `kubectl exec POD -- /bin/sh -c
CMD` for a command in a pod, the API server's own paths for the proxy tests. docs/e2e.md lists them.
"""

from __future__ import annotations

import json
import ssl
import statistics
import time
import urllib.error
import urllib.request
from typing import Any

from .conftest import Cluster, wait_for

AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"
HOST_PORT = 54323  # hostport.go's port


def node_ip(k: Cluster, name: str) -> str:
    node = k.get_json("node", name)
    return next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")


def host_port_pod(name: str, ns: str, host_ip: str, protocol: str, port: int = HOST_PORT, node: str = "",
                  node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    """createHostPortPodOnNode (hostport.go, predicates.go): agnhost netexec on 8080 (HTTP and UDP), published as
    ``port`` on ``host_ip``/``protocol``, ready once /hostname answers; bound with nodeName (hostport.go) or
    placed by a nodeSelector (predicates.go)."""
    spec: dict[str, Any] = {"containers": [{
        "name": "agnhost", "image": AGNHOST, "args": ["netexec", "--http-port=8080", "--udp-port=8080"],
        "ports": [{"hostPort": port, "containerPort": 8080, "protocol": protocol, "hostIP": host_ip}],
        "readinessProbe": {"httpGet": {"path": "/hostname", "port": 8080, "scheme": "HTTP"}}}]}
    if node:
        spec["nodeName"] = node
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def test_hostport_validates_that_there_is_no_conflict_between_pods_with_same_hostport_but_different_hostip_and_protocol(
        k: Cluster) -> None:
    """hostport.go (test/e2e/network/hostport.go at 04791b4906602ffda5ccf9bc4c84d3329f1d7080) "HostPort validates
    that there is no conflict between pods with same hostPort but different hostIP and protocol [LinuxOnly]
    [Conformance]": three pods on one node share hostPort 54323 (127.0.0.1/TCP, the node's IP/TCP, the node's
    IP/UDP), all run, and a hostNetwork pod on that node reaches each through its own address."""
    ns = k.namespace("hostport")
    node = "worker"
    host_ip = node_ip(k, node)
    for name, ip, protocol in (("pod1", "127.0.0.1", "TCP"), ("pod2", host_ip, "TCP"), ("pod3", host_ip, "UDP")):
        k.kubectl("apply", "-f", "-", input=json.dumps(host_port_pod(name, ns, ip, protocol, node=node)))
        k.kubectl("wait", "-n", ns, "--for=condition=Ready", f"pod/{name}", "--timeout=30s")
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "e2e-host-exec", "namespace": ns},
        "spec": {"hostNetwork": True, "nodeName": node,
                 "containers": [{"name": "e2e-host-exec", "image": AGNHOST}]}}))
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/e2e-host-exec", "--timeout=30s")

    def run(cmd: str) -> Any:
        return k.kubectl("exec", "-n", ns, "e2e-host-exec", "-c", "e2e-host-exec", "--", "/bin/sh", "-c", cmd,
                         check=False)

    # The localhost address needs the node's own source address (no NAT from localhost to localhost otherwise).
    pod1 = run(f"curl -g --connect-timeout 5 --interface {host_ip} http://127.0.0.1:{HOST_PORT}/hostname")
    pod2 = run(f"curl -g --connect-timeout 5 http://{host_ip}:{HOST_PORT}/hostname")
    pod3 = run(f"nc -vuz -w 5 {host_ip} {HOST_PORT}")
    assert (pod1.returncode, pod1.stdout) == (0, "pod1"), pod1.stderr
    assert (pod2.returncode, pod2.stdout) == (0, "pod2"), pod2.stderr
    assert pod3.returncode == 0, pod3.stderr
    # A port no pod publishes is refused by the node.
    assert run(f"curl -g --connect-timeout 5 http://{host_ip}:{HOST_PORT + 1}/hostname").returncode == 7


def test_schedulerpredicates_validates_that_there_exists_conflict_between_pods_with_same_hostport_and_protocol_but_one_using_0_0_0_0_hostip(  # noqa: E501
        k: Cluster) -> None:
    """predicates.go (test/e2e/scheduling/predicates.go at 79ccc0d961db227828fd4cda49e797fc215f63d2)
    "SchedulerPredicates [Serial] validates that there exists conflict between pods with same hostPort and protocol
    but one using 0.0.0.0 hostIP [Conformance]": on a node labelled for the test, pod4 holds 54322/TCP on every
    address (hostIP unset); pod5 wants it on the node's IP and stays Pending, unschedulable, with the NodePorts
    plugin's words. Beyond upstream: once pod4 is gone the scheduler tries pod5 again, and it runs there."""
    ns = k.namespace("sched-pred")
    node = "worker"
    host_ip = node_ip(k, node)
    label = "kubernetes.io/e2e-3f0c1a52-hostport"
    k.kubectl("label", "node", node, f"{label}=95")
    try:
        selector = {label: "95"}
        k.kubectl("apply", "-f", "-", input=json.dumps(host_port_pod("pod4", ns, "", "TCP", 54322,
                                                                     node_selector=selector)))
        k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/pod4", "--timeout=30s")
        k.kubectl("apply", "-f", "-", input=json.dumps(host_port_pod("pod5", ns, host_ip, "TCP", 54322,
                                                                     node_selector=selector)))

        def unschedulable() -> str:
            pod = k.get_json("pod", "pod5", "-n", ns)
            return next((str(c.get("message")) for c in pod["status"].get("conditions") or []
                         if c["type"] == "PodScheduled" and c["status"] == "False" and c["reason"] == "Unschedulable"),
                        "")

        message = wait_for(unschedulable)
        assert "1 node(s) didn't have free ports for the requested pod ports" in message, message
        assert "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod" in message
        events = k.get_json("events", "-n", ns, "--field-selector", "involvedObject.name=pod5,reason=FailedScheduling")
        assert [e["message"] for e in events["items"]] == [message]
        assert k.get_json("pod", "pod5", "-n", ns)["status"]["phase"] == "Pending"
        k.kubectl("delete", "pod", "pod4", "-n", ns)
        k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/pod5", "--timeout=30s")
        assert k.get_json("pod", "pod5", "-n", ns)["spec"]["nodeName"] == node
    finally:
        k.kubectl("label", "node", node, f"{label}-")


def test_the_kubelet_rejects_a_pod_bound_by_name_to_a_host_port_taken_on_its_node(k: Cluster) -> None:
    """Past the scheduler (spec.nodeName), the kubelet's own admission checks host ports
    (pkg/kubelet/lifecycle/predicate.go): the second pod wanting the node's 54321/TCP ends Failed, reason
    NodePorts, "Pod was rejected: Predicate NodePorts failed: ...", with a Warning event of that reason."""
    ns = k.namespace("hostport-admission")
    node = "worker"
    k.kubectl("apply", "-f", "-", input=json.dumps(host_port_pod("holder", ns, "", "TCP", 54321, node=node)))
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/holder", "--timeout=30s")
    k.kubectl("apply", "-f", "-", input=json.dumps(host_port_pod("late", ns, node_ip(k, node), "TCP", 54321,
                                                                 node=node)))
    reason = "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
    assert wait_for(lambda: k.get_json("pod", "late", "-n", ns)["status"].get("phase") == "Failed")
    status = k.get_json("pod", "late", "-n", ns)["status"]
    assert (status["reason"], status["message"]) == ("NodePorts", f"Pod was rejected: {reason}")
    events = k.get_json("events", "-n", ns, "--field-selector", "involvedObject.name=late")["items"]
    assert [(e["type"], e["reason"], e["message"]) for e in events] == [("Warning", "NodePorts", reason)]
    assert "NodePorts" in k.kubectl("get", "pod", "late", "-n", ns).stdout  # kubectl's STATUS column


# --- EndpointSlices written by hand ----------------------------------------------------------------------


def netexec_container(name: str, port: int) -> dict[str, Any]:
    """e2epod.NewAgnhostContainer(name, nil, [port/TCP], "netexec", "--http-port", port, "--udp-port", "-1")."""
    return {"name": name, "image": AGNHOST, "args": ["netexec", "--http-port", str(port), "--udp-port", "-1"],
            "ports": [{"containerPort": port, "protocol": "TCP"}]}


def http_pod(name: str, ns: str) -> dict[str, Any]:
    """endpointslice.go's backend: one pod, two netexec containers, on 8090 and 9090."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [netexec_container("container-handle-8090-request", 8090),
                                    netexec_container("container-handle-9090-request", 9090)]}}


def custom_slice(ns: str, service: str, ip: str, port_name: str, port: int) -> str:
    """An EndpointSlice the test manages itself (not the controller): one ready address, one port."""
    return json.dumps({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"generateName": "e2e-custom-slice", "namespace": ns,
                     "labels": {"kubernetes.io/service-name": service,
                                "endpointslice.kubernetes.io/managed-by": "e2e-test" + ns}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}],
        "ports": [{"name": port_name, "port": port, "protocol": "TCP"}]})


def selectorless_service(k: Cluster, ns: str) -> str:
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "example-custom-endpoints", "namespace": ns},
        "spec": {"ports": [{"name": "port80", "port": 80, "protocol": "TCP"},
                           {"name": "port81", "port": 81, "protocol": "TCP"}]}}))
    return str(k.get_json("service", "example-custom-endpoints", "-n", ns)["spec"]["clusterIP"])


def exec_pod(k: Cluster, ns: str) -> None:
    k.kubectl("run", "execpod", "-n", ns, f"--image={AGNHOST}", "--restart=Never", "--", "pause")
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/execpod", "--timeout=30s")


def hostname_through(k: Cluster, ns: str, host: str, port: int) -> str:
    out = k.kubectl("exec", "-n", ns, "execpod", "--", "/bin/sh", "-x", "-c",
                    f"curl -q -s --connect-timeout 5 http://{host}:{port}/hostname", check=False)
    return out.stdout if out.returncode == 0 else f"exit {out.returncode}: {out.stderr}"


def test_endpointslice_should_support_a_service_with_multiple_ports_specified_in_multiple_endpointslices(
        k: Cluster) -> None:
    """endpointslice.go (test/e2e/network/endpointslice.go) "EndpointSlice should support a Service with multiple
    ports specified in multiple EndpointSlices [Conformance]": a selector-less Service of ports 80 and 81, one
    hand-made EndpointSlice per port (80 → the pod's 8090, 81 → its 9090), reached from a pod by ClusterIP and
    by name."""
    ns = k.namespace("endpointslice-ports")
    cluster_ip = selectorless_service(k, ns)
    k.kubectl("apply", "-f", "-", input=json.dumps(http_pod("pod-handle-http-request", ns)))
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/pod-handle-http-request", "--timeout=30s")
    ip = k.get_json("pod", "pod-handle-http-request", "-n", ns)["status"]["podIP"]
    k.kubectl("create", "-f", "-", input=custom_slice(ns, "example-custom-endpoints", ip, "port80", 8090))
    k.kubectl("create", "-f", "-", input=custom_slice(ns, "example-custom-endpoints", ip, "port81", 9090))
    exec_pod(k, ns)
    for host in (cluster_ip, "example-custom-endpoints"):
        for port in (80, 81):
            assert wait_for(lambda h=host, p=port: hostname_through(k, ns, h, p) == "pod-handle-http-request"), \
                (host, port, hostname_through(k, ns, host, port))


def test_endpointslice_should_support_a_service_with_multiple_endpoint_ips_specified_in_multiple_endpointslices(
        k: Cluster) -> None:
    """endpointslice.go "EndpointSlice should support a Service with multiple endpoint IPs specified in multiple
    EndpointSlices [Conformance]": two pods, one hand-made EndpointSlice each (port 80 → pod1's 8090, port 81 →
    pod2's 9090): each Service port reaches its own pod."""
    ns = k.namespace("endpointslice-ips")
    cluster_ip = selectorless_service(k, ns)
    for name in ("pod-handle-http-request-1", "pod-handle-http-request-2"):
        k.kubectl("apply", "-f", "-", input=json.dumps(http_pod(name, ns)))
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod", "--all", "--timeout=30s")
    ip1 = k.get_json("pod", "pod-handle-http-request-1", "-n", ns)["status"]["podIP"]
    ip2 = k.get_json("pod", "pod-handle-http-request-2", "-n", ns)["status"]["podIP"]
    k.kubectl("create", "-f", "-", input=custom_slice(ns, "example-custom-endpoints", ip1, "port80", 8090))
    k.kubectl("create", "-f", "-", input=custom_slice(ns, "example-custom-endpoints", ip2, "port81", 9090))
    exec_pod(k, ns)
    for host in (cluster_ip, "example-custom-endpoints"):
        assert wait_for(lambda h=host: hostname_through(k, ns, h, 80) == "pod-handle-http-request-1"), host
        assert wait_for(lambda h=host: hostname_through(k, ns, h, 81) == "pod-handle-http-request-2"), host


def test_endpointslice_should_create_endpoints_and_endpointslices_for_pods_matching_a_service(k: Cluster) -> None:
    """endpointslice.go "EndpointSlice should create Endpoints and EndpointSlices for Pods matching a Service
    [Conformance]" (expectEndpointsAndSlices): a Service by number selecting pod1 (one subset, one slice), one by
    named port selecting pod1 and pod2 (their ports differ: two subsets, two slices), one matching nothing (no
    subset, one slice of no ports); the named one's slices come back once deleted."""
    ns = k.namespace("endpointslice-matching")
    on = "on"
    for name, labels, port in (("pod1", {"pod1": on, "shared12": on}, 3000),
                               ("pod2", {"pod2": on, "shared12": on}, 3001)):
        k.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"containers": [{"name": "container1", "image": AGNHOST, "args": ["serve-hostname"],
                                     "ports": [{"name": "example-name", "containerPort": port}]}]}}))
    for name, selector, target in (("example-int-port", {"pod1": on}, 3000),
                                   ("example-named-port", {"shared12": on}, "example-name"),
                                   ("example-no-match", {"pod3": on}, 80)):
        k.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": selector, "publishNotReadyAddresses": True,
                     "ports": [{"name": "example", "port": 80, "targetPort": target, "protocol": "TCP"}]}}))
    assert wait_for(lambda: all(p["status"].get("podIPs") for p in k.get_json("pods", "-n", ns)["items"]),
                    timeout=20)
    pods = {p["metadata"]["name"]: p for p in k.get_json("pods", "-n", ns)["items"]}

    def shape(service: str) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        """(Endpoints: (pod, port) per subset address; EndpointSlices: (pod, port) per endpoint, or ("", 0) for a
        slice of no endpoints), each sorted; every reference names the pod by kind, namespace, name and uid."""
        subsets = []
        for subset in k.get_json("endpoints", service, "-n", ns).get("subsets") or []:
            assert [(p["name"], p["protocol"]) for p in subset["ports"]] == [("example", "TCP")]
            for address in [*subset.get("addresses", []), *subset.get("notReadyAddresses", [])]:
                ref = address["targetRef"]
                assert (ref["kind"], ref["namespace"], ref["uid"]) == ("Pod", ns, pods[ref["name"]]["metadata"]["uid"])
                assert address["ip"] == pods[ref["name"]]["status"]["podIP"]
                subsets.append((ref["name"], subset["ports"][0]["port"]))
        slices = []
        for es in k.get_json("endpointslices", "-n", ns, "-l", f"kubernetes.io/service-name={service}")["items"]:
            ports = es.get("ports") or []
            if not es.get("endpoints"):
                assert ports == []
                slices.append(("", 0))
            for endpoint in es.get("endpoints") or []:
                ref = endpoint["targetRef"]
                assert (ref["kind"], ref["namespace"], ref["uid"]) == ("Pod", ns, pods[ref["name"]]["metadata"]["uid"])
                assert [(p["name"], p["protocol"]) for p in ports] == [("example", "TCP")]
                slices.append((ref["name"], ports[0]["port"]))
        return sorted(subsets), sorted(slices)

    assert wait_for(lambda: shape("example-int-port") == ([("pod1", 3000)], [("pod1", 3000)]), timeout=20), \
        shape("example-int-port")
    named = ([("pod1", 3000), ("pod2", 3001)], [("pod1", 3000), ("pod2", 3001)])
    assert wait_for(lambda: shape("example-named-port") == named, timeout=20), shape("example-named-port")
    assert len(k.get_json("endpoints", "example-named-port", "-n", ns)["subsets"]) == 2
    assert len(k.get_json("endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=example-named-port")[
        "items"]) == 2
    assert wait_for(lambda: shape("example-no-match") == ([], [("", 0)]), timeout=20), shape("example-no-match")
    k.kubectl("delete", "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=example-named-port")
    assert wait_for(lambda: shape("example-named-port") == named, timeout=20), shape("example-named-port")


# --- the API server's proxy -------------------------------------------------------------------------------


def api_request(k: Cluster, method: str, path: str, body: Any = None) -> tuple[int, str, dict[str, str]]:
    """One request to the API server as the e2e framework's http.Client sends it (the kubeconfig's credentials,
    redirects not followed, ``body`` as JSON): status, body, headers."""
    token = (k.state / "token").read_text().strip()
    url = f"https://127.0.0.1:{k.info['api_port']}{path}"
    headers = {"Authorization": f"Bearer {token}"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    ctx = ssl.create_default_context(cafile=str(k.state / "serving.crt"))

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect, urllib.request.HTTPSHandler(context=ctx))
    try:
        with opener.open(req, timeout=30) as resp:
            return resp.status, resp.read().decode(), {k.lower(): v for k, v in resp.headers.items()}
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), {k.lower(): v for k, v in exc.headers.items()}


def porter_json(k: Cluster, ns: str, labels: dict[str, str], service: str) -> None:
    """proxy.go's backend: agnhost porter --json-response serving "foo" on 80, and a Service in front of it."""
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "agnhost", "namespace": ns, "labels": labels},
        "spec": {"restartPolicy": "Never", "containers": [{
            "image": AGNHOST, "name": "agnhost", "command": ["/agnhost", "porter", "--json-response"],
            "env": [{"name": "SERVE_PORT_80", "value": "foo"}]}]}}))
    k.kubectl("wait", "-n", ns, "--for=jsonpath={.status.phase}=Running", "pod/agnhost", "--timeout=30s")
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": service, "namespace": ns, "labels": labels},
        "spec": {"ports": [{"port": 80, "targetPort": 80, "protocol": "TCP"}], "selector": labels}}))
    assert wait_for(lambda: k.get_json("endpointslices", "-n", ns, "-l", f"kubernetes.io/service-name={service}")[
        "items"][0].get("endpoints"), timeout=20)


def valid_verb_response(k: Cluster, path: str, verb: str) -> bool:
    """proxy.go validateProxyVerbRequest: 200, and (but for HEAD) porter's JSON with "foo" and the verb sent."""
    status, body, _ = api_request(k, verb, path)
    if verb == "HEAD":
        return status == 200 and body == ""
    try:
        reply = json.loads(body)
    except ValueError:
        return False
    return status == 200 and reply == {"Method": verb, "Body": "foo"}


def test_proxy_version_v1_a_set_of_valid_responses_are_returned_for_both_pod_and_service_proxywithpath(
        k: Cluster) -> None:
    """proxy.go (test/e2e/network/proxy.go at 04791b4906602ffda5ccf9bc4c84d3329f1d7080) "Proxy version v1 A set of
    valid responses are returned for both pod and service ProxyWithPath [Conformance]": every verb through
    ``pods/agnhost/proxy/some/path/with/VERB`` and ``services/test-service/proxy/some/path/with/VERB`` reaches
    porter, which echoes the verb."""
    ns = k.namespace("proxy-path")
    porter_json(k, ns, {"test": "response"}, "test-service")
    for resource in ("pods/agnhost", "services/test-service"):
        for verb in ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"):
            path = f"/api/v1/namespaces/{ns}/{resource}/proxy/some/path/with/{verb}"
            assert wait_for(lambda p=path, v=verb: valid_verb_response(k, p, v)), (verb, api_request(k, verb, path))


def test_proxy_version_v1_a_set_of_valid_responses_are_returned_for_both_pod_and_service_proxy(k: Cluster) -> None:
    """proxy.go "Proxy version v1 A set of valid responses are returned for both pod and service Proxy
    [Conformance]": ``pods/agnhost/proxy?method=VERB`` and ``services/NAME/proxy?method=VERB`` reach porter for
    DELETE, OPTIONS, PATCH, POST and PUT; GET and HEAD of that empty path are redirected (301) to ``proxy/``."""
    ns = k.namespace("proxy-verbs")
    porter_json(k, ns, {"e2e-test": "proxy-endpoints"}, "e2e-proxy-test-service")
    for resource in ("pods/agnhost", "services/e2e-proxy-test-service"):
        for verb in ("DELETE", "OPTIONS", "PATCH", "POST", "PUT"):
            path = f"/api/v1/namespaces/{ns}/{resource}/proxy?method={verb}"
            assert wait_for(lambda p=path, v=verb: valid_verb_response(k, p, v)), (verb, api_request(k, verb, path))
        for verb in ("GET", "HEAD"):
            path = f"/api/v1/namespaces/{ns}/{resource}/proxy?method={verb}"
            status, _, headers = api_request(k, verb, path)
            assert status == 301, (verb, status)
            assert headers["location"] == f"/api/v1/namespaces/{ns}/{resource}/proxy/?method={verb}"


def test_proxy_version_v1_should_proxy_through_a_service_and_a_pod(k: Cluster) -> None:
    """proxy.go "Proxy version v1 should proxy through a service and a pod [Conformance]": agnhost porter behind a
    ReplicationController (the RC runner's template has port 80 first, then dest1, dest2, tlsdest1, tlsdest2) and
    a Service of four ports; every path of the table answers its value through the API server, over HTTP and
    HTTPS, an HTML answer's links rewritten to stay inside the proxy."""
    ns = k.namespace("proxy-table")
    labels = {"proxy-service-target": "true"}
    name = "proxy-service-x7k2q"
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": labels, "ports": [
            {"name": "portname1", "port": 80, "targetPort": "dest1"},
            {"name": "portname2", "port": 81, "targetPort": 162},
            {"name": "tlsportname1", "port": 443, "targetPort": "tlsdest1"},
            {"name": "tlsportname2", "port": 444, "targetPort": 462}]}}))
    env = {"SERVE_PORT_80": '<a href="/rewriteme">test</a>', "SERVE_PORT_1080": '<a href="/rewriteme">test</a>',
           "SERVE_PORT_160": "foo", "SERVE_PORT_162": "bar", "SERVE_TLS_PORT_443": '<a href="/tlsrewriteme">test</a>',
           "SERVE_TLS_PORT_460": "tls baz", "SERVE_TLS_PORT_462": "tls qux"}
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": 1, "selector": labels, "template": {"metadata": {"labels": labels}, "spec": {
            "containers": [{
                "name": name, "image": AGNHOST, "command": ["/agnhost", "porter"],
                "env": [{"name": key, "value": value} for key, value in env.items()],
                "ports": [{"containerPort": 80}, {"name": "dest1", "containerPort": 160},
                          {"name": "dest2", "containerPort": 162}, {"name": "tlsdest1", "containerPort": 460},
                          {"name": "tlsdest2", "containerPort": 462}],
                "readinessProbe": {"httpGet": {"port": 80}, "initialDelaySeconds": 1, "timeoutSeconds": 5,
                                   "periodSeconds": 10}}]}}}}))
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod", "-l", "proxy-service-target=true", "--timeout=30s")
    pod = k.get_json("pods", "-n", ns, "-l", "proxy-service-target=true")["items"][0]["metadata"]["name"]
    assert wait_for(lambda: k.get_json("endpoints", name, "-n", ns).get("subsets"), timeout=20)

    def service(scheme: str, port: str) -> str:
        return f"/api/v1/namespaces/{ns}/services/{':'.join(p for p in (scheme, name, port) if p)}/proxy"

    def pod_url(scheme: str, port: str) -> str:
        return f"/api/v1/namespaces/{ns}/pods/{':'.join(p for p in (scheme, pod, port) if p)}/proxy"

    expectations = {
        service("", "portname1") + "/": "foo",
        service("http", "portname1") + "/": "foo",
        service("", "portname2") + "/": "bar",
        service("http", "portname2") + "/": "bar",
        service("https", "tlsportname1") + "/": "tls baz",
        service("https", "tlsportname2") + "/": "tls qux",
        pod_url("", "") + "/": f'<a href="{pod_url("", "")}/rewriteme">test</a>',
        pod_url("", "1080") + "/": f'<a href="{pod_url("", "1080")}/rewriteme">test</a>',
        pod_url("http", "1080") + "/": f'<a href="{pod_url("http", "1080")}/rewriteme">test</a>',
        pod_url("", "160") + "/": "foo",
        pod_url("http", "160") + "/": "foo",
        pod_url("", "162") + "/": "bar",
        pod_url("http", "162") + "/": "bar",
        pod_url("https", "443") + "/": f'<a href="{pod_url("https", "443")}/tlsrewriteme">test</a>',
        pod_url("https", "460") + "/": "tls baz",
        pod_url("https", "462") + "/": "tls qux",
    }
    for attempt in range(2):  # upstream: 20 attempts of each, for flakes a real network has
        for path, value in expectations.items():
            status, body, _ = api_request(k, "GET", path)
            assert (status, body) == (200, value), (attempt, path)


# --- ServiceCIDR and IPAddress (test/e2e/network/service_cidrs.go at e42d42714821a539bbe62db3fe2c7189f71c640f) --


def watch_opens(k: Cluster, path: str) -> bool:
    """A watch of ``path`` is accepted (the framework only checks that Watch returns no error)."""
    status, _, _ = api_request(k, "GET", f"{path}{'&' if '?' in path else '?'}watch=1&timeoutSeconds=1")
    return status == 200


def test_servicecidr_and_ipaddress_api_should_support_servicecidr_api_operations(k: Cluster) -> None:
    """service_cidrs.go "ServiceCIDR and IPAddress API should support ServiceCIDR API operations [Conformance]": the
    default ServiceCIDR `kubernetes` is got, patched, updated, listed and watched."""
    k.kubectl("get", "servicecidr", "kubernetes")
    patched = k.kubectl("patch", "servicecidr", "kubernetes", "--type=merge", "-p",
                        '{"metadata":{"annotations":{"patched":"true"}}}', "-o", "json").stdout
    assert json.loads(patched)["metadata"]["annotations"]["patched"] == "true"
    current = k.get_json("servicecidr", "kubernetes")
    current["metadata"]["annotations"]["updated"] = "true"
    updated = json.loads(k.kubectl("replace", "-f", "-", "-o", "json", input=json.dumps(current)).stdout)
    assert updated["metadata"]["annotations"]["updated"] == "true"
    assert k.get_json("servicecidrs")["items"]
    assert watch_opens(k, "/apis/networking.k8s.io/v1/servicecidrs")


def test_servicecidr_and_ipaddress_api_should_support_ipaddress_api_operations(k: Cluster) -> None:
    """service_cidrs.go "ServiceCIDR and IPAddress API should support IPAddress API operations [Conformance]": two
    IPAddresses with a parentRef of any resource are created, patched, updated, got, listed and watched by label,
    deleted one by one and as a collection."""
    parent = {"group": "mygroup", "resource": "myresources", "namespace": "foo", "name": "bar"}
    addresses = [{"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
                  "metadata": {"name": name, "labels": {"type": kind}}, "spec": {"parentRef": parent}}
                 for name, kind in (("255.255.255.255", "broadcast"), ("fe80::42:1dff:fe84:f9e2", "link-local"))]
    try:
        for address in addresses:
            k.kubectl("create", "-f", "-", input=json.dumps(address))
        patched = k.kubectl("patch", "ipaddress", "255.255.255.255", "--type=merge", "-p",
                            '{"metadata":{"annotations":{"patched":"true"}}}', "-o", "json").stdout
        assert json.loads(patched)["metadata"]["annotations"]["patched"] == "true"
        current = k.get_json("ipaddress", "255.255.255.255")
        current["metadata"]["annotations"]["updated"] = "true"
        updated = json.loads(k.kubectl("replace", "-f", "-", "-o", "json", input=json.dumps(current)).stdout)
        assert updated["metadata"]["annotations"]["updated"] == "true"
        assert [i["metadata"]["name"] for i in k.get_json("ipaddresses", "-l", "type=broadcast")["items"]] == [
            "255.255.255.255"]
        assert watch_opens(k, "/apis/networking.k8s.io/v1/ipaddresses?labelSelector=type%3Dbroadcast")
        k.kubectl("delete", "ipaddress", "255.255.255.255")
        k.kubectl("delete", "ipaddresses", "-l", "type=link-local")
        assert k.get_json("ipaddresses", "-l", "type=link-local")["items"] == []
    finally:
        k.kubectl("delete", "ipaddresses", "-l", "type in (broadcast,link-local)", "--ignore-not-found", check=False)


def test_service_cidrs_should_create_services_and_serve_on_different_service_cidrs(k: Cluster) -> None:
    """service_cidrs.go "Service CIDRs should create Services and serve on different Service CIDRs": a second
    ServiceCIDR (203.0.113.0/24) becomes Ready, a NodePort Service gets 203.0.113.10 from it, and the Service is
    reached by name, by that ClusterIP and by each node's NodePort (jig.CheckServiceReachability)."""
    ns = k.namespace("servicecidrs")
    k.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR", "metadata": {"name": "test-svc-cidr"},
        "spec": {"cidrs": ["203.0.113.0/24"]}}))
    try:
        def ready() -> bool:
            conditions = k.get_json("servicecidr", "test-svc-cidr").get("status", {}).get("conditions") or []
            return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

        assert wait_for(ready, timeout=20)
        labels = {"testid": "cidr1-test-5e0f"}
        k.kubectl("create", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "cidr1-test", "namespace": ns},
            "spec": {"type": "NodePort", "clusterIP": "203.0.113.10", "selector": labels,
                     "ports": [{"port": 80, "name": "http", "protocol": "TCP", "targetPort": 9376}]}}))
        k.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "cidr1-test", "namespace": ns},
            "spec": {"replicas": 2, "selector": labels, "template": {"metadata": {"labels": labels}, "spec": {
                "containers": [{"name": "agnhost", "image": AGNHOST, "args": ["serve-hostname"]}]}}}}))
        exec_pod(k, ns)
        k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod", "-l", "testid=cidr1-test-5e0f", "--timeout=30s")
        node_port = k.get_json("service", "cidr1-test", "-n", ns)["spec"]["ports"][0]["nodePort"]
        targets = [("cidr1-test", 80), ("203.0.113.10", 80)]
        targets += [(node_ip(k, n["metadata"]["name"]), node_port) for n in k.get_json("nodes")["items"]]
        for host, port in targets:
            out = k.kubectl("exec", "-n", ns, "execpod", "--", "/bin/sh", "-x", "-c",
                            f"echo hostName | nc -v -t -w 2 {host} {port}", check=False)
            assert out.returncode == 0, (host, port, out.stderr)
    finally:
        k.kubectl("delete", "service", "cidr1-test", "-n", ns, "--ignore-not-found", check=False)
        k.kubectl("delete", "servicecidr", "test-svc-cidr", "--ignore-not-found", "--wait=false", check=False)


def test_service_endpoints_latency_should_not_be_very_high(k: Cluster) -> None:
    """service_latency.go (test/e2e/network/service_latency.go) "Service endpoints latency should not be very high
    [Conformance]", 50 Services where upstream makes 200: each new Service selecting the one pod of the RC
    svc-latency-rc gets Endpoints with its address; the 50th percentile of the time from the Service's create to
    its Endpoints must stay under 20 s and the 99th under 50 s (here both are fractions of a second)."""
    ns = k.namespace("svc-latency")
    labels = {"name": "svc-latency-rc"}
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "svc-latency-rc", "namespace": ns},
        "spec": {"replicas": 1, "selector": labels, "template": {"metadata": {"labels": labels}, "spec": {
            "containers": [{"name": "svc-latency-rc", "image": AGNHOST, "args": ["pause"]}]}}}}))
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod", "-l", "name=svc-latency-rc", "--timeout=30s")
    created: dict[str, float] = {}
    for _ in range(50):
        status, body, _ = api_request(k, "POST", f"/api/v1/namespaces/{ns}/services", {
            "apiVersion": "v1", "kind": "Service", "metadata": {"generateName": "latency-svc-"},
            "spec": {"ports": [{"protocol": "TCP", "port": 80}], "selector": labels}})
        assert status == 201, body
        created[json.loads(body)["metadata"]["name"]] = time.monotonic()
    seen: dict[str, float] = {}
    deadline = time.monotonic() + 60
    while len(seen) < len(created) and time.monotonic() < deadline:
        _, body, _ = api_request(k, "GET", f"/api/v1/namespaces/{ns}/endpoints")
        now = time.monotonic()
        for item in json.loads(body)["items"]:
            name = item["metadata"]["name"]
            subsets = item.get("subsets") or []
            if name in created and name not in seen and subsets and subsets[0].get("addresses"):
                seen[name] = now
        time.sleep(0.05)
    assert len(seen) == len(created), sorted(set(created) - set(seen))
    latencies = sorted(seen[name] - created[name] for name in created)
    assert statistics.median(latencies) < 20 and latencies[int(len(latencies) * 0.99) - 1] < 50, latencies


def test_networking_should_check_kube_proxy_urls(k: Cluster) -> None:
    """networking.go (test/e2e/network/networking.go) "Networking should check kube-proxy urls": from a hostNetwork
    pod, kube-proxy's health check on localhost:10256 answers 200 with its lastUpdated JSON, and its metrics server
    on localhost:10249 answers /proxyMode (the framework's GetSelfURL and GetSelfURLStatusCode commands); the
    metrics server binds the node's loopback only."""
    ns = k.namespace("kube-proxy-urls")
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "host-test-container-pod", "namespace": ns},
        "spec": {"hostNetwork": True, "nodeName": "worker",
                 "containers": [{"name": "agnhost-container", "image": AGNHOST, "args": ["pause"]}]}}))
    k.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/host-test-container-pod", "--timeout=30s")

    def run(cmd: str) -> str:
        return str(k.kubectl("exec", "-n", ns, "host-test-container-pod", "--", "/bin/sh", "-x", "-c", cmd).stdout)

    healthz = run("curl -i -q -s --connect-timeout 1 http://localhost:10256/healthz")
    assert healthz.splitlines()[0] == "HTTP/1.1 200 OK" and '"lastUpdated": ' in healthz, healthz
    status = run("curl -s -o /dev/null -i -w '%{http_code}' --connect-timeout 1 http://localhost:10249/proxyMode")
    assert status == "200"
    assert run("curl -s --connect-timeout 1 http://localhost:10249/proxyMode") == "iptables"
    outside = k.kubectl("exec", "-n", ns, "host-test-container-pod", "--", "/bin/sh", "-c",
                        f"curl -s --connect-timeout 1 http://{node_ip(k, 'worker')}:10249/proxyMode", check=False)
    assert outside.returncode == 7
