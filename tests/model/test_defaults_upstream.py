"""Defaulting against kube-apiserver's: a minimal object of each kind knetsim serves goes in, the admitted
object has what the API server would store.

The expected values restate upstream's defaulters (kubernetes/kubernetes, v1.35):
``pkg/apis/core/v1/defaults.go`` and ``zz_generated.defaults.go`` (containers, probes, lifecycle hooks,
volumes, fieldRefs, Service, Endpoints), ``pkg/apis/apps/v1/defaults.go``, ``pkg/apis/batch/v1/defaults.go``,
``pkg/apis/networking/v1/defaults.go`` and ``pkg/apis/discovery/v1/defaults.go``. Issue 34 found the gaps:
kubectl 1.32's ``describe deploy`` panics on a grpc probe stored without ``service``.
"""

from __future__ import annotations

from typing import Any

import pytest

from knetsim.model import admission

TEMPLATE_META = {"labels": {"app": "web"}}
SELECTOR = {"matchLabels": {"app": "web"}}
CONTAINER_DEFAULTS = {"resources": {}, "terminationMessagePath": "/dev/termination-log",
                      "terminationMessagePolicy": "File"}
# SetDefaults_PodSpec: what every pod template gets (and a Pod, which also gets SetDefaults_Pod's). knetsim also
# writes SetDefaults_Pod's enableServiceLinks into templates (model.defaults says why).
POD_SPEC_DEFAULTS = {"dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                     "securityContext": {}, "terminationGracePeriodSeconds": 30, "enableServiceLinks": True}
PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}


def admitted(body: dict[str, Any]) -> dict[str, Any]:
    obj, _decoded, _kind = admission.admit(body)
    return obj


def template(spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": TEMPLATE_META,
            "spec": spec or {"containers": [{"name": "web", "image": "registry.k8s.io/echoserver:2.5"}]}}


def defaulted_template(containers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"metadata": TEMPLATE_META, "spec": {
        **POD_SPEC_DEFAULTS,
        "containers": containers or [{"name": "web", "image": "registry.k8s.io/echoserver:2.5",
                                      "imagePullPolicy": "IfNotPresent", **CONTAINER_DEFAULTS}]}}


def test_a_pods_containers_probes_hooks_env_and_volumes_get_the_api_servers_defaults() -> None:
    pod = admitted({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": {
        "initContainers": [{"name": "init", "image": "busybox"}],
        "containers": [{
            "name": "web", "image": "nginx:1.27",
            "ports": [{"containerPort": 80}],
            "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
            "readinessProbe": {"grpc": {"port": 9555}},
            "livenessProbe": {"httpGet": {"port": 80}},
            "startupProbe": {"tcpSocket": {"port": 80}, "periodSeconds": 2},
            "lifecycle": {"preStop": {"httpGet": {"port": 80}},
                          "postStart": {"httpGet": {"port": 80, "path": "/started"}}},
            "resources": {"limits": {"cpu": "100m"}}}],
        "volumes": [
            {"name": "config", "configMap": {"name": "web"}},
            {"name": "secret", "secret": {"secretName": "web"}},
            {"name": "info", "downwardAPI": {"items": [{"path": "labels",
                                                        "fieldRef": {"fieldPath": "metadata.labels"}}]}},
            {"name": "all", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token"}},
                {"downwardAPI": {"items": [{"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}]}}]}},
            {"name": "host", "hostPath": {"path": "/var/log"}},
            {"name": "scratch"}]}})
    spec = pod["spec"]
    assert {k: spec[k] for k in POD_SPEC_DEFAULTS} == POD_SPEC_DEFAULTS
    assert spec["initContainers"] == [{"name": "init", "image": "busybox", "imagePullPolicy": "Always",
                                       **CONTAINER_DEFAULTS}]
    assert spec["containers"] == [{
        "name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": 80, "protocol": "TCP"}],
        "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}}],
        "readinessProbe": {"grpc": {"port": 9555, "service": ""}, **PROBE_DEFAULTS},
        "livenessProbe": {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, **PROBE_DEFAULTS},
        "startupProbe": {"tcpSocket": {"port": 80}, **PROBE_DEFAULTS, "periodSeconds": 2},
        "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}},
                      "postStart": {"httpGet": {"port": 80, "path": "/started", "scheme": "HTTP"}}},
        # A limit without a request asks for as much as it limits (SetDefaults_Pod).
        "resources": {"limits": {"cpu": "100m"}, "requests": {"cpu": "100m"}},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}]
    assert spec["volumes"] == [
        {"name": "config", "configMap": {"name": "web", "defaultMode": 420}},
        {"name": "secret", "secret": {"secretName": "web", "defaultMode": 420}},
        {"name": "info", "downwardAPI": {"defaultMode": 420, "items": [
            {"path": "labels", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}}]}},
        {"name": "all", "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
            {"downwardAPI": {"items": [{"path": "ns", "fieldRef": {"apiVersion": "v1",
                                                                   "fieldPath": "metadata.namespace"}}]}}]}},
        {"name": "host", "hostPath": {"path": "/var/log", "type": ""}},
        {"name": "scratch", "emptyDir": {}}]


