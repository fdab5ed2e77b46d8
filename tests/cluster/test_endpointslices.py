"""The EndpointSlice controller, as k8s.io/endpointslice reconciles."""

from __future__ import annotations

import copy

import yaml
from tests.conftest import cluster_from

from knetsim import Cluster
from knetsim.cluster.endpointslices import reconcile
from knetsim.model.loader import Source
from knetsim.model.objects import EndpointSlice


def pod(name: str, labels: str, ports: str = "[{containerPort: 80}]", extra: str = "", image: str = "nginx") -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, labels: {labels}{extra}}}
spec: {{containers: [{{name: c, image: {image}, ports: {ports}}}]}}
---"""


SVC = """
apiVersion: v1
kind: Service
metadata: {name: web, labels: {team: shop}}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
"""


def slices(cluster, name="web", ns="default"):
    return cluster.state.slices_for(cluster.state.services[f"{ns}/{name}"])


def test_named_target_port_resolving_differently_splits_slices() -> None:
    cluster = cluster_from(
        pod("a", "{app: web}", "[{name: http, containerPort: 80}]")
        + pod("b", "{app: web}", "[{name: http, containerPort: 8080}]")
        + pod("c", "{app: web}", "[{name: other, containerPort: 9000}]")
        + SVC)
    got = sorted((tuple((p.name, p.port) for p in s.ports), tuple(a for e in s.endpoints for a in e.addresses))
                 for s in slices(cluster))
    state = cluster.state
    ip = {n: state.pods[f"default/{n}"].pod_ip for n in "abc"}
    # Pod c lacks the named port: it is an endpoint with no ports, in its own slice.
    assert got == sorted([((("http", 80),), (ip["a"],)), ((("http", 8080),), (ip["b"],)), ((), (ip["c"],))])


def test_labels_and_owner() -> None:
    cluster = cluster_from(pod("a", "{app: web}", "[{name: http, containerPort: 80}]") + SVC)
    (es,) = slices(cluster)
    assert es.name.startswith("web-") and len(es.name) == len("web-") + 5
    assert dict(es.labels) == {"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                               "kubernetes.io/service-name": "web", "team": "shop"}
    assert es.raw["metadata"]["ownerReferences"][0]["kind"] == "Service"


def test_selector_typo_leaves_one_empty_placeholder_slice() -> None:
    cluster = cluster_from(pod("a", "{app: web}") + SVC.replace("app: web", "app: wbe"))
    (es,) = slices(cluster)
    assert es.endpoints == () and es.ports == ()
    assert es.raw["endpoints"] is None


def test_not_ready_and_publish_not_ready() -> None:
    not_ready = ', annotations: {knetsim.io/ready: "false"}'
    cluster = cluster_from(pod("a", "{app: web}", "[{name: http, containerPort: 80}]", not_ready) + SVC)
    (es,) = slices(cluster)
    (ep,) = es.endpoints
    assert (ep.ready, ep.serving, ep.terminating) == (False, False, False)
    published = cluster_from(pod("a", "{app: web}", "[{name: http, containerPort: 80}]", not_ready)
                             + SVC.replace("spec:\n", "spec:\n  publishNotReadyAddresses: true\n"))
    (es,) = slices(published)
    assert es.endpoints[0].ready is True


def test_terminating_pod_is_kept_not_ready_but_serving() -> None:
    cluster = cluster_from(pod("a", "{app: web}", "[{name: http, containerPort: 80}]",
                               ", deletionTimestamp: '2026-01-01T00:00:00Z'") + SVC)
    (es,) = slices(cluster)
    (ep,) = es.endpoints
    assert (ep.ready, ep.serving, ep.terminating) == (False, True, True)


def test_at_most_100_endpoints_per_slice() -> None:
    text = "".join(pod(f"p{i:03d}", "{app: web}", "[{name: http, containerPort: 80}]") for i in range(205)) + SVC
    cluster = cluster_from(text)
    sizes = sorted(len(s.endpoints) for s in slices(cluster))
    assert sizes == [5, 100, 100]


def test_no_selector_means_no_managed_slices_and_user_slices_are_used() -> None:
    cluster = cluster_from("""
        apiVersion: v1
        kind: Service
        metadata: {name: external-db}
        spec: {ports: [{port: 5432}]}
        ---
        apiVersion: discovery.k8s.io/v1
        kind: EndpointSlice
        metadata:
          name: external-db-1
          labels: {kubernetes.io/service-name: external-db}
        addressType: IPv4
        ports: [{port: 5432}]
        endpoints: [{addresses: [192.168.10.5]}]
    """)
    (es,) = slices(cluster, "external-db")
    assert es.name == "external-db-1"
    assert es.endpoints[0].addresses == ("192.168.10.5",)


def test_statefulset_hostname_goes_to_headless_slice() -> None:
    cluster = cluster_from("""
        apiVersion: apps/v1
        kind: StatefulSet
        metadata: {name: db}
        spec:
          serviceName: db
          replicas: 2
          selector: {matchLabels: {app: db}}
          template:
            metadata: {labels: {app: db}}
            spec: {containers: [{name: pg, image: postgres:17, ports: [{containerPort: 5432}]}]}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: db}
        spec: {clusterIP: None, selector: {app: db}, ports: [{port: 5432}]}
    """)
    (es,) = slices(cluster, "db")
    assert sorted(e.hostname for e in es.endpoints) == ["db-0", "db-1"]
    assert es.labels["service.kubernetes.io/headless"] == ""


def test_reconcile_is_pure_and_reuses_existing_slice_names() -> None:
    cluster = cluster_from(pod("a", "{app: web}", "[{name: http, containerPort: 80}]") + SVC)
    state = cluster.state
    svc = state.services["default/web"]
    existing = state.slices_for(svc)
    before = [s.raw for s in existing]
    plan = reconcile(svc, state.pods_in("default"), existing, state.nodes)
    assert [s.raw for s in existing] == before
    assert plan.create == () and plan.delete == ()
    assert plan.unchanged == (existing[0].name,)


def test_named_target_port_of_a_sidecar_resolves() -> None:
    """podutil.FindPort searches restartable init containers (sidecars) too."""
    cluster = cluster_from("""
        apiVersion: v1
        kind: Pod
        metadata: {name: a, labels: {app: web}}
        spec:
          initContainers:
          - name: proxy
            image: envoyproxy/envoy:v1.31
            restartPolicy: Always
            ports: [{name: http, containerPort: 15001}]
          containers: [{name: app, image: ghcr.io/example/app:1}]
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: web}
        spec: {selector: {app: web}, ports: [{name: http, port: 80, targetPort: http}]}
    """)
    (es,) = slices(cluster)
    assert [(p.name, p.port) for p in es.ports] == [("http", 15001)]


# --- slices a real controller made (a snapshot, a live cluster) ----------------------------------


def _spread_as_a_real_controller_might(cluster, sizes: list[int], names: list[str]) -> list[EndpointSlice]:
    """The Service's endpoints over slices of the given sizes and names, in an order knetsim would not pick."""
    ours = slices(cluster)
    endpoints = list(reversed([e for s in ours for e in s.raw["endpoints"]]))
    out, start = [], 0
    for size, name in zip(sizes, names, strict=True):
        raw = copy.deepcopy(ours[0].raw)
        raw["metadata"].update(name=name, uid=f"uid-{name}", resourceVersion="7")
        raw["endpoints"] = endpoints[start:start + size]
        start += size
        out.append(EndpointSlice.parse(raw, Source("snapshot.yaml", 1)))
    assert start == len(endpoints)
    return out


