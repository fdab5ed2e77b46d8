"""The write path every kind shares, as kube-apiserver's generic registry store runs it.

    body ─ decode (typed; fieldValidation) ─ prepare (strategy) ─ default ─ namespace exists?
         ─ validate (the kind's rules, then ObjectMeta) ─ allocate (Services) ─ commit

One ``create`` and one ``update`` serve every kind; what differs per kind is a ``Strategy``
(``registry/*/strategy.go`` upstream): what a client may not set (status, system metadata), what
an update keeps from the old object, and what must be allocated before the write (ClusterIPs,
NodePorts). Decoding and validation are ``model.admission``'s, the same code the offline loader
runs, so nothing the types or the validators refuse is ever stored.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from typing import Any

from ..cluster.config import ClusterConfig
from ..cluster.naming import random_suffix
from ..ingress import webhook
from ..ingress.controllers import controllers_among
from ..model import admission
from ..model.admission import AdmissionError, FieldValidation, Kind
from ..model.fielderr import ErrorType, FieldError
from ..model.objects import DEFAULT_CLASS_ANNOTATION, Pod
from ..model.schema import json_type_name
from .allocation import AllocationFailed, ServiceAllocations, Txn
from .errors import ApiError, conflict, from_admission, invalid, qualified
from .resources import BY_KIND, Resource
from .store import Store, Stored, Write

# Kinds whose registry strategy sets metadata.generation (Services, Namespaces, ConfigMaps... have none).
GENERATION_KINDS = {"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod", "Ingress",
                    "IngressClass", "NetworkPolicy", "EndpointSlice"}
SYSTEM_METADATA = ("resourceVersion", "uid", "creationTimestamp", "deletionTimestamp", "managedFields", "selfLink")


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Target:
    """A parsed resource URL."""

    resource: Resource
    namespace: str
    name: str
    sub: str


@dataclass(frozen=True)
class WriteOptions:
    # An empty fieldValidation means Warn (kube-apiserver's default since v1.27); kubectl sends Strict.
    field_validation: FieldValidation = FieldValidation.WARN
    dry_run: bool = False
    # Who writes: a client ("user"), or a controller writing through the API as one would (Envoy Gateway
    # creating its proxy's Deployment and Service).
    managed: str = "user"


@dataclass
class Written:
    obj: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    changed: bool = True


@cache
def kind_of(r: Resource) -> Kind:
    """The admission kind of a served resource (its schema: built-in definition or CRD)."""
    kind = admission.resolve(r.api_version, r.kind)
    return kind if kind is not None else Kind(r.group, r.version, r.kind, info=r, namespaced=r.namespaced)


def storage_version(r: Resource) -> str:
    """The apiVersion objects of this kind are stored at (a CRD's storage version; conversion None)."""
    return BY_KIND[r.kind].api_version if r.kind in BY_KIND else r.api_version


def as_served(r: Resource, obj: dict[str, Any]) -> dict[str, Any]:
    """A stored object as the version the client asked for serves it."""
    if obj.get("apiVersion") == r.api_version or obj.get("kind") != r.kind:
        return obj
    return {**obj, "apiVersion": r.api_version}


def has_generation(r: Resource) -> bool:
    """Custom resources always count generations; built-in kinds where their strategy does."""
    return r.kind in GENERATION_KINDS or kind_of(r).crd is not None


def check_resource_version(r: Resource, name: str, want: Any, current: int) -> None:
    """An update's optimistic-concurrency precondition: malformed is 400, stale is 409."""
    if not want:
        return
    if not str(want).isdigit():
        raise ApiError(400, "BadRequest", f"invalid resource version: {want!r}")
    if int(want) != int(current):
        raise conflict(r, name)


# --- strategies ---------------------------------------------------------------------------


class Strategy:
    """The generic store's behaviour; kinds override what their upstream strategy changes."""

    @staticmethod
    def status_is_a_subresource(r: Resource) -> bool:
        """Kinds whose status only /status (the controllers) may write: the simulated built-in kinds, and
        custom kinds whose CRD enables the status subresource."""
        return (r.simulated and not r.crd and r.kind not in ("Node", "Namespace")) or "status" in r.subresources

    def prepare_for_create(self, r: Resource, obj: dict[str, Any]) -> None:
        # Clients cannot set the status of what the controllers manage (PrepareForCreate resets it).
        if self.status_is_a_subresource(r):
            obj.pop("status", None)

    def prepare_for_update(self, r: Resource, new: dict[str, Any], old: dict[str, Any]) -> None:
        # The main resource cannot change status: it is kept from the old object (/status changes it).
        if self.status_is_a_subresource(r) and "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        elif self.status_is_a_subresource(r):
            new.pop("status", None)

    def after_identity(self, obj: dict[str, Any]) -> None:
        """Runs once uid and creationTimestamp are set (a Job's selector is its uid)."""

    def admit_create(self, registry: Registry, r: Resource, obj: dict[str, Any]) -> None:
        """Mutating admission of a create, after defaulting and before validation (admission plugins)."""

    def validate_admission(self, registry: Registry, r: Resource, obj: dict[str, Any]) -> None:
        """Validating admission (webhooks) of a create or update, after validation; raises ApiError."""

    def allocate(self, registry: Registry, r: Resource, obj: dict[str, Any], old: dict[str, Any] | None) -> Txn | None:
        """Allocation that must succeed before the write (ClusterIPs, NodePorts); raises ApiError.
        The transaction is committed with the write or reverted when the write does not happen."""
        return None


class NamespaceStrategy(Strategy):
    def prepare_for_create(self, r: Resource, obj: dict[str, Any]) -> None:
        obj["status"] = {"phase": "Active"}


class PodStrategy(Strategy):
    def prepare_for_create(self, r: Resource, obj: dict[str, Any]) -> None:
        obj.pop("status", None)  # kubelet-era fields: the controllers fill status


class JobStrategy(Strategy):
    def after_identity(self, obj: dict[str, Any]) -> None:
        """The Job strategy's generateSelector: without ``manualSelector`` the selector is the Job's
        uid, and the template carries it (what ``kubectl logs job/NAME`` and describe select by)."""
        spec = obj.setdefault("spec", {})
        if spec.get("manualSelector"):
            return
        meta = obj["metadata"]
        uid, name = meta["uid"], meta["name"]
        template_meta = spec.setdefault("template", {}).setdefault("metadata", {})
        labels = template_meta.setdefault("labels", {})
        for key, value in (("batch.kubernetes.io/controller-uid", uid), ("batch.kubernetes.io/job-name", name),
                           ("controller-uid", uid), ("job-name", name)):
            labels.setdefault(key, value)
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}