@pytest.mark.parametrize(("image", "policy"), [
    ("nginx", "Always"), ("nginx:latest", "Always"), ("nginx:1.27", "IfNotPresent"),
    ("localhost:5000/web", "Always"), ("localhost:5000/web:v2", "IfNotPresent"),
    ("nginx@sha256:" + "a" * 64, "IfNotPresent"), ("nginx:latest@sha256:" + "a" * 64, "Always")])
def test_the_image_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    pod = admitted({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                    "spec": {"containers": [{"name": "c", "image": image}]}})
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_ephemeral_containers_and_host_network_ports_are_defaulted_on_a_pod() -> None:
    # Ephemeral containers come through the pod's /ephemeralcontainers subresource (a create refuses them); the
    # registry defaults the whole pod it takes from there, as here.
    from knetsim.model.strategy import apply_defaults

    pod = apply_defaults({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "hostNetwork": True,
        "containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 8080}]}],
        "ephemeralContainers": [{"name": "debugger", "image": "busybox:1.36",
                                 "targetContainerName": "c"}]}})
    assert pod["spec"]["containers"][0]["ports"] == [{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}]
    assert pod["spec"]["ephemeralContainers"] == [{"name": "debugger", "image": "busybox:1.36",
                                                   "targetContainerName": "c", "imagePullPolicy": "IfNotPresent",
                                                   **CONTAINER_DEFAULTS}]


GRPC_CONTAINER = {"name": "server", "image": "us-central1-docker.pkg.dev/google-samples/microservices-demo/"
                  "adservice:v0.10.2", "ports": [{"containerPort": 9555}],
                  "readinessProbe": {"grpc": {"port": 9555}, "initialDelaySeconds": 20, "periodSeconds": 15},
                  "livenessProbe": {"grpc": {"port": 9555}, "initialDelaySeconds": 20, "periodSeconds": 15}}

# kind, the spec sent (besides selector and template), the spec stored (besides selector and template).
WORKLOADS = [
    ("Deployment", {}, {"replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                        "strategy": {"type": "RollingUpdate",
                                     "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}}),
    ("Deployment", {"strategy": {"type": "Recreate"}},
     {"replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600, "strategy": {"type": "Recreate"}}),
    ("ReplicaSet", {}, {"replicas": 1}),
    ("DaemonSet", {}, {"revisionHistoryLimit": 10, "updateStrategy": {
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}}),
    ("DaemonSet", {"updateStrategy": {"rollingUpdate": {"maxUnavailable": "10%"}}},
     {"revisionHistoryLimit": 10, "updateStrategy": {
         "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%", "maxSurge": 0}}}),
    ("StatefulSet", {"serviceName": "web"}, {
        "serviceName": "web", "replicas": 1, "podManagementPolicy": "OrderedReady", "revisionHistoryLimit": 10,
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}}),
    # A rolling update named without its parameters stays so (SetDefaults_StatefulSet adds them only with the type).
    ("StatefulSet", {"serviceName": "web", "updateStrategy": {"type": "RollingUpdate"}}, {
        "serviceName": "web", "replicas": 1, "podManagementPolicy": "OrderedReady", "revisionHistoryLimit": 10,
        "updateStrategy": {"type": "RollingUpdate"},
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}}),
]


@pytest.mark.parametrize(("kind", "sent", "stored"), WORKLOADS,
                         ids=[f"{w[0]}:{','.join(w[1]) or 'minimal'}" for w in WORKLOADS])
def test_workloads_get_the_api_servers_defaults(kind: str, sent: dict, stored: dict) -> None:
    obj = admitted({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "web"},
                    "spec": {"selector": SELECTOR, "template": template(), **sent}})
    spec = dict(obj["spec"])
    assert spec.pop("selector") == SELECTOR
    assert spec.pop("template") == defaulted_template()
    assert spec == stored


