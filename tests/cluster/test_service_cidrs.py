"""ServiceCIDR and IPAddress (networking.k8s.io/v1): the ranges as objects, one IPAddress per ClusterIP.

Cases restated from the ServiceCIDR allocator's tests (pkg/registry/core/service/ipallocator
cidrallocator_test.go: allocate from any ready ServiceCIDR, a new one adds addresses, overlapping
ones share their IPAddresses) and the servicecidrs controller's (servicecidrs_controller_test.go:
the finalizer, Ready, deletion blocked by an IPAddress only it contains).
"""

from __future__ import annotations

import ipaddress

import pytest
from tests.conftest import cluster_from

from knetsim import InputError
from knetsim.cluster import servicecidrs
from knetsim.cluster.config import config_from_dict


def svc(name: str, extra: str = "") -> str:
    return (f"apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\nspec:\n  ports: [{{port: 80}}]\n  {extra}\n"
            "---\n")


def cidr(name: str, *cidrs: str, deleting: bool = False) -> str:
    stamp = "\n  deletionTimestamp: '2026-01-01T00:00:00Z'\n  finalizers: [networking.k8s.io/service-cidr-finalizer]" \
        if deleting else ""
    return (f"apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata:\n  name: {name}{stamp}\n"
            f"spec: {{cidrs: [{', '.join(cidrs)}]}}\n---\n")


def objects(cluster, kind: str) -> dict[str, dict]:
    return {o.name: o.raw for o in cluster.state.objects_of(kind)}


# A /28 holds 14 addresses; kubernetes (.1) and kube-dns (.10) take two (no ingress-nginx here).
SMALL = {"serviceCIDR": "10.96.0.0/28", "ingressController": False}


def test_the_default_service_cidr_is_the_cluster_configs_and_ready():
    got = objects(cluster_from(svc("web")), "ServiceCIDR")
    assert got == {"kubernetes": {
        "apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
        "metadata": {"name": "kubernetes", "finalizers": ["networking.k8s.io/service-cidr-finalizer"]},
        "spec": {"cidrs": ["10.96.0.0/12"]},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "",
                                   "message": "Kubernetes Service CIDR is ready"}]}}}
    dual = objects(cluster_from(svc("web"), config=config_from_dict({"ipFamily": "dual"})), "ServiceCIDR")
    assert dual["kubernetes"]["spec"]["cidrs"] == ["10.96.0.0/16", "fd00:10:96::/112"]


def test_one_ip_address_per_cluster_ip_of_either_family():
    dual = config_from_dict({"ipFamily": "dual"})
    cluster = cluster_from(svc("web", "ipFamilyPolicy: RequireDualStack"), config=dual)
    web = cluster.state.services["default/web"]
    addresses = objects(cluster, "IPAddress")
    for ip, family in zip(web.cluster_ips, ("IPv4", "IPv6"), strict=True):
        assert addresses[ip]["metadata"]["labels"] == {"ipaddress.kubernetes.io/ip-family": family,
                                                       "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"}
        assert addresses[ip]["spec"] == {"parentRef": {"resource": "services", "namespace": "default", "name": "web"}}
    assert addresses["10.96.0.1"]["spec"]["parentRef"]["name"] == "kubernetes"
    # A headless Service holds no address.
    headless = cluster_from(svc("h", "clusterIP: None"))
    assert not [a for a in objects(headless, "IPAddress").values() if a["spec"]["parentRef"]["name"] == "h"]


def test_a_full_range_refuses_with_the_api_servers_internal_error():
    text = "".join(svc(f"s{i:02d}") for i in range(13))
    with pytest.raises(InputError) as info:
        cluster_from(text, config=config_from_dict(SMALL))
    assert [p.split(": ", 1)[1] for p in info.value.problems] == [
        "Service default/s12: Internal error occurred: failed to allocate a serviceIP: range is full"]


def test_adding_a_service_cidr_grows_the_range():
    text = cidr("extra", "10.200.0.0/24") + "".join(svc(f"s{i:02d}") for i in range(14))
    cluster = cluster_from(text, config=config_from_dict(SMALL))
    ips = [ipaddress.ip_address(s.cluster_ip) for s in cluster.state.services.values()]
    small, extra = ipaddress.ip_network("10.96.0.0/28"), ipaddress.ip_network("10.200.0.0/24")
    assert sum(ip in small for ip in ips) == 14 and sum(ip in extra for ip in ips) == 2
    assert len(set(ips)) == len(ips)
    assert objects(cluster, "ServiceCIDR")["extra"]["metadata"]["finalizers"] == [servicecidrs.FINALIZER]


def test_a_requested_address_may_come_from_any_ready_service_cidr():
    cluster = cluster_from(cidr("extra", "10.200.0.0/24") + svc("fixed", "clusterIP: 10.200.0.7"))
    assert cluster.state.services["default/fixed"].cluster_ip == "10.200.0.7"
    # ... but not from one being deleted, nor outside every one.
    for text in (cidr("extra", "10.200.0.0/24", deleting=True) + svc("fixed", "clusterIP: 10.200.0.7"),
                 svc("fixed", "clusterIP: 10.200.0.7")):
        with pytest.raises(InputError) as info:
            cluster_from(text)
        assert info.value.problems[0].endswith("failed to allocate IP 10.200.0.7: the provided network does not match "
                                               "the current range")