def test_a_real_controllers_spread_of_endpoints_is_reused_unchanged() -> None:
    """Given 80 endpoints a real controller keeps in two half-full slices (after churn), the planner keeps
    both as they are: no update, no delete, nothing created, however knetsim itself would have packed them."""
    cluster = cluster_from("".join(pod(f"p{i:03d}", "{app: web}", "[{name: http, containerPort: 80}]")
                                   for i in range(80)) + SVC)
    state = cluster.state
    existing = _spread_as_a_real_controller_might(cluster, [30, 50], ["web-zq9x2", "web-b4k7m"])
    plan = reconcile(state.services["default/web"], state.pods_in("default"), existing, state.nodes)
    assert (plan.create, plan.update, plan.delete) == ((), (), ())
    assert plan.unchanged == ("web-b4k7m", "web-zq9x2")
    assert [b["metadata"]["uid"] for b in plan.unchanged_bodies] == ["uid-web-b4k7m", "uid-web-zq9x2"]


def test_only_the_slice_that_is_wrong_is_updated() -> None:
    """Given one stale address in one slice and a pod missing from every slice, the stale slice is updated
    (the stale address out, the missing pod in, as upstream fills slices it updates) and the other is kept."""
    cluster = cluster_from("".join(pod(f"p{i:03d}", "{app: web}", "[{name: http, containerPort: 80}]")
                                   for i in range(80)) + SVC)
    state = cluster.state
    full, half = _spread_as_a_real_controller_might(cluster, [30, 50], ["web-zq9x2", "web-b4k7m"])
    missing = half.raw["endpoints"].pop()
    full.raw["endpoints"].append({**full.raw["endpoints"][0], "addresses": ["10.244.9.9"],
                                  "targetRef": {"kind": "Pod", "namespace": "default", "name": "gone"}})
    existing = [EndpointSlice.parse(s.raw, s.source) for s in (full, half)]
    plan = reconcile(state.services["default/web"], state.pods_in("default"), existing, state.nodes)
    assert (plan.create, plan.delete, plan.unchanged) == ((), (), ("web-b4k7m",))
    (updated,) = plan.update
    addresses = [a for e in updated["endpoints"] for a in e["addresses"]]
    assert updated["metadata"]["name"] == "web-zq9x2"
    assert "10.244.9.9" not in addresses and missing["addresses"][0] in addresses and len(addresses) == 31


def test_a_snapshot_reports_exactly_the_real_drift() -> None:
    """Given a snapshot whose two slices a real controller spread its own way, no drift is reported;
    with one address gone from one slice, that slice and that address are the whole report."""
    cluster = cluster_from("".join(pod(f"p{i:03d}", "{app: web}", "[{name: http, containerPort: 80}]")
                                   for i in range(120)) + SVC)
    existing = _spread_as_a_real_controller_might(cluster, [100, 20], ["web-zq9x2", "web-b4k7m"])
    objects = [o.raw for o in cluster.state.pods.values() if o.namespace == "default"]
    objects += [cluster.state.services["default/web"].raw]

    def notices(slices_: list[EndpointSlice]) -> list[str]:
        text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects + [s.raw for s in slices_]})
        return [str(n) for n in Cluster.from_yaml(text, filename="snap.yaml").notices if n.code == "EndpointSliceDrift"]

    assert notices(existing) == []
    gone = existing[1].raw["endpoints"].pop(3)["addresses"][0]
    assert notices(existing) == [f"snap.yaml, document 1, items[122]: EndpointSlice default/web-b4k7m: differs from "
                                 f"what the EndpointSlice controller computes: missing {gone}"]
