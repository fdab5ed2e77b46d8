"""The reachability layer against netpol-analyzer's ``diff``: its scenarios, restated as our own manifests.

netpol-analyzer (np-guard) compares the connectivity of two folders pair by pair and names each
difference ``added`` (ref1 nothing, ref2 something), ``removed`` (the reverse) or ``changed`` (both
something); its tests pair inputs such as a NetworkPolicy whose rule a ``-`` split in two, a
deny-all policy later opened to one workload, a named port moved, a workload added. Given the same
changes to manifests written here, the pairs our diff reports, with the allowed sets before and
after, are exactly theirs (our external ranges exclude the pod network, which netpol-analyzer does
not know; the pods knetsim adds itself are left out of the comparison, as their inputs have none).

Address plan: one namespace ``default``; pods 10.244.<node>.x; external addresses outside 10.244/16.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from knetsim.cli.main import cli

SYSTEM = ("kube-system/", "ingress-nginx/")


def deployment(name: str, labels: dict[str, str], ports: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                       "spec": {"selector": {"matchLabels": labels},
                                "template": {"metadata": {"labels": labels},
                                             "spec": {"containers": [{"name": "c", "image": "app",
                                                                      "ports": ports}]}}}})


def policy(name: str, spec: dict[str, Any]) -> str:
    return json.dumps({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name},
                       "spec": spec})


def write(folder: Path, *docs: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "all.json").write_text("[" + ",".join(docs) + "]")
    return folder


def pairs(before: Path, after: Path) -> dict[tuple[str, str], tuple[Any, Any]]:
    """(source, destination) -> (ref1, ref2): netpol-analyzer's view of the reachability layer."""
    result = CliRunner().invoke(cli, ["diff", "--before", str(before), "--after", str(after), "--layers",
                                      "reachability", "-o", "json"])
    assert result.exit_code == 0, result.output
    out = {}
    for item in json.loads(result.stdout)["layers"]["reachability"]["items"]:
        src, _, dst = item["subject"].partition(" → ")
        if not src.startswith(SYSTEM) and not dst.startswith(SYSTEM):
            out[(src, dst)] = (item["before"]["allowed"], item["after"]["allowed"])
    return out


def tcp(*ports: int) -> list[dict[str, Any]]:
    return [{"protocol": "TCP", "ports": [[p, p] for p in ports]}]


FRONTEND = deployment("frontend", {"app": "frontend"}, [{"containerPort": 8080}])
BACKEND = deployment("backend", {"app": "backendservice"}, [{"containerPort": 9090}])
DENY_ALL = policy("default-deny-in-namespace", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})
FRONTEND_POLICY = policy("frontend-netpol", {
    "podSelector": {"matchLabels": {"app": "frontend"}}, "policyTypes": ["Ingress", "Egress"],
    "ingress": [{"ports": [{"port": 8080, "protocol": "TCP"}]}],
    "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "backendservice"}}}],
                "ports": [{"port": 9090, "protocol": "TCP"}]},
               {"ports": [{"port": 53, "protocol": "UDP"}]}]})


def backend_policy(rules: list[dict[str, Any]]) -> str:
    return policy("backend-netpol", {"podSelector": {"matchLabels": {"app": "backendservice"}},
                                     "policyTypes": ["Ingress", "Egress"], "ingress": rules})


