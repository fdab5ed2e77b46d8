"""Defaulting, as the API server applies it before validation (``pkg/apis/*/v1/defaults.go``).

One ``default_<kind>`` per kind, each filling in a decoded object in place; a kind's strategy
(``model.strategy``) names its defaulter. Only fields that change networking behaviour or that
kubectl prints are filled in.
"""

from __future__ import annotations

import base64
from typing import Any

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def _ports_protocol(ports: Any) -> None:
    for port in ports or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


def _probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    if isinstance(probe.get("httpGet"), dict):
        probe["httpGet"].setdefault("scheme", "HTTP")
        probe["httpGet"].setdefault("path", "/")


def _image_pull_policy(image: str) -> str:
    # SetDefaults_Container: ":latest" or no tag means Always, a tag or digest IfNotPresent.
    name = image.rsplit("/", 1)[-1]
    if "@" in name:
        return "IfNotPresent"
    if ":" not in name or name.endswith(":latest"):
        return "Always"
    return "IfNotPresent"


def default_pod_spec(spec: Any) -> None:
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            if not isinstance(container, dict):
                continue
            if isinstance(container.get("image"), str):
                container.setdefault("imagePullPolicy", _image_pull_policy(container["image"]))
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            container.setdefault("resources", {})
            _ports_protocol(container.get("ports"))
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                _probe(container.get(probe))


def default_pod(obj: dict[str, Any]) -> None:
    default_pod_spec(obj.get("spec"))


def _template(obj: dict[str, Any]) -> dict[str, Any] | None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return None
    template = spec.get("template")
    if isinstance(template, dict):
        default_pod_spec(template.get("spec"))
    return spec


def default_deployment(obj: dict[str, Any]) -> None:
    spec = _template(obj)
    if spec is None:
        return
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    strategy = spec.setdefault("strategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            rolling.setdefault("maxUnavailable", "25%")
            rolling.setdefault("maxSurge", "25%")


def default_replicaset(obj: dict[str, Any]) -> None:
    spec = _template(obj)
    if spec is not None:
        spec.setdefault("replicas", 1)


def default_replication_controller(obj: dict[str, Any]) -> None:
    """SetDefaults_ReplicationController (pkg/apis/core/v1/defaults.go): an empty selector and empty object
    labels take the template's labels; one replica."""
    spec = _template(obj)
    if spec is None:
        return
    template = spec.get("template")
    labels = ((template.get("metadata") or {}).get("labels") if isinstance(template, dict) else None) or None
    if labels is not None:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = obj.setdefault("metadata", {})
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
    spec.setdefault("replicas", 1)


def default_statefulset(obj: dict[str, Any]) -> None:
    spec = _template(obj)
    if spec is None:
        return
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})


def default_daemonset(obj: dict[str, Any]) -> None:
    spec = _template(obj)
    if spec is None:
        return
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault(
        "updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    )


def default_job(obj: dict[str, Any]) -> None:
    spec = _template(obj)
    if spec is None:
        return
    spec.setdefault("completions", 1)
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")


def default_cronjob(obj: dict[str, Any]) -> None:
    # SetDefaults_CronJob; the job template's own JobSpec is not defaulted (only its pod template is,
    # as part of PodTemplateSpec), so a Job made from it gets the Job defaults when it is created.
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    template = spec.get("jobTemplate")
    if isinstance(template, dict):
        _template(template)


def default_service(obj: dict[str, Any]) -> None:
    # ServiceSpec is a struct, not a pointer: a Service sent without spec is defaulted like an empty one.
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["sessionAffinity"] == "ClientIP":
        config = spec.setdefault("sessionAffinityConfig", {})
        if isinstance(config, dict):
            client_ip = config.setdefault("clientIP", {})
            if isinstance(client_ip, dict):
                client_ip.setdefault("timeoutSeconds", 10800)
    for port in spec.get("ports") or []:
        if not isinstance(port, dict):
            continue
        port.setdefault("protocol", "TCP")
        # SetDefaults_Service: an unset (0 or "") targetPort takes the port's value.
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port", 0)
    if spec["type"] in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if spec["type"] == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
    if spec["type"] != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")


def default_network_policy(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    # SetDefaults_NetworkPolicy: Ingress always; Egress only when egress rules are present.
    if not spec.get("policyTypes"):
        types = ["Ingress"]
        if spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            if isinstance(rule, dict):
                _ports_protocol(rule.get("ports"))


def default_endpoint_slice(obj: dict[str, Any]) -> None:
    _ports_protocol(obj.get("ports"))


def default_secret(obj: dict[str, Any]) -> None:
    # Convert_v1_Secret_To_core_Secret: stringData is write-only; its values land in data (base64
    # on the wire), overriding data's keys, and the stored Secret has no stringData.
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data
    obj.setdefault("type", "Opaque")


def default_namespace(obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    name = meta.get("name")
    if isinstance(name, str) and name:
        labels = meta.get("labels")
        if not isinstance(labels, dict):
            labels = meta["labels"] = {}
        # The namespace controller sets this label and keeps it equal to the name (immutable).
        labels[NAMESPACE_NAME_LABEL] = name
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        spec.setdefault("finalizers", ["kubernetes"])
    status = obj.setdefault("status", {})
    if isinstance(status, dict):
        status.setdefault("phase", "Active")
