"""The simulated cluster's shape: nodes, address ranges, DNS domain, data plane.

Defaults are a fresh three-node kind cluster. A YAML file (``--cluster-config``) overrides
any field; see docs/cluster-config.md. Unknown keys are an error, so a typo never silently
falls back to a default.

IP families follow kind's ``networking.ipFamily`` (ipv4, ipv6, dual): the pod and Service CIDRs
list one range per family, the first family is the cluster's primary one (what a SingleStack
Service gets, what ``kubernetes`` and ``kube-dns`` use), and every node has an address of each
family, as kubelet's ``--node-ip`` gives a dual-stack node.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from ..model.versions import NEWEST
from ..model.versions import parse as parse_kubernetes_version
from .outside import OutsideError, OutsideWorld, outside_from_dict

DATAPLANES = ("iptables", "nftables", "ebpf")
# The CNI (pod network plugin), which decides what network policy is enforced (knetsim.policy.cni). Unset, it
# is Cilium on `ebpf` (the data plane is its kube-proxy replacement), else what runs in the cluster, else what
# its policy kinds say, else kind's kindnet. Cilium without kube-proxy replacement: cni: cilium with an
# iptables or nftables data plane.
CNIS = ("kindnet", "calico", "cilium", "antrea", "flannel")
IP_FAMILY_MODES = ("ipv4", "ipv6", "dual")
# kind's defaults per networking.ipFamily (pkg/apis/config/v1alpha4/default.go and the docker network it
# creates, fc00:f853:ccd:e793::/64 beside 172.18.0.0/16). IPv4 keeps kubeadm's 10.96.0.0/12, which
# knetsim always used; kind's dual-stack default is 10.96.0.0/16.
_DEFAULT_CIDRS = {
    "ipv4": (("10.244.0.0/16",), ("10.96.0.0/12",)),
    "ipv6": (("fd00:10:244::/56",), ("fd00:10:96::/112",)),
    "dual": (("10.244.0.0/16", "fd00:10:244::/56"), ("10.96.0.0/16", "fd00:10:96::/112")),
}
NODE_NETWORK_V4 = "172.18.0."
NODE_NETWORK_V6 = "fc00:f853:ccd:e793::"
# Allocatable CPU a kind node reports (the host's cores); topology-aware routing weighs zones by it.
DEFAULT_NODE_CPU = "8"
# The kubelet's default maxPods (k8s.io/kubernetes pkg/kubelet/apis/config/v1beta1 defaults: MaxPods 110).
DEFAULT_MAX_PODS = 110


def family_of(text: str) -> str:
    """``IPv4`` or ``IPv6`` for an address or a CIDR (ValueError for neither)."""
    return "IPv4" if ipaddress.ip_network(text, strict=False).version == 4 else "IPv6"


@dataclass(frozen=True, slots=True)
class NodeConfig:
    name: str
    ip: str
    control_plane: bool = False
    zone: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    # Every InternalIP in the cluster's family order (``ip`` is the first); empty means (ip,).
    ips: tuple[str, ...] = ()
    cpu: str = DEFAULT_NODE_CPU
    # The kubelet's maxPods (KubeletConfiguration; 110 by default, and so on kind): the node's pod capacity,
    # which the scheduler's NodeResourcesFit filter counts ("Too many pods").
    max_pods: int = DEFAULT_MAX_PODS

    @property
    def addresses(self) -> tuple[str, ...]:
        return self.ips or (self.ip,)


def _node_ips(index: int, families: tuple[str, ...]) -> tuple[str, ...]:
    """kind's node addresses: .2 for the control-plane, then one up per node, in each family."""
    by_family = {"IPv4": f"{NODE_NETWORK_V4}{index + 2}", "IPv6": f"{NODE_NETWORK_V6}{index + 2:x}"}
    return tuple(by_family[f] for f in families)


def _kind_nodes(count: int, families: tuple[str, ...] = ("IPv4",)) -> tuple[NodeConfig, ...]:
    nodes = []
    for i in range(count):
        ips = _node_ips(i, families)
        name = "control-plane" if i == 0 else ("worker" if i == 1 else f"worker{i}")
        nodes.append(NodeConfig(name, ips[0], control_plane=i == 0, ips=ips if len(ips) > 1 else ()))
    return tuple(nodes)


