"""The objects a fresh cluster has before anyone applies anything (a kind cluster, v1.35).

They are produced as manifests and go through the same defaulting and controllers as user
input, so ``kube-dns`` gets its EndpointSlice from the real EndpointSlice controller.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ..model.corefile import default_corefile
from ..model.defaults import MIRROR_ANNOTATION
from ..model.jsonvalue import json_copy
from ..model.objects import INGRESS_CLASS_ANNOTATION
from ..model.versions import in_force, release
from .config import ClusterConfig, family_of
from .servicecidrs import default_service_cidr
from .storage import standard_storage_class

CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
_TOLERATE_CONTROL_PLANE = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
_TOLERATE_ALL = [{"operator": "Exists"}]


def kubernetes_version() -> str:
    """The release the nodes' kubelets, kube-proxy and the control plane's images report: the version in force
    (model/versions.py RELEASES; the live cluster's daemon serves as its config's kubernetesVersion, an offline
    command as its --kubernetes-version), as `kubectl version` reports it."""
    return release(in_force()).git_version

INGRESS_NGINX_CONTROLLER = "k8s.io/ingress-nginx"
# Cilium 1.18.6 and the Envoy build it ships with (the pair `cilium status` reports on such an install).
CILIUM_VERSION = "v1.18.6"
CILIUM_IMAGE = f"quay.io/cilium/cilium:{CILIUM_VERSION}"
CILIUM_OPERATOR_IMAGE = f"quay.io/cilium/operator-generic:{CILIUM_VERSION}"
CILIUM_ENVOY_IMAGE = "quay.io/cilium/cilium-envoy:v1.34.7-1757592137-1a52bb680a956879722f48c591a2ca90f7791324"


def system_manifests(config: ClusterConfig) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    namespaces = ["default", "kube-system", "kube-public", "kube-node-lease"]
    if config.ingress_controller:
        namespaces.append("ingress-nginx")
    if config.cni == "flannel":
        namespaces.append("kube-flannel")
    docs += [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces]
    for i, node in enumerate(config.nodes):
        labels = {
            "kubernetes.io/hostname": node.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": "amd64",
        }
        if node.control_plane:
            labels["node-role.kubernetes.io/control-plane"] = ""
            # kubeadm (and so kind) keeps load balancers off the control-plane.
            labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
            # kind's ingress guide labels the control-plane so ingress-nginx lands there.
            labels["ingress-ready"] = "true"
        if node.zone:
            labels["topology.kubernetes.io/zone"] = node.zone
        labels.update(node.labels)
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": node.name, "labels": labels},
                "spec": {
                    "podCIDR": config.node_pod_cidr(i),
                    "podCIDRs": list(config.node_pod_cidrs(i)),
                    "taints": [CONTROL_PLANE_TAINT] if node.control_plane else [],
                },
                "status": {
                    "addresses": [
                        *({"type": "InternalIP", "address": ip} for ip in node.addresses),
                        {"type": "Hostname", "address": node.name},
                    ],
                    # The EndpointSlice controller weighs zones by allocatable CPU (topology-mode Auto).
                    "capacity": {"cpu": node.cpu, "pods": str(node.max_pods)},
                    "allocatable": {"cpu": node.cpu, "pods": str(node.max_pods)},
                    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                    "nodeInfo": {"kubeletVersion": kubernetes_version(),
                                 "kubeProxyVersion": kubernetes_version(),
                                 "containerRuntimeVersion": "containerd://2.1.1", "osImage": "Debian GNU/Linux 12",
                                 "operatingSystem": "linux", "architecture": "amd64"},
                },
            }
        )
    docs.append(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "kubernetes",
                "namespace": "default",
                "labels": {"component": "apiserver", "provider": "kubernetes"},
            },
            "spec": {
                "clusterIP": config.kubernetes_service_ip,
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
            },
        }
    )
    # The API server creates the default ServiceCIDR from --service-cluster-ip-range.
    docs.append(default_service_cidr(config))
    # The API server's own endpoint reconciler writes this slice; no selector-based controller does.
    docs.append(
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": "kubernetes",
                "namespace": "default",
                "labels": {"kubernetes.io/service-name": "kubernetes",
                           "endpointslice.kubernetes.io/skip-mirror": "true"},
            },
            # The API server's advertise address, of the cluster's primary family (an IPv6-only cluster's is IPv6).
            "addressType": family_of(config.api_server_ip),
            "endpoints": [{"addresses": [config.api_server_ip], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}],
        }
    )
    docs.append(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "kube-dns",
                "namespace": "kube-system",
                "labels": {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true",
                           "kubernetes.io/name": "CoreDNS"},
                "annotations": {"prometheus.io/port": "9153", "prometheus.io/scrape": "true"},
            },
            "spec": {
                "clusterIP": config.dns_service_ip,
                "selector": {"k8s-app": "kube-dns"},
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                    {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
                ],
            },
        }
    )
    docs.append(_coredns())
    # kubeadm's coredns ConfigMap, which the Deployment mounts: `kubectl -n kube-system edit cm coredns` is how a
    # Corefile is changed on kind, and the DNS answers follow it.
    docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "coredns", "namespace": "kube-system"},
                 "data": {"Corefile": system_corefile(config)}})
    docs.extend(node_network_manifests(config))
    control_plane = next((n.name for n in config.nodes if n.control_plane), config.nodes[0].name)
    for component, port in (("etcd", 2381), ("kube-apiserver", 6443), ("kube-controller-manager", 10257),
                            ("kube-scheduler", 10259)):
        docs.append(_static_pod(component, control_plane, port, kubernetes_version()))
    # kind's default StorageClass (its local-path provisioner's volumes are made by cluster.storage).
    docs.append(standard_storage_class())
    if config.ingress_controller:
        docs.extend(_ingress_nginx())
    return [*docs[:len(namespaces)], *_service_accounts(docs), *docs[len(namespaces):]]  # each in its namespace


def _service_accounts(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ServiceAccounts the add-ons run as, which their manifests create before their workloads (kubeadm's
    coredns and kube-proxy, each CNI's, ingress-nginx's); ``default`` in each namespace is the service account
    controller's."""
    named: dict[tuple[str, str], None] = {}
    for doc in docs:
        spec = ((doc.get("spec") or {}).get("template") or {}).get("spec") or {}
        if doc.get("kind") in ("Deployment", "DaemonSet", "StatefulSet") and spec.get("serviceAccountName"):
            named[(str(doc["metadata"].get("namespace") or ""), str(spec["serviceAccountName"]))] = None
    return [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}}
            for namespace, name in named]


