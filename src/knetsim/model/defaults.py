"""Defaulting, as the API server applies it before validation.

One ``default_<kind>`` per kind, each filling in a decoded object in place; a kind's strategy
(``model.strategy``) names its defaulter. The source is kube-apiserver's scheme: the hand-written
``SetDefaults_*`` in ``pkg/apis/{core,apps,batch,networking,discovery}/v1/defaults.go`` and the generated
walk over nested types in each package's ``zz_generated.defaults.go`` (which also fills the ``+default=``
markers of the API types, e.g. a grpc probe's ``service: ""``). Every field those write for the kinds knetsim
serves is written here, so a stored object reads as kube-apiserver's would (kubectl's describe
dereferences some of them). Left out, as no simulated behaviour or printed column reads them: the
in-tree volume plugins' own defaults (iscsi, rbd, azureDisk, scaleIO), resource quantities' rounding to
milli-units, and pod-level resources (PodLevelResources).
"""

from __future__ import annotations

import base64
from typing import Any

from .validation import externally_accessible

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def _ports_protocol(ports: Any) -> None:
    for port in ports or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


def _dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _http_get(action: Any) -> None:
    # SetDefaults_HTTPGetAction: a probe's and a lifecycle hook's httpGet alike.
    if (get := _dict(action)) is not None:
        get.setdefault("path", "/")
        get.setdefault("scheme", "HTTP")


def _probe(value: Any) -> None:
    probe = _dict(value)
    if probe is None:
        return
    # SetDefaults_Probe, then the handler's own: httpGet's path and scheme, and grpc's service, which the
    # type declares `+default=""` (zz_generated.defaults.go fills it; kubectl describe dereferences it).
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    _http_get(probe.get("httpGet"))
    if (grpc := _dict(probe.get("grpc"))) is not None:
        grpc.setdefault("service", "")


def _field_ref(value: Any) -> None:
    # SetDefaults_ObjectFieldSelector: a fieldRef (env valueFrom, downward API items) names its API version.
    if (ref := _dict(value)) is not None:
        ref.setdefault("apiVersion", "v1")


def _image_pull_policy(image: str) -> str:
    # SetDefaults_Container: the tag "latest" (also the implied one: neither tag nor digest) means Always,
    # any other tag or a bare digest IfNotPresent (k8s.io/kubernetes/pkg/util/parsers.ParseImageName).
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.rpartition(":")[2] if ":" in last else ""
    if not tag and not digest:
        tag = "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def _container(container: dict[str, Any]) -> None:
    """What zz_generated.defaults.go does for each container, init container and ephemeral container."""
    if isinstance(container.get("image"), str):
        container.setdefault("imagePullPolicy", _image_pull_policy(container["image"]))
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    # Not a defaulter: ResourceRequirements is a struct, so the API server always writes it back.
    container.setdefault("resources", {})
    _ports_protocol(container.get("ports"))
    for env in _list(container.get("env")):
        value_from = _dict(env.get("valueFrom")) if isinstance(env, dict) else None
        if value_from is not None:
            _field_ref(value_from.get("fieldRef"))
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        _probe(container.get(probe))
    if (lifecycle := _dict(container.get("lifecycle"))) is not None:
        for hook in ("postStart", "preStop"):
            if (handler := _dict(lifecycle.get(hook))) is not None:
                _http_get(handler.get("httpGet"))


# The volume sources that carry a file mode, each 0644 (420) unless given (SetDefaults_*VolumeSource).
_MODE_SOURCES = ("secret", "configMap", "downwardAPI", "projected")
DEFAULT_MODE = 0o644
# The volume sources of v1.35's VolumeSource: a volume naming none of them is an emptyDir (SetDefaults_Volume).
_VOLUME_SOURCES = frozenset({
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
    "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI", "fc",
    "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
    "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image"})


def _volume(volume: dict[str, Any]) -> None:
    if not any(key in volume for key in _VOLUME_SOURCES):
        volume["emptyDir"] = {}
    if (host_path := _dict(volume.get("hostPath"))) is not None:
        host_path.setdefault("type", "")  # HostPathUnset
    for source in _MODE_SOURCES:
        if (found := _dict(volume.get(source))) is not None:
            found.setdefault("defaultMode", DEFAULT_MODE)
    if (downward := _dict(volume.get("downwardAPI"))) is not None:
        for item in _list(downward.get("items")):
            if isinstance(item, dict):
                _field_ref(item.get("fieldRef"))
    if (projected := _dict(volume.get("projected"))) is not None:
        for source in _list(projected.get("sources")):
            if not isinstance(source, dict):
                continue
            for item in _list((_dict(source.get("downwardAPI")) or {}).get("items")):
                if isinstance(item, dict):
                    _field_ref(item.get("fieldRef"))
            if (token := _dict(source.get("serviceAccountToken"))) is not None:
                token.setdefault("expirationSeconds", 3600)  # SetDefaults_ServiceAccountTokenProjection
    claim = _dict((_dict(volume.get("ephemeral")) or {}).get("volumeClaimTemplate"))
    if claim is not None:
        _claim_spec(claim.get("spec"))


