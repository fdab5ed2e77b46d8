"""The bootstrap problem of a kube-proxy-free cluster, as a finding the doctor can show.

With Cilium's kube-proxy replacement nothing translates the ``kubernetes`` Service's
ClusterIP (10.96.0.1) until the Cilium agent has read the Services from the API server —
but the agent needs the API server to do so. Hence ``k8sServiceHost``/``k8sServicePort``
must name the real API server address (the seed notes 000_*.txt: "鶏と卵なので、実際の
アドレスを直接教える必要があります").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..cluster.config import ClusterConfig


@dataclass(frozen=True, slots=True)
class BootstrapFinding:
    code: str
    severity: str  # error | warning
    layer: str
    subject: str
    message: str
    fix: str

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "layer": self.layer, "subject": self.subject,
                "message": self.message, "fix": self.fix}


def ebpf_bootstrap_finding(config: ClusterConfig) -> BootstrapFinding | None:
    """None unless the cluster runs ``dataplane: ebpf`` without ``k8sServiceHost``/``k8sServicePort``."""
    if config.dataplane != "ebpf" or (config.k8s_service_host and config.k8s_service_port):
        return None
    missing = [name for name, value in (("k8sServiceHost", config.k8s_service_host),
                                        ("k8sServicePort", config.k8s_service_port)) if not value]
    api = f"{config.api_server_ip}:6443"
    return BootstrapFinding(
        code="EbpfNoK8sServiceHost",
        severity="error",
        layer="dataplane",
        subject="cluster config: " + ", ".join(missing),
        message=(f"dataplane is ebpf (Cilium kube-proxy replacement) but {' and '.join(missing)} "
                 f"{'is' if len(missing) == 1 else 'are'} not set. There is no kube-proxy, so nothing translates "
                 f"the kubernetes Service's ClusterIP {config.kubernetes_service_ip}:443 until the Cilium agent "
                 "has loaded its BPF maps — and the agent must reach the API server to learn the Services in the "
                 "first place. It cannot use 10.96.0.1 to get there: a chicken-and-egg problem."),
        fix=(f"set k8sServiceHost: {config.api_server_ip} and k8sServicePort: 6443 (the API server's real address, "
             f"{api}) in the cluster config, as `helm install cilium --set kubeProxyReplacement=true "
             f"--set k8sServiceHost={config.api_server_ip} --set k8sServicePort=6443` does"),
    )