def _default_nodes() -> tuple[NodeConfig, ...]:
    return _kind_nodes(3)


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    name: str = "knetsim"
    nodes: tuple[NodeConfig, ...] = field(default_factory=_default_nodes)
    pod_cidr: str = "10.244.0.0/16"
    node_cidr_mask: int = 24
    service_cidr: str = "10.96.0.0/12"
    # The other family's ranges on a dual-stack cluster ("" on a single-stack one).
    secondary_pod_cidr: str = ""
    secondary_service_cidr: str = ""
    # kube-controller-manager's --node-cidr-mask-size-ipv6 default.
    node_cidr_mask_v6: int = 64
    cluster_domain: str = "cluster.local"
    node_port_range: tuple[int, int] = (30000, 32767)
    lb_pool: tuple[str, str] = ("172.18.255.200", "172.18.255.250")
    # The IPv6 pool a dual-stack or IPv6 LoadBalancer Service draws from: the same host numbers (200-250)
    # on kind's IPv6 docker network.
    lb_pool_v6: tuple[str, str] = ("fc00:f853:ccd:e793::c8", "fc00:f853:ccd:e793::fa")
    dataplane: str = "iptables"
    # kube-proxy's nodePortAddresses (--nodeport-addresses): CIDRs, or ("primary",); () unset, which is every
    # local address in iptables mode (127.0.0.1 included) and `primary` in nftables mode (dataplane/nodeports.py).
    node_port_addresses: tuple[str, ...] = ()
    # The Kubernetes minor the live cluster runs (model/versions.py: admission, warnings, /version, discovery).
    kubernetes_version: str = NEWEST
    # The cluster's CNI, one of CNIS; None: not configured (knetsim.policy.cni finds or infers it).
    cni: str | None = None
    # Cilium's kube-proxy replacement needs the real API server address (k8sServiceHost/Port);
    # None means "not configured", which the doctor explains.
    k8s_service_host: str | None = None
    k8s_service_port: int | None = None
    # Cilium's agent honours EndpointSlice hints (topology-mode Auto, trafficDistribution) only with service
    # topology on (`--enable-service-topology`, Helm `loadBalancer.serviceTopology`), off by default; kube-proxy
    # always honours them.
    cilium_service_topology: bool = False
    # The upstream search domains of the node's resolv.conf, appended to ClusterFirst pods'.
    host_search: tuple[str, ...] = ()
    upstream_nameservers: tuple[str, ...] = ("172.18.0.1",)
    # Ingress controller that serves IngressClass `nginx` (kind's ingress-nginx deploy).
    ingress_controller: bool = True
    # CoreDNS `kubernetes` plugin options as kubeadm's Corefile (and so kind) sets them: `ttl 30`
    # and `pods insecure`; the plugin's own defaults would be 5 and disabled.
    dns_ttl: int = 30
    dns_pods: str = "insecure"
    # The registry model (cluster/images.py): images already on every node (`kind load docker-image`)
    # and registries the nodes cannot reach.
    preloaded_images: tuple[str, ...] = ()
    unreachable_registries: tuple[str, ...] = ()
    # What lies beyond `forward . /etc/resolv.conf` and the nodes' masquerade (cluster/outside.py).
    outside: OutsideWorld = field(default_factory=OutsideWorld)

    @property
    def api_server_ip(self) -> str:
        return self.nodes[0].ip if self.nodes else "172.18.0.2"

    @property
    def kubernetes_service_ip(self) -> str:
        return _service_address(self.service_cidr, 1)

    @property
    def dns_service_ip(self) -> str:
        return _service_address(self.service_cidr, 10)

    @property
    def pod_cidrs(self) -> tuple[str, ...]:
        return (self.pod_cidr, self.secondary_pod_cidr) if self.secondary_pod_cidr else (self.pod_cidr,)

    @property
    def service_cidrs(self) -> tuple[str, ...]:
        """``--service-cluster-ip-range``: the primary family's range first."""
        return (self.service_cidr, self.secondary_service_cidr) if self.secondary_service_cidr else (
            self.service_cidr,)

    @property
    def ip_families(self) -> tuple[str, ...]:
        """The Service IP families the API server allocates for, primary first."""
        return tuple(family_of(c) for c in self.service_cidrs)

    @property
    def dual_stack(self) -> bool:
        return len(self.ip_families) == 2

    def pod_cidr_of(self, family: str) -> str:
        return next((c for c in self.pod_cidrs if family_of(c) == family), "")

    def node_pod_cidrs(self, index: int) -> tuple[str, ...]:
        """The node's ``spec.podCIDRs``: the index-th subnet of each pod CIDR (the node IPAM controller)."""
        return tuple(self._subnet(cidr, index) for cidr in self.pod_cidrs)

    def node_pod_cidr(self, index: int) -> str:
        return self._subnet(self.pod_cidr, index)

    def _subnet(self, cidr: str, index: int) -> str:
        pod_net = ipaddress.ip_network(cidr)
        mask = self.node_cidr_mask if pod_net.version == 4 else self.node_cidr_mask_v6
        if mask < pod_net.prefixlen or (mask - pod_net.prefixlen < 64 and index >= 2 ** (mask - pod_net.prefixlen)):
            raise ConfigError(f"pod CIDR {cidr} has no room for node {index + 1} at /{mask}")
        return str(ipaddress.ip_network((int(pod_net.network_address) + (index << (pod_net.max_prefixlen - mask)),
                                         mask)))