def _claim_spec(value: Any) -> None:
    # SetDefaults_PersistentVolumeClaimSpec.
    if (spec := _dict(value)) is not None:
        spec.setdefault("volumeMode", "Filesystem")


def default_pod_spec(spec: Any) -> None:
    """SetDefaults_PodSpec and what the generated defaulters do inside a PodSpec: what a Pod and every pod
    template (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob) get alike."""
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    # A deviation kept on purpose: upstream sets enableServiceLinks in SetDefaults_Pod only, so a workload's
    # template has none; knetsim's pod-template-hash (and so every controller-made pod name in the docs and
    # tests) is computed over the template with it, and the field changes no behaviour of a template.
    spec.setdefault("enableServiceLinks", True)
    for volume in _list(spec.get("volumes")):
        if isinstance(volume, dict):
            _volume(volume)
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in _list(spec.get(key)):
            if isinstance(container, dict):
                _container(container)


def _requests_from_limits(container: dict[str, Any]) -> None:
    resources = _dict(container.get("resources"))
    limits = _dict(resources.get("limits")) if resources is not None else None
    if resources is None or not limits:
        return
    requests = resources.get("requests")
    if not isinstance(requests, dict):
        requests = resources["requests"] = {}
    for name, value in limits.items():
        requests.setdefault(name, value)


MIRROR_ANNOTATION = "kubernetes.io/config.mirror"  # a static pod's mirror, which the kubelet writes
DEFAULT_ACCOUNT = "default"  # the account a pod that names none runs as, which every namespace has


def default_service_account(namespace: str) -> dict[str, Any]:
    """The service account controller's ``default`` of a namespace (the live controller and the offline build)."""
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT_ACCOUNT, "namespace": namespace}}


def account_not_found(namespace: str, account: str) -> str:
    """The ServiceAccount admission plugin's words for a pod whose account does not exist."""
    return f'error looking up service account {namespace}/{account}: serviceaccount "{account}" not found'


