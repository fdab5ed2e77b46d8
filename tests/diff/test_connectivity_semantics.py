"""The reachability layer against netpol-analyzer's ``diff``: its scenarios, restated as our own manifests.

netpol-analyzer (np-guard) compares the connectivity of two folders pair by pair. Its test suite
(pkg/netpol/diff/diff_test.go) pairs input folders and lists, per pair, each difference as one line:

==========================  ==================================  =============================================
netpol-analyzer             meaning                             knetsim ``diff --layers reachability``
==========================  ==================================  =============================================
``added``                   ref1 No Connections, ref2 some      one ``gained`` item, ``before.allowed == []``
``removed``                 ref1 some, ref2 No Connections      one ``lost`` item, ``after.allowed == []``
``changed``                 both some, different                a ``lost`` and/or a ``gained`` item for the
                                                                pair, both sides non-empty
``added`` + "workload X     a workload only in ref2 (its new    ``gained`` items whose ``before.allowed`` is
added" (new peers)          peers)                              ``[]``: a missing workload allows nothing
``removed`` + "workload X   a workload only in ref1 (lost       ``lost`` items whose ``after.allowed`` is
removed" (lost peers)       peers)                              ``[]``
an empty expected output    the two folders are equivalent      no item at all
==========================  ==================================  =============================================

The tests below take (source, destination) -> (ref1, ref2) from our JSON and compare it with the
set of lines netpol-analyzer's expected output holds for the same change, written here on our own
small manifests (workload names kept where they help to recognise the case). Facts, not files:
which pair, which ports, which direction. Where the two tools name things differently:

- External ranges: netpol-analyzer knows no pod network, so its ``0.0.0.0-255.255.255.255`` is our
  address space outside the pod network (10.244.0.0/16 by default), in its two pieces, and a range
  that contains the pod network is cut around it.
- The pods knetsim adds itself (CoreDNS, ingress-nginx, ...) are left out of the comparison, as
  their inputs have none. A one-pod workload paired with itself is no pair (a pod reaching itself is
  no policy's business); the pods of one multi-pod workload reaching each other are one of ours,
  where netpol-analyzer lists no pair of a workload with itself.
- netpol-analyzer's ``{ingress-controller}`` peer is a connection it derives from an Ingress or an
  OpenShift Route. Ours is the ingress-nginx controller's pod, and the reachability layer says what
  policy lets that pod open, route or no route; which request reaches which backend is the routes
  layer's answer. Each case that has such a line says which of our layers carries it. Routes are
  restated as Ingresses (Route is not a Kubernetes kind).
- Connections without ports (ICMP, ...): netpol-analyzer knows TCP, UDP and SCTP only. A rule that
  lists ports admits nothing else (NetworkPolicyPort, API reference), so where a change turns
  "every port of the three" into "everything", we report the difference and they do not (the
  endPort case).
- ipBlocks: netpol-analyzer matches them against external addresses only; ours also match a pod
  whose address the block holds, as Kubernetes' e2e tests expect (the changed-netpols-and-workloads
  case).
- Not restated: ``UserDefinedNetwork`` isolation (udn_test_1; an OVN-Kubernetes extension, not the
  NetworkPolicy API), the bad-input cases (they check error messages, not diffs), and the cases
  that only repeat restated ones (the semanticDiff twins of multiple_topology_resources;
  multiple_ingress_objects_with_different_ports, an Ingress replaced by a Route on other ports: a
  routes-layer change of the kind the no-routes case checks; ipblockstest -> _3, the sum of -> _2
  and _2 -> _3; four of the seven baseline rule swaps, the same swap on other protocols; the
  with-ipblock and same-old1 variants of the different-topologies case).

Address plan: the DESIGN.md defaults; pods 10.244.<node>.x; external addresses outside 10.244/16.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from knetsim.cli.main import cli

from .semantics import ALL_BUT, conns, namespace, netpol, pairs, workload, write


def deployment(name: str, labels: dict[str, str], ports: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                       "spec": {"selector": {"matchLabels": labels},
                                "template": {"metadata": {"labels": labels},
                                             "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                                                                      "ports": ports}]}}}})


def policy(name: str, spec: dict[str, Any]) -> str:
    return json.dumps({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name},
                       "spec": spec})


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


# --- more of netpol-analyzer's diff inputs: namespaces, ipBlocks, named ports, admin tiers ---------------------------

OUTSIDE = ("0.0.0.0-10.243.255.255", "10.245.0.0-255.255.255.255")  # netpol-analyzer's 0.0.0.0-255.255.255.255


def admin(name: str, priority: int, spec: dict[str, Any]) -> str:
    return json.dumps({"apiVersion": "policy.networking.k8s.io/v1alpha1", "kind": "AdminNetworkPolicy",
                       "metadata": {"name": name}, "spec": {"priority": priority, **spec}})


def baseline(spec: dict[str, Any]) -> str:
    return json.dumps({"apiVersion": "policy.networking.k8s.io/v1alpha1", "kind": "BaselineAdminNetworkPolicy",
                       "metadata": {"name": "default"}, "spec": spec})


# ipblockstest: a frontend tier reachable from the internet on DNS, except from the ranges the comment names
# (SL internal 10/8, the service range 172.21/16, the cluster range 172.30/16).
TIER = workload("DaemonSet", "infra", "calico-node-tier", {"tier": "frontend"})
OTHER = workload("Deployment", "infra", "heapster", {"app": "heapster"})
INFRA = namespace("infra")
THE_INTERNET = ("0.0.0.0-9.255.255.255", "11.0.0.0-172.20.255.255", "172.22.0.0-172.29.255.255",
                "172.31.0.0-255.255.255.255")


def from_ip_block(excepts: list[str], protocol: str) -> str:
    return netpol("infra", "enable-from-ipblock-to-isolated-by-tier", {
        "podSelector": {"matchLabels": {"tier": "frontend"}}, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": excepts}}],
                     "ports": [{"port": 53, "protocol": protocol}]}]})


def test_an_ip_block_rule_moved_from_udp_to_tcp_changes_each_range_it_names(tmp_path: Path) -> None:
    """ipblockstest -> ipblockstest_2: the same ipBlock, `protocol: UDP` becomes TCP; each of the four ranges the
    block leaves, `changed` UDP 53 -> TCP 53; pods (inside 10/8) are denied both times, so unchanged."""
    excepts = ["10.0.0.0/8", "172.21.0.0/16", "172.30.0.0/16"]
    found = pairs(write(tmp_path / "a", INFRA, TIER, OTHER, from_ip_block(excepts, "UDP")),
                  write(tmp_path / "b", INFRA, TIER, OTHER, from_ip_block(excepts, "TCP")))
    assert found == {(r, "infra/calico-node-tier[DaemonSet]"): (conns(UDP=[(53, 53)]), conns(TCP=[(53, 53)]))
                     for r in THE_INTERNET}


def test_an_except_split_in_two_halves_is_no_change(tmp_path: Path) -> None:
    """ipblockstest_2 -> ipblockstest_3: `except: 10.0.0.0/8` written as 10.0.0.0/9 and 10.128.0.0/9: the same
    addresses, so netpol-analyzer's expected output is empty, and so is ours."""
    found = pairs(write(tmp_path / "a", INFRA, TIER, OTHER,
                        from_ip_block(["10.0.0.0/8", "172.21.0.0/16", "172.30.0.0/16"], "TCP")),
                  write(tmp_path / "b", INFRA, TIER, OTHER,
                        from_ip_block(["10.0.0.0/9", "10.128.0.0/9", "172.21.0.0/16", "172.30.0.0/16"], "TCP")))
    assert found == {}