def test_a_grpc_probe_in_a_template_is_stored_with_its_service() -> None:
    obj = admitted({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "adservice"},
                    "spec": {"selector": SELECTOR,
                             "template": template({"containers": [GRPC_CONTAINER]})}})
    container = obj["spec"]["template"]["spec"]["containers"][0]
    probe = {"grpc": {"port": 9555, "service": ""}, "initialDelaySeconds": 20, **PROBE_DEFAULTS, "periodSeconds": 15}
    assert (container["readinessProbe"], container["livenessProbe"]) == (probe, probe)


def test_statefulset_claim_templates_are_pending_filesystem_claims() -> None:
    obj = admitted({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"}, "spec": {
        "selector": SELECTOR, "template": template(), "serviceName": "db",
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}})
    assert obj["spec"]["volumeClaimTemplates"] == [{"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"},
        "status": {"phase": "Pending"}}]


JOB_DEFAULTS = {"completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
                "suspend": False, "podReplacementPolicy": "TerminatingOrFailed", "manualSelector": False}
JOBS = [
    ({}, JOB_DEFAULTS),
    # A work queue: parallelism alone leaves completions unset.
    ({"parallelism": 3}, {**JOB_DEFAULTS, "parallelism": 3, "completions": None}),
    ({"completions": 5}, {**JOB_DEFAULTS, "completions": 5}),
    ({"podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
      "template": template({"restartPolicy": "Never", "containers": [
          {"name": "web", "image": "registry.k8s.io/echoserver:2.5"}]})},
     {**JOB_DEFAULTS, "podReplacementPolicy": "Failed", "podFailurePolicy": {
         "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}}),
    ({"completionMode": "Indexed", "completions": 3, "backoffLimitPerIndex": 1,
      "template": template({"restartPolicy": "Never", "containers": [
          {"name": "web", "image": "registry.k8s.io/echoserver:2.5"}]})},
     {**JOB_DEFAULTS, "completions": 3, "completionMode": "Indexed", "backoffLimitPerIndex": 1,
      "backoffLimit": 2147483647}),
]


@pytest.mark.parametrize(("sent", "stored"), JOBS, ids=["minimal", "work-queue", "completions",
                                                        "pod-failure-policy", "backoff-per-index"])
def test_jobs_get_the_api_servers_defaults(sent: dict, stored: dict) -> None:
    body = {"template": template({"restartPolicy": "OnFailure", "containers": [
        {"name": "web", "image": "registry.k8s.io/echoserver:2.5"}]}), **sent}
    job = admitted({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "work"}, "spec": body})
    spec = {k: v for k, v in job["spec"].items() if k not in ("template", "selector")}
    assert spec == {k: v for k, v in stored.items() if v is not None}
    # A Job without labels takes its template's (SetDefaults_Job).
    assert job["metadata"]["labels"] == {"app": "web"}


def test_a_cronjobs_job_template_keeps_its_job_spec_as_sent() -> None:
    cron = admitted({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"}, "spec": {
        "schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template({
            "restartPolicy": "OnFailure",
            "containers": [{"name": "web", "image": "registry.k8s.io/echoserver:2.5"}]})}}}})
    spec = cron["spec"]
    assert {k: spec[k] for k in ("concurrencyPolicy", "suspend", "successfulJobsHistoryLimit",
                                 "failedJobsHistoryLimit")} == {
        "concurrencyPolicy": "Allow", "suspend": False, "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1}
    # JobTemplateSpec is not a Job: only its pod template is defaulted; the Job made from it gets the rest.
    job_spec = spec["jobTemplate"]["spec"]
    assert set(job_spec) == {"template"}
    assert job_spec["template"]["spec"]["dnsPolicy"] == "ClusterFirst"


def service(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": spec}
    if status is not None:
        body["status"] = status
    return body


SERVICES = [
    ({"selector": {"app": "web"}, "ports": [{"port": 80}]},
     {"selector": {"app": "web"}, "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}], "type": "ClusterIP",
      "sessionAffinity": "None", "internalTrafficPolicy": "Cluster"}),
    # A ClusterIP Service with external IPs is reachable from outside: it gets an external traffic policy.
    ({"ports": [{"port": 80, "targetPort": "http"}], "externalIPs": ["192.0.2.10"]},
     {"ports": [{"port": 80, "protocol": "TCP", "targetPort": "http"}], "externalIPs": ["192.0.2.10"],
      "type": "ClusterIP", "sessionAffinity": "None", "externalTrafficPolicy": "Cluster",
      "internalTrafficPolicy": "Cluster"}),
    # A session affinity config with affinity None is dropped, not refused.
    ({"ports": [{"port": 80}], "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 60}}},
     {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}], "type": "ClusterIP", "sessionAffinity": "None",
      "internalTrafficPolicy": "Cluster"}),
    ({"ports": [{"port": 80}], "sessionAffinity": "ClientIP"},
     {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}], "type": "ClusterIP",
      "sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
      "internalTrafficPolicy": "Cluster"}),
    ({"type": "LoadBalancer", "ports": [{"port": 80, "protocol": "UDP"}]},
     {"type": "LoadBalancer", "ports": [{"port": 80, "protocol": "UDP", "targetPort": 80}], "sessionAffinity": "None",
      "externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster", "allocateLoadBalancerNodePorts": True}),
    ({"type": "ExternalName", "externalName": "db.example.com"},
     {"type": "ExternalName", "externalName": "db.example.com", "sessionAffinity": "None"}),
]


