"""Decoding the Kubernetes protobuf request bodies that kubectl ≥ 1.32 sends for
``kubectl create deployment|service|namespace|ingress|configmap|secret|serviceaccount|job|cronjob``.

client-go 1.32 typed clients prefer protobuf (kubernetes PR #125314) and never fall back to
JSON after a 415, so the server has to read them. The wire format: the magic ``k8s\\0``,
then a ``runtime.Unknown`` {1: typeMeta {1: apiVersion, 2: kind}, 2: raw, 3:
contentEncoding, 4: contentType}; ``raw`` is the kind's proto2 message from
``k8s.io/api/<group>/<version>/generated.proto``. The proto field names are the JSON names.

Only the messages the generators produce are in the table below (field numbers never change
upstream). Go marshals non-pointer zero values (``generateName: ""``, ``hostNetwork: false``),
so zero values are dropped except for the pointer fields in ``KEEP_ZERO``. An unknown field
number is an error naming the message and number, never silently dropped.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any


class ProtoError(ValueError):
    def __init__(self, message: str, unsupported: bool = False) -> None:
        super().__init__(message)
        self.unsupported = unsupported


MAGIC = b"k8s\x00"

# message → {field number: (json name, type)}; type: string int bool bytes time quantity intstr
# raw, "m:<Message>" (message), "r:<type>" (repeated), "map:<value type>", "inline:<Message>".
S = "string"
MESSAGES: dict[str, dict[int, tuple[str, str]]] = {
    "TypeMeta": {1: ("apiVersion", S), 2: ("kind", S)},
    "Unknown": {1: ("typeMeta", "m:TypeMeta"), 2: ("raw", "bytes"), 3: ("contentEncoding", S),
                4: ("contentType", S)},
    "ObjectMeta": {1: ("name", S), 2: ("generateName", S), 3: ("namespace", S), 4: ("selfLink", S), 5: ("uid", S),
                   6: ("resourceVersion", S), 7: ("generation", "int"), 8: ("creationTimestamp", "time"),
                   9: ("deletionTimestamp", "time"), 10: ("deletionGracePeriodSeconds", "int"),
                   11: ("labels", "map:string"), 12: ("annotations", "map:string"),
                   13: ("ownerReferences", "r:m:OwnerReference"), 14: ("finalizers", "r:string"),
                   17: ("managedFields", "r:m:Skip")},
    "OwnerReference": {1: ("kind", S), 3: ("name", S), 4: ("uid", S), 5: ("apiVersion", S), 6: ("controller", "bool"),
                       7: ("blockOwnerDeletion", "bool")},
    "Skip": {},
    "LabelSelector": {1: ("matchLabels", "map:string"), 2: ("matchExpressions", "r:m:LabelSelectorRequirement")},
    "LabelSelectorRequirement": {1: ("key", S), 2: ("operator", S), 3: ("values", "r:string")},
    # apps/v1
    "Deployment": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:DeploymentSpec"), 3: ("status", "m:Skip")},
    "DeploymentSpec": {1: ("replicas", "int"), 2: ("selector", "m:LabelSelector"), 3: ("template", "m:PodTemplateSpec"),
                       4: ("strategy", "m:DeploymentStrategy"), 5: ("minReadySeconds", "int"),
                       6: ("revisionHistoryLimit", "int"), 7: ("paused", "bool"),
                       9: ("progressDeadlineSeconds", "int")},
    "DeploymentStrategy": {1: ("type", S), 2: ("rollingUpdate", "m:RollingUpdateDeployment")},
    "RollingUpdateDeployment": {1: ("maxUnavailable", "intstr"), 2: ("maxSurge", "intstr")},
    # core/v1
    "PodTemplateSpec": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:PodSpec")},
    "Pod": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:PodSpec"), 3: ("status", "m:Skip")},
    "PodSpec": {1: ("volumes", "r:m:Volume"), 2: ("containers", "r:m:Container"), 3: ("restartPolicy", S),
                4: ("terminationGracePeriodSeconds", "int"), 5: ("activeDeadlineSeconds", "int"), 6: ("dnsPolicy", S),
                7: ("nodeSelector", "map:string"), 8: ("serviceAccountName", S), 9: ("serviceAccount", S),
                10: ("nodeName", S), 11: ("hostNetwork", "bool"), 12: ("hostPID", "bool"), 13: ("hostIPC", "bool"),
                14: ("securityContext", "m:Any"), 15: ("imagePullSecrets", "r:m:LocalObjectReference"),
                16: ("hostname", S), 17: ("subdomain", S), 19: ("schedulerName", S),
                20: ("initContainers", "r:m:Container"), 21: ("automountServiceAccountToken", "bool"),
                24: ("priorityClassName", S), 25: ("priority", "int"), 30: ("enableServiceLinks", "bool")},
    "Container": {1: ("name", S), 2: ("image", S), 3: ("command", "r:string"), 4: ("args", "r:string"),
                  5: ("workingDir", S), 6: ("ports", "r:m:ContainerPort"), 7: ("env", "r:m:EnvVar"),
                  8: ("resources", "m:ResourceRequirements"), 13: ("terminationMessagePath", S),
                  14: ("imagePullPolicy", S), 16: ("stdin", "bool"), 17: ("stdinOnce", "bool"), 18: ("tty", "bool"),
                  20: ("terminationMessagePolicy", S)},
    "ContainerPort": {1: ("name", S), 2: ("hostPort", "int"), 3: ("containerPort", "int"), 4: ("protocol", S),
                      5: ("hostIP", S)},
    "EnvVar": {1: ("name", S), 2: ("value", S)},
    "ResourceRequirements": {1: ("limits", "map:quantity"), 2: ("requests", "map:quantity")},
    "LocalObjectReference": {1: ("name", S)},
    "Volume": {1: ("name", S)},
    "Any": {},
    "Service": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:ServiceSpec"), 3: ("status", "m:Skip")},
    "ServiceSpec": {1: ("ports", "r:m:ServicePort"), 2: ("selector", "map:string"), 3: ("clusterIP", S), 4: ("type", S),
                    5: ("externalIPs", "r:string"), 7: ("sessionAffinity", S), 8: ("loadBalancerIP", S),
                    9: ("loadBalancerSourceRanges", "r:string"), 10: ("externalName", S),
                    11: ("externalTrafficPolicy", S), 12: ("healthCheckNodePort", "int"),
                    13: ("publishNotReadyAddresses", "bool"), 17: ("ipFamilyPolicy", S), 18: ("clusterIPs", "r:string"),
                    19: ("ipFamilies", "r:string"), 20: ("allocateLoadBalancerNodePorts", "bool"),
                    21: ("loadBalancerClass", S), 22: ("internalTrafficPolicy", S), 23: ("trafficDistribution", S)},
    "ServicePort": {1: ("name", S), 2: ("protocol", S), 3: ("port", "int"), 4: ("targetPort", "intstr"),
                    5: ("nodePort", "int"), 6: ("appProtocol", S)},
    "Namespace": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:NamespaceSpec"), 3: ("status", "m:Skip")},
    "NamespaceSpec": {1: ("finalizers", "r:string")},
    "ConfigMap": {1: ("metadata", "m:ObjectMeta"), 2: ("data", "map:string"), 3: ("binaryData", "map:bytes"),
                  4: ("immutable", "bool")},
    "Secret": {1: ("metadata", "m:ObjectMeta"), 2: ("data", "map:bytes"), 3: ("type", S),
               4: ("stringData", "map:string"),
               5: ("immutable", "bool")},
    "ServiceAccount": {1: ("metadata", "m:ObjectMeta"), 2: ("secrets", "r:m:Skip"),
                       3: ("imagePullSecrets", "r:m:LocalObjectReference"),
                       4: ("automountServiceAccountToken", "bool")},
    # networking/v1
    "Ingress": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:IngressSpec"), 3: ("status", "m:Skip")},
    "IngressSpec": {1: ("defaultBackend", "m:IngressBackend"), 2: ("tls", "r:m:IngressTLS"),
                    3: ("rules", "r:m:IngressRule"), 4: ("ingressClassName", S)},
    "IngressRule": {1: ("host", S), 2: ("", "inline:IngressRuleValue")},
    "IngressRuleValue": {1: ("http", "m:HTTPIngressRuleValue")},
    "HTTPIngressRuleValue": {1: ("paths", "r:m:HTTPIngressPath")},
    "HTTPIngressPath": {1: ("path", S), 2: ("backend", "m:IngressBackend"), 3: ("pathType", S)},
    "IngressBackend": {3: ("resource", "m:Any"), 4: ("service", "m:IngressServiceBackend")},
    "IngressServiceBackend": {1: ("name", S), 2: ("port", "m:ServiceBackendPort")},
    "ServiceBackendPort": {1: ("name", S), 2: ("number", "int")},
    "IngressTLS": {1: ("hosts", "r:string"), 2: ("secretName", S)},
    # batch/v1
    "Job": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:JobSpec"), 3: ("status", "m:Skip")},
    "JobSpec": {1: ("parallelism", "int"), 2: ("completions", "int"), 3: ("activeDeadlineSeconds", "int"),
                4: ("selector", "m:LabelSelector"), 5: ("manualSelector", "bool"), 6: ("template", "m:PodTemplateSpec"),
                7: ("backoffLimit", "int"), 8: ("ttlSecondsAfterFinished", "int"), 9: ("completionMode", S),
                10: ("suspend", "bool")},
    "CronJob": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:CronJobSpec"), 3: ("status", "m:Skip")},
    "CronJobSpec": {1: ("schedule", S), 2: ("startingDeadlineSeconds", "int"), 3: ("concurrencyPolicy", S),
                    4: ("suspend", "bool"), 5: ("jobTemplate", "m:JobTemplateSpec"),
                    6: ("successfulJobsHistoryLimit", "int"), 7: ("failedJobsHistoryLimit", "int"), 8: ("timeZone", S)},
    "JobTemplateSpec": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:JobSpec")},
}

# Pointer fields in Go: a zero value here was set on purpose.
KEEP_ZERO = {("DeploymentSpec", "replicas"), ("ServicePort", "port"), ("ContainerPort", "containerPort"),
             ("ServiceBackendPort", "number"), ("JobSpec", "parallelism"), ("JobSpec", "completions"),
             ("JobSpec", "backoffLimit"), ("CronJobSpec", "startingDeadlineSeconds"), ("CronJobSpec", "suspend"),
             ("CronJobSpec", "successfulJobsHistoryLimit"), ("CronJobSpec", "failedJobsHistoryLimit"),
             ("CronJobSpec", "timeZone")}
# Messages whose content is not decoded (status, managedFields, ...): accepted and ignored.
OPAQUE = {"Skip", "Any"}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtoError("truncated protobuf varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise ProtoError("protobuf varint too long")


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    out = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ProtoError("truncated protobuf field")
            value, pos = data[pos:pos + length], pos + length
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ProtoError(f"unsupported protobuf wire type {wire}")
        out.append((number, wire, value))
    return out


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _scalar(typ: str, value: Any) -> Any:
    if typ == S:
        return bytes(value).decode("utf-8")
    if typ == "int":
        return _signed(int(value))
    if typ == "bool":
        return bool(value)
    if typ == "bytes":
        return base64.b64encode(bytes(value)).decode()
    if typ == "quantity":
        return next((_scalar(S, v) for n, _w, v in _fields(value) if n == 1), "")
    if typ == "time":
        secs = next((_signed(v) for n, _w, v in _fields(value) if n == 1), 0)
        if not secs:
            return None
        return datetime.fromtimestamp(secs, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if typ == "intstr":
        f = {n: v for n, _w, v in _fields(value)}
        if f.get(1, 0) == 1:
            return _scalar(S, f.get(3, b""))
        return _signed(f.get(2, 0))
    raise ProtoError(f"unknown scalar type {typ}")


def decode_message(name: str, data: bytes) -> dict[str, Any]:
    schema = MESSAGES.get(name)
    if schema is None:
        raise ProtoError(f"protobuf message {name} is not supported by knetsim", unsupported=True)
    if name in OPAQUE:
        return {}
    out: dict[str, Any] = {}
    for number, _wire, value in _fields(data):
        entry = schema.get(number)
        if entry is None:
            raise ProtoError(f"protobuf field {number} of {name} is not supported by knetsim", unsupported=True)
        json_name, typ = entry
        repeated = typ.startswith("r:")
        base = typ[2:] if repeated else typ
        if base.startswith("inline:"):
            out.update(decode_message(base[7:], value))
            continue
        if base.startswith("map:"):
            entry_fields = {n: v for n, _w, v in _fields(value)}
            key = _scalar(S, entry_fields.get(1, b""))
            vtype = base[4:]
            raw = entry_fields.get(2, b"")
            out.setdefault(json_name, {})[key] = _scalar(vtype if vtype != "string" else S, raw)
            continue
        decoded = decode_message(base[2:], value) if base.startswith("m:") else _scalar(base, value)
        if repeated:
            out.setdefault(json_name, []).append(decoded)
        else:
            out[json_name] = decoded
    for key in list(out):
        v = out[key]
        if (name, key) in KEEP_ZERO:
            continue
        if v is None or v == "" or v is False or v == {} or v == [] or (type(v) is int and v == 0):
            del out[key]
    return out


API_GROUPS = {"Deployment": "apps/v1", "Ingress": "networking.k8s.io/v1", "Job": "batch/v1", "CronJob": "batch/v1"}


def decode(body: bytes) -> dict[str, Any]:
    """A ``application/vnd.kubernetes.protobuf`` request body as the JSON object it stands for."""
    if not body.startswith(MAGIC):
        raise ProtoError("protobuf body does not start with the k8s magic prefix")
    envelope = decode_message("Unknown", body[len(MAGIC):])
    type_meta = envelope.get("typeMeta") or {}
    kind = type_meta.get("kind") or ""
    raw = base64.b64decode(envelope.get("raw") or "")
    if kind not in MESSAGES or kind in OPAQUE:
        raise ProtoError(f"protobuf bodies of kind {kind!r} are not supported by knetsim; "
                         "send JSON instead (kubectl create ... --dry-run=client -o yaml | kubectl apply -f -)",
                         unsupported=True)
    obj = decode_message(kind, raw)
    obj.pop("status", None)
    return {"apiVersion": type_meta.get("apiVersion") or API_GROUPS.get(kind, "v1"), "kind": kind, **obj}