def test_an_ingress_ip_block_replaced_by_an_egress_allow_list(tmp_path: Path) -> None:
    """ipblockstest -> ipblockstest_4: the ingress policy goes; an egress policy with the same name allows the
    tier only to a list of /32s and a /8. Ingress opens (`changed` UDP 53 -> all from the internet, `added` from the
    excepted ranges and from every pod); egress closes (`removed` to every pod and every address off the list)."""
    egress = netpol("infra", "enable-from-ipblock-to-isolated-by-tier", {
        "podSelector": {"matchLabels": {"tier": "frontend"}}, "policyTypes": ["Egress"],
        "egress": [{"to": [{"ipBlock": {"cidr": "49.50.0.0/32"}}, {"ipBlock": {"cidr": "49.50.0.2/32"}},
                           {"ipBlock": {"cidr": "50.0.0.0/8"}}]}]})
    tier, heapster = "infra/calico-node-tier[DaemonSet]", "infra/heapster[Deployment]"
    found = pairs(write(tmp_path / "a", INFRA, TIER, OTHER,
                        from_ip_block(["10.0.0.0/8", "172.21.0.0/16", "172.30.0.0/16"], "UDP")),
                  write(tmp_path / "b", INFRA, TIER, OTHER, egress))
    udp53 = conns(UDP=[(53, 53)])
    expected: dict[tuple[str, str], tuple[Any, Any]] = {(r, tier): (udp53, "all") for r in THE_INTERNET}
    expected |= {(r, tier): ([], "all") for r in ("10.0.0.0-10.243.255.255", "10.245.0.0-10.255.255.255",
                                                  "172.21.0.0/16", "172.30.0.0/16")}
    expected[(heapster, tier)] = ([], "all")
    expected[(tier, heapster)] = ("all", [])
    expected |= {(tier, r): ("all", []) for r in ("0.0.0.0-10.243.255.255", "10.245.0.0-49.49.255.255",
                                                  "49.50.0.1/32", "49.50.0.3-49.255.255.255",
                                                  "51.0.0.0-255.255.255.255")}
    assert found == expected


def test_an_all_ports_range_on_every_protocol_is_all_but_the_portless_protocols(tmp_path: Path) -> None:
    """with_end_port_example -> _new: `port: 1, endPort: 65535` for UDP, TCP and SCTP on every pod becomes `- {}` on
    one tier (the other pods then selected by no policy). netpol-analyzer's expected output is empty: it knows only
    the three port protocols, so both sides are "All Connections" to it.

    We differ by design, and Kubernetes is on our side: a rule whose `ports` is present admits only traffic that
    matches one of the listed ports (NetworkPolicyIngressRule.ports, API reference), so ICMP and every other protocol
    without ports were denied to the isolated pods before and are allowed after. That, and only that, is the
    change: each pair into the two pods goes from every port of TCP, UDP, SCTP to all connections."""
    ranges = [{"port": 1, "endPort": 65535, "protocol": p} for p in ("UDP", "TCP", "SCTP")]
    before = netpol("infra", "enable-all-protocols-with-all-ports", {
        "podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"ports": ranges}]})
    after = netpol("infra", "enable-all-traffic", {
        "podSelector": {"matchLabels": {"tier": "frontend"}}, "policyTypes": ["Ingress"], "ingress": [{}]})
    found = pairs(write(tmp_path / "a", INFRA, TIER, OTHER, before), write(tmp_path / "b", INFRA, TIER, OTHER, after))
    tier, heapster = "infra/calico-node-tier[DaemonSet]", "infra/heapster[Deployment]"
    # heapster's one pod reaching itself is no policy's business; the DaemonSet's pods on different nodes are
    assert found == {(src, dst): (conns(**ALL_BUT), "all")
                     for dst in (tier, heapster) for src in (tier, heapster, *OUTSIDE) if (src, dst) != (heapster,) * 2}


HELM = workload("Deployment", "infra", "tiller-deploy", {"app": "helm"},
                [{"containerPort": 44134, "name": "tiller", "protocol": "TCP"}])
FRONT = workload("Deployment", "infra", "keepalived", {"tier": "frontend"})


def test_a_named_port_written_as_its_number_is_no_change(tmp_path: Path) -> None:
    """test_with_named_ports_changed_netpol_2 -> _3: `port: tiller` becomes `port: 44134`, the number the pod gives
    that name: netpol-analyzer reports nothing, nor do we."""

    def helm(port: str | int) -> str:
        return netpol("infra", f"ingress-based-on-{'named-ports' if isinstance(port, str) else 'port-number'}", {
            "podSelector": {"matchLabels": {"app": "helm"}}, "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"tier": "frontend"}}}],
                         "ports": [{"port": port, "protocol": "TCP"}]}]})

    assert pairs(write(tmp_path / "a", INFRA, HELM, FRONT, helm("tiller")),
                 write(tmp_path / "b", INFRA, HELM, FRONT, helm(44134))) == {}


def test_a_named_port_added_to_a_rule_adds_its_number_for_every_client(tmp_path: Path) -> None:
    """test_with_named_ports -> _changed_netpol: kube-dns's rule names `dns-local` (UDP) and `dns-tcp-local` (TCP),
    both 10053; `metrics` (TCP 10054) is added: every client and the internet, `changed` TCP 10053,UDP 10053 ->
    TCP 10053-10054,UDP 10053."""
    dns = workload("Deployment", "infra", "kube-dns", {"k8s-app": "kube-dns"}, [
        {"containerPort": 10053, "name": "dns-local", "protocol": "UDP"},
        {"containerPort": 10053, "name": "dns-tcp-local", "protocol": "TCP"},
        {"containerPort": 10054, "name": "metrics", "protocol": "TCP"}])

    def rule(*names: tuple[str, str]) -> str:
        return netpol("infra", "ingress-based-on-named-ports", {
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}, "policyTypes": ["Ingress"],
            "ingress": [{"ports": [{"port": n, "protocol": p} for n, p in names]}]})

    local = (("dns-local", "UDP"), ("dns-tcp-local", "TCP"))
    found = pairs(write(tmp_path / "a", INFRA, dns, FRONT, OTHER, rule(*local)),
                  write(tmp_path / "b", INFRA, dns, FRONT, OTHER, rule(*local, ("metrics", "TCP"))))
    change = (conns(TCP=[(10053, 10053)], UDP=[(10053, 10053)]), conns(TCP=[(10053, 10054)], UDP=[(10053, 10053)]))
    assert found == {(src, "infra/kube-dns[Deployment]"): change
                     for src in ("infra/keepalived[Deployment]", "infra/heapster[Deployment]", *OUTSIDE)}