def admit_service_account(pod: dict[str, Any]) -> None:
    """The ServiceAccount admission plugin's default on a new pod (plugin/pkg/admission/serviceaccount/admission.go):
    a pod that names no account runs as ``default``; a mirror pod is left alone. Whether the account exists is the
    registry's to check (apiserver/registry.py, PodStorage); an update is never given one."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    _account_alias(spec)
    if not spec.get("serviceAccountName") and MIRROR_ANNOTATION not in \
            ((pod.get("metadata") or {}).get("annotations") or {}):
        spec["serviceAccountName"] = spec["serviceAccount"] = DEFAULT_ACCOUNT


def _account_alias(spec: dict[str, Any]) -> None:
    """``serviceAccount``, the deprecated alias every v1 pod spec carries (pkg/apis/core/v1/conversion.go: read when
    ``serviceAccountName`` is empty, written as its copy)."""
    name = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if name:
        spec["serviceAccountName"] = spec["serviceAccount"] = name


def default_pod(obj: dict[str, Any]) -> None:
    """SetObjectDefaults_Pod: the PodSpec's defaults, then SetDefaults_Pod's, which only a Pod gets."""
    spec = obj.get("spec")
    default_pod_spec(spec)
    if not isinstance(spec, dict):
        return
    _account_alias(spec)
    for key in ("containers", "initContainers"):
        for container in _list(spec.get(key)):
            if isinstance(container, dict):
                # A limit without a request asks for as much as it limits.
                _requests_from_limits(container)
                if spec.get("hostNetwork") is True:
                    # defaultHostNetworkPorts: with the node's network, a container port is a host port.
                    for port in _list(container.get("ports")):
                        if isinstance(port, dict) and not port.get("hostPort") and port.get("containerPort"):
                            port["hostPort"] = port["containerPort"]


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
    # SetDefaults_StatefulSet (pkg/apis/apps/v1/defaults.go).
    spec = _template(obj)
    if spec is None:
        return
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("revisionHistoryLimit", 10)
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
            strategy.setdefault("rollingUpdate", {})
        # Only a rollingUpdate that is there gets its partition: {type: RollingUpdate} alone stays as sent.
        if strategy["type"] == "RollingUpdate" and isinstance(strategy.get("rollingUpdate"), dict):
            strategy["rollingUpdate"].setdefault("partition", 0)
    # StatefulSetAutoDeletePVC (GA in v1.32): claims are kept when the set is deleted or scaled down.
    retention = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
    if isinstance(retention, dict):
        retention.setdefault("whenDeleted", "Retain")
        retention.setdefault("whenScaled", "Retain")
    for claim in _list(spec.get("volumeClaimTemplates")):
        if isinstance(claim, dict):
            # SetDefaults_PersistentVolumeClaim and its spec's: a template claim reads Pending, Filesystem.
            _claim_spec(claim.setdefault("spec", {}))
            status = claim.setdefault("status", {})
            if isinstance(status, dict):
                status.setdefault("phase", "Pending")


def default_daemonset(obj: dict[str, Any]) -> None:
    # SetDefaults_DaemonSet: a rolling update's fields are filled in whether or not rollingUpdate was sent.
    spec = _template(obj)
    if spec is None:
        return
    spec.setdefault("revisionHistoryLimit", 10)
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("maxUnavailable", 1)
                rolling.setdefault("maxSurge", 0)


# batch/v1 JobSpec.backoffLimit when backoffLimitPerIndex is set: math.MaxInt32.
MAX_INT32 = 2**31 - 1


def default_job(obj: dict[str, Any]) -> None:
    # SetDefaults_Job (pkg/apis/batch/v1/defaults.go, v1.35).
    spec = _template(obj)
    if spec is None:
        return
    # A Job without either is one pod run once; parallelism alone is a work queue (completions stay unset).
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6)
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    meta = obj.setdefault("metadata", {})
    if isinstance(template_labels, dict) and template_labels and not meta.get("labels"):
        meta["labels"] = dict(template_labels)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    failure_policy = _dict(spec.get("podFailurePolicy"))
    for rule in _list((failure_policy or {}).get("rules")):
        for pattern in _list((_dict(rule) or {}).get("onPodConditions")):
            if isinstance(pattern, dict):
                pattern.setdefault("status", "True")
    # JobPodReplacementPolicy (GA in v1.34): with a pod failure policy, a pod is replaced once it has failed.
    spec.setdefault("podReplacementPolicy", "Failed" if failure_policy is not None else "TerminatingOrFailed")
    spec.setdefault("manualSelector", False)


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
    # SetDefaults_Service. ServiceSpec is a struct, not a pointer: a Service sent without spec is defaulted
    # like an empty one.
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        # Dropped, not refused: validation's "must not be set when session affinity is None" is never reached
        # through v1.
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        config = spec.setdefault("sessionAffinityConfig", {})
        if isinstance(config, dict):
            client_ip = config.setdefault("clientIP", {})
            if isinstance(client_ip, dict):
                client_ip.setdefault("timeoutSeconds", 10800)
    for port in spec.get("ports") or []:
        if not isinstance(port, dict):
            continue
        port.setdefault("protocol", "TCP")
        # An unset (0 or "") targetPort takes the port's value.
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port", 0)
    if externally_accessible(spec):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if spec["type"] in ("ClusterIP", "NodePort", "LoadBalancer"):
        spec.setdefault("internalTrafficPolicy", "Cluster")
    if spec["type"] == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
        # A load balancer address without a mode is a VIP (traffic to it stays on the node).
        load_balancer = _dict((_dict(obj.get("status")) or {}).get("loadBalancer")) or {}
        for ingress in _list(load_balancer.get("ingress")):
            if isinstance(ingress, dict) and ingress.get("ip"):
                ingress.setdefault("ipMode", "VIP")


def default_endpoints(obj: dict[str, Any]) -> None:
    # SetDefaults_Endpoints: each subset's ports are TCP unless said otherwise.
    for subset in _list(obj.get("subsets")):
        if isinstance(subset, dict):
            _ports_protocol(subset.get("ports"))


def default_ingress_class(obj: dict[str, Any]) -> None:
    # SetDefaults_IngressClass (pkg/apis/networking/v1/defaults.go): parameters are cluster-scoped unless said.
    parameters = _dict((_dict(obj.get("spec")) or {}).get("parameters"))
    if parameters is not None:
        parameters.setdefault("scope", "Cluster")


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
    # SetDefaults_EndpointPort (pkg/apis/discovery/v1/defaults.go): an unnamed TCP port unless said.
    for port in _list(obj.get("ports")):
        if isinstance(port, dict):
            port.setdefault("name", "")
            port.setdefault("protocol", "TCP")


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
