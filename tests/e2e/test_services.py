"""Seed "Deployment を Service で公開", named targetPort, headless Service, and their DNS records.

Given a fresh `knetsim up`, then the notes' commands typed as written: each test checks what kubectl
printed, what the API holds (kubectl -o json and the Python client), what dig answers and what a
busybox pod gets over the simulated network.
"""

from __future__ import annotations

import yaml

from .conftest import Cluster, dig
from .seeds import HEADLESS, NAMED_TARGET_PORT

RUN = "kubectl run tmp --rm -i --image=busybox:1.36 --restart=Never -- "


def deploy_and_expose(k: Cluster) -> None:
    out = k.sh("kubectl create deployment web --image=nginx:1.27 --replicas=2 --port=80").stdout
    assert out == "deployment.apps/web created\n"
    out = k.sh("kubectl expose deployment web --port=80 --target-port=80              # ClusterIP").stdout
    assert out == "service/web exposed\n"


def test_create_deployment_and_expose_it_as_clusterip_and_nodeport(k: Cluster) -> None:
    deploy_and_expose(k)
    assert k.sh("kubectl expose deployment web --name=web-np --port=80 --type=NodePort").stdout == \
        "service/web-np exposed\n"

    pods = k.get_json("pods", "-l", "app=web")["items"]
    assert len(pods) == 2
    assert {p["status"]["phase"] for p in pods} == {"Running"}
    ips = sorted(p["status"]["podIP"] for p in pods)

    # expose copies the Deployment's selector (matchLabels only) into the Service.
    web = k.get_json("svc", "web")
    assert web["spec"]["selector"] == {"app": "web"}
    assert web["spec"]["type"] == "ClusterIP"
    assert web["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert web["spec"]["clusterIP"].startswith("10.")

    np = k.get_json("svc", "web-np")
    assert np["spec"]["type"] == "NodePort"
    node_port = np["spec"]["ports"][0]["nodePort"]
    assert 30000 <= node_port <= 32767
    row = k.sh("kubectl get svc web-np --no-headers").stdout.split()
    assert row[:5] == ["web-np", "NodePort", np["spec"]["clusterIP"], "<none>", f"80:{node_port}/TCP"]

    # Both Services get the same two pod IPs as endpoints.
    for svc in ("web", "web-np"):
        out = k.sh(f"kubectl get endpointslices -l kubernetes.io/service-name={svc} "
                   "-o jsonpath='{.items[*].endpoints[*].addresses[0]}'").stdout
        assert sorted(out.split()) == ips

    # And a pod inside the cluster reaches them by name.
    out = k.sh(RUN + "wget -qO- -T 2 http://web").stdout
    assert "Welcome to nginx!" in out
    assert any(f"({ip})" in out for ip in ips)


def test_create_service_fills_the_selector_with_its_own_name(k: Cluster) -> None:
    deploy_and_expose(k)
    out = k.sh("kubectl create service clusterip web2 --tcp=80:8080 --dry-run=client -o yaml").stdout
    doc = yaml.safe_load(out)
    # The trap the notes point out: not the Deployment's app=web, but app: web2.
    assert doc["spec"]["selector"] == {"app": "web2"}
    assert doc["spec"]["ports"] == [{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}]
    assert k.sh("kubectl get svc web2", check=False).returncode == 1  # dry run: nothing created

    # Created for real, the Service selects nothing: no endpoints, and the connection is refused.
    k.sh("kubectl create service clusterip web2 --tcp=80:8080")
    out = k.sh("kubectl get endpointslices -l kubernetes.io/service-name=web2 --no-headers").stdout.split()
    assert out[1:4] == ["IPv4", "<unset>", "<unset>"]
    run = k.sh(RUN + "wget -qO- -T 1 http://web2", check=False)
    assert run.returncode == 1
    assert "Connection refused" in run.stdout + run.stderr


def test_named_target_port_resolves_to_the_pods_port_number(k: Cluster) -> None:
    k.write("named.yaml", NAMED_TARGET_PORT)
    out = k.sh("kubectl apply -f named.yaml").stdout
    assert out == "service/web created\npod/web created\n"
    svc = k.get_json("svc", "web")
    assert svc["spec"]["ports"][0]["targetPort"] == "http-web"
    pod_ip = k.get_json("pod", "web")["status"]["podIP"]
    slice_ = k.get_json("endpointslices", "-l", "kubernetes.io/service-name=web")["items"][0]
    # The slice carries the port number the name stands for on the pod, under the Service port's name.
    assert slice_["ports"] == [{"name": "http", "port": 80, "protocol": "TCP"}]
    assert slice_["endpoints"][0]["addresses"] == [pod_ip]
    out = k.sh(RUN + "wget -qO- -T 2 http://web").stdout
    assert f"served by pod default/web ({pod_ip})" in out

    # SRV for the named port: _http._tcp.web...
    srv = dig(k, "_http._tcp.web.default.svc.cluster.local", "SRV", "+short").split()
    assert srv[2:] == ["80", "web.default.svc.cluster.local."]


def test_headless_service_answers_pod_ips(k: Cluster) -> None:
    deploy_and_expose(k)
    k.write("headless.yaml", HEADLESS)
    assert k.sh("kubectl apply -f headless.yaml").stdout == "service/web-headless created\n"
    svc = k.get_json("svc", "web-headless")
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["clusterIPs"] == ["None"]
    row = k.sh("kubectl get svc web-headless --no-headers").stdout.split()
    assert row[:5] == ["web-headless", "ClusterIP", "None", "<none>", "80/TCP"]
    pod_ips = sorted(k.sh("kubectl get pods -l app=web -o jsonpath='{.items[*].status.podIP}'").stdout.split())

    # ClusterIP: one A record, the VIP. Headless: one A record per ready pod.
    cluster_ip = k.get_json("svc", "web")["spec"]["clusterIP"]
    assert dig(k, "web.default.svc.cluster.local", "+short").split() == [cluster_ip]
    assert sorted(dig(k, "web-headless.default.svc.cluster.local", "+short").split()) == pod_ips
    full = dig(k, "web-headless.default.svc.cluster.local")
    assert "status: NOERROR" in full
    assert "flags: qr aa rd" in full

    # The busybox resolver in a pod sees the same: nslookup lists both pod IPs.
    out = k.sh(RUN + "nslookup web-headless.default.svc.cluster.local").stdout
    assert sorted(line.split()[-1] for line in out.splitlines() if line.startswith("Address: ")) == pod_ips

    # An unnamed port has no SRV name: NXDOMAIN, as CoreDNS answers.
    assert "status: NXDOMAIN" in dig(k, "_http._tcp.web.default.svc.cluster.local", "SRV")


def test_python_client_sees_what_kubectl_created(k: Cluster) -> None:
    deploy_and_expose(k)
    from kubernetes import client as kclient

    api = k.client()
    core, apps, disc = kclient.CoreV1Api(api), kclient.AppsV1Api(api), kclient.DiscoveryV1Api(api)
    dep = apps.read_namespaced_deployment("web", "default")
    assert dep.spec.replicas == 2
    assert dep.status.ready_replicas == 2
    svc = core.read_namespaced_service("web", "default")
    assert svc.spec.selector == {"app": "web"}
    slices = disc.list_namespaced_endpoint_slice("default", label_selector="kubernetes.io/service-name=web")
    addrs = sorted(a for s in slices.items for e in s.endpoints for a in e.addresses)
    pods = core.list_namespaced_pod("default", label_selector="app=web")
    assert addrs == sorted(p.status.pod_ip for p in pods.items)
    # A write through the client is seen by kubectl and by the controllers.
    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 3}})
    out = k.sh("kubectl get deploy web --no-headers").stdout.split()
    assert out[:4] == ["web", "3/3", "3", "3"]
    api.close()


