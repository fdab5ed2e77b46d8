"""The real kubectl against a live knetsim API server: every verb the labs type.

Given the shop example applied with ``kubectl apply -f examples/shop``, then each test drives
one verb and checks what kubectl printed or what the API now holds.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import KUBECTL, Live, wait_for

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

ROOT = Path(__file__).resolve().parents[2]
SHOP = str(ROOT / "examples" / "shop")


@pytest.fixture(scope="module")
def shop(live: Live) -> Live:
    out = live.kubectl("apply", "-f", SHOP).stdout
    assert "deployment.apps/web created" in out
    assert "networkpolicy.networking.k8s.io/default-deny created" in out
    return live


def pods(live: Live, *args: str) -> list[dict]:
    return json.loads(live.kubectl("get", "pods", "-o", "json", *args).stdout)["items"]


def test_server_reports_the_newest_version_by_default_and_kubectl_version_shows_it(live: Live) -> None:
    """Given a cluster started without --kubernetes-version, then /version says v1.38 (model/versions.py), and
    `kubectl version` prints it.

    The gcloud SDK's kubectl dispatcher has no kubectl.1.38, so it runs its built-in 1.32, which warns
    about the skew exactly as it would against a real v1.38 cluster (docs/apiserver.md)."""
    out = json.loads(live.kubectl("version", "-o", "json").stdout)
    assert (out["serverVersion"]["major"], out["serverVersion"]["minor"]) == ("1", "38")
    assert out["serverVersion"]["gitVersion"] == "v1.38.0"
    text = live.kubectl("version")
    assert "Server Version: v1.38.0\n" in text.stdout
    client_minor = int(out["clientVersion"]["minor"].rstrip("+"))
    if abs(client_minor - 38) > 1:
        assert f"version difference between client (1.{client_minor}) and server (1.38)" in text.stderr


def test_kubeconfig_is_private_and_the_token_is_required(live: Live) -> None:
    assert (live.state / "kubeconfig").stat().st_mode & 0o777 == 0o600
    code, body = live.request("GET", "/api/v1/namespaces", token=None)
    assert (code, body["reason"]) == (401, "Unauthorized")
    code, body = live.request("GET", "/api/v1/namespaces", token="wrong")
    assert code == 401
    assert live.request("GET", "/api/v1/namespaces")[0] == 200


def test_api_resources_lists_the_simulated_kinds_with_short_names(live: Live) -> None:
    out = live.kubectl("api-resources", "--no-headers").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()}
    assert rows["services"][1] == "svc"
    assert rows["networkpolicies"][1:3] == ["netpol", "networking.k8s.io/v1"]
    assert rows["endpointslices"][1] == "discovery.k8s.io/v1"
    assert rows["deployments"][1:3] == ["deploy", "apps/v1"]


def test_fresh_cluster_has_the_system_objects(live: Live) -> None:
    out = live.kubectl("get", "svc", "-A").stdout.splitlines()
    assert out[0].split() == ["NAMESPACE", "NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    kube_dns = next(line.split() for line in out if " kube-dns " in line)
    assert kube_dns[:6] == ["kube-system", "kube-dns", "ClusterIP", "10.96.0.10", "<none>", "53/UDP,53/TCP,9153/TCP"]
    ns = live.kubectl("get", "ns", "--no-headers").stdout
    assert {line.split()[0] for line in ns.splitlines()} >= {"default", "kube-system", "kube-public"}


def test_apply_runs_the_controllers(shop: Live) -> None:
    web = pods(shop, "-n", "shop", "-l", "app=web")
    assert len(web) == 2
    assert all(p["status"]["phase"] == "Running" and p["status"]["podIP"].startswith("10.244.") for p in web)
    assert all(p["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet" for p in web)
    out = shop.kubectl("get", "endpointslices", "-n", "shop", "-l", "kubernetes.io/service-name=web",
                       "-o", "jsonpath={.items[*].endpoints[*].addresses[0]}").stdout.split()
    assert sorted(out) == sorted(p["status"]["podIP"] for p in web)
    deploy = shop.kubectl("get", "deploy", "web", "-n", "shop", "--no-headers").stdout.split()
    assert deploy[:4] == ["web", "2/2", "2", "2"]


def test_get_tables_match_the_real_printers(shop: Live) -> None:
    wide = shop.kubectl("get", "svc", "-n", "shop", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
    rows = {line.split()[0]: line.split() for line in wide[1:]}
    assert rows["web-np"][1] == "NodePort" and rows["web-np"][4] == "80:30080/TCP"
    assert rows["db"][2] == "None"
    assert rows["payments"][1:4] == ["ExternalName", "<none>", "api.payments.example.com"]
    assert rows["web-lb"][3].startswith("172.18.255.")
    pods_wide = shop.kubectl("get", "pods", "-n", "shop", "-o", "wide").stdout.splitlines()
    assert pods_wide[0].split()[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    all_ns = shop.kubectl("get", "pods", "-A", "-l", "app=db").stdout.splitlines()
    assert [line.split()[:2] for line in all_ns[1:]] == [["shop", "db-0"], ["shop", "db-1"]]
    labels = shop.kubectl("get", "pod", "db-0", "-n", "shop", "--show-labels", "--no-headers").stdout
    assert "statefulset.kubernetes.io/pod-name=db-0" in labels
    netpol = shop.kubectl("get", "netpol", "default-deny", "-n", "shop", "--no-headers").stdout.split()
    assert netpol[:2] == ["default-deny", "<none>"]
    ing = shop.kubectl("get", "ing", "-n", "shop", "--no-headers").stdout.split()
    assert ing[:3] == ["shop", "nginx", "shop.example.com"]


def test_get_yaml_and_json_outputs(shop: Live) -> None:
    svc = json.loads(shop.kubectl("get", "svc", "web", "-n", "shop", "-o", "json").stdout)
    assert svc["spec"]["clusterIP"] == svc["spec"]["clusterIPs"][0]
    assert svc["metadata"]["resourceVersion"].isdigit()
    assert "clusterIP:" in shop.kubectl("get", "svc", "web", "-n", "shop", "-o", "yaml").stdout


def test_scale_and_label_keep_existing_pods_and_addresses(shop: Live) -> None:
    before = {p["metadata"]["name"]: p["status"]["podIP"] for p in pods(shop, "-n", "shop", "-l", "app=api")}
    assert shop.kubectl("scale", "deploy", "api", "-n", "shop", "--replicas=4").stdout.strip() == \
        "deployment.apps/api scaled"
    after = {p["metadata"]["name"]: p["status"]["podIP"] for p in pods(shop, "-n", "shop", "-l", "app=api")}
    assert len(after) == 4
    assert all(after[name] == ip for name, ip in before.items())
    # Take one pod out of the Service: the ReplicaSet releases it and makes a replacement.
    victim = sorted(before)[0]
    shop.kubectl("label", "pod", victim, "-n", "shop", "app=debug", "--overwrite")
    after = pods(shop, "-n", "shop", "-l", "app=api")
    assert len(after) == 4 and victim not in {p["metadata"]["name"] for p in after}
    released = json.loads(shop.kubectl("get", "pod", victim, "-n", "shop", "-o", "json").stdout)
    assert "ownerReferences" not in released["metadata"]
    ips = shop.kubectl("get", "endpointslices", "-n", "shop", "-l", "kubernetes.io/service-name=api",
                       "-o", "jsonpath={.items[*].endpoints[*].addresses[0]}").stdout.split()
    assert released["status"]["podIP"] not in ips and len(ips) == 4
    shop.kubectl("scale", "deploy", "api", "-n", "shop", "--replicas=3")
    assert len(pods(shop, "-n", "shop", "-l", "app=api")) == 3


def test_watch_sees_controller_writes(shop: Live) -> None:
    proc = subprocess.Popen([KUBECTL, "get", "pods", "-n", "shop", "-l", "app=web", "-w", "--no-headers"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=shop.env())
    try:
        time.sleep(1.0)
        shop.kubectl("scale", "deploy", "web", "-n", "shop", "--replicas=3")
        new = wait_for(lambda: [p for p in pods(shop, "-n", "shop", "-l", "app=web")], 5)
        assert len(new) == 3
        time.sleep(0.5)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=5)
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert set(names) == {p["metadata"]["name"] for p in new}
    shop.kubectl("scale", "deploy", "web", "-n", "shop", "--replicas=2")


@pytest.mark.parametrize(("args", "check"), [
    (["create", "deployment", "hello", "--image=nginx:1.27", "--replicas=2", "--port=8080"],
     ("deploy", "hello", "{.spec.template.spec.containers[0].ports[0].containerPort}", "8080")),
    (["create", "service", "clusterip", "hello", "--tcp=80:8080"],
     ("svc", "hello", "{.spec.ports[0].targetPort}", "8080")),
    (["create", "service", "nodeport", "hello-np", "--tcp=80:8080", "--node-port=30091"],
     ("svc", "hello-np", "{.spec.ports[0].nodePort}", "30091")),
    (["create", "ingress", "hello", "--class=nginx", "--rule=hello.example.com/*=hello:80"],
     ("ing", "hello", "{.spec.rules[0].http.paths[0].backend.service.port.number}", "80")),
    (["create", "namespace", "team-a"], ("ns", "team-a", "{.metadata.labels.kubernetes\\.io/metadata\\.name}",
                                          "team-a")),
    (["create", "configmap", "cfg", "--from-literal=a=b"], ("cm", "cfg", "{.data.a}", "b")),
])
def test_create_generators_send_protobuf_and_work(live: Live, args: list[str], check: tuple[str, ...]) -> None:
    live.kubectl(*args)
    kind, name, path, want = check
    assert live.kubectl("get", kind, name, "-o", f"jsonpath={path}").stdout == want


def test_validation_errors_are_422_with_causes(live: Live) -> None:
    bad = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "bad"},
           "spec": {"selector": {"app": "x"}, "ports": [{"port": 0}]}}
    proc = live.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert proc.returncode == 1
    assert 'The Service "bad" is invalid: \n* spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, ' \
           "inclusive\n" in proc.stderr
    code, status = live.request("POST", "/api/v1/namespaces/default/services", bad)
    assert code == 422 and status["reason"] == "Invalid"
    assert status["details"]["causes"][0]["field"] == "spec.ports[0].port"


def test_conflicts_and_not_found(live: Live) -> None:
    live.kubectl("create", "configmap", "c1", "--from-literal=a=1")
    proc = live.kubectl("create", "configmap", "c1", "--from-literal=a=1", check=False)
    assert 'configmaps "c1" already exists' in proc.stderr
    proc = live.kubectl("get", "svc", "nope", check=False)
    assert proc.returncode == 1 and 'services "nope" not found' in proc.stderr
    code, cm = live.request("GET", "/api/v1/namespaces/default/configmaps/c1")
    stale = dict(cm, data={"a": "2"})
    stale["metadata"] = dict(cm["metadata"], resourceVersion="1")
    code, status = live.request("PUT", "/api/v1/namespaces/default/configmaps/c1", stale)
    assert (code, status["reason"]) == (409, "Conflict")


def test_patch_flavours_annotate_and_edit(live: Live) -> None:
    live.kubectl("create", "deployment", "pt", "--image=nginx:1.27", "--port=80")
    live.kubectl("expose", "deployment", "pt", "--port=80", "--target-port=80")
    live.kubectl("patch", "svc", "pt", "-p", '{"metadata":{"labels":{"merge":"yes"}}}')
    live.kubectl("patch", "svc", "pt", "--type=json", "-p", '[{"op":"add","path":"/metadata/labels/json","value":"y"}]')
    live.kubectl("patch", "svc", "pt", "--type=merge", "-p", '{"spec":{"ports":[{"port":81,"targetPort":80}]}}')
    live.kubectl("patch", "deploy", "pt", "--type=strategic", "-p",
                 '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.28"}]}}}}')
    live.kubectl("annotate", "svc", "pt", "note=hi")
    svc = json.loads(live.kubectl("get", "svc", "pt", "-o", "json").stdout)
    assert svc["metadata"]["labels"] == {"app": "pt", "merge": "yes", "json": "y"}
    assert svc["metadata"]["annotations"]["note"] == "hi"
    assert [p["port"] for p in svc["spec"]["ports"]] == [81]
    image = live.kubectl("get", "deploy", "pt", "-o", "jsonpath={.spec.template.spec.containers[0].image}").stdout
    assert image == "nginx:1.28"
    editor = "sed -i -e 's/port: 81$/port: 82/'"
    live.kubectl("edit", "svc", "pt", EDITOR=editor, KUBE_EDITOR=editor)
    assert live.kubectl("get", "svc", "pt", "-o", "jsonpath={.spec.ports[0].port}").stdout == "82"


def test_apply_twice_client_and_server_side(live: Live, tmp_path: Path) -> None:
    manifest = tmp_path / "svc.yaml"
    manifest.write_text("apiVersion: v1\nkind: Service\nmetadata:\n  name: ap\nspec:\n  selector: {app: ap}\n"
                        "  ports:\n  - {name: http, port: 80}\n  - {name: admin, port: 9000}\n")
    assert live.kubectl("apply", "-f", str(manifest)).stdout.strip() == "service/ap created"
    assert live.kubectl("apply", "-f", str(manifest)).stdout.strip() == "service/ap unchanged"
    manifest.write_text(manifest.read_text().replace("  - {name: admin, port: 9000}\n", ""))
    assert live.kubectl("apply", "-f", str(manifest)).stdout.strip() == "service/ap configured"
    assert live.kubectl("get", "svc", "ap", "-o", "jsonpath={.spec.ports[*].port}").stdout == "80"
    out = live.kubectl("apply", "--server-side", "-f", str(manifest)).stdout.strip()
    assert out == "service/ap serverside-applied"
    manifest2 = tmp_path / "cm.yaml"
    manifest2.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  k: v\n")
    assert live.kubectl("apply", "--server-side", "-f", str(manifest2)).stdout.strip() == \
        "configmap/ssa serverside-applied"


def test_describe_explain_run_delete(live: Live) -> None:
    live.kubectl("create", "deployment", "ds", "--image=nginx:1.27", "--replicas=2", "--port=80")
    live.kubectl("expose", "deployment", "ds", "--port=80")
    out = live.kubectl("describe", "svc", "ds").stdout
    assert "Selector:                 app=ds" in out and "Endpoints:" in out
    assert "10.244." in out.split("Endpoints:")[1].splitlines()[0]
    out = live.kubectl("describe", "deploy", "ds").stdout
    assert "NewReplicaSet:   ds-" in out
    explain = live.kubectl("explain", "svc.spec.ports.targetPort").stdout
    assert "Number or name of the port to access on the pods targeted by the service" in explain
    live.kubectl("run", "client", "--image=busybox:1.36", "--restart=Never", "--", "sleep", "3600")
    pod = wait_for(lambda: json.loads(live.kubectl("get", "pod", "client", "-o", "json").stdout)["status"]
                   .get("podIP"), 5)
    assert pod and pod.startswith("10.244.")
    assert live.kubectl("delete", "deploy", "ds").stdout.strip() == 'deployment.apps "ds" deleted'
    assert not pods(live, "-l", "app=ds")
    assert not json.loads(live.kubectl("get", "rs", "-o", "json", "-l", "app=ds").stdout)["items"]


def test_python_kubernetes_client_list_create_watch(live: Live) -> None:
    kubernetes = pytest.importorskip("kubernetes", reason="the kubernetes Python client is not installed")
    from kubernetes import client, config, watch

    api_client = config.new_client_from_config(config_file=live.kubeconfig)
    v1 = client.CoreV1Api(api_client)
    names = [ns.metadata.name for ns in v1.list_namespace().items]
    assert "kube-system" in names
    body = client.V1Service(metadata=client.V1ObjectMeta(name="pyc"), spec=client.V1ServiceSpec(
        selector={"app": "pyc"}, ports=[client.V1ServicePort(port=80, target_port=8080)]))
    created = v1.create_namespaced_service("default", body)
    assert created.spec.cluster_ip.startswith("10.")
    rv = v1.list_namespaced_service("default").metadata.resource_version
    apps = client.AppsV1Api(api_client)
    apps.create_namespaced_deployment("default", client.V1Deployment(
        metadata=client.V1ObjectMeta(name="pyc"),
        spec=client.V1DeploymentSpec(replicas=1, selector=client.V1LabelSelector(match_labels={"app": "pyc"}),
                                     template=client.V1PodTemplateSpec(
                                         metadata=client.V1ObjectMeta(labels={"app": "pyc"}),
                                         spec=client.V1PodSpec(containers=[client.V1Container(
                                             name="c", image="nginx:1.27")])))))
    seen = []
    w = watch.Watch()
    for event in w.stream(v1.list_namespaced_pod, "default", label_selector="app=pyc", resource_version=rv,
                          timeout_seconds=3):
        seen.append((event["type"], event["object"].metadata.name))
        if event["type"] == "ADDED":
            w.stop()
    assert seen and seen[0][0] == "ADDED" and seen[0][1].startswith("pyc-")
    del kubernetes


@pytest.fixture(scope="module")
def web_pod(shop: Live) -> str:
    return shop.kubectl("get", "pods", "-n", "shop", "-l", "app=web", "-o",
                        "jsonpath={.items[0].metadata.name}").stdout


@pytest.mark.parametrize(("cmd", "stdout", "stderr", "rc"), [
    (["echo", "hello", "from", "exec"], "hello from exec\n", "", 0),
    (["sh", "-c", "exit 3"], "", "command terminated with exit code 3", 3),
    (["nosuch"], "", "sh: nosuch: not found", 127),
    (["cat", "/etc/resolv.conf"], "search shop.svc.cluster.local svc.cluster.local cluster.local\n"
                                  "nameserver 10.96.0.10\noptions ndots:5\n", "", 0),
    (["sh", "-c", "false || echo fallback && hostname"], "fallback\n{pod}\n", "", 0),
    (["wget", "-qO-", "http://nosuch/"], "", "wget: bad address 'nosuch'", 1),
    (["nc", "-zv", "-w", "1", "api", "8080"], "", "api (10.", 0),
])
def test_exec_runs_the_simulated_shell(shop: Live, web_pod: str, cmd: list[str], stdout: str, stderr: str,
                                       rc: int) -> None:
    proc = shop.kubectl("exec", "-n", "shop", web_pod, "--", *cmd, check=False)
    assert proc.returncode == rc
    assert proc.stdout == stdout.format(pod=web_pod)
    assert stderr in proc.stderr


def test_exec_wget_gets_the_backend_reply_through_the_trace(shop: Live, web_pod: str) -> None:
    out = shop.kubectl("exec", "-n", "shop", web_pod, "--", "wget", "-qO-", "-T", "2", "http://api:8080/").stdout
    api_pods = {p["metadata"]["name"] for p in pods(shop, "-n", "shop", "-l", "app=api")}
    assert out.startswith("Hello from shop/") and out.split()[2].split("/")[1] in api_pods


def test_exec_with_piped_stdin(shop: Live, web_pod: str) -> None:
    proc = shop.kubectl("exec", "-i", "-n", "shop", web_pod, "--", "cat", input="piped stdin\n")
    assert proc.stdout == "piped stdin\n"


def test_run_rm_attach_runs_the_command_and_cleans_up(live: Live) -> None:
    proc = live.kubectl("run", "tmp", "--rm", "-i", "--image=busybox:1.36", "--restart=Never", "--",
                        "nslookup", "kubernetes.default.svc.cluster.local", timeout=60)
    assert "Name:\tkubernetes.default.svc.cluster.local\nAddress: 10.96.0.1\n" in proc.stdout
    assert 'pod "tmp" deleted' in proc.stdout
    assert live.kubectl("get", "pod", "tmp", check=False).returncode == 1


def test_delete_options_in_the_body_dry_run_preconditions_and_orphans(live: Live) -> None:
    """kubectl puts dryRun, preconditions and propagationPolicy in the DeleteOptions body."""
    live.kubectl("create", "configmap", "dr1", "--from-literal=a=b")
    out = live.kubectl("delete", "configmap", "dr1", "--dry-run=server").stdout
    assert "(server dry run)" in out
    assert live.kubectl("get", "configmap", "dr1", "-o", "name").stdout.strip() == "configmap/dr1"
    code, cm = live.request("GET", "/api/v1/namespaces/default/configmaps/dr1")
    code, status = live.request("DELETE", "/api/v1/namespaces/default/configmaps/dr1",
                                {"preconditions": {"resourceVersion": "1"}})
    assert (code, status["reason"]) == (409, "Conflict")
    assert "Precondition failed: ResourceVersion in precondition: 1" in status["message"]
    bad = dict(cm, data={"a": "c"})
    bad["metadata"] = dict(cm["metadata"], resourceVersion="abc")
    code, status = live.request("PUT", "/api/v1/namespaces/default/configmaps/dr1", bad)
    assert (code, status["reason"]) == (400, "BadRequest")
    live.kubectl("create", "deployment", "orph", "--image=nginx:1.27")
    live.kubectl("wait", "--for=condition=available", "deployment/orph", "--timeout=20s")
    live.kubectl("delete", "deployment", "orph", "--cascade=orphan")
    rs = live.kubectl("get", "rs", "-l", "app=orph", "-o", "name").stdout.split()
    assert len(rs) == 1
    body = json.loads(live.kubectl("get", rs[0], "-o", "json").stdout)
    assert "ownerReferences" not in body["metadata"]
    live.kubectl("delete", rs[0])


def test_changing_a_service_type_drops_what_the_new_type_cannot_have(live: Live) -> None:
    """kubectl patch svc X -p '{"spec":{"type":"ClusterIP"}}' works on a real cluster (dropTypeDependentFields)."""
    live.kubectl("create", "service", "nodeport", "typed", "--tcp=80:80")
    live.kubectl("patch", "svc", "typed", "-p", '{"spec":{"type":"ClusterIP"}}')
    spec = json.loads(live.kubectl("get", "svc", "typed", "-o", "json").stdout)["spec"]
    assert spec["type"] == "ClusterIP" and "nodePort" not in spec["ports"][0]
    assert "externalTrafficPolicy" not in spec
    live.kubectl("patch", "svc", "typed", "-p", '{"spec":{"type":"ExternalName","externalName":"db.example.com"}}')
    spec = json.loads(live.kubectl("get", "svc", "typed", "-o", "json").stdout)["spec"]
    assert spec["type"] == "ExternalName" and "clusterIP" not in spec
    live.kubectl("patch", "svc", "typed", "-p", '{"spec":{"type":"LoadBalancer","externalName":null}}')
    spec = json.loads(live.kubectl("get", "svc", "typed", "-o", "json").stdout)["spec"]
    assert spec["type"] == "LoadBalancer" and spec["ports"][0]["nodePort"] and spec["clusterIP"]
    live.kubectl("delete", "svc", "typed")