DEMO = namespace("demo")
UI = workload("DaemonSet", "demo", "cog-agents-bank-ui", {"app": "bank-ui-selector"})
COMMAND = workload("DaemonSet", "demo", "cog-agents-account-command", {"app": "account-command-selector"})
QUERY = workload("DaemonSet", "demo", "cog-agents-account-query", {"app": "account-query-selector"})


def ui_to_command(ports: list[dict[str, Any]] | None) -> str:
    return netpol("demo", "ui-to-command", {
        "podSelector": {"matchLabels": {"app": "account-command-selector"}}, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "bank-ui-selector"}}}],
                     **({"ports": ports} if ports else {})}]})


def query_to_ui(ports: list[dict[str, Any]] | None) -> str:
    return netpol("demo", "query-to-ui", {
        "podSelector": {"matchLabels": {"app": "account-query-selector"}}, "policyTypes": ["Egress"],
        "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "bank-ui-selector"}}}],
                    **({"ports": ports} if ports else {})}]})


def test_ports_moved_from_one_policy_to_another_change_two_pairs_in_opposite_directions(tmp_path: Path) -> None:
    """multiple_topology_resources_1 -> _2: ui-to-command gains `ports` (UDP 8080, TCP 8080, TCP 9090), query-to-ui
    loses its TCP 8080: `changed` ui -> command all -> TCP 8080,9090,UDP 8080; query -> ui TCP 8080 -> all."""
    tcp8080 = [{"port": 8080, "protocol": "TCP"}]
    three = [{"port": 8080, "protocol": "UDP"}, *tcp8080, {"port": 9090, "protocol": "TCP"}]
    found = pairs(write(tmp_path / "a", DEMO, UI, COMMAND, QUERY, ui_to_command(None), query_to_ui(tcp8080)),
                  write(tmp_path / "b", DEMO, UI, COMMAND, QUERY, ui_to_command(three), query_to_ui(None)))
    assert found == {
        ("demo/cog-agents-bank-ui[DaemonSet]", "demo/cog-agents-account-command[DaemonSet]"): (
            "all", conns(TCP=[(8080, 8080), (9090, 9090)], UDP=[(8080, 8080)])),
        ("demo/cog-agents-account-query[DaemonSet]", "demo/cog-agents-bank-ui[DaemonSet]"): (
            conns(TCP=[(8080, 8080)]), "all")}


def test_a_policy_whose_selector_matches_no_pod_is_no_change(tmp_path: Path) -> None:
    """multiple_topology_resources_3 -> _4: `policy-from2-to1` is added, selecting `app: app-1`, a label no pod of its
    namespace carries: it isolates nothing, so both outputs are empty."""
    one = workload("Deployment", "demo", "cog-agents", {"app": "skydive"})
    two = workload("Deployment", "demo", "cog-analyzer", {"app": "app-2"})
    added = netpol("demo", "policy-from2-to1", {
        "podSelector": {"matchLabels": {"app": "app-1"}}, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "app-2"}}}]}]})
    assert pairs(write(tmp_path / "a", DEMO, one, two), write(tmp_path / "b", DEMO, one, two, added)) == {}


def service(name: str, app: str, port: int) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                       "spec": {"selector": {"app": app}, "ports": [{"port": port, "targetPort": port}]}})


def ingress(*backends: tuple[str, str, int]) -> str:
    return json.dumps({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "ingress-policy"},
                       "spec": {"ingressClassName": "nginx", "rules": [
                           {"host": host, "http": {"paths": [{"path": f"/{name}", "pathType": "Prefix", "backend": {
                               "service": {"name": name, "port": {"number": port}}}}]}}
                           for host, name, port in backends]}})


BOOKINFO = [("details", "details"), ("productpage", "productpage"), ("ratings", "ratings"),
            *((f"reviews-v{v}", "reviews") for v in (1, 2, 3))]


def bookinfo() -> list[str]:
    return [*(deployment(name, {"app": app, "name": name}, [{"containerPort": 9080}]) for name, app in BOOKINFO),
            service("details", "details", 9080)]


def isolating(app: str, admit: list[dict[str, Any]] | None = None, egress: list[dict[str, Any]] | None = None) -> str:
    """A policy isolating the app both ways, with these ingress and egress rules (none: nothing)."""
    return policy(f"{app}-netpol", {"podSelector": {"matchLabels": {"app": app}}, "policyTypes": ["Ingress", "Egress"],
                                    "ingress": admit or [], "egress": egress or []})