def system_corefile(config: ClusterConfig) -> str:
    """kubeadm's Corefile with the cluster config's DNS settings (dnsTTL, dnsPods), as the cluster answers them."""
    return default_corefile(config.cluster_domain).replace("ttl 30", f"ttl {config.dns_ttl}").replace(
        "pods insecure", f"pods {config.dns_pods}")


def node_network_manifests(config: ClusterConfig) -> list[dict[str, Any]]:
    """What carries pod and Service traffic on every node: the CNI's agents and kube-proxy.

    Unset or kindnet: kind's own CNI (kindnetd) and kube-proxy in the data plane's mode. Calico, Antrea and
    flannel: their manifest installs (``_calico``, ``_antrea``, ``_flannel``) beside kube-proxy. Cilium: the
    cluster of seed 000, ``kubeadm init --skip-phases=addon/kube-proxy`` then ``helm install cilium
    --set kubeProxyReplacement=true`` on ``dataplane: ebpf`` (no kube-proxy); on the other data planes the
    same agents beside kube-proxy."""
    kube_proxy = _daemonset("kube-proxy", {"k8s-app": "kube-proxy"},
                            f"registry.k8s.io/kube-proxy:{kubernetes_version()}", account="kube-proxy")
    if config.cni == "calico":
        return [*_calico(), kube_proxy]
    if config.cni == "antrea":
        return [*_antrea(), kube_proxy]
    if config.cni == "flannel":
        return [*_flannel(), kube_proxy]
    if config.cni != "cilium" and config.dataplane != "ebpf":
        return [_daemonset("kindnet", {"app": "kindnet", "k8s-app": "kindnet", "tier": "node"},
                           "docker.io/kindest/kindnetd:v20250512-df8de77b", account="kindnet"), kube_proxy]
    cilium = _cilium(replaces_kube_proxy=config.dataplane == "ebpf")
    # Cilium beside kube-proxy (cni: cilium on the iptables or nftables data plane): the chart's
    # kubeProxyReplacement=false install keeps kubeadm's kube-proxy DaemonSet.
    return cilium if config.dataplane == "ebpf" else [*cilium, kube_proxy]