# The offline build asks for the DNS Service's address once per pod (pod_status: 10,000 pods asked 10,015 times,
# ~11 us each through ipaddress, 0.11 s), always of the same one or two ranges: remembered per (range, index).
@functools.lru_cache(maxsize=64)
def _service_address(cidr: str, index: int) -> str:
    return str(ipaddress.ip_network(cidr)[index])


class ConfigError(ValueError):
    pass


_NODE_KEYS = {"name", "ip", "controlPlane", "zone", "labels", "cpu", "maxPods"}


def load_config(path: str | None) -> ClusterConfig:
    if not path:
        return ClusterConfig()
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read cluster config: {exc}") from None
    return config_from_dict(data, path)


def config_from_dict(data: dict[str, Any], origin: str = "cluster config") -> ClusterConfig:
    if not isinstance(data, dict):
        raise ConfigError(f"{origin}: expected a mapping at the top level")
    known = {
        "name", "nodes", "podCIDR", "nodeCIDRMask", "nodeCIDRMaskIPv6", "serviceCIDR", "ipFamily", "clusterDomain",
        "nodePortRange", "loadBalancerPool", "dataplane", "k8sServiceHost", "k8sServicePort", "hostSearch",
        "upstreamNameservers", "ingressController", "dnsTTL", "dnsPods", "images", "kind", "apiVersion",
        "outside", "ciliumServiceTopology", "maxPods", "cni", "kubernetesVersion", "nodePortAddresses",
    }
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{origin}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    kwargs: dict[str, Any] = {}
    try:
        if "name" in data:
            kwargs["name"] = str(data["name"])
        mode = _family_mode(data, origin)
        pod_cidrs = _cidrs(data, "podCIDR", mode, origin)
        service_cidrs = _cidrs(data, "serviceCIDR", mode, origin)
        if [family_of(c) for c in pod_cidrs] != [family_of(c) for c in service_cidrs]:
            raise ConfigError(f"{origin}: podCIDR ({','.join(pod_cidrs)}) and serviceCIDR "
                              f"({','.join(service_cidrs)}) must list the same IP families in the same order")
        kwargs["pod_cidr"], kwargs["secondary_pod_cidr"] = pod_cidrs[0], "".join(pod_cidrs[1:])
        kwargs["service_cidr"], kwargs["secondary_service_cidr"] = service_cidrs[0], "".join(service_cidrs[1:])
        families = tuple(family_of(c) for c in service_cidrs)
        if "nodes" in data:
            kwargs["nodes"] = _nodes(data["nodes"], origin, families)
        elif families != ("IPv4",):
            kwargs["nodes"] = _kind_nodes(3, families)
        if "maxPods" in data:
            # Every kubelet's maxPods (kind sets it for all nodes through a KubeletConfiguration patch); a node's
            # own nodes[].maxPods wins.
            every = _max_pods(data["maxPods"], f"{origin}: maxPods")
            nodes = kwargs.get("nodes") or _default_nodes()
            raw_nodes = data.get("nodes") if isinstance(data.get("nodes"), list) else []
            kwargs["nodes"] = tuple(
                n if i < len(raw_nodes) and isinstance(raw_nodes[i], dict) and "maxPods" in raw_nodes[i]
                else dataclasses.replace(n, max_pods=every) for i, n in enumerate(nodes))
        if "nodeCIDRMask" in data:
            kwargs["node_cidr_mask"] = int(data["nodeCIDRMask"])
        if "nodeCIDRMaskIPv6" in data:
            kwargs["node_cidr_mask_v6"] = int(data["nodeCIDRMaskIPv6"])
        if "clusterDomain" in data:
            kwargs["cluster_domain"] = str(data["clusterDomain"]).strip(".")
        if "nodePortRange" in data:
            low, _, high = str(data["nodePortRange"]).partition("-")
            kwargs["node_port_range"] = (int(low), int(high))
        if "loadBalancerPool" in data:
            raw = data["loadBalancerPool"]
            for text in raw if isinstance(raw, list) else [raw]:
                first, _, last = str(text).partition("-")
                low, high = ipaddress.ip_address(first.strip()), ipaddress.ip_address(last.strip())
                if low.version != high.version or low > high:
                    raise ConfigError(f"{origin}: loadBalancerPool: {text!r}: expected FIRST-LAST of one IP family")
                kwargs["lb_pool" if low.version == 4 else "lb_pool_v6"] = (str(low), str(high))
        if "dataplane" in data:
            if data["dataplane"] not in DATAPLANES:
                raise ConfigError(f"{origin}: dataplane: Unsupported value: {data['dataplane']!r}: "
                                  f"supported values: {', '.join(DATAPLANES)}")
            kwargs["dataplane"] = data["dataplane"]
        if "nodePortAddresses" in data:
            kwargs["node_port_addresses"] = _node_port_addresses(data["nodePortAddresses"], origin)
        if "kubernetesVersion" in data:
            try:
                kwargs["kubernetes_version"] = str(parse_kubernetes_version(str(data["kubernetesVersion"])))
            except ValueError as exc:
                raise ConfigError(f"{origin}: kubernetesVersion: {exc}") from None
        if "cni" in data:
            if data["cni"] not in CNIS:
                raise ConfigError(f"{origin}: cni: Unsupported value: {data['cni']!r}: supported values: "
                                  f"{', '.join(CNIS)}")
            if kwargs.get("dataplane") == "ebpf" and data["cni"] != "cilium":
                raise ConfigError(f"{origin}: cni: Invalid value: {data['cni']!r}: dataplane ebpf is Cilium's "
                                  "kube-proxy replacement, which needs cni: cilium")
            kwargs["cni"] = data["cni"]
        if "k8sServiceHost" in data:
            kwargs["k8s_service_host"] = str(data["k8sServiceHost"])
        if "k8sServicePort" in data:
            kwargs["k8s_service_port"] = int(data["k8sServicePort"])
        if "ciliumServiceTopology" in data:
            if not isinstance(data["ciliumServiceTopology"], bool):
                raise ConfigError(f"{origin}: ciliumServiceTopology: Invalid value: "
                                  f"{data['ciliumServiceTopology']!r}: must be true or false")
            kwargs["cilium_service_topology"] = data["ciliumServiceTopology"]
        if "hostSearch" in data:
            kwargs["host_search"] = tuple(str(s) for s in data["hostSearch"])
        if "upstreamNameservers" in data:
            kwargs["upstream_nameservers"] = tuple(str(s) for s in data["upstreamNameservers"])
        elif families[0] == "IPv6":
            kwargs["upstream_nameservers"] = (f"{NODE_NETWORK_V6}1",)  # the docker network's gateway
        if "ingressController" in data:
            kwargs["ingress_controller"] = bool(data["ingressController"])
        if "dnsTTL" in data:
            kwargs["dns_ttl"] = int(data["dnsTTL"])
        if "dnsPods" in data:
            if data["dnsPods"] not in ("disabled", "insecure", "verified"):
                raise ConfigError(f"{origin}: dnsPods: Unsupported value: {data['dnsPods']!r}: "
                                  "supported values: disabled, insecure, verified")
            kwargs["dns_pods"] = str(data["dnsPods"])
        if "images" in data:
            kwargs.update(_images(data["images"], origin))
        if "outside" in data:
            try:
                kwargs["outside"] = outside_from_dict(data["outside"], origin)
            except OutsideError as exc:
                raise ConfigError(str(exc)) from None
    except (ValueError, TypeError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"{origin}: {exc}") from None
    config = ClusterConfig(**kwargs)
    low, high = config.node_port_range
    if not 1 <= low <= high <= 65535:
        raise ConfigError(f"{origin}: nodePortRange: invalid range {low}-{high}")
    return config