class IngressStrategy(Strategy):
    def admit_create(self, registry: Registry, r: Resource, obj: dict[str, Any]) -> None:
        """The DefaultIngressClass admission plugin: an Ingress created without a class gets the default
        IngressClass; with several defaults, the newest (v1.35; older docs say the create fails). Only at
        creation: existing Ingresses keep what they have."""
        spec = obj.setdefault("spec", {})
        if spec.get("ingressClassName") or (obj["metadata"].get("annotations") or {}).get(
                "kubernetes.io/ingress.class"):
            return
        defaults = [s.body["metadata"] for s in registry.store.list("IngressClass")
                    if (s.body["metadata"].get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"]
        defaults.sort(key=lambda m: m["name"])
        defaults.sort(key=lambda m: m.get("creationTimestamp") or "", reverse=True)
        if defaults:
            spec["ingressClassName"] = defaults[0]["name"]

    def validate_admission(self, registry: Registry, r: Resource, obj: dict[str, Any]) -> None:
        """ingress-nginx's webhook (validate.nginx.ingress.kubernetes.io), as kind installs it with the
        controller: regex characters in an Exact/Prefix path are refused (strict-validate-path-type)."""
        bad = webhook.invalid_paths(obj)
        if not bad:
            return
        controllers = controllers_among(Pod.parse(s.body) for s in registry.store.list("Pod"))
        classes = {str(s.body["metadata"].get("name")): str((s.body.get("spec") or {}).get("controller") or "")
                   for s in registry.store.list("IngressClass")}
        ctl = webhook.claiming_controller(obj, classes, controllers)
        if ctl is not None and webhook.strict_path_validation(ctl):
            raise ApiError(400, "BadRequest", webhook.denial(bad))


class ServiceStrategy(Strategy):
    def prepare_for_update(self, r: Resource, new: dict[str, Any], old: dict[str, Any]) -> None:
        drop_type_dependent_fields(new, old)
        super().prepare_for_update(r, new, old)

    def allocate(self, registry: Registry, r: Resource, obj: dict[str, Any], old: dict[str, Any] | None) -> Txn | None:
        spec = obj.setdefault("spec", {})
        if old is not None:
            _keep_allocated(r, obj, spec, old)
        try:
            return registry.services.begin(obj, old)
        except AllocationFailed as exc:
            if exc.internal:
                raise ApiError(500, "InternalError", exc.internal, {"causes": [{"message": exc.internal}]}) from None
            raise invalid(r, obj["metadata"]["name"], exc.errors) from None


def _keep_allocated(r: Resource, obj: dict[str, Any], spec: dict[str, Any], old: dict[str, Any]) -> None:
    """patchAllocatedValues: allocated values a client left out are kept; a ClusterIP never changes."""
    ospec = old.get("spec") or {}
    if not spec.get("clusterIP") and ospec.get("clusterIP") and spec.get("type") != "ExternalName":
        spec["clusterIP"] = ospec["clusterIP"]
        spec["clusterIPs"] = ospec.get("clusterIPs") or [ospec["clusterIP"]]
    elif ospec.get("clusterIP") and spec.get("clusterIP") != ospec.get("clusterIP") and \
            spec.get("type") != "ExternalName" and ospec.get("type") != "ExternalName":
        raise invalid(r, obj["metadata"]["name"], [FieldError(
            "spec.clusterIPs[0]", ErrorType.INVALID, spec.get("clusterIP"), "may not change once set")])
    old_ports = {(p.get("port"), p.get("protocol", "TCP")): p.get("nodePort") for p in ospec.get("ports") or []}
    for p in spec.get("ports") or []:
        if not p.get("nodePort") and old_ports.get((p.get("port"), p.get("protocol", "TCP"))) and \
                spec.get("type") in ("NodePort", "LoadBalancer"):
            p["nodePort"] = old_ports[(p.get("port"), p.get("protocol", "TCP"))]
    if not spec.get("healthCheckNodePort") and ospec.get("healthCheckNodePort") and \
            spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local":
        spec["healthCheckNodePort"] = ospec["healthCheckNodePort"]
    if old.get("status") and spec.get("type") == ospec.get("type"):
        obj["status"] = copy.deepcopy(old["status"])


def drop_type_dependent_fields(body: dict[str, Any], old: dict[str, Any]) -> None:
    """The registry's dropTypeDependentFields: changing a Service's type clears the fields the new type
    may not have, as long as the client left them as they were (an explicit new value is still validated)."""
    spec, ospec = body.get("spec"), old.get("spec") or {}
    if not isinstance(spec, dict):
        return
    new_type, old_type = spec.get("type", "ClusterIP"), ospec.get("type", "ClusterIP")
    if new_type == old_type:
        return

    def unchanged(name: str) -> bool:
        return name in spec and spec.get(name) == ospec.get(name)

    if new_type == "ExternalName":
        for name in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"):
            if unchanged(name):
                spec.pop(name)
    external = new_type in ("NodePort", "LoadBalancer") or bool(spec.get("externalIPs"))
    if new_type not in ("NodePort", "LoadBalancer") or (
            new_type == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is False):
        old_node_ports = [p.get("nodePort") for p in ospec.get("ports") or []]
        ports = spec.get("ports") or []
        if [p.get("nodePort") for p in ports if isinstance(p, dict)][:len(old_node_ports)] == \
                old_node_ports[:len(ports)]:
            for p in ports:
                if isinstance(p, dict):
                    p.pop("nodePort", None)
    if not (new_type == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local") and \
            unchanged("healthCheckNodePort"):
        spec.pop("healthCheckNodePort")
    if not external and unchanged("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy")
    if new_type != "LoadBalancer":
        for name in ("allocateLoadBalancerNodePorts", "loadBalancerClass"):
            if unchanged(name):
                spec.pop(name)


STRATEGIES: dict[str, Strategy] = {"Service": ServiceStrategy(), "Job": JobStrategy(), "Pod": PodStrategy(),
                                   "Namespace": NamespaceStrategy(), "Ingress": IngressStrategy()}
GENERIC = Strategy()


# --- the store with its strategies ---------------------------------------------------------


class Registry:
    def __init__(self, store: Store, config: ClusterConfig) -> None:
        self.store = store
        self.config = config
        self.services = ServiceAllocations(store, config)

    @staticmethod
    def strategy(r: Resource) -> Strategy:
        return STRATEGIES.get(r.kind, GENERIC)

    def decode(self, r: Resource, body: Mapping[str, Any], opts: WriteOptions, *, patched: bool = False,
               name: str = "") -> admission.Decoded:
        try:
            return admission.decode(body, kind_of(r), opts.field_validation)
        except AdmissionError as exc:
            if patched and exc.message.count(": strict decoding error: ") == 1:
                # A patch's unknown fields are reported without the "cannot be handled as" frame.
                raise ApiError(400, "BadRequest", "strict decoding error: " +
                               exc.message.split(": strict decoding error: ", 1)[1]) from None
            raise from_admission(r, name, exc) from None

    def _validate(self, r: Resource, obj: dict[str, Any], old: dict[str, Any] | None = None,
                  subresource: str = "") -> None:
        errors = admission.validation_errors(obj, kind_of(r), old, subresource)
        if errors:
            raise invalid(r, str(obj["metadata"].get("name") or ""), errors)

    def _check_namespace(self, r: Resource, namespace: str) -> None:
        if r.namespaced and self.store.get(("Namespace", "", namespace)) is None:
            raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found',
                           {"name": namespace, "kind": "namespaces"})

    def create(self, t: Target, body: dict[str, Any], opts: WriteOptions) -> Written:
        r = t.resource
        _require_object_metadata(r, body)
        if body.get("kind", r.kind) != r.kind or body.get("apiVersion", r.api_version) != r.api_version:
            raise ApiError(400, "BadRequest", f"the API version in the data ({body.get('apiVersion')}) does not match "
                           f"the expected API version ({r.api_version})" if body.get("apiVersion") != r.api_version
                           else f"the kind in the data ({body.get('kind')}) does not match the expected kind "
                                f"({r.kind})")
        decoded = self.decode(r, {**body, "kind": r.kind, "apiVersion": r.api_version}, opts,
                              name=str((body.get("metadata") or {}).get("name") or ""))
        obj = decoded.obj
        meta = obj.setdefault("metadata", {})
        if r.namespaced:
            if t.namespace and meta.get("namespace") and meta["namespace"] != t.namespace:
                raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the "
                                                  "namespace sent on the request")
            meta["namespace"] = meta.get("namespace") or t.namespace or "default"
        else:
            meta.pop("namespace", None)
        for name in SYSTEM_METADATA:
            meta.pop(name, None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = self._generate_name(r, str(meta["generateName"]), meta.get("namespace", ""))
        strategy = self.strategy(r)
        strategy.prepare_for_create(r, obj)
        admission.default(obj, kind_of(r), meta.get("namespace") or "default")
        self._check_namespace(r, meta.get("namespace", ""))
        strategy.admit_create(self, r, obj)
        self._validate(r, obj)
        strategy.validate_admission(self, r, obj)
        name = meta.get("name", "")
        key = (r.kind, meta.get("namespace", ""), name)
        if self.store.get(key) is not None:
            raise ApiError(409, "AlreadyExists", f'{qualified(r)} "{name}" already exists',
                           {"name": name, "group": r.group, "kind": r.plural})
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if has_generation(r):
            meta["generation"] = 1
        strategy.after_identity(obj)
        txn = strategy.allocate(self, r, obj, None)
        obj["apiVersion"] = storage_version(r)
        if opts.dry_run:
            _finish(txn, committed=False)
            return Written(obj, decoded.warnings, changed=False)
        self._commit(Write(key, obj, opts.managed), txn)
        stored = self.store.get(key)
        return Written(stored.body if stored else obj, decoded.warnings)

    def update(self, t: Target, old: Stored, body: dict[str, Any], opts: WriteOptions, *,
               patched: bool = False) -> Written:
        """PUT, or the result of a PATCH: the whole new object, decoded and admitted like a create."""
        r = t.resource
        _require_object_metadata(r, body)
        meta_in = body.get("metadata") or {}
        if meta_in.get("name") and meta_in["name"] != t.name:
            raise ApiError(400, "BadRequest", f'the name of the object ({meta_in["name"]}) does not match the name '
                                              f"on the URL ({t.name})")
        check_resource_version(r, t.name, meta_in.get("resourceVersion"), old.rv)
        decoded = self.decode(r, {**body, "kind": r.kind, "apiVersion": r.api_version}, opts, patched=patched,
                              name=t.name)
        new = decoded.obj
        meta = new.setdefault("metadata", {})
        meta["name"] = t.name
        if r.namespaced:
            meta["namespace"] = t.namespace
        old_meta = old.body["metadata"]
        for name in ("uid", "creationTimestamp"):
            if name in old_meta:
                meta[name] = old_meta[name]
        if t.sub == "status":
            merged = copy.deepcopy(old.body)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            new = merged
        elif t.sub == "ephemeralcontainers":
            # Only the debugging containers come from the request; everything else stays as stored.
            merged = copy.deepcopy(old.body)
            merged["spec"]["ephemeralContainers"] = (new.get("spec") or {}).get("ephemeralContainers") or []
            new = merged
        else:
            self.strategy(r).prepare_for_update(r, new, old.body)
        admission.default(new, kind_of(r), t.namespace or "default")
        self._validate(r, new, old.body, t.sub)
        if t.sub == "":
            self.strategy(r).validate_admission(self, r, new)
        txn = self.strategy(r).allocate(self, r, new, old.body) if t.sub == "" else None
        new["apiVersion"] = storage_version(r)
        if has_generation(r):
            gen = int(old_meta.get("generation", 1) or 1)
            if _spec_of(new) != _spec_of(old.body):
                gen += 1
            new["metadata"]["generation"] = gen
        key = (r.kind, t.namespace, t.name)
        comparable = dict(new, metadata={k: v for k, v in new["metadata"].items() if k != "resourceVersion"})
        old_cmp = dict(old.body, metadata={k: v for k, v in old_meta.items() if k != "resourceVersion"})
        if opts.dry_run or comparable == old_cmp:
            _finish(txn, committed=False)
            new["metadata"]["resourceVersion"] = str(old.rv)
            return Written(new if opts.dry_run else old.body, decoded.warnings, changed=False)
        self._commit(Write(key, new, opts.managed), txn)  # a client write makes any object the client's
        stored = self.store.get(key)
        return Written(stored.body if stored else new, decoded.warnings)

    def _commit(self, write: Write, txn: Txn | None) -> None:
        try:
            self.store.commit([write])
        except BaseException:
            _finish(txn, committed=False)
            raise
        _finish(txn, committed=True)

    def _generate_name(self, r: Resource, base: str, namespace: str) -> str:
        for i in range(100):
            candidate = base + random_suffix(base, uuid.uuid4().hex, str(i))
            if self.store.get((r.kind, namespace, candidate)) is None:
                return candidate
        raise ApiError(409, "AlreadyExists", f"no free name for generateName {base!r}")


def _finish(txn: Txn | None, *, committed: bool) -> None:
    if txn is not None:
        if committed:
            txn.commit()
        else:
            txn.revert()


def _spec_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _require_object_metadata(r: Resource, body: Mapping[str, Any]) -> None:
    """``metadata`` must be an object before its name can be read: the decoder's words when it is not."""
    meta = body.get("metadata", {})
    if not isinstance(meta, dict):
        found = json_type_name(meta) if meta is not None else "object"
        raise ApiError(400, "BadRequest", admission.handled_as(
            kind_of(r), f"json: cannot unmarshal {found} into Go struct field {r.kind}.metadata of type v1.ObjectMeta"))