def _cilium(*, replaces_kube_proxy: bool) -> list[dict[str, Any]]:
    """Cilium's agent DaemonSet, its Envoy DaemonSet (the L7 proxy, a separate DaemonSet by default since Cilium
    1.16), the operator and the ``hubble-peer`` Service, named and labelled as the chart names them."""
    part_of = {"app.kubernetes.io/part-of": "cilium"}
    agent = _daemonset("cilium", {"k8s-app": "cilium", "app.kubernetes.io/name": "cilium-agent", **part_of},
                       CILIUM_IMAGE, container="cilium-agent", selector={"k8s-app": "cilium"})
    template = agent["spec"]["template"]
    # kubectl exec/logs ds/cilium pick this container without asking (the chart sets the annotation).
    template["metadata"]["annotations"] = {"kubectl.kubernetes.io/default-container": "cilium-agent"}
    container = template["spec"]["containers"][0]
    container.update({"command": ["cilium-agent"], "args": ["--config-dir=/tmp/cilium/config-map"],
                      "ports": [{"name": "peer-service", "containerPort": 4244, "hostPort": 4244,
                                 "protocol": "TCP"}]})
    template["spec"]["priorityClassName"] = "system-node-critical"
    template["spec"]["serviceAccountName"] = "cilium"
    envoy = _daemonset("cilium-envoy", {"k8s-app": "cilium-envoy", "app.kubernetes.io/name": "cilium-envoy",
                                        "name": "cilium-envoy", **part_of},
                       CILIUM_ENVOY_IMAGE, selector={"k8s-app": "cilium-envoy"}, account="cilium-envoy")
    envoy["spec"]["template"]["spec"]["priorityClassName"] = "system-node-critical"
    operator_labels = {"io.cilium/app": "operator", "name": "cilium-operator",
                       "app.kubernetes.io/name": "cilium-operator", **part_of}
    operator = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "cilium-operator", "namespace": "kube-system", "labels": operator_labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"io.cilium/app": "operator", "name": "cilium-operator"}},
            "template": {
                "metadata": {"labels": operator_labels},
                "spec": {
                    "hostNetwork": True,
                    "priorityClassName": "system-cluster-critical",
                    "serviceAccountName": "cilium-operator",
                    "tolerations": _TOLERATE_ALL,
                    "containers": [{"name": "cilium-operator", "image": CILIUM_OPERATOR_IMAGE,
                                    "command": ["cilium-operator-generic"],
                                    "args": ["--config-dir=/tmp/cilium/config-map"]}],
                },
            },
        },
    }
    hubble_peer = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "hubble-peer", "namespace": "kube-system",
                     "labels": {"k8s-app": "cilium", "app.kubernetes.io/name": "hubble-peer", **part_of}},
        "spec": {"selector": {"k8s-app": "cilium"}, "internalTrafficPolicy": "Local",
                 "ports": [{"name": "peer-service", "port": 443, "protocol": "TCP", "targetPort": 4244}]},
    }
    # The chart's agent configuration, of its keys those the answers read (policy/cilium/labels.py,
    # sources/live.py): editing enable-policy changes what is enforced at once (a real agent reads it when it starts:
    # restart the agents there).
    config = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "cilium-config", "namespace": "kube-system"},
              "data": {"cluster-name": "default", "enable-policy": "default",
                       "kube-proxy-replacement": "true" if replaces_kube_proxy else "false"}}
    return [config, agent, envoy, operator, hubble_peer]