def _node_port_addresses(raw: Any, origin: str) -> tuple[str, ...]:
    """kube-proxy's nodePortAddresses as its validation takes it (pkg/proxy/apis/config/validation
    ``validateKubeProxyNodePortAddress``): a list of CIDRs, or the single word ``primary``; the flag's
    comma-separated spelling is taken too."""
    values = [v.strip() for v in raw.split(",")] if isinstance(raw, str) else raw
    if not isinstance(values, list):
        raise ConfigError(f"{origin}: nodePortAddresses: expected a list of CIDRs, or [primary]")
    out = []
    for i, value in enumerate(values):
        text = str(value)
        where = f"{origin}: nodePortAddresses[{i}]: Invalid value: \"{text}\""
        if text == "primary":
            if i != 0 or len(values) != 1:
                raise ConfigError(f"{where}: can't use both 'primary' and CIDRs")
        elif "/" not in text:
            raise ConfigError(f"{where}: must be a valid CIDR")
        else:
            try:
                ipaddress.ip_network(text, strict=False)
            except ValueError:
                raise ConfigError(f"{where}: must be a valid CIDR") from None
        out.append(text)
    return tuple(out)


def _mode_of(families: tuple[str, ...]) -> str:
    return "dual" if len(families) == 2 else ("ipv6" if families == ("IPv6",) else "ipv4")