def test_selector_typo_leaves_the_slice_empty_without_an_error(k: Cluster) -> None:
    """000: セレクターが1文字でもずれると、EndpointSliceは空のまま正常に作成されます。"""
    k.sh("kubectl create deployment web --image=nginx:1.27 --replicas=2 --port=80")
    k.write("typo.yaml", HEADLESS.replace("web-headless", "web").replace("clusterIP: None\n  ", "")
            .replace("app: web", "app: wbe"))
    assert k.sh("kubectl apply -f typo.yaml").stdout == "service/web created\n"
    out = k.sh("kubectl get endpointslices -l kubernetes.io/service-name=web").stdout.splitlines()
    assert out[1].split()[1:4] == ["IPv4", "<unset>", "<unset>"]
    # v1 Endpoints, deprecated since v1.33, still answers (with the API server's warning).
    ep = k.sh("kubectl get endpoints web")
    assert ep.stdout.splitlines()[1].split()[:2] == ["web", "<none>"]
    assert "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice" in ep.stderr
    dns_ips = sorted(k.sh("kubectl get pods -n kube-system -l k8s-app=kube-dns "
                          "-o jsonpath='{.items[*].status.podIP}'").stdout.split())
    row = k.sh("kubectl get endpoints kube-dns -n kube-system --no-headers").stdout.split()
    # Each port, then each address on it; three shown, "+ 3 more..." for the other three.
    assert row[1].split(",")[:2] == [f"{ip}:53" for ip in dns_ips]
    assert row[2:5] == ["+", "3", "more..."]
    run = k.sh(RUN + "wget -qO- -T 1 http://web", check=False)
    assert run.returncode == 1
    assert "Connection refused" in run.stdout + run.stderr
    # Fixing the selector fills the slice: no restart of anything.
    k.sh("""kubectl patch svc web -p '{"spec":{"selector":{"app":"web"}}}'""")
    ips = k.sh("kubectl get endpointslices -l kubernetes.io/service-name=web "
               "-o jsonpath='{.items[*].endpoints[*].addresses[0]}'").stdout.split()
    assert len(ips) == 2


