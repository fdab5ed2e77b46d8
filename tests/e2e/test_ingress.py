"""Seed "Ingress: host 一つ、path 二つ", declarative and imperative, and curl through the entry.

Given api (8080) and web (80) Deployments exposed as Services, then the shop Ingress routes
shop.example.com/api… to api and everything else on that host to web; other hosts get the
controller's 404. curl enters through the live cluster's ingress port with a Host header.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from .conftest import CURL, Cluster, needs_curl
from .seeds import CREATE_INGRESS, SHOP_INGRESS

pytestmark = needs_curl


def backends(k: Cluster) -> None:
    # agnhost netexec listens where its flag says (http-echo would listen on 5678 whatever --port declares).
    k.sh("kubectl create deployment api --image=registry.k8s.io/e2e-test-images/agnhost:2.53 --port=8080 "
         "-- /agnhost netexec --http-port=8080")
    k.sh("kubectl create deployment web --image=nginx:1.27 --port=80")
    k.sh("kubectl expose deployment api --port=8080")
    k.sh("kubectl expose deployment web --port=80")


def curl(k: Cluster, host: str, path: str) -> tuple[int, dict[str, str], str]:
    assert CURL is not None
    out = subprocess.run([CURL, "-s", "-i", "-m", "5", "-H", f"Host: {host}", k.ingress + path],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 0, out.stderr
    # text mode has turned the CRLFs into newlines
    head, _, body = out.stdout.partition("\n\n")
    lines = head.split("\n")
    headers = {h.split(":", 1)[0].lower(): h.split(":", 1)[1].strip() for h in lines[1:]}
    return int(lines[0].split()[1]), headers, body


CASES = [
    # (path, status, backend service) — Prefix matches by path element, longest path wins.
    ("/api", 200, "api"),
    ("/api/v1/items", 200, "api"),
    ("/api/", 200, "api"),
    ("/apix", 200, "web"),
    ("/", 200, "web"),
    ("/index.html", 200, "web"),
]


def check_routes(k: Cluster) -> None:
    for path, status, svc in CASES:
        code, headers, body = curl(k, "shop.example.com", path)
        assert code == status, (path, code, body)
        assert headers.get("x-knetsim-backend", "").startswith(f"default/{svc}-"), (path, headers, body)
    code, headers, body = curl(k, "other.example.com", "/api")
    assert code == 404
    assert "x-knetsim-backend" not in headers
    assert "404 Not Found" in body
    # A loopback literal matches no server_name: nginx's default server answers it, as it answers no Host.
    for literal in ("[::1]", "[::1]:80", "127.0.0.1"):
        code, headers, body = curl(k, literal, "/")
        assert code == 404 and "404 Not Found" in body, literal


def test_declarative_shop_ingress_routes_by_host_and_path(k: Cluster) -> None:
    backends(k)
    k.write("ingress.yaml", SHOP_INGRESS)
    assert k.sh("kubectl apply -f ingress.yaml").stdout == "ingress.networking.k8s.io/shop created\n"
    row = k.sh("kubectl get ingress shop --no-headers").stdout.split()
    assert row[:3] == ["shop", "nginx", "shop.example.com"]
    assert row[-2] == "80"
    check_routes(k)
    # The api pod (agnhost netexec) answers a path it has no handler for as its "/" does, with the time; web with
    # nginx's page.
    _, headers, body = curl(k, "shop.example.com", "/api")
    assert headers["x-knetsim-backend"].startswith("default/api-")
    assert body.startswith("NOW: ")
    assert "Welcome to nginx!" in curl(k, "shop.example.com", "/")[2]
    describe = k.sh("kubectl describe ingress shop").stdout
    api_ip = k.sh("kubectl get pods -l app=api -o jsonpath='{.items[0].status.podIP}'").stdout
    assert f"/api   api:8080 ({api_ip}:8080)" in describe
    assert "Ingress Class:    nginx" in describe


def test_a_pod_inside_the_cluster_reaches_the_backends_through_the_controller_service(k: Cluster) -> None:
    """A client pod calling the controller's Service (as an in-cluster smoke test does) is routed as a client
    outside is: by its Host header, to the backend the rule names; without a host the rules name, the
    controller's default backend answers 404."""
    backends(k)
    k.write("ingress.yaml", SHOP_INGRESS)
    k.sh("kubectl apply -f ingress.yaml")
    k.sh("kubectl run probe --image=busybox:1.36 -- sleep 3600")
    wait_for_running = k.sh("kubectl wait --for=condition=Ready pod/probe --timeout=30s", check=False)
    assert wait_for_running.returncode == 0, wait_for_running.stderr
    controller = "http://ingress-nginx-controller.ingress-nginx.svc.cluster.local"
    routed = k.sh(f"kubectl exec probe -- wget -qO- -T 3 --header 'Host: shop.example.com' {controller}/api")
    assert routed.stdout.startswith("NOW: "), routed.stdout  # agnhost netexec behind /api
    unrouted = k.sh(f"kubectl exec probe -- wget -qO- -T 3 {controller}/api", check=False)
    assert unrouted.returncode != 0 and "404 Not Found" in unrouted.stderr, unrouted