def _family_mode(data: dict[str, Any], origin: str) -> str:
    """kind's ``ipFamily``; without it, what the Service CIDRs say (or ipv4)."""
    if "ipFamily" in data:
        if data["ipFamily"] not in IP_FAMILY_MODES:
            raise ConfigError(f"{origin}: ipFamily: Unsupported value: {data['ipFamily']!r}: supported values: "
                              f"{', '.join(IP_FAMILY_MODES)}")
        return str(data["ipFamily"])
    for key in ("serviceCIDR", "podCIDR"):
        if key in data:
            return _mode_of(tuple(family_of(c) for c in _split(data[key], key, origin)))
    return "ipv4"


def _split(raw: Any, key: str, origin: str) -> list[str]:
    """A CIDR list as kind writes it ("10.244.0.0/16,fd00:10:244::/56") or as a YAML list."""
    items = raw if isinstance(raw, list) else str(raw).split(",")
    out = []
    for item in items:
        text = str(item).strip()
        try:
            out.append(str(ipaddress.ip_network(text)))
        except ValueError as exc:
            raise ConfigError(f"{origin}: {key}: {text!r} is not a CIDR: {exc}") from None
    if not 1 <= len(out) <= 2 or len({family_of(c) for c in out}) != len(out):
        raise ConfigError(f"{origin}: {key}: expected one CIDR, or two of different IP families (dual-stack); "
                          f"got {', '.join(out) or 'none'}")
    return out