def test_one_dash_more_splits_a_rule_and_opens_the_port_to_everyone(tmp_path: Path) -> None:
    """netpol-diff-example-minimal: `- from: [frontend]` `ports: [9090]` written as two rules."""
    one = backend_policy([{"from": [{"podSelector": {"matchLabels": {"app": "frontend"}}}],
                           "ports": [{"port": 9090, "protocol": "TCP"}]}])
    two = backend_policy([{"from": [{"podSelector": {"matchLabels": {"app": "frontend"}}}]},
                          {"ports": [{"port": 9090, "protocol": "TCP"}]}])
    found = pairs(write(tmp_path / "a", FRONTEND, BACKEND, DENY_ALL, FRONTEND_POLICY, one),
                  write(tmp_path / "b", FRONTEND, BACKEND, DENY_ALL, FRONTEND_POLICY, two))
    # changed: ref1 TCP 9090, ref2 TCP 9090,UDP 53 (the frontend may send UDP 53 anywhere; now the backend takes it)
    assert found.pop(("default/frontend[Deployment]", "default/backend[Deployment]")) == (
        tcp(9090), [*tcp(9090), {"protocol": "UDP", "ports": [[53, 53]]}])
    # added: every external address -> backend, ref1 No Connections, ref2 TCP 9090
    assert found and all(src[0].isdigit() and dst == "default/backend[Deployment]" and change == ([], tcp(9090))
                         for (src, dst), change in found.items())


def test_a_deny_all_opened_to_one_workload_adds_that_pair_only(tmp_path: Path) -> None:
    """deny_all_to_from_a_deployment: `ingress: []` (nothing) becomes `from: [app2]`."""
    app1, app2 = (deployment(f"deployment{i}", {"app": f"app{i}"}, [{"containerPort": 80}]) for i in (1, 2))

    def limit(ingress: list[dict[str, Any]]) -> str:
        return policy("limit-app1-traffic", {"podSelector": {"matchLabels": {"app": "app1"}},
                                             "policyTypes": ["Egress", "Ingress"], "ingress": ingress, "egress": []})

    found = pairs(write(tmp_path / "a", app1, app2, limit([])),
                  write(tmp_path / "b", app1, app2, limit([{"from": [{"podSelector": {"matchLabels": {
                      "app": "app2"}}}]}])))
    assert found == {("default/deployment2[Deployment]", "default/deployment1[Deployment]"): ([], "all")}


def test_a_named_port_that_moves_changes_the_pair_to_the_new_number(tmp_path: Path) -> None:
    """onlineboutique changed netpols: checkoutservice -> cartservice TCP 7070 becomes TCP 8000."""
    client = deployment("checkout", {"app": "checkout"}, [{"containerPort": 5050}])

    def cart(port: int) -> str:
        return deployment("cart", {"app": "cart"}, [{"containerPort": port, "name": "grpc"}])

    allow = policy("cart", {"podSelector": {"matchLabels": {"app": "cart"}}, "ingress": [{
        "from": [{"podSelector": {"matchLabels": {"app": "checkout"}}}], "ports": [{"port": "grpc"}]}]})
    found = pairs(write(tmp_path / "a", client, cart(7070), allow), write(tmp_path / "b", client, cart(8000), allow))
    assert found == {("default/checkout[Deployment]", "default/cart[Deployment]"): (tcp(7070), tcp(8000))}


def test_a_workload_added_brings_its_pairs_as_added(tmp_path: Path) -> None:
    """onlineboutique changed workloads: a new `unicorn` reaches and is reached by everything, nothing else moves."""
    redis = deployment("redis-cart", {"app": "redis-cart"}, [{"containerPort": 6379}])
    unicorn = deployment("unicorn", {"app": "unicorn"}, [{"containerPort": 8080}])
    found = pairs(write(tmp_path / "a", redis), write(tmp_path / "b", redis, unicorn))
    # netpol-analyzer's four lines: redis-cart <-> unicorn, and 0.0.0.0-255.255.255.255 <-> unicorn (ours: the
    # address space outside the pod network, in its two pieces).
    outside = ("0.0.0.0-10.243.255.255", "10.245.0.0-255.255.255.255")
    unicorn, redis_cart = "default/unicorn[Deployment]", "default/redis-cart[Deployment]"
    assert found == {(redis_cart, unicorn): ([], "all"), (unicorn, redis_cart): ([], "all"),
                     **{(ext, unicorn): ([], "all") for ext in outside},
                     **{(unicorn, ext): ([], "all") for ext in outside}}