def test_imperative_create_ingress_gives_prefix_path_types(k: Cluster) -> None:
    backends(k)
    assert k.sh(CREATE_INGRESS).stdout == "ingress.networking.k8s.io/shop created\n"
    # "作った後に -o yaml で pathType を確認するほうが安全": `*` → Prefix, the path without it.
    ing = k.get_json("ingress", "shop")
    paths = ing["spec"]["rules"][0]["http"]["paths"]
    assert ing["spec"]["ingressClassName"] == "nginx"
    assert ing["spec"]["rules"][0]["host"] == "shop.example.com"
    assert [(p["path"], p["pathType"], p["backend"]["service"]["name"], p["backend"]["service"]["port"]["number"])
            for p in paths] == [("/api", "Prefix", "api", 8080), ("/", "Prefix", "web", 80)]
    check_routes(k)


def test_without_a_star_create_ingress_gives_exact(k: Cluster) -> None:
    backends(k)
    k.sh('kubectl create ingress exact --class=nginx --rule="shop.example.com/api=api:8080"')
    paths = k.get_json("ingress", "exact")["spec"]["rules"][0]["http"]["paths"]
    assert paths[0]["pathType"] == "Exact"
    assert curl(k, "shop.example.com", "/api")[0] == 200
    # Exact: /api/ is not /api, and nothing else matches on this host.
    assert curl(k, "shop.example.com", "/api/")[0] == 404


def test_ingress_to_a_service_without_endpoints_is_503(k: Cluster) -> None:
    k.write("ingress.yaml", SHOP_INGRESS)
    k.sh("kubectl apply -f ingress.yaml")
    code, _, body = curl(k, "shop.example.com", "/api")
    assert code == 503
    assert "503 Service Temporarily Unavailable" in body


def test_missing_path_type_is_rejected_by_validation(k: Cluster) -> None:
    """pathType (必須。なければ validation で失敗)."""
    k.write("bad.yaml", SHOP_INGRESS.replace("            pathType: Prefix\n", "", 1))
    out = k.sh("kubectl apply -f bad.yaml", check=False)
    assert out.returncode == 1
    assert 'The Ingress "shop" is invalid: spec.rules[0].http.paths[0].pathType: Required value: ' \
           "pathType must be specified" in out.stderr


@pytest.mark.parametrize("node_ip", ["172.18.0.2", "172.18.0.3", "172.18.0.4"])
def test_node_port_answers_on_every_node(k: Cluster, node_ip: str) -> None:
    k.sh("kubectl create deployment web --image=nginx:1.27 --replicas=2 --port=80")
    k.sh("kubectl expose deployment web --name=web-np --port=80 --type=NodePort")
    port = json.loads(k.sh("kubectl get svc web-np -o json").stdout)["spec"]["ports"][0]["nodePort"]
    code, headers, body = curl(k, f"{node_ip}:{port}", "/")
    assert code == 200
    assert "Welcome to nginx!" in body
    assert headers["x-knetsim-backend"].startswith("default/web-")