@pytest.mark.parametrize(("sent", "stored"), SERVICES,
                         ids=["cluster-ip", "external-ips", "affinity-none", "affinity-client-ip", "load-balancer",
                              "external-name"])
def test_services_get_the_api_servers_defaults(sent: dict, stored: dict) -> None:
    assert admitted(service(sent))["spec"] == stored


def test_a_load_balancer_address_without_a_mode_is_a_vip() -> None:
    obj = admitted(service({"type": "LoadBalancer", "ports": [{"port": 80}]},
                           {"loadBalancer": {"ingress": [{"ip": "172.18.255.200"}, {"hostname": "lb.example"}]}}))
    assert obj["status"]["loadBalancer"]["ingress"] == [{"ip": "172.18.255.200", "ipMode": "VIP"},
                                                       {"hostname": "lb.example"}]


def test_endpoint_ports_are_tcp_and_slice_ports_unnamed_unless_said() -> None:
    endpoints = admitted({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "db"},
                          "subsets": [{"addresses": [{"ip": "192.0.2.1"}], "ports": [{"port": 5432}]}]})
    assert endpoints["subsets"][0]["ports"] == [{"port": 5432, "protocol": "TCP"}]
    slice_ = admitted({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "db-1"},
                       "addressType": "IPv4", "endpoints": [{"addresses": ["192.0.2.1"]}],
                       "ports": [{"port": 5432}]})
    assert slice_["ports"] == [{"port": 5432, "name": "", "protocol": "TCP"}]


def test_networking_kinds_get_the_api_servers_defaults() -> None:
    policy = admitted({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "p"},
                       "spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53, "protocol": "UDP"},
                                                                         {"port": 443}]}]}})
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert policy["spec"]["egress"][0]["ports"] == [{"port": 53, "protocol": "UDP"}, {"port": 443, "protocol": "TCP"}]
    ingress_class = admitted({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                              "metadata": {"name": "external"}, "spec": {
                                  "controller": "example.com/ingress",
                                  "parameters": {"apiGroup": "example.com", "kind": "Params", "name": "external"}}})
    assert ingress_class["spec"]["parameters"]["scope"] == "Cluster"


def test_defaulting_twice_changes_nothing() -> None:
    # The registry defaults again on every update: a second pass must find nothing left to fill in.
    from knetsim.model.strategy import apply_defaults

    once = admitted({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
                     "spec": {"selector": SELECTOR, "serviceName": "web",
                              "template": template({"containers": [GRPC_CONTAINER]})}})
    assert apply_defaults(once) == once