def test_create_service_nodeport_with_a_fixed_node_port(k: Cluster) -> None:
    """試験のポイント: kubectl create service nodeport <name> --tcp=<port>:<targetPort> --node-port=<np>."""
    k.sh("kubectl create deployment web --image=nginx:1.27 --replicas=2 --port=80")
    out = k.sh("kubectl create service nodeport web --tcp=80:80 --node-port=30080").stdout
    assert out == "service/web created\n"
    row = k.sh("kubectl get svc web --no-headers").stdout.split()
    assert row[1] == "NodePort"
    assert row[4] == "80:30080/TCP"
    # The selector is app=web only because the Service is called web (the web2 trap above).
    assert k.get_json("svc", "web")["spec"]["selector"] == {"app": "web"}
    # A second Service cannot take the same node port: the API server's 422.
    out = k.sh("kubectl create service nodeport other --tcp=81:80 --node-port=30080", check=False)
    assert out.returncode == 1
    assert out.stderr == 'error: failed to create NodePort service: Service "other" is invalid: ' \
                         "spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated\n"


def test_external_name_is_a_cname_and_multi_port_needs_names(k: Cluster) -> None:
    """000: ExternalName は IP なしで CNAME だけを返します / ポートが2つ以上なら各ポートに name が必須."""
    out = k.sh("kubectl create service externalname payments --external-name=api.example.com").stdout
    assert out == "service/payments created\n"
    row = k.sh("kubectl get svc payments --no-headers").stdout.split()
    assert row[1:4] == ["ExternalName", "<none>", "api.example.com"]
    answer = dig(k, "payments.default.svc.cluster.local", "+noall", "+answer").split()
    assert answer[3:] == ["CNAME", "api.example.com."]

    k.write("multi.yaml", """\
apiVersion: v1
kind: Service
metadata:
  name: multi
spec:
  selector:
    app: web
  ports:
    - port: 80
    - port: 443
""")
    out = k.sh("kubectl apply -f multi.yaml", check=False)
    assert out.returncode == 1
    assert 'The Service "multi" is invalid: ' in out.stderr
    assert "spec.ports[0].name: Required value" in out.stderr


def test_each_connection_is_balanced_anew_and_client_ip_affinity_pins_the_client(k: Cluster) -> None:
    """kube-proxy picks a backend for every new connection (iptables' random statistic), so a pod calling a
    Service of three replicas reaches more than one of them; with sessionAffinity: ClientIP every call of that
    client goes to one backend, as the recent list remembers it."""
    k.sh("kubectl create deployment echo --image=registry.k8s.io/e2e-test-images/agnhost:2.39 --replicas=3 "
         "-- /agnhost netexec --http-port=8080")
    k.sh("kubectl expose deployment echo --port=80 --target-port=8080")
    k.sh("kubectl expose deployment echo --name=sticky --port=80 --target-port=8080 --session-affinity=ClientIP")
    k.sh("kubectl run client --image=busybox:1.36 --restart=Never -- sleep 3600")
    k.sh("kubectl wait --for=condition=Ready pod/client --timeout=30s")
    k.sh("kubectl wait --for=condition=Available deployment/echo --timeout=30s")
    pods = {p["metadata"]["name"] for p in k.get_json("pods", "-l", "app=echo")["items"]}
    calls = "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do wget -qO- -T 2 http://{svc}/hostname; echo; done"
    spread = k.sh(f"kubectl exec client -- sh -c '{calls.format(svc='echo')}'").stdout.split()
    assert len(spread) == 12 and set(spread) <= pods and len(set(spread)) >= 2, spread
    pinned = k.sh(f"kubectl exec client -- sh -c '{calls.format(svc='sticky')}'").stdout.split()
    assert len(pinned) == 12 and len(set(pinned)) == 1 and pinned[0] in pods, pinned