def test_policies_added_around_an_ingress_backed_workload_and_a_new_route(tmp_path: Path) -> None:
    """k8s_ingress_test -> k8s_ingress_test_new: bookinfo (details, productpage, ratings, three reviews) had no policy
    and an Ingress to details:9080; each workload gets a policy isolating it both ways, admitting only reviews ->
    productpage and reviews -> ratings on 9080 and anyone in the cluster -> details on TCP 9080; a `unicorn`
    Deployment is added, and the Ingress gains a rule to it on 8080.

    netpol-analyzer's lines: `changed` reviews-* -> productpage and -> ratings, all -> TCP 9080; `removed` every
    other pair between the six and between them and the outside world, both ways; `added` unicorn -> details TCP 9080
    and unicorn <-> the outside world; and `added` {ingress-controller} -> unicorn TCP 8080.

    That last one differs by design: our ingress controller is a pod (ingress-nginx/ingress-nginx-controller), and
    the reachability layer says what policy lets it open (to the new, unisolated unicorn: everything); which requests
    it sends where is the routes layer's answer, which names the new route to unicorn:8080."""
    rule_9080 = [{"port": 9080}]
    from_reviews = [{"from": [{"podSelector": {"matchLabels": {"app": "reviews"}}}], "ports": rule_9080}]
    policies = [isolating("productpage", from_reviews), isolating("ratings", from_reviews),
                isolating("details", [{"from": [{"namespaceSelector": {}}],
                                       "ports": [{"port": 9080, "protocol": "TCP"}]}]),
                isolating("reviews", egress=[{"to": [{"podSelector": {"matchLabels": {"app": a}}}], "ports": rule_9080}
                                             for a in ("productpage", "ratings")])]
    unicorn = [deployment("unicorn", {"app": "unicorn"}, [{"containerPort": 8080}]),
               service("unicorn", "unicorn", 8080)]
    before = write(tmp_path / "a", *bookinfo(), ingress(("demo.localdev.me", "details", 9080)))
    after = write(tmp_path / "b", *bookinfo(), *unicorn, *policies,
                  ingress(("demo.localdev.me", "details", 9080), ("demo.unicorn.me", "unicorn", 8080)))

    six = [f"default/{name}[Deployment]" for name, _ in BOOKINFO]
    tcp9080 = tcp(9080)
    kept = {(r, f"default/{d}[Deployment]"): tcp9080 for r in six[3:] for d in ("productpage", "ratings")}
    expected: dict[tuple[str, str], tuple[Any, Any]] = {}
    for src in (*six, *OUTSIDE):
        for dst in (*six, *OUTSIDE):
            if src != dst and not (src in OUTSIDE and dst in OUTSIDE):
                expected[(src, dst)] = ("all", kept.get((src, dst), []))
    uni = "default/unicorn[Deployment]"
    expected[(uni, "default/details[Deployment]")] = ([], tcp9080)
    expected |= {pair: ([], "all") for r in OUTSIDE for pair in ((r, uni), (uni, r))}
    assert pairs(before, after) == expected

    result = CliRunner().invoke(cli, ["diff", "--before", str(before), "--after", str(after), "--layers",
                                      "reachability,routes", "-o", "json"])
    doc = json.loads(result.stdout)
    controller = [i for i in doc["layers"]["reachability"]["items"]
                  if i["subject"] == f"ingress-nginx/ingress-nginx-controller[Deployment] → {uni}"]
    assert [(i["before"]["allowed"], i["after"]["allowed"]) for i in controller] == [([], "all")]
    # the new host: nginx's 404 before, proxied to the new backend after; details' route does not move
    assert [(i["before"]["answer"], i["after"]["answer"]) for i in doc["layers"]["routes"]["items"]
            if i["effect"] != "unchanged"] == [("404", "proxied to default/unicorn:8080")]


# acs-security-demos: three namespaces denied by default, each workload opened to exactly its callers on 8080 and to
# DNS (UDP 5353 anywhere), by a policy per workload.
ANY_NS = {"namespaceSelector": {}}


def app(name: str) -> dict[str, Any]:
    return {"podSelector": {"matchLabels": {"app": name}}}


def app_in(ns: str, name: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}, **app(name)}


def on(port: int, *peers: dict[str, Any], protocol: str = "TCP") -> dict[str, Any]:
    """A rule on one port with these peers, before it knows its direction (``acs_policy`` writes from/to)."""
    return {"ports": [{"port": port, "protocol": protocol}], "peers": list(peers)}


def acs_policy(ns: str, name: str, admit: list[dict[str, Any]], send: list[dict[str, Any]]) -> str:
    def rules(direction: str, listed: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{direction: r["peers"], "ports": r["ports"]} for r in listed]

    return netpol(ns, f"{name}-netpol", {"podSelector": {"matchLabels": {"app": name}},
                                         "policyTypes": ["Ingress", "Egress"],
                                         "ingress": rules("from", admit), "egress": rules("to", send)})


DNS = on(5353, ANY_NS, protocol="UDP")


def acs(*, asset_cache_open: bool = True, catalog_port: int = 8080, webapp_to_shipping: bool = True,
        mastercard: bool = True, unicorn: bool = False, added: bool = False) -> list[str]:
    """The demo with the five things the `-new` folder changes as parameters, and with ``added``, the workloads the
    `-added-workloads` folder adds (frontend/blog, payments/visa-processor-v2, zeroday/zeroday) and their policies."""
    docs = [namespace(ns) for ns in ("frontend", "backend", "payments", *(("external",) if unicorn else ()),
                                     *(("zeroday",) if added else ()))]
    workloads = {"frontend": ["asset-cache", "webapp", *(["blog"] if added else [])],
                 "backend": ["catalog", "checkout", "notification", "recommendation", "reports", "shipping"],
                 "payments": ["gateway", *(["mastercard-processor"] if mastercard else []), "visa-processor",
                              *(["visa-processor-v2"] if added else [])],
                 "external": ["unicorn"] if unicorn else [], "zeroday": ["zeroday"] if added else []}
    for ns, names in workloads.items():
        for name in names:
            ports = [{"containerPort": 8080}] + ([{"containerPort": 9080}] if name == "catalog" else [])
            docs.append(workload("Deployment", ns, name, {"app": name}, ports))
    docs += [netpol(ns, f"default-deny-in-namespace-{ns}", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})
             for ns in ("frontend", "backend", "payments", *(("zeroday",) if added else ()))]
    if added:
        docs += [acs_policy("frontend", "blog", [on(8080, ANY_NS)], []), acs_policy("zeroday", "zeroday",
                                                                                 [on(8080, ANY_NS)], []),
                 acs_policy("payments", "visa-processor-v2", [on(8080, app("gateway"))], [])]
    webapp = app_in("frontend", "webapp")
    docs += [
        acs_policy("frontend", "asset-cache", [on(8080, ANY_NS)] if asset_cache_open else [], []),
        acs_policy("frontend", "webapp", [on(8080, ANY_NS)], [
            on(8080, app_in("backend", b)) for b in ("checkout", "recommendation", "reports",
                                                     *(("shipping",) if webapp_to_shipping else ()))] + [DNS]),
        acs_policy("backend", "catalog", [on(8080, app("recommendation")), on(catalog_port, app("reports"))], []),
        acs_policy("backend", "checkout", [on(8080, webapp)], [
            on(8080, app("notification")), on(8080, app("recommendation")), on(8080, app_in("payments", "gateway")),
            DNS]),
        acs_policy("backend", "notification", [on(8080, app("checkout"))], []),
        acs_policy("backend", "recommendation", [on(8080, app("checkout")), on(8080, app("reports")), on(8080, webapp)],
                   [on(8080, app("catalog")), DNS]),
        acs_policy("backend", "reports", [on(8080, webapp)], [on(catalog_port, app("catalog")),
                                                              on(8080, app("recommendation")), DNS]),
        acs_policy("backend", "shipping", [on(8080, webapp)] if webapp_to_shipping else [], []),
        acs_policy("payments", "gateway", [on(8080, app_in("backend", "checkout"))], [
            on(8080, app("mastercard-processor")), on(8080, app("visa-processor")),
            *([on(8080, app("visa-processor-v2"))] if added else []), DNS]),
        acs_policy("payments", "mastercard-processor", [on(8080, app("gateway"))], []),
        acs_policy("payments", "visa-processor", [on(8080, app("gateway"))], [])]
    return docs


