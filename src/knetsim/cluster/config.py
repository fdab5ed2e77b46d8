"""The simulated cluster's shape: nodes, address ranges, DNS domain, data plane.

Defaults are a fresh three-node kind cluster. A YAML file (``--cluster-config``) overrides
any field; see docs/cluster-config.md. Unknown keys are an error, so a typo never silently
falls back to a default.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from .outside import OutsideError, OutsideWorld, outside_from_dict

DATAPLANES = ("iptables", "nftables", "ebpf")


@dataclass(frozen=True, slots=True)
class NodeConfig:
    name: str
    ip: str
    control_plane: bool = False
    zone: str | None = None
    labels: dict[str, str] = field(default_factory=dict)


def _default_nodes() -> tuple[NodeConfig, ...]:
    return (
        NodeConfig("control-plane", "172.18.0.2", control_plane=True),
        NodeConfig("worker", "172.18.0.3"),
        NodeConfig("worker2", "172.18.0.4"),
    )


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    name: str = "knetsim"
    nodes: tuple[NodeConfig, ...] = field(default_factory=_default_nodes)
    pod_cidr: str = "10.244.0.0/16"
    node_cidr_mask: int = 24
    service_cidr: str = "10.96.0.0/12"
    cluster_domain: str = "cluster.local"
    node_port_range: tuple[int, int] = (30000, 32767)
    lb_pool: tuple[str, str] = ("172.18.255.200", "172.18.255.250")
    dataplane: str = "iptables"
    # Cilium's kube-proxy replacement needs the real API server address (k8sServiceHost/Port);
    # None means "not configured", which the doctor explains.
    k8s_service_host: str | None = None
    k8s_service_port: int | None = None
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
        return str(ipaddress.ip_network(self.service_cidr)[1])

    @property
    def dns_service_ip(self) -> str:
        return str(ipaddress.ip_network(self.service_cidr)[10])

    def node_pod_cidr(self, index: int) -> str:
        pod_net = ipaddress.ip_network(self.pod_cidr)
        subnets = pod_net.subnets(new_prefix=self.node_cidr_mask)
        for i, subnet in enumerate(subnets):
            if i == index:
                return str(subnet)
        raise ConfigError(f"pod CIDR {self.pod_cidr} has no room for node {index + 1} at /{self.node_cidr_mask}")


class ConfigError(ValueError):
    pass


_NODE_KEYS = {"name", "ip", "controlPlane", "zone", "labels"}


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
        "name", "nodes", "podCIDR", "nodeCIDRMask", "serviceCIDR", "clusterDomain", "nodePortRange",
        "loadBalancerPool", "dataplane", "k8sServiceHost", "k8sServicePort", "hostSearch",
        "upstreamNameservers", "ingressController", "dnsTTL", "dnsPods", "images", "kind", "apiVersion",
        "outside",
    }
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{origin}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    kwargs: dict[str, Any] = {}
    try:
        if "name" in data:
            kwargs["name"] = str(data["name"])
        if "nodes" in data:
            kwargs["nodes"] = _nodes(data["nodes"], origin)
        if "podCIDR" in data:
            kwargs["pod_cidr"] = str(ipaddress.ip_network(str(data["podCIDR"])))
        if "nodeCIDRMask" in data:
            kwargs["node_cidr_mask"] = int(data["nodeCIDRMask"])
        if "serviceCIDR" in data:
            kwargs["service_cidr"] = str(ipaddress.ip_network(str(data["serviceCIDR"])))
        if "clusterDomain" in data:
            kwargs["cluster_domain"] = str(data["clusterDomain"]).strip(".")
        if "nodePortRange" in data:
            low, _, high = str(data["nodePortRange"]).partition("-")
            kwargs["node_port_range"] = (int(low), int(high))
        if "loadBalancerPool" in data:
            first, _, last = str(data["loadBalancerPool"]).partition("-")
            ipaddress.ip_address(first.strip())
            ipaddress.ip_address(last.strip())
            kwargs["lb_pool"] = (first.strip(), last.strip())
        if "dataplane" in data:
            if data["dataplane"] not in DATAPLANES:
                raise ConfigError(f"{origin}: dataplane: Unsupported value: {data['dataplane']!r}: "
                                  f"supported values: {', '.join(DATAPLANES)}")
            kwargs["dataplane"] = data["dataplane"]
        if "k8sServiceHost" in data:
            kwargs["k8s_service_host"] = str(data["k8sServiceHost"])
        if "k8sServicePort" in data:
            kwargs["k8s_service_port"] = int(data["k8sServicePort"])
        if "hostSearch" in data:
            kwargs["host_search"] = tuple(str(s) for s in data["hostSearch"])
        if "upstreamNameservers" in data:
            kwargs["upstream_nameservers"] = tuple(str(s) for s in data["upstreamNameservers"])
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


def _nodes(raw: Any, origin: str) -> tuple[NodeConfig, ...]:
    if isinstance(raw, int):
        # A count: kind's naming, control-plane then worker, worker2, ...
        if raw < 1:
            raise ConfigError(f"{origin}: nodes: must be at least 1")
        nodes = [NodeConfig("control-plane", "172.18.0.2", control_plane=True)]
        for i in range(1, raw):
            nodes.append(NodeConfig("worker" if i == 1 else f"worker{i}", f"172.18.0.{i + 2}"))
        return tuple(nodes)
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{origin}: nodes: expected a count or a non-empty list")
    nodes = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or "name" not in item or "ip" not in item:
            raise ConfigError(f"{origin}: nodes[{i}]: name and ip are required")
        unknown = sorted(set(item) - _NODE_KEYS)
        if unknown:
            raise ConfigError(f"{origin}: nodes[{i}]: unknown field(s) {', '.join(unknown)}")
        ipaddress.ip_address(str(item["ip"]))
        nodes.append(
            NodeConfig(
                str(item["name"]),
                str(item["ip"]),
                bool(item.get("controlPlane", i == 0)),
                item.get("zone"),
                {str(k): str(v) for k, v in (item.get("labels") or {}).items()},
            )
        )
    return tuple(nodes)


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
