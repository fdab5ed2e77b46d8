"""Properties over random small clusters (hypothesis).

1. The class-based matrix equals the per-pair reference (``engine.connections``) for every
   ordered pair, pods and external pieces alike, and ``evaluate`` agrees with both; with
   ClusterNetworkPolicies of both tiers (ordered rules, Accept/Deny/Pass, equal priorities,
   named ports, networks over pod IPs) as without.
2. Monotonicity, stated exactly. Adding a *policy* can remove connections (it may isolate a
   pod that was open: see test_adding_a_policy_can_remove_connections). What never removes a
   connection is (a) adding a rule, or a peer or a port to a rule, in a direction a policy
   already isolates, and (b) adding a policy that selects only pods already isolated in every
   direction it lists.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knetsim.model.cel import compile_rule
from knetsim.policy import ConnSet, connections, evaluate
from knetsim.policy.engine import policy_index
from knetsim.policy.matrix import matrix

from . import helpers
from .helpers import DEFAULT_DENY_INGRESS, clusterpolicy, deployment, netpol, ns, pod


def state(*objects: dict[str, Any]) -> Any:
    # The generated cluster policies use every peer the engine reads, the experimental channel's nodes too.
    return helpers.state(*objects, experimental=True)

# cel-python raises the recursion limit when its first environment is made; make it before hypothesis runs
# (the CRDs' CEL rules admit the cluster policies), or hypothesis warns that the limit changed under it.
compile_rule("self.start < self.end")

NAMESPACES = ("a", "b")
LABELS = ("x", "y")
NODES = ("worker", "worker2")

label_maps = st.dictionaries(st.sampled_from(("app", "tier")), st.sampled_from(LABELS), max_size=2)
selectors = st.one_of(
    st.just({}),
    label_maps.map(lambda m: {"matchLabels": m}),
    st.sampled_from(LABELS).map(lambda v: {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": [v]}]}),
    st.just({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
)
ns_selectors = st.one_of(
    st.just({}),
    st.sampled_from(NAMESPACES).map(lambda n: {"matchLabels": {"kubernetes.io/metadata.name": n}}),
    st.sampled_from(("on", "off")).map(lambda v: {"matchLabels": {"team": v}}),
)
ip_blocks = st.sampled_from([
    {"cidr": "10.244.0.0/16", "except": ["10.244.2.0/24"]},
    {"cidr": "10.244.1.0/24"},
    {"cidr": "192.0.2.0/24", "except": ["192.0.2.128/25"]},
    {"cidr": "0.0.0.0/0", "except": ["10.244.0.0/16"]},
    {"cidr": "172.18.0.0/16"},
])
peers = st.one_of(
    selectors.map(lambda s: {"podSelector": s}),
    ns_selectors.map(lambda s: {"namespaceSelector": s}),
    st.tuples(ns_selectors, selectors).map(lambda t: {"namespaceSelector": t[0], "podSelector": t[1]}),
    ip_blocks.map(lambda b: {"ipBlock": b}),
)
ports = st.one_of(
    st.sampled_from([80, 443, 8080]).map(lambda p: {"port": p}),
    st.just({"port": "http"}),
    st.just({"port": "dns", "protocol": "UDP"}),
    st.just({"port": 8000, "endPort": 8100}),
    st.just({"protocol": "UDP"}),
    st.just({"port": 80, "protocol": "SCTP"}),
)
rules = st.fixed_dictionaries({}, optional={"peers": st.lists(peers, max_size=2),
                                            "ports": st.lists(ports, max_size=2)})
policy_types = st.sampled_from([None, ["Ingress"], ["Egress"], ["Ingress", "Egress"]])


@st.composite
def policies(draw: Any, namespace: str | None = None, name: str = "p") -> dict[str, Any]:
    spec: dict[str, Any] = {"podSelector": draw(selectors)}
    types = draw(policy_types)
    if types is not None:
        spec["policyTypes"] = types
    for direction, side in (("ingress", "from"), ("egress", "to")):
        items = []
        for r in draw(st.lists(rules, max_size=2)):
            item: dict[str, Any] = {}
            if "peers" in r:
                item[side] = r["peers"]
            if "ports" in r:
                item["ports"] = r["ports"]
            items.append(item)
        if items:
            spec[direction] = items
    return netpol(f"{namespace or draw(st.sampled_from(NAMESPACES))}/{name}", spec)


cnp_ports = st.one_of(
    st.sampled_from([80, 8080]).map(lambda p: {"tcp": {"destinationPort": {"number": p}}}),
    st.just({"tcp": {"destinationPort": {"range": {"start": 8000, "end": 8100}}}}),
    st.just({"udp": {"destinationPort": {"number": 53}}}),
    st.just({"sctp": {"destinationPort": {"number": 80}}}),
    st.sampled_from(["http", "dns"]).map(lambda n: {"destinationNamedPort": n}),
)
cnp_peers = st.one_of(
    ns_selectors.map(lambda s: {"namespaces": s}),
    st.tuples(ns_selectors, selectors).map(lambda t: {"pods": {"namespaceSelector": t[0], "podSelector": t[1]}}),
    st.sampled_from([["10.244.1.0/24"], ["0.0.0.0/0"], ["192.0.2.0/25", "10.244.2.0/24"], ["172.18.0.3/32"]])
    .map(lambda n: {"networks": n}),
    st.sampled_from([{}, {"matchLabels": {"kubernetes.io/hostname": "worker"}}]).map(lambda s: {"nodes": s}),
)
cnp_subjects = st.one_of(
    ns_selectors.map(lambda s: {"namespaces": s}),
    st.tuples(ns_selectors, selectors).map(lambda t: {"pods": {"namespaceSelector": t[0], "podSelector": t[1]}}),
)


@st.composite
def cluster_policies(draw: Any, name: str) -> dict[str, Any]:
    gress: dict[str, list[dict[str, Any]]] = {}
    for direction, side in (("ingress", "from"), ("egress", "to")):
        items = []
        for _ in range(draw(st.integers(0, 3))):
            peers_ = draw(st.lists(cnp_peers if direction == "egress" else cnp_peers.filter(
                lambda p: "networks" not in p and "nodes" not in p), min_size=1, max_size=2))
            item: dict[str, Any] = {"action": draw(st.sampled_from(["Accept", "Deny", "Pass"])), side: peers_}
            if draw(st.booleans()):
                # The CRD refuses a named port beside a networks or nodes peer (they have no named ports).
                off_pod = any("networks" in p or "nodes" in p for p in peers_)
                item["protocols"] = draw(st.lists(cnp_ports.filter(
                    lambda p, off_pod=off_pod: not (off_pod and "destinationNamedPort" in p)), min_size=1, max_size=2))
            items.append(item)
        gress[direction] = items
    # Priorities from a small set: equal priorities (ordered by name) come up often.
    return clusterpolicy(name, draw(st.sampled_from(["Admin", "Baseline"])), draw(st.sampled_from([1, 2, 2, 3])),
                         draw(cnp_subjects), **{d: r for d, r in gress.items() if r})


@st.composite
def clusters(draw: Any, cluster_policy_count: tuple[int, int] = (0, 3)) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [ns(n, team=draw(st.sampled_from(("on", "off")))) for n in NAMESPACES]
    for i in range(draw(st.integers(2, 5))):
        namespace = draw(st.sampled_from(NAMESPACES))
        objects.append(pod(f"{namespace}/p{i}", draw(label_maps), ports={"http": draw(st.sampled_from((80, 8080)))},
                           udp={"dns": 53}, node=draw(st.sampled_from(NODES)),
                           host_network=draw(st.booleans()) and i == 0))
    if draw(st.booleans()):
        # Replicas merge into one row unless policy tells them apart (here: hostNetwork ones are node traffic).
        objects.append(deployment(f"{draw(st.sampled_from(NAMESPACES))}/d", draw(label_maps),
                                  draw(st.integers(1, 3)), host_network=draw(st.booleans())))
    for j in range(draw(st.integers(0, 3))):
        objects.append(draw(policies(name=f"p{j}")))
    for j in range(draw(st.integers(*cluster_policy_count))):
        objects.append(draw(cluster_policies(name=f"c{j}")))
    return objects


def _user_endpoints(m: Any) -> list[int]:
    return [i for i, members in enumerate(m.rows.members)
            if members[0].kind == "external" or (members[0].pod is not None and members[0].pod.namespace in NAMESPACES)]


def _representative(name: str) -> str:
    return name.split("-")[0].split("/")[0] if name[0].isdigit() else name


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(clusters())
def test_matrix_equals_per_pair_evaluation(objects: list[dict[str, Any]]) -> None:
    _matrix_equals_per_pair_evaluation(objects)


@SETTINGS
@given(clusters(cluster_policy_count=(1, 4)))
def test_matrix_equals_per_pair_evaluation_under_cluster_policies(objects: list[dict[str, Any]]) -> None:
    _matrix_equals_per_pair_evaluation(objects)


def _matrix_equals_per_pair_evaluation(objects: list[dict[str, Any]]) -> None:
    s = state(*objects)
    m = matrix(s, pods=True)
    # One atom word and many (three atoms per word) must agree exactly.
    assert list(matrix(s, pods=True, word_bits=3).connections()) == list(m.connections())
    idx = _user_endpoints(m)
    for i in idx:
        for j in idx:
            a, b = m.rows.members[i][0], m.rows.members[j][0]
            if a.kind == "external" and b.kind == "external":
                continue
            src = a.pod if a.pod is not None else _representative(a.name)
            dst = b.pod if b.pod is not None else _representative(b.name)
            if (isinstance(src, str) and s.node_by_ip(src)) or (isinstance(dst, str) and s.node_by_ip(dst)):
                continue
            expected = connections(s, src, dst)
            assert m.allowed(i, j) == expected, (a.name, b.name)
            for protocol, port in (("TCP", 80), ("TCP", 8050), ("UDP", 53), ("SCTP", 80)):
                assert evaluate(s, src, dst, port, protocol).allowed == expected.contains(protocol, port)


@SETTINGS
@given(clusters())
def test_a_workload_cell_is_what_every_pod_pair_of_it_gets(objects: list[dict[str, Any]]) -> None:
    s = state(*objects)
    w = matrix(s)
    listed = {(a, b): c for a, b, c in w.connections()}
    for i, src in enumerate(w.rows.members):
        for j, dst in enumerate(w.rows.members):
            pairs = [connections(s, a.pod or _representative(a.name), b.pod or _representative(b.name))
                     for a in src for b in dst if a is not b]
            if not pairs or (src[0].kind == "external" and dst[0].kind == "external"):
                continue
            if any(e.kind == "external" and s.node_by_ip(_representative(e.name)) for e in (src[0], dst[0])):
                continue  # a piece that is exactly a node IP: the matrix does not model node-local traffic there
            every, some = pairs[0], pairs[0]
            for c in pairs[1:]:
                every, some = every & c, some | c
            allowed, partly = w.cell(i, j)
            assert allowed == every, (w.names[i], w.names[j])
            assert (partly is not None) == (some != every), (w.names[i], w.names[j])
            if partly is not None:
                assert (partly.allowed | allowed) == some
            assert listed.get((w.names[i], w.names[j]), ConnSet.none()) == every


def _all_pairs(s: Any) -> dict[tuple[str, str], Any]:
    pods = [p for k, p in sorted(s.pods.items()) if p.namespace in NAMESPACES]
    return {(a.key, b.key): connections(s, a, b) for a in pods for b in pods}


def _subset(before: dict[Any, Any], after: dict[Any, Any]) -> None:
    for pair, was in before.items():
        assert (was & after[pair]) == was, (pair, was, after[pair])


@SETTINGS
@given(clusters(), st.data())
def test_adding_a_rule_peer_or_port_never_removes(objects: list[dict[str, Any]], data: Any) -> None:
    positions = [i for i, o in enumerate(objects) if o["kind"] == "NetworkPolicy"]
    if not positions:
        return
    before = _all_pairs(state(*objects))
    grown = copy.deepcopy(objects)
    spec = grown[data.draw(st.sampled_from(positions))]["spec"]
    # Pin policyTypes first: defaulting would otherwise turn on Egress isolation with the first egress rule.
    spec["policyTypes"] = spec.get("policyTypes") or (["Ingress", "Egress"] if spec.get("egress") else ["Ingress"])
    direction, side = data.draw(st.sampled_from([("ingress", "from"), ("egress", "to")]))
    rules_ = spec.setdefault(direction, [])
    what = data.draw(st.sampled_from(["rule", "peer", "port"]))
    if what == "rule" or not rules_:
        rules_.append({side: data.draw(st.lists(peers, min_size=1, max_size=2)),
                       "ports": data.draw(st.lists(ports, min_size=1, max_size=2))})
    else:
        rule = rules_[data.draw(st.integers(0, len(rules_) - 1))]
        # An absent list means every peer / every port: only a present list can grow.
        key = side if what == "peer" else "ports"
        if rule.get(key):
            rule[key].append(data.draw(peers if what == "peer" else ports))
    _subset(before, _all_pairs(state(*grown)))


@SETTINGS
@given(clusters(), policies(name="extra"))
def test_adding_a_policy_over_already_isolated_pods_never_removes(objects: list[dict[str, Any]],
                                                                  extra: dict[str, Any]) -> None:
    s = state(*objects)
    index = policy_index(s)
    namespace = extra["metadata"]["namespace"]
    added = state(*objects, extra)
    new = next(p for p in policy_index(added).policies if p.name == "extra")
    for p in s.pods_in(namespace):
        if not new.selector.matches(p.labels):
            continue
        for direction in ("ingress", "egress"):
            if new.rules(direction) is not None and not index.selecting(p, direction):
                return  # it would newly isolate this pod: not the property's premise
    _subset(_all_pairs(s), _all_pairs(added))


def test_adding_a_policy_can_remove_connections() -> None:
    # The naive "adding a policy never removes a connection" is false: isolation is the point.
    objects = [ns("a"), pod("a/x", {"app": "x"}), pod("a/y", {"app": "y"})]
    assert connections(state(*objects), "a/x", "a/y").is_all
    assert connections(state(*objects, netpol("a/deny", DEFAULT_DENY_INGRESS)), "a/x", "a/y").is_empty