def test_a_service_cidr_of_a_family_the_cluster_does_not_serve_adds_nothing():
    # The allocators are per configured family; an IPv6 ServiceCIDR on an IPv4 cluster has none to join.
    with pytest.raises(InputError):
        cluster_from(cidr("v6", "'fd00:1::/112'") + svc("six", "ipFamilies: [IPv6]"))


def test_an_ip_address_written_by_hand_holds_its_address():
    ip = ("apiVersion: networking.k8s.io/v1\nkind: IPAddress\nmetadata: {name: 10.96.0.50}\n"
          "spec: {parentRef: {resource: gateways, group: gateway.networking.k8s.io, namespace: default, name: gw}}\n"
          "---\n")
    with pytest.raises(InputError) as info:
        cluster_from(ip + svc("web", "clusterIP: 10.96.0.50"))
    assert info.value.problems[0].endswith("failed to allocate IP 10.96.0.50: provided IP is already allocated")
    cluster = cluster_from(ip + svc("web"))
    assert objects(cluster, "IPAddress")["10.96.0.50"]["spec"]["parentRef"]["name"] == "gw"


def test_a_deleted_service_cidr_waits_for_the_addresses_only_it_contains():
    text = cidr("extra", "10.200.0.0/24", deleting=True)
    held = ("apiVersion: networking.k8s.io/v1\nkind: IPAddress\nmetadata:\n  name: 10.200.0.7\n  labels:\n"
            "    ipaddress.kubernetes.io/managed-by: ipallocator.k8s.io\n    ipaddress.kubernetes.io/ip-family: IPv4\n"
            "spec: {parentRef: {resource: services, namespace: default, name: old}}\n---\n")
    cluster = cluster_from(text + held)
    extra = objects(cluster, "ServiceCIDR")["extra"]
    assert extra["metadata"]["finalizers"] == [servicecidrs.FINALIZER]
    assert extra["status"]["conditions"] == [{
        "type": "Ready", "status": "False", "reason": "Terminating",
        "message": "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new "
                   "ServiceCIDR"}]
    assert [n.code for n in cluster.state.notices if n.subject == "ServiceCIDR extra"] == ["ServiceCIDRTerminating"]
    # Nothing depends on it any more: gone.
    assert "extra" not in objects(cluster_from(text), "ServiceCIDR")
    # A larger ServiceCIDR contains the deleted one: its addresses are safe, it goes at once.
    assert "extra" not in objects(cluster_from(text + held + cidr("wide", "10.200.0.0/16")), "ServiceCIDR")


@pytest.mark.parametrize(("spec", "error"), [
    ("{cidrs: []}", "spec.cidrs: Required value: at least one CIDR required"),
    ("{cidrs: [10.0.0.0/24, 10.1.0.0/24]}", 'spec.cidrs: Invalid value: networking.ServiceCIDRSpec{CIDRs:[]string{'
     '"10.0.0.0/24", "10.1.0.0/24"}}: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and '
     "2001:db8::/64"),
    ("{cidrs: [10.0.0.0]}", 'spec.cidrs[0]: Invalid value: "10.0.0.0": must be a valid CIDR value, (e.g. '
     "10.9.8.0/24 or 2001:db8::/64)"),
])
def test_service_cidr_validation(spec, error):
    with pytest.raises(InputError) as info:
        cluster_from(f"apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {{name: bad}}\nspec: {spec}\n")
    assert info.value.problems[0].endswith(error)


@pytest.mark.parametrize(("name", "error"), [
    # apimachinery's strict IsValidIP, as ValidateIPAddressName applies it to the name.
    ('"fd00:10:96::00ab"', 'metadata.name: Invalid value: "fd00:10:96::00ab": must be in canonical form '
     '("fd00:10:96::ab")'),
    ('"FD00:10:96::AB"', 'metadata.name: Invalid value: "FD00:10:96::AB": must be in canonical form '
     '("fd00:10:96::ab")'),
    ("010.96.0.50", 'metadata.name: Invalid value: "010.96.0.50": must not have leading 0s'),
    ('"::ffff:10.96.0.50"', 'metadata.name: Invalid value: "::ffff:10.96.0.50": must not be an IPv4-mapped IPv6 '
     "address"),
    ("web", 'metadata.name: Invalid value: "web": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'),
])
def test_an_ip_address_is_named_by_its_canonical_address(name, error):
    with pytest.raises(InputError) as info:
        cluster_from(f"apiVersion: networking.k8s.io/v1\nkind: IPAddress\nmetadata: {{name: {name}}}\n"
                     "spec: {parentRef: {resource: services, namespace: default, name: x}}\n")
    assert info.value.problems[0].endswith(error), info.value.problems


@pytest.mark.parametrize(("cidrs", "error"), [
    # apimachinery's strict IsValidCIDR, as ValidateServiceCIDR applies it to each CIDR.
    ("[10.96.0.1/16]", 'spec.cidrs[0]: Invalid value: "10.96.0.1/16": must not have bits set beyond the prefix length'),
    ("['fd00:10:96:0::/112']", 'spec.cidrs[0]: Invalid value: "fd00:10:96:0::/112": must be in canonical form '
     '("fd00:10:96::/112")'),
    ("[10.96.0.0/016]", 'spec.cidrs[0]: Invalid value: "10.96.0.0/016": must not have leading 0s in IP or prefix '
     "length"),
])
def test_a_service_cidr_is_a_canonical_subnet(cidrs, error):
    with pytest.raises(InputError) as info:
        cluster_from("apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: bad}\n"
                     f"spec: {{cidrs: {cidrs}}}\n")
    assert info.value.problems[0].endswith(error), info.value.problems