def test_a_port_moved_a_rule_removed_a_workload_removed_and_one_added_in_a_default_deny_demo(tmp_path: Path) -> None:
    """acs-security-demos -> acs-security-demos-new: reports -> catalog moves from 8080 to 9080 (both policies and a
    second container); webapp -> shipping is taken out of both policies; payments/mastercard-processor is deleted
    (gateway's rule to it stays); asset-cache's ingress becomes `[]`; external/unicorn (no policy) is added.

    netpol-analyzer's lines: `changed` reports -> catalog TCP 8080 -> TCP 9080; `removed` webapp -> shipping TCP 8080
    and gateway -> mastercard-processor TCP 8080 (a lost peer); `added` (new peer) the outside world <-> unicorn all,
    unicorn -> webapp TCP 8080, and UDP 5353 to unicorn from the five workloads that may send DNS anywhere; `removed`
    {ingress-controller} -> asset-cache TCP 8080, which here is our ingress-nginx controller's pod, as the policy
    admitted every namespace."""
    found = pairs(write(tmp_path / "a", *acs(asset_cache_open=True, catalog_port=8080, webapp_to_shipping=True,
                                             mastercard=True, unicorn=False)),
                  write(tmp_path / "b", *acs(asset_cache_open=False, catalog_port=9080, webapp_to_shipping=False,
                                             mastercard=False, unicorn=True)))
    unicorn = "external/unicorn[Deployment]"
    expected: dict[tuple[str, str], tuple[Any, Any]] = {
        ("backend/reports[Deployment]", "backend/catalog[Deployment]"): (tcp(8080), tcp(9080)),
        ("frontend/webapp[Deployment]", "backend/shipping[Deployment]"): (tcp(8080), []),
        ("payments/gateway[Deployment]", "payments/mastercard-processor[Deployment]"): (tcp(8080), []),
        (unicorn, "frontend/webapp[Deployment]"): ([], tcp(8080)),
        **{pair: ([], "all") for r in OUTSIDE for pair in ((r, unicorn), (unicorn, r))},
        **{(src, unicorn): ([], [{"protocol": "UDP", "ports": [[5353, 5353]]}])
           for src in ("backend/checkout[Deployment]", "backend/recommendation[Deployment]",
                       "backend/reports[Deployment]", "frontend/webapp[Deployment]", "payments/gateway[Deployment]")}}
    assert found == expected

    result = CliRunner().invoke(cli, ["diff", "--before", str(tmp_path / "a"), "--after", str(tmp_path / "b"),
                                      "--layers", "reachability", "-o", "json"])
    controller = [(i["before"]["allowed"], i["after"]["allowed"]) for i in json.loads(result.stdout)["layers"][
        "reachability"]["items"] if i["subject"] == "ingress-nginx/ingress-nginx-controller[Deployment] → "
                                                    "frontend/asset-cache[Deployment]"]
    assert controller == [(tcp(8080), [])]


@pytest.mark.parametrize("reverse", [False, True], ids=["a-to-b", "b-to-a"])
def test_different_topologies_workloads_and_namespaces_come_and_go_with_the_policy(tmp_path: Path,
                                                                                    reverse: bool) -> None:
    """semanticDiff-different-topologies-policy-a -> -policy-b: pods 0-4 and namespace-a, with app-1 open to app-2
    only, become pods 0, 1, 2, 5, 6 and namespace-b, with app-2 open to app-1 only (and the case b -> a, whose lines
    are these with added and removed exchanged).

    netpol-analyzer's lines, restated: `added` the outside world, 0, 1, 2 -> the new 5 and 6 and 5 <-> 6 (new peers),
    5 and 6 -> the outside world, 0, 1; `added` outside, 0 -> 1 (no longer isolated); `removed` everything to and
    from the deleted 3 and 4 (lost peers), and outside, 0 -> 2 (now isolated). The pairs that hold on both sides
    (2 -> 1 and 1 -> 2 among them) are not listed."""
    names = {0: "cog-agents-0", 1: "cog-agents-1", 2: "cog-agents-2", 3: "cog-agents-3", 4: "cog-local-analyzer",
             5: "cog-agents-5", 6: "cog-agents-6"}

    def pods(*numbers: int) -> list[str]:
        return [deployment(names[n], {"app": f"app-{n}"}, []) for n in numbers]

    def open_only(to: int, source: int) -> str:
        admitted = {"podSelector": {"matchLabels": {"app": f"app-{source}"}}}
        return policy(f"policy-from{source}-to{to}", {"podSelector": {"matchLabels": {"app": f"app-{to}"}},
                                                      "policyTypes": ["Ingress"], "ingress": [{"from": [admitted]}]})

    a = write(tmp_path / "a", namespace("namespace-a"), *pods(0, 1, 2, 3, 4), open_only(1, 2))
    b = write(tmp_path / "b", namespace("namespace-b"), *pods(0, 1, 2, 5, 6), open_only(2, 1))
    found = pairs(b, a) if reverse else pairs(a, b)
    added = [("out", 5), ("out", 6), (0, 5), (0, 6), (1, 5), (1, 6), (2, 5), (2, 6), (5, "out"), (5, 0), (5, 1),
             (5, 6), (6, "out"), (6, 0), (6, 1), (6, 5), ("out", 1), (0, 1)]
    removed = [("out", 2), ("out", 3), ("out", 4), (0, 2), (0, 3), (0, 4), (1, 3), (1, 4), (2, 3), (2, 4), (3, "out"),
               (3, 0), (3, 2), (3, 4), (4, "out"), (4, 0), (4, 2), (4, 3)]

    def expand(end: int | str) -> tuple[str, ...]:
        return OUTSIDE if end == "out" else (f"default/{names[int(end)]}[Deployment]",)

    expected = {(s, d): ([], "all") for src, dst in added for s in expand(src) for d in expand(dst)}
    expected |= {(s, d): ("all", []) for src, dst in removed for s in expand(src) for d in expand(dst)}
    assert found == ({pair: (after, before) for pair, (before, after) in expected.items()} if reverse else expected)


# onlineboutique: each service a policy isolating it both ways, admitting its callers on its port(s); ``"dns"`` in an
# egress list stands for the rule to kube-dns on UDP 53 in any namespace, ``"*"`` for every pod of every namespace.
Flows = dict[str, list[tuple[str, tuple[int, ...]]]]
BOUTIQUE_PORTS = {"emailservice": 8080, "checkoutservice": 5050, "recommendationservice": 8080, "frontend": 8080,
                  "paymentservice": 50051, "productcatalogservice": 3550, "cartservice": 7070, "loadgenerator": None,
                  "currencyservice": 7000, "shippingservice": 50051, "redis-cart": 6379, "adservice": 9555}