def _cidrs(data: dict[str, Any], key: str, mode: str, origin: str) -> list[str]:
    cidrs = _split(data[key], key, origin) if key in data else list(_DEFAULT_CIDRS[mode][key == "serviceCIDR"])
    if _mode_of(tuple(family_of(c) for c in cidrs)) != mode:
        raise ConfigError(f"{origin}: {key}: {','.join(cidrs)} does not match ipFamily {mode}")
    if key == "serviceCIDR":
        for cidr in cidrs:
            net = ipaddress.ip_network(cidr)
            # The ClusterIP allocator's own limit (pkg/registry/core/service/ipallocator).
            if net.version == 6 and net.prefixlen < 64:
                raise ConfigError(f"{origin}: serviceCIDR: {cidr}: shortest allowed prefix length for service CIDR "
                                  f"is 64, got {net.prefixlen}")
            if net.num_addresses < 4:
                raise ConfigError(f"{origin}: serviceCIDR: {cidr}: too small for the kubernetes and kube-dns "
                                  "Services (they take the range's first and tenth addresses)")
    return cidrs


def _nodes(raw: Any, origin: str, families: tuple[str, ...] = ("IPv4",)) -> tuple[NodeConfig, ...]:
    if isinstance(raw, int):
        # A count: kind's naming, control-plane then worker, worker2, ...
        if raw < 1:
            raise ConfigError(f"{origin}: nodes: must be at least 1")
        return _kind_nodes(raw, families)
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{origin}: nodes: expected a count or a non-empty list")
    nodes = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or "name" not in item or "ip" not in item:
            raise ConfigError(f"{origin}: nodes[{i}]: name and ip are required")
        unknown = sorted(set(item) - _NODE_KEYS)
        if unknown:
            raise ConfigError(f"{origin}: nodes[{i}]: unknown field(s) {', '.join(unknown)}")
        ips = [a.strip() for a in str(item["ip"]).split(",")]
        for a in ips:
            try:
                ipaddress.ip_address(a)
            except ValueError:
                raise ConfigError(f"{origin}: nodes[{i}].ip: {a!r} is not an IP address") from None
        by_family = {family_of(a): a for a in ips}
        if len(by_family) != len(ips) or set(by_family) != set(families):
            raise ConfigError(f"{origin}: nodes[{i}].ip: {item['ip']}: expected one address of each cluster IP "
                              f"family ({', '.join(families)}), as kubelet's --node-ip")
        ordered = tuple(by_family[f] for f in families)
        cpu = str(item.get("cpu", DEFAULT_NODE_CPU))
        if not _is_quantity(cpu):
            raise ConfigError(f"{origin}: nodes[{i}].cpu: {cpu!r} is not a CPU quantity (e.g. 4 or 3500m)")
        nodes.append(
            NodeConfig(
                str(item["name"]),
                ordered[0],
                bool(item.get("controlPlane", i == 0)),
                None if item.get("zone") in (None, "") else str(item["zone"]),
                {str(k): str(v) for k, v in (item.get("labels") or {}).items()},
                ips=ordered if len(ordered) > 1 else (),
                cpu=cpu,
                max_pods=_max_pods(item["maxPods"], f"{origin}: nodes[{i}].maxPods") if "maxPods" in item
                else DEFAULT_MAX_PODS,
            )
        )
    return tuple(nodes)


def _max_pods(raw: Any, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise ConfigError(f"{where}: Invalid value: {raw!r}: must be a positive whole number (the kubelet's maxPods)")
    return raw


def _is_quantity(text: str) -> bool:
    body = text[:-1] if text.endswith("m") else text
    try:
        return float(body) > 0
    except ValueError:
        return False


def cpu_millis(quantity: str) -> int:
    """A node's allocatable CPU in millicores ("8" → 8000, "3500m" → 3500)."""
    return int(float(quantity[:-1])) if quantity.endswith("m") else int(float(quantity) * 1000)


def _images(raw: Any, origin: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: images: expected a mapping with preloaded and/or unreachableRegistries")
    unknown = sorted(set(raw) - {"preloaded", "unreachableRegistries"})
    if unknown:
        raise ConfigError(f"{origin}: images: unknown field(s) {', '.join(unknown)}; known: preloaded, "
                          "unreachableRegistries")
    out = {}
    for key, attr in (("preloaded", "preloaded_images"), ("unreachableRegistries", "unreachable_registries")):
        value = raw.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"{origin}: images.{key}: expected a list of strings")
        out[attr] = tuple(value)
    return out


def config_fields() -> list[str]:
    return [f.name for f in fields(ClusterConfig)]