# The other CNIs as their upstream manifests install them, named and labelled as there (the names are what
# `kubectl get pods -n kube-system` shows and what knetsim.policy.cni recognises on a cluster read through
# --kubeconfig). Only identity is kept: probes, init containers and volumes are left out, since the
# simulated agents run no program of their own to answer them.
CALICO_VERSION = "v3.32.1"  # projectcalico/calico manifests/calico.yaml at tag v3.32.1
ANTREA_VERSION = "v2.7.0"  # antrea-io/antrea build/yamls/antrea.yml at tag v2.7.0
FLANNEL_VERSION = "v0.27.4"  # flannel-io/flannel Documentation/kube-flannel.yml


def _system_deployment(name: str, namespace: str, labels: dict[str, str], selector: dict[str, str],
                       container: str, image: str, **pod_spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(selector)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {**pod_spec, "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"},
                                                     *_TOLERATE_CONTROL_PLANE],
                         "containers": [{"name": container, "image": image}]},
            },
        },
    }


def _calico() -> list[dict[str, Any]]:
    """calico.yaml (the manifest install, kube-system): the calico-node agent on every node, and
    calico-kube-controllers (one replica: only one may be active)."""
    node = _daemonset("calico-node", {"k8s-app": "calico-node"}, f"quay.io/calico/node:{CALICO_VERSION}")
    spec = node["spec"]["template"]["spec"]
    spec.update({"priorityClassName": "system-node-critical", "serviceAccountName": "calico-node",
                 "nodeSelector": {"kubernetes.io/os": "linux"}})
    controllers = _system_deployment(
        "calico-kube-controllers", "kube-system", {"k8s-app": "calico-kube-controllers"},
        {"k8s-app": "calico-kube-controllers"}, "calico-kube-controllers",
        f"quay.io/calico/kube-controllers:{CALICO_VERSION}", priorityClassName="system-cluster-critical",
        serviceAccountName="calico-kube-controllers", nodeSelector={"kubernetes.io/os": "linux"})
    return [node, controllers]


def _antrea() -> list[dict[str, Any]]:
    """antrea.yml (kube-system): antrea-agent on every node (with its OVS container), antrea-controller, and the
    ``antrea`` Service in front of the controller's API port."""
    agent_labels = {"app": "antrea", "component": "antrea-agent"}
    agent = _daemonset("antrea-agent", agent_labels, f"antrea/antrea-agent-ubuntu:{ANTREA_VERSION}")
    template = agent["spec"]["template"]
    template["metadata"]["annotations"] = {"kubectl.kubernetes.io/default-container": "antrea-agent"}
    image = template["spec"]["containers"][0]["image"]
    template["spec"].update({"priorityClassName": "system-node-critical", "serviceAccountName": "antrea-agent",
                             "containers": [{"name": "antrea-agent", "image": image,
                                             "ports": [{"name": "api", "containerPort": 10350,
                                                        "protocol": "TCP"}]},
                                            {"name": "antrea-ovs", "image": image}]})
    controller_labels = {"app": "antrea", "component": "antrea-controller"}
    controller = _system_deployment(
        "antrea-controller", "kube-system", controller_labels, controller_labels, "antrea-controller",
        f"antrea/antrea-controller-ubuntu:{ANTREA_VERSION}", hostNetwork=True,
        priorityClassName="system-cluster-critical", serviceAccountName="antrea-controller",
        nodeSelector={"kubernetes.io/os": "linux"})
    controller["spec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "api", "containerPort": 10349, "protocol": "TCP"}]
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "antrea", "namespace": "kube-system", "labels": {"app": "antrea"}},
        "spec": {"selector": controller_labels,
                 "ports": [{"port": 443, "protocol": "TCP", "targetPort": "api"}]},
    }
    return [agent, controller, service]