def boutique(ingress: Flows, egress: Flows, extra: list[str], *, open_egress: bool = False,
             redis: bool = True) -> list[str]:
    """The workloads and one policy per service; with ``open_egress``, each policy's egress is ``- {}`` (anything),
    and the load generator's policy isolates egress only."""
    docs = [deployment(name, {"app": name}, [{"containerPort": port}] if port else [])
            for name, port in BOUTIQUE_PORTS.items() if redis or name != "redis-cart"]
    dns = {"to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
           "ports": [{"port": 53, "protocol": "UDP"}]}

    def rules(direction: str, flows: list[tuple[str, tuple[int, ...]]]) -> list[dict[str, Any]]:
        return [dns if peer == "dns" else {direction: [{"namespaceSelector": {}} if peer == "*" else {
            "podSelector": {"matchLabels": {"app": peer}}}], "ports": [{"port": p} for p in ports]}
            for peer, ports in flows]

    for name in sorted(set(ingress) | set(egress)):
        if not open_egress:
            docs.append(isolating(name, rules("from", ingress.get(name, [])), rules("to", egress.get(name, []))))
            continue
        types = ["Egress"] if name == "loadgenerator" else ["Ingress", "Egress"]
        docs.append(policy(name, {"podSelector": {"matchLabels": {"app": name}}, "policyTypes": types,
                                  "ingress": rules("from", ingress.get(name, [])), "egress": [{}]}))
    return [*docs, *extra]


BOUTIQUE_INGRESS: Flows = {
    "frontend": [("loadgenerator", (8080,))], "adservice": [("frontend", (9555,))],
    "checkoutservice": [("frontend", (5050,))], "cartservice": [("checkoutservice", (7070,)), ("frontend", (7070,))],
    "currencyservice": [("checkoutservice", (7000,)), ("frontend", (7000,))],
    "emailservice": [("checkoutservice", (8080,))], "loadgenerator": [],
    "paymentservice": [("checkoutservice", (50051,))],
    "productcatalogservice": [(c, (3550,)) for c in ("checkoutservice", "frontend", "recommendationservice")],
    "recommendationservice": [("frontend", (8080,))],
    "shippingservice": [("checkoutservice", (50051,)), ("frontend", (50051,))]}
BOUTIQUE_EGRESS: Flows = {
    "frontend": [("adservice", (9555,)), ("cartservice", (7070,)), ("checkoutservice", (5050,)),
                 ("currencyservice", (7000,)), ("productcatalogservice", (3550,)),
                 ("recommendationservice", (8080,)), ("shippingservice", (50051,)), ("dns", ())],
    "checkoutservice": [("cartservice", (7070,)), ("currencyservice", (7000,)), ("emailservice", (8080,)),
                        ("paymentservice", (50051,)), ("productcatalogservice", (3550,)),
                        ("shippingservice", (50051,)), ("dns", ())],
    "loadgenerator": [("frontend", (8080,)), ("dns", ())],
    "recommendationservice": [("productcatalogservice", (3550,)), ("dns", ())]}


def test_six_policies_changed_and_one_added_in_onlineboutique(tmp_path: Path) -> None:
    """onlineboutique_workloads -> _changed_netpols: frontend stops calling adservice, which now admits
    checkoutservice instead; checkoutservice calls cartservice on 8000 (cartservice admits it there), no longer calls
    currencyservice (which stops admitting it), and calls emailservice on 9555 too; cartservice may call emailservice
    on 9555 (emailservice admits it); and redis-cart gets a policy admitting 0.0.0.0/1 only, sending nothing.

    netpol-analyzer's lines: `changed` checkout -> cart TCP 7070 -> 8000, checkout -> email TCP 8080 -> 8080,9555;
    `added` cart -> email TCP 9555, checkout -> ad TCP 9555; `removed` checkout -> currency TCP 7000, frontend -> ad
    TCP 9555, 128.0.0.0/1 -> redis-cart and redis-cart -> the outside world, all."""
    ingress = {**BOUTIQUE_INGRESS, "adservice": [("checkoutservice", (9555,))],
               "cartservice": [("checkoutservice", (8000,)), ("frontend", (7070,))],
               "currencyservice": [("frontend", (7000,))],
               "emailservice": [("cartservice", (9555,)), ("checkoutservice", (8080, 9555))]}
    egress = {**BOUTIQUE_EGRESS, "frontend": BOUTIQUE_EGRESS["frontend"][1:],
              "checkoutservice": [("adservice", (9555,)), ("cartservice", (8000,)), ("emailservice", (8080, 9555)),
                                  *BOUTIQUE_EGRESS["checkoutservice"][3:]],
              "cartservice": [("emailservice", (9555,))]}
    redis = policy("redis-cart-netpol", {"podSelector": {"matchLabels": {"app": "redis-cart"}},
                                         "policyTypes": ["Ingress", "Egress"],
                                         "ingress": [{"from": [{"ipBlock": {"cidr": "0.0.0.0/1"}}]}]})
    found = pairs(write(tmp_path / "a", *boutique(BOUTIQUE_INGRESS, BOUTIQUE_EGRESS, [])),
                  write(tmp_path / "b", *boutique(ingress, egress, [redis])))

    def d(name: str) -> str:
        return f"default/{name}[Deployment]"

    assert found == {
        (d("checkoutservice"), d("cartservice")): (tcp(7070), tcp(8000)),
        (d("checkoutservice"), d("emailservice")): (tcp(8080), tcp(8080, 9555)),
        (d("cartservice"), d("emailservice")): ([], tcp(9555)),
        (d("checkoutservice"), d("adservice")): ([], tcp(9555)),
        (d("checkoutservice"), d("currencyservice")): (tcp(7000), []),
        (d("frontend"), d("adservice")): (tcp(9555), []),
        ("128.0.0.0/1", d("redis-cart")): ("all", []),
        **{(d("redis-cart"), r): ("all", []) for r in OUTSIDE}}


def test_ports_of_one_rule_rewritten_change_the_pair_by_the_difference(tmp_path: Path) -> None:
    """semanticDiff-same-topologies-old2 -> new2: ui -> command on TCP 8080, 8081, UDP 9090, SCTP 7070 becomes
    TCP 8082, 8081, UDP 9091: `changed` SCTP 7070,TCP 8080-8081,UDP 9090 -> TCP 8081-8082,UDP 9091."""
    def ports(*listed: tuple[str, int]) -> list[dict[str, Any]]:
        return [{"port": n, "protocol": p} for p, n in listed]

    found = pairs(write(tmp_path / "a", DEMO, UI, COMMAND, QUERY,
                        ui_to_command(ports(("TCP", 8080), ("TCP", 8081), ("UDP", 9090), ("SCTP", 7070)))),
                  write(tmp_path / "b", DEMO, UI, COMMAND, QUERY,
                        ui_to_command(ports(("TCP", 8082), ("TCP", 8081), ("UDP", 9091)))))
    assert found == {("demo/cog-agents-bank-ui[DaemonSet]", "demo/cog-agents-account-command[DaemonSet]"): (
        conns(SCTP=[(7070, 7070)], TCP=[(8080, 8081)], UDP=[(9090, 9090)]),
        conns(TCP=[(8081, 8082)], UDP=[(9091, 9091)]))}


def test_a_rule_emptied_and_a_protocol_switched(tmp_path: Path) -> None:
    """semanticDiff-same-topologies-old1 -> new1a: ui-to-command loses its one rule (ingress isolated, nothing
    admitted) and query-to-ui's TCP 8080 becomes UDP 8080: `removed` ui -> command all; `changed` query -> ui
    TCP 8080 -> UDP 8080."""
    emptied = netpol("demo", "ui-to-command", {"podSelector": {"matchLabels": {"app": "account-command-selector"}},
                                               "policyTypes": ["Ingress"]})
    found = pairs(write(tmp_path / "a", DEMO, UI, COMMAND, QUERY, ui_to_command(None),
                        query_to_ui([{"port": 8080, "protocol": "TCP"}])),
                  write(tmp_path / "b", DEMO, UI, COMMAND, QUERY, emptied,
                        query_to_ui([{"port": 8080, "protocol": "UDP"}])))
    assert found == {
        ("demo/cog-agents-bank-ui[DaemonSet]", "demo/cog-agents-account-command[DaemonSet]"): ("all", []),
        ("demo/cog-agents-account-query[DaemonSet]", "demo/cog-agents-bank-ui[DaemonSet]"): (
            conns(TCP=[(8080, 8080)]), conns(UDP=[(8080, 8080)]))}


def test_a_port_limit_moved_from_the_egress_side_to_the_ingress_side_is_no_change(tmp_path: Path) -> None:
    """semanticDiff-same-topologies-old3 -> new3: query may send to ui only, on TCP 8080, and ui admits query only;
    rewritten as query may send to ui only, and ui admits query only on TCP 8080 (capture-ui removed, capture-query
    added): the same connections, both outputs empty."""
    def ui_admits_query(ports: list[dict[str, Any]] | None, name: str) -> str:
        return netpol("demo", name, {"podSelector": {"matchLabels": {"app": "bank-ui-selector"}},
                                     "policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": {
                                         "matchLabels": {"app": "account-query-selector"}}}], **(
                                             {"ports": ports} if ports else {})}]})

    def query_sends_to_ui(ports: list[dict[str, Any]] | None, name: str) -> str:
        return json.dumps({**json.loads(query_to_ui(ports)), "metadata": {"name": name, "namespace": "demo"}})

    tcp8080 = [{"port": 8080, "protocol": "TCP"}]
    assert pairs(write(tmp_path / "a", DEMO, UI, COMMAND, QUERY, query_sends_to_ui(tcp8080, "query-to-ui"),
                       ui_admits_query(None, "capture-ui")),
                 write(tmp_path / "b", DEMO, UI, COMMAND, QUERY, ui_admits_query(tcp8080, "query-to-ui"),
                       query_sends_to_ui(None, "capture-query"))) == {}


def test_an_ingress_added_with_the_frontend_opened_to_every_namespace(tmp_path: Path) -> None:
    """onlineboutique_workloads -> _with_ingress: frontend-netpol also admits any namespace on 8080 and an Ingress to
    the frontend Service is added. netpol-analyzer's lines: `added` redis-cart -> frontend TCP 8080 (the one workload
    without an egress policy) and {ingress-controller} -> frontend TCP 8080. The controller is a pod here, in a
    namespace the new rule admits, so it is the same line on our reachability layer; the routes layer adds the
    Ingress's requests, proxied to the frontend."""
    opened = {**BOUTIQUE_INGRESS, "frontend": [*BOUTIQUE_INGRESS["frontend"], ("*", (8080,))]}
    frontend = service("frontend", "frontend", 8080)
    before = write(tmp_path / "a", *boutique(BOUTIQUE_INGRESS, BOUTIQUE_EGRESS, [frontend]))
    after = write(tmp_path / "b", *boutique(opened, BOUTIQUE_EGRESS,
                                            [frontend, ingress(("shop.example.com", "frontend", 8080))]))
    assert pairs(before, after) == {
        ("default/redis-cart[Deployment]", "default/frontend[Deployment]"): ([], tcp(8080))}

    result = CliRunner().invoke(cli, ["diff", "--before", str(before), "--after", str(after), "--layers",
                                      "reachability,routes", "-o", "json"])
    doc = json.loads(result.stdout)
    assert [(i["before"]["allowed"], i["after"]["allowed"]) for i in doc["layers"]["reachability"]["items"]
            if i["subject"] == "ingress-nginx/ingress-nginx-controller[Deployment] → default/frontend[Deployment]"
            ] == [([], tcp(8080))]
    assert [(i["before"]["answer"], i["after"]["answer"]) for i in doc["layers"]["routes"]["items"]
            if i["effect"] != "unchanged"] == [("404", "proxied to default/frontend:8080")]


def test_egress_synthesised_for_every_service_and_the_load_generator_isolated(tmp_path: Path) -> None:
    """new_online_boutique -> new_online_boutique_synthesis: every service's policy admitted its callers but let it
    send anything (`egress: [{}]`), and the load generator's isolated egress only; the synthesised set limits each
    egress to the calls the services make (and DNS), and isolates the load generator both ways.

    netpol-analyzer's lines: `removed` every service -> the outside world and -> loadgenerator, and the outside
    world -> loadgenerator, all. Nothing between the services moves: what they may now send is what the receivers
    admitted already. (No redis-cart in that folder, none here.)"""
    found = pairs(write(tmp_path / "a", *boutique(BOUTIQUE_INGRESS, {}, [], open_egress=True, redis=False)),
                  write(tmp_path / "b", *boutique(BOUTIQUE_INGRESS, BOUTIQUE_EGRESS, [], redis=False)))
    services = [f"default/{n}[Deployment]" for n in BOUTIQUE_PORTS if n not in ("redis-cart", "loadgenerator")]
    loadgenerator = "default/loadgenerator[Deployment]"
    expected = {(src, dst): ("all", []) for src in (*services, loadgenerator) for dst in OUTSIDE}
    expected |= {(src, loadgenerator): ("all", []) for src in (*services, *OUTSIDE)}
    assert found == expected