def _flannel() -> list[dict[str, Any]]:
    """kube-flannel.yml: flanneld on every node, in a namespace of its own (``kube-flannel``)."""
    ds = _daemonset("kube-flannel-ds", {"app": "flannel", "k8s-app": "flannel", "tier": "node"},
                    f"ghcr.io/flannel-io/flannel:{FLANNEL_VERSION}", container="kube-flannel")
    ds["metadata"]["namespace"] = "kube-flannel"
    ds["spec"]["template"]["spec"].update({"priorityClassName": "system-node-critical",
                                           "serviceAccountName": "flannel"})
    return [ds]


def _coredns() -> dict[str, Any]:
    labels = {"k8s-app": "kube-dns"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "coredns", "namespace": "kube-system", "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": "system-cluster-critical",
                    "serviceAccountName": "coredns",  # kubeadm's CoreDNS add-on manifest
                    "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}, *_TOLERATE_CONTROL_PLANE],
                    "dnsPolicy": "Default",
                    "containers": [
                        {
                            "name": "coredns",
                            "image": "registry.k8s.io/coredns/coredns:v1.12.1",
                            "args": ["-conf", "/etc/coredns/Corefile"],
                            "ports": [
                                {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                                {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                                {"name": "metrics", "containerPort": 9153, "protocol": "TCP"},
                            ],
                            "livenessProbe": {"httpGet": {"path": "/health", "port": 8080}},
                            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181}},
                            "volumeMounts": [{"name": "config-volume", "mountPath": "/etc/coredns",
                                              "readOnly": True}],
                        }
                    ],
                    "volumes": [{"name": "config-volume",
                                 "configMap": {"name": "coredns",
                                               "items": [{"key": "Corefile", "path": "Corefile"}]}}],
                },
            },
        },
    }