def test_workloads_added_behind_their_own_policies_open_only_what_those_admit(tmp_path: Path) -> None:
    """acs-security-demos -> acs-security-demos-added-workloads: frontend/blog and zeroday/zeroday are added, each
    admitting any namespace on 8080 (zeroday's namespace denied by default), and payments/visa-processor-v2 admitting
    the gateway, which may now call it. netpol-analyzer's lines: `added` gateway -> visa-processor-v2 TCP 8080
    (a new peer), and {ingress-controller} -> blog and -> zeroday TCP 8080 (through OpenShift Routes there). No other
    workload may send to the new ones, so nothing else moves.

    Routes are not a Kubernetes kind; here the ingress controller is a pod in a namespace the new policies admit,
    so the same two lines appear on our reachability layer without any route."""
    before, after = write(tmp_path / "a", *acs()), write(tmp_path / "b", *acs(added=True))
    assert pairs(before, after) == {
        ("payments/gateway[Deployment]", "payments/visa-processor-v2[Deployment]"): ([], tcp(8080))}
    result = CliRunner().invoke(cli, ["diff", "--before", str(before), "--after", str(after), "--layers",
                                      "reachability", "-o", "json"])
    prefix = "ingress-nginx/ingress-nginx-controller[Deployment] → "
    assert {i["subject"][len(prefix):]: (i["before"]["allowed"], i["after"]["allowed"])
            for i in json.loads(result.stdout)["layers"]["reachability"]["items"]
            if i["subject"].startswith(prefix)} == {
        "frontend/blog[Deployment]": ([], tcp(8080)), "zeroday/zeroday[Deployment]": ([], tcp(8080))}


def test_routes_removed_change_no_reachability_only_the_routes(tmp_path: Path) -> None:
    """acs-security-demos -> acs-security-demos-no-routes: the OpenShift Routes to frontend/asset-cache and
    frontend/webapp are deleted, the policies stay. netpol-analyzer's lines: `removed` {ingress-controller} ->
    asset-cache and -> webapp, TCP 8080: it counts a controller connection only where a route leads.

    Restated with Ingresses (Route is not a Kubernetes kind). We differ by design: the reachability layer is what
    policy allows, and no policy changed, so it reports nothing, the controller's pod included; the lost exposure is
    the routes layer's: each host's requests went to its backend before and get nginx's 404 after."""
    services = [json.dumps({**json.loads(service(name, name, 8080)), "metadata": {"name": name,
                                                                                  "namespace": "frontend"}})
                for name in ("asset-cache", "webapp")]
    routes = [json.dumps({**json.loads(ingress((f"{name}.example.com", name, 8080))), "metadata": {
        "name": name, "namespace": "frontend"}}) for name in ("asset-cache", "webapp")]
    before = write(tmp_path / "a", *acs(), *services, *routes)
    after = write(tmp_path / "b", *acs(), *services)
    result = CliRunner().invoke(cli, ["diff", "--before", str(before), "--after", str(after), "--layers",
                                      "reachability,routes", "-o", "json"])
    doc = json.loads(result.stdout)
    assert doc["layers"]["reachability"]["items"] == []
    assert sorted((i["subject"].split("/")[2], i["before"]["answer"], i["after"]["answer"])
                  for i in doc["layers"]["routes"]["items"] if i["effect"] != "unchanged") == [
        ("asset-cache.example.com", "proxied to frontend/asset-cache:8080", "404"),
        ("webapp.example.com", "proxied to frontend/webapp:8080", "404")]


def test_six_policies_changed_and_a_workload_added_at_once(tmp_path: Path) -> None:
    """onlineboutique_workloads -> _changed_netpols_and_workloads: the changed-netpols case plus the `unicorn`
    Deployment (no policy). netpol-analyzer's lines: the eight of that case and `added` the outside world <-> unicorn.

    One more line here, by Kubernetes semantics: redis-cart's new policy admits the ipBlock 0.0.0.0/1, which holds
    the pod network, and unicorn, the one workload free to send anywhere, reaches it from a pod address inside the
    block. Kubernetes' own NetworkPolicy e2e tests ([Feature:NetworkPolicy] "should allow egress access to server in
    CIDR block") admit a pod by its address in an ipBlock, as kindnet and Calico do; netpol-analyzer matches ipBlocks
    against external addresses only, by design (as Cilium's data plane does)."""
    ingress = {**BOUTIQUE_INGRESS, "adservice": [("checkoutservice", (9555,))],
               "cartservice": [("checkoutservice", (8000,)), ("frontend", (7070,))],
               "currencyservice": [("frontend", (7000,))],
               "emailservice": [("cartservice", (9555,)), ("checkoutservice", (8080, 9555))]}
    egress = {**BOUTIQUE_EGRESS, "frontend": BOUTIQUE_EGRESS["frontend"][1:],
              "checkoutservice": [("adservice", (9555,)), ("cartservice", (8000,)), ("emailservice", (8080, 9555)),
                                  *BOUTIQUE_EGRESS["checkoutservice"][3:]],
              "cartservice": [("emailservice", (9555,))]}
    redis = policy("redis-cart-netpol", {"podSelector": {"matchLabels": {"app": "redis-cart"}},
                                         "policyTypes": ["Ingress", "Egress"],
                                         "ingress": [{"from": [{"ipBlock": {"cidr": "0.0.0.0/1"}}]}]})
    unicorn = deployment("unicorn", {"app": "unicorn"}, [{"containerPort": 8080}])
    found = pairs(write(tmp_path / "a", *boutique(BOUTIQUE_INGRESS, BOUTIQUE_EGRESS, [])),
                  write(tmp_path / "b", *boutique(ingress, egress, [redis, unicorn])))

    def d(name: str) -> str:
        return f"default/{name}[Deployment]"

    assert found == {
        (d("checkoutservice"), d("cartservice")): (tcp(7070), tcp(8000)),
        (d("checkoutservice"), d("emailservice")): (tcp(8080), tcp(8080, 9555)),
        (d("cartservice"), d("emailservice")): ([], tcp(9555)),
        (d("checkoutservice"), d("adservice")): ([], tcp(9555)),
        (d("checkoutservice"), d("currencyservice")): (tcp(7000), []),
        (d("frontend"), d("adservice")): (tcp(9555), []),
        ("128.0.0.0/1", d("redis-cart")): ("all", []),
        **{(d("redis-cart"), r): ("all", []) for r in OUTSIDE},
        **{pair: ([], "all") for r in OUTSIDE for pair in ((r, d("unicorn")), (d("unicorn"), r))},
        (d("unicorn"), d("redis-cart")): ([], "all")}