def _daemonset(name: str, labels: dict[str, str], image: str, *, container: str | None = None,
               selector: dict[str, str] | None = None, account: str | None = None) -> dict[str, Any]:
    """A node agent on the host network. ``account``: the ServiceAccount its manifest runs it as (kubeadm's
    kube-proxy, kind's kindnet); a policy that selects by account (Calico's serviceAccountSelector, Cilium's
    io.cilium.k8s.policy.serviceaccount) sees it as on the real cluster."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system", "labels": labels},
        "spec": {
            "selector": {"matchLabels": selector or {k: v for k, v in labels.items() if k != "tier"}},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    **({"serviceAccountName": account} if account else {}),
                    "hostNetwork": True,
                    "tolerations": _TOLERATE_ALL,
                    "containers": [{"name": container or name, "image": image}],
                },
            },
        },
    }


def _static_pod(component: str, node: str, port: int, version: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{component}-{node}",
            "namespace": "kube-system",
            "labels": {"component": component, "tier": "control-plane"},
            # The kubelet's mirror of a static pod (the manifest's hash in config.mirror): no account is admitted
            # for it.
            "annotations": {MIRROR_ANNOTATION: hashlib.md5(f"{component}/{node}".encode()).hexdigest(),
                            "kubernetes.io/config.source": "file"},
        },
        "spec": {
            "nodeName": node,
            "hostNetwork": True,
            "priorityClassName": "system-node-critical",
            "tolerations": _TOLERATE_ALL,
            "containers": [{"name": component, "image": f"registry.k8s.io/{component}:{version}"
                            if component != "etcd" else "registry.k8s.io/etcd:3.6.4-0",
                            "ports": [{"containerPort": port, "protocol": "TCP"}]}],
        },
    }


def _ingress_nginx() -> list[dict[str, Any]]:
    labels = {
        "app.kubernetes.io/component": "controller",
        "app.kubernetes.io/instance": "ingress-nginx",
        "app.kubernetes.io/name": "ingress-nginx",
    }
    return [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IngressClass",
            "metadata": {"name": "nginx", "labels": labels},
            "spec": {"controller": INGRESS_NGINX_CONTROLLER},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "ingress-nginx-controller", "namespace": "ingress-nginx", "labels": labels},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": "ingress-nginx",  # ingress-nginx's deploy manifest
                        "nodeSelector": {"ingress-ready": "true", "kubernetes.io/os": "linux"},
                        "tolerations": _TOLERATE_CONTROL_PLANE,
                        "containers": [
                            {
                                "name": "controller",
                                "image": "registry.k8s.io/ingress-nginx/controller:v1.13.0",
                                # kind's provider manifest (deploy/static/provider/kind): it also serves
                                # Ingresses without a class, and publishes localhost as their address.
                                "args": ["/nginx-ingress-controller", "--controller-class=k8s.io/ingress-nginx",
                                         "--ingress-class=nginx", "--watch-ingress-without-class=true",
                                         "--publish-status-address=localhost"],
                                "ports": [
                                    {"name": "http", "containerPort": 80, "hostPort": 80, "protocol": "TCP"},
                                    {"name": "https", "containerPort": 443, "hostPort": 443, "protocol": "TCP"},
                                    {"name": "webhook", "containerPort": 8443, "protocol": "TCP"},
                                ],
                                "readinessProbe": {"httpGet": {"path": "/healthz", "port": 10254}},
                            }
                        ],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "ingress-nginx-controller", "namespace": "ingress-nginx", "labels": labels},
            "spec": {
                "type": "NodePort",
                "selector": labels,
                "ports": [
                    {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP", "appProtocol": "http"},
                    {"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP", "appProtocol": "https"},
                ],
            },
        },
    ]


# ingress-nginx as kind's ingress guide runs it: --publish-status-address=localhost and
# --watch-ingress-without-class=true.
INGRESS_NGINX_PUBLISHED = {"loadBalancer": {"ingress": [{"hostname": "localhost"}]}}


def ingress_nginx_status(ingress: Mapping[str, Any], class_controllers: Mapping[str, str],
                         config: ClusterConfig) -> dict[str, Any] | None:
    """The status the built-in ingress-nginx writes on an Ingress it serves (one of an IngressClass of its
    controller, or of no class at all), or None: not installed, another controller's, or written already."""
    if not config.ingress_controller or ((ingress.get("status") or {}).get("loadBalancer") or {}).get("ingress"):
        return None
    meta = ingress.get("metadata") or {}
    class_name = (ingress.get("spec") or {}).get("ingressClassName") or \
        (meta.get("annotations") or {}).get(INGRESS_CLASS_ANNOTATION)
    if class_name and class_controllers.get(str(class_name)) != INGRESS_NGINX_CONTROLLER:
        return None
    return json_copy(INGRESS_NGINX_PUBLISHED)


def install_phase(body: Mapping[str, Any]) -> int:
    """When a fresh kind cluster gets an object: 0 as ``kind create cluster`` brings up the control plane
    with its add-ons, 1 as the workers join, 2 as kind's ingress guide applies ingress-nginx. The live
    cluster writes them in this order, letting its controllers act in between, so the add-ons land on
    the control plane and the addresses follow as on kind (the offline build places them the same way)."""
    meta = body.get("metadata") or {}
    if body.get("kind") == "Node" and "node-role.kubernetes.io/control-plane" not in (meta.get("labels") or {}):
        return 1
    if body.get("kind") == "IngressClass" or meta.get("namespace") == "ingress-nginx" or \
            (body.get("kind") == "Namespace" and meta.get("name") == "ingress-nginx"):
        return 2
    return 0
