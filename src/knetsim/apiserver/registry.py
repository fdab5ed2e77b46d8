"""The write path every kind shares, as kube-apiserver's generic registry store runs it.

    create: body ─ decode (typed; fieldValidation) ─ PrepareForCreate ─ default ─ NamespaceLifecycle
                 ─ mutating admission (DefaultIngressClass) ─ validate ─ webhooks ─ identity
                 ─ allocate (Services) ─ commit
    update: the same, with PrepareForUpdate (or a subresource's: status, ephemeralcontainers,
            finalize) and ValidateUpdate; an object being deleted whose last finalizer goes is deleted
    scale:  /scale's replicas become the object's own update
    delete: preconditions ─ now, or marked (deletionTimestamp) until its finalizers are done
    batch:  the server's own writers in process (controllers, kubelet, events, bootstrap, recheck):
            ``commit_batch``, one transaction, not flushed at once; a ``/status`` write among them
            (``status_write``) is taken by the kind's status strategy and validated first

What differs per kind is its strategy (``model.strategy``, ``registry/*/strategy.go`` upstream), the
same the offline loader and the start-up recheck run through ``model.admission``; what a kind's REST
storage adds with the live cluster's pools and webhooks is its ``Storage`` here. Nothing the types or
the validators refuse is ever stored; orphaning and foreground deletion are the garbage collector's,
emptying a namespace the namespace controller's.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..cluster.config import ClusterConfig
from ..cluster.naming import random_suffix
from ..model import admission, validation
from ..model.admission import AdmissionError, FieldValidation, Kind
from ..model.defaults import MIRROR_ANNOTATION, account_not_found, admit_service_account
from ..model.fielderr import ErrorType, FieldError
from ..model.jsonvalue import json_copy
from ..model.kinds import stored_kind
from ..model.labels import Selector
from ..model.objects import Pod
from ..model.schema import json_type_name
from ..model.storage import resize_refusal
from ..model.strategy import Propagation, StatusPolicy, Strategy
from ..model.timestamps import now_rfc3339
from . import cnikinds
from .allocation import AllocationFailed, ServiceAllocations, Txn
from .customresources import CustomDefinitions
from .errors import ApiError, conflict, from_admission, invalid, no_such_path, not_found, qualified
from .managedfields import recorded, with_managed_fields
from .resources import BY_KIND, Resource
from .store import Change, Key, Store, Stored, Write

log = logging.getLogger(__name__)

# What a write changes whatever it asks: an object that differs only there is the same object.
SERVER_BOOKKEEPING = frozenset({"resourceVersion", "managedFields"})
SYSTEM_METADATA = ("resourceVersion", "uid", "creationTimestamp", "deletionTimestamp", "managedFields", "selfLink")


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
    # The request's fieldManager, and Apply for a server-side apply patch: its managedFields entry (none without).
    field_manager: str = ""
    operation: str = "Update"


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
    if r.storage:
        return f"{r.group}/{r.storage}"  # a client CRD's storage version
    return BY_KIND[r.key_kind].api_version if r.key_kind in BY_KIND else r.api_version


def as_served(r: Resource, obj: dict[str, Any]) -> dict[str, Any]:
    """A stored object as the version the client asked for serves it."""
    if obj.get("apiVersion") == r.api_version or obj.get("kind") != r.kind:
        return obj
    return {**obj, "apiVersion": r.api_version}


def check_resource_version(r: Resource, name: str, want: Any, current: int) -> None:
    """An update's optimistic-concurrency precondition: malformed is 400, stale is 409."""
    if not want:
        return
    if not str(want).isdigit():
        raise ApiError(400, "BadRequest", f"invalid resource version: {want!r}")
    if int(want) != int(current):
        raise conflict(r, name)


# --- storage: what a kind's REST storage adds around the generic store ----------------------
# (pkg/registry/<group>/<kind>/storage upstream). The kind's own behaviour is its strategy
# (model.strategy); what needs the live cluster — allocation from shared pools, webhooks — is here.


class Storage:
    def mutate(self, registry: Registry, r: Resource, obj: dict[str, Any], name: str) -> None:
        """Mutating admission of a create, before validation (``name``: the object's name, or its generateName
        when the API server is to generate it); raises ApiError."""

    def admit(self, registry: Registry, r: Resource, obj: dict[str, Any], old: dict[str, Any] | None = None) -> None:
        """Validating admission (plugins, webhooks) of a create or an update (``old``: the stored object), after
        validation; raises ApiError."""

    def allocate(self, registry: Registry, r: Resource, obj: dict[str, Any], old: dict[str, Any] | None) -> Txn | None:
        """Allocation that must succeed before the write (ClusterIPs, NodePorts); raises ApiError.
        The transaction is committed with the write or reverted when the write does not happen."""
        return None

    def admit_delete(self, registry: Registry, r: Resource, old: dict[str, Any]) -> None:
        """Validating admission of a delete (the webhooks that watch DELETE); raises ApiError."""


class IngressStorage(Storage):
    def admit(self, registry: Registry, r: Resource, obj: dict[str, Any], old: dict[str, Any] | None = None) -> None:
        """ingress-nginx's webhook (validate.nginx.ingress.kubernetes.io), as kind installs it with the
        controller: regex characters in an Exact/Prefix path are refused (strict-validate-path-type)."""
        # Imported at the first Ingress write: a server that never sees one does not load ingress-nginx's model.
        from ..ingress import webhook
        from ..ingress.controllers import controllers_among

        bad = webhook.invalid_paths(obj)
        annotated = webhook.annotated(obj)
        if not bad and not annotated:
            return
        controllers = controllers_among(Pod.parse(s.body) for s in registry.store.list("Pod"))
        classes = {str(s.body["metadata"].get("name")): str((s.body.get("spec") or {}).get("controller") or "")
                   for s in registry.store.list("IngressClass")}
        ctl = webhook.claiming_controller(obj, classes, controllers)
        data = None
        if ctl is not None:
            from ..ingress.config import configmap_name

            key = configmap_name(ctl)
            namespace, _, name = (key or "").partition("/")
            stored = registry.store.get(("ConfigMap", namespace, name)) if key else None
            data = (stored.body.get("data") or {}) if stored is not None else None
        # The claiming controller's own rule (a "." is allowed from v1.14), unless its ConfigMap turns it off.
        bad = webhook.invalid_paths(obj, ctl) if ctl is not None and bad else bad
        strict = str((data or {}).get("strict-validate-path-type", "true")).strip().lower() not in ("false", "0", "f")
        if ctl is not None and bad and webhook.strict_path_validation(ctl) and strict:
            raise ApiError(400, "BadRequest", webhook.denial(bad))
        if ctl is not None and annotated:
            # ingress-nginx's annotation checks, with the controller's ConfigMap (allow-snippet-annotations, risk).
            errors = webhook.annotation_errors(obj, {str(k): str(v) for k, v in data.items()} if data else None)
            if errors:
                raise ApiError(400, "BadRequest", webhook.annotation_denial(errors))


class ClaimStorage(Storage):
    def admit(self, registry: Registry, r: Resource, obj: dict[str, Any], old: dict[str, Any] | None = None) -> None:
        """The PersistentVolumeClaimResize admission plugin (plugin/pkg/admission/storage/persistentvolume/resize):
        a claim's storage grows only when bound and its class allows expansion; a 403, as NewForbidden words it."""
        why = resize_refusal(obj, old, registry.lookup("StorageClass")) if old is not None else None
        if why is not None:
            name = str(obj["metadata"]["name"])
            raise ApiError(403, "Forbidden", f'{r.plural} "{name}" is forbidden: {why}',
                           {"name": name, "group": r.group, "kind": r.plural})


class PodStorage(Storage):
    def mutate(self, registry: Registry, r: Resource, obj: dict[str, Any], name: str) -> None:
        """The ServiceAccount admission plugin on a new pod (plugin/pkg/admission/serviceaccount/admission.go,
        Admit): ``default`` for a pod that names no account, and the account must exist; a 403, before validation."""
        admit_service_account(obj)
        why = missing_service_account(obj, registry.store)
        if why is not None:
            raise ApiError(403, "Forbidden", f'pods "{name}" is forbidden: {why}', {"name": name, "kind": "pods"})


def missing_service_account(pod: Mapping[str, Any], store: Store) -> str | None:
    """Why the ServiceAccount admission plugin refuses ``pod`` (plugin/pkg/admission/serviceaccount/admission.go:
    a mirror pod may name no account; any other's must exist), in its words; None when it admits."""
    account = str((pod.get("spec") or {}).get("serviceAccountName") or "")
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    if MIRROR_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {}):
        return "a mirror pod may not reference service accounts" if account else None
    if not account or store.get(("ServiceAccount", namespace, account)) is not None:
        return None
    return account_not_found(namespace, account)


class ServiceStorage(Storage):
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


class AntreaStorage(Storage):
    """antrea-controller's validating webhook (crdvalidator.antrea.io) on Antrea's policies and Tiers: a refusal is
    a 400 with no reason, the webhook's message framed by the API server (cnikinds.webhook_denial)."""

    def admit(self, registry: Registry, r: Resource, obj: dict[str, Any], old: dict[str, Any] | None = None) -> None:
        self._deny(cnikinds.webhook_denial(r, obj, old, self._stored(registry, r)))

    def admit_delete(self, registry: Registry, r: Resource, old: dict[str, Any]) -> None:
        self._deny(cnikinds.webhook_denial(r, None, old, self._stored(registry, r)))

    @staticmethod
    def _stored(registry: Registry, r: Resource) -> Callable[[str], list[Mapping[str, Any]]]:
        return lambda kind: registry.lookup(stored_kind(kind, r.api_version))

    @staticmethod
    def _deny(message: str | None) -> None:
        if message:
            raise ApiError(400, "", message)


STORAGE: dict[str, Storage] = {"Service": ServiceStorage(), "Ingress": IngressStorage(),
                               "PersistentVolumeClaim": ClaimStorage(), "Pod": PodStorage(),
                               **{f"{kind}.crd.antrea.io": AntreaStorage()
                                  for kind in ("ClusterNetworkPolicy", "NetworkPolicy", "Tier")}}
GENERIC_STORAGE = Storage()


# --- the store with its strategies ---------------------------------------------------------


@dataclass(frozen=True)
class DeleteOptions:
    """metav1.DeleteOptions, decoded (the handler turns a body or query the API server refuses into a 400)."""

    dry_run: bool = False
    propagation: Propagation | None = None  # None: the kind's default
    precondition_uid: str | None = None
    precondition_resource_version: str | None = None


@dataclass
class Prepared:
    """A create admitted and allocated, not yet committed."""

    write: Write
    txn: Txn | None
    warnings: list[str]

    @property
    def obj(self) -> dict[str, Any]:
        return self.write.body or {}

    def finish(self, *, committed: bool) -> None:
        _finish(self.txn, committed=committed)


@dataclass
class Deleted:
    """What a delete did: ``obj`` is gone (``pending`` False), or marked with a deletionTimestamp and
    waiting for its finalizers (``pending`` True: the API server answers with the object itself)."""

    obj: dict[str, Any]
    pending: bool = False


class Registry:
    def __init__(self, store: Store, config: ClusterConfig, clock: Callable[[], str] = now_rfc3339) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self.services = ServiceAllocations(store, config)
        # Which definition admits each custom kind: knetsim's own, or a CRD a client applied (customresources.py).
        self.custom = CustomDefinitions(store, config.cni)

    def kind_of(self, r: Resource) -> Kind:
        return self.custom.kind_of(r)

    def strategy(self, r: Resource) -> Strategy:
        return admission.strategy(self.kind_of(r))

    @staticmethod
    def storage(r: Resource) -> Storage:
        return STORAGE.get(r.key_kind, GENERIC_STORAGE)

    def lookup(self, kind: str) -> list[Mapping[str, Any]]:
        """The stored objects of a kind, for admission plugins that read the cluster."""
        return [s.body for s in self.store.list(kind)]

    def decode(self, r: Resource, body: Mapping[str, Any], opts: WriteOptions, *, patched: bool = False,
               name: str = "") -> admission.Decoded:
        try:
            return admission.decode(body, self.kind_of(r), opts.field_validation)
        except AdmissionError as exc:
            if patched and exc.message.count(": strict decoding error: ") == 1:
                # A patch's unknown fields are reported without the "cannot be handled as" frame.
                raise ApiError(400, "BadRequest", "strict decoding error: " +
                               exc.message.split(": strict decoding error: ", 1)[1]) from None
            raise from_admission(r, name, exc) from None

    def _validate(self, r: Resource, obj: dict[str, Any], old: dict[str, Any] | None = None,
                  subresource: str = "") -> None:
        errors = admission.validation_errors(obj, self.kind_of(r), old, subresource)
        if r.cni and not errors:
            errors = cnikinds.validation_errors(r, obj)  # what Calico or Antrea refuse by the field (cnikinds.py)
        if errors:
            raise invalid(r, str(obj["metadata"].get("name") or ""), errors)

    def _version_warnings(self, r: Resource, obj: dict[str, Any], warnings: list[str]) -> None:
        """The strategies' WarningsOnCreate/WarningsOnUpdate of the version in force (model/versions.py:
        deprecations, leading-0 addresses a version before StrictIPCIDRValidation admits), then those addresses
        spelled as every reader reads them, as offline admission does (validation.read_legacy_addresses)."""
        if self.kind_of(r).crd is not None or r.key_kind != r.kind:
            return  # a custom kind, or a CNI's kind of a built-in's name (Calico's NetworkPolicy): not the built-in's
        warnings.extend(validation.warnings_on_create(r.kind, obj))
        validation.read_legacy_addresses(r.kind, obj)

    def _namespace_lifecycle(self, r: Resource, namespace: str) -> None:
        """The NamespaceLifecycle admission plugin: no object in a namespace that does not exist, and no
        new one in a namespace being deleted."""
        if not r.namespaced:
            return
        stored = self.store.get(("Namespace", "", namespace))
        if stored is None:
            raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found',
                           {"name": namespace, "kind": "namespaces"})
        if stored.body["metadata"].get("deletionTimestamp"):
            message = f"unable to create new content in namespace {namespace} because it is being terminated"
            raise ApiError(403, "Forbidden", message, {"name": namespace, "kind": "namespaces", "causes": [
                {"reason": "NamespaceTerminating", "message": message, "field": "metadata.namespace"}]})

    def create(self, t: Target, body: dict[str, Any], opts: WriteOptions) -> Written:
        prepared = self.prepare_create(t, body, opts)
        if opts.dry_run:
            prepared.finish(committed=False)
            return Written(prepared.obj, prepared.warnings, changed=False)
        self._commit(prepared.write, prepared.txn)
        stored = self.store.get(prepared.write.key)
        return Written(stored.body if stored else prepared.obj, prepared.warnings)

    def prepare_create(self, t: Target, body: dict[str, Any], opts: WriteOptions) -> Prepared:
        """Everything a create does but the commit: the caller commits ``write`` and finishes the
        allocation with it (bootstrap writes many in one transaction)."""
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
        # What admission calls the object: its name, or before the API server generates one its generateName
        # (apiserver's admission extractResourceName).
        admitted_as = str(meta.get("name") or meta.get("generateName") or "")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = self._generate_name(r, str(meta["generateName"]), meta.get("namespace", ""))
        strategy = self.strategy(r)
        strategy.for_create(obj)
        admission.default(obj, self.kind_of(r), meta.get("namespace") or "default")
        self._namespace_lifecycle(r, meta.get("namespace", ""))
        admission.admit_create(obj, self.kind_of(r), self.lookup)
        storage = self.storage(r)
        storage.mutate(self, r, obj, admitted_as)
        self._validate(r, obj)
        self._version_warnings(r, obj, decoded.warnings)
        storage.admit(self, r, obj)
        name = meta.get("name", "")
        key = (r.key_kind, meta.get("namespace", ""), name)
        existing = self.store.get(key)
        if existing is not None:
            being_deleted = BEING_DELETED if existing.body["metadata"].get("deletionTimestamp") else ""
            raise ApiError(409, "AlreadyExists", f'{being_deleted}{qualified(r)} "{name}" already exists',
                           {"name": name, "group": r.group, "kind": r.plural})
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = self.clock()
        if strategy.generation:
            meta["generation"] = 1
        strategy.after_identity(obj)
        txn = storage.allocate(self, r, obj, None)
        obj["apiVersion"] = storage_version(r)
        if opts.field_manager:
            obj = with_managed_fields(obj, recorded(
                [], None, obj, manager=opts.field_manager, time=meta["creationTimestamp"], operation=opts.operation,
                status_apart=strategy.status == StatusPolicy.SUBRESOURCE))
        return Prepared(Write(key, obj, opts.managed), txn, decoded.warnings)

    def update(self, t: Target, old: Stored, body: dict[str, Any], opts: WriteOptions, *,
               patched: bool = False) -> Written:
        """PUT, or the result of a PATCH, of the object or of a subresource (status, ephemeralcontainers,
        a namespace's finalize): the whole new object, decoded and admitted like a create."""
        r = t.resource
        _require_object_metadata(r, body)
        meta_in = body.get("metadata") or {}
        if meta_in.get("name") and meta_in["name"] != t.name:
            raise ApiError(400, "BadRequest", f'the name of the object ({meta_in["name"]}) does not match the name '
                                              f"on the URL ({t.name})")
        check_resource_version(r, t.name, meta_in.get("resourceVersion"), old.rv)
        decoded = self.decode(r, {**body, "kind": r.kind, "apiVersion": r.api_version}, opts, patched=patched,
                              name=t.name)
        strategy = self.strategy(r)
        new = decoded.obj
        if t.sub:
            sub = strategy.subresource_update(t.sub)
            if sub is None:
                raise no_such_path()
            new = json_copy(sub.take(new, old.body))  # its own: defaulting below changes it in place
        else:
            meta = new.setdefault("metadata", {})
            meta["name"] = t.name
            if r.namespaced:
                meta["namespace"] = t.namespace
            # What the API server alone sets stays as it is (BeforeUpdate).
            for name in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
                if name in old.body["metadata"]:
                    meta[name] = old.body["metadata"][name]
                else:
                    meta.pop(name, None)
            # A request without managedFields keeps the stored ones (an explicit list replaces them).
            if "managedFields" not in meta and old.body["metadata"].get("managedFields"):
                meta["managedFields"] = old.body["metadata"]["managedFields"]
            strategy.for_update(new, old.body)
        admission.default(new, self.kind_of(r), t.namespace or "default")
        self._validate(r, new, old.body, t.sub)
        if not t.sub:
            self._version_warnings(r, new, decoded.warnings)
        storage = self.storage(r)
        if not t.sub:
            storage.admit(self, r, new, old.body)
        txn = storage.allocate(self, r, new, old.body) if not t.sub else None
        new["apiVersion"] = storage_version(r)
        if strategy.generation:
            gen = int(old.body["metadata"].get("generation", 1) or 1)
            if _spec_of(new) != _spec_of(old.body):
                gen += 1
            new["metadata"]["generation"] = gen
        key = (r.key_kind, t.namespace, t.name)
        if opts.dry_run or _same_object(new, old.body):
            _finish(txn, committed=False)
            new["metadata"]["resourceVersion"] = str(old.rv)
            return Written(new if opts.dry_run else old.body, decoded.warnings, changed=False)
        if _finalized(new):
            # The last finalizer of an object being deleted is gone: the update is its deletion.
            self._commit(Write(key, None), txn)
            return Written(new, decoded.warnings)
        if opts.field_manager:
            new = with_managed_fields(new, recorded(
                list(new["metadata"].get("managedFields") or []), old.body, new, manager=opts.field_manager,
                time=self.clock(), subresource=t.sub, operation=opts.operation,
                status_apart=strategy.status == StatusPolicy.SUBRESOURCE))
        self._commit(Write(key, new, opts.managed), txn)  # a client write makes any object the client's
        stored = self.store.get(key)
        return Written(stored.body if stored else new, decoded.warnings)

    # --- scale ------------------------------------------------------------------------

    @staticmethod
    def scale_of(obj: Mapping[str, Any]) -> dict[str, Any]:
        """The ``autoscaling/v1`` Scale of a workload (its scale subresource)."""
        meta = obj["metadata"]
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        selector = Selector.of_workload(str(obj.get("kind") or ""), spec.get("selector") or {}).formatted()
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                             if k in meta},
                "spec": {"replicas": spec.get("replicas", 1)},
                "status": {"replicas": status.get("replicas", 0), "selector": selector}}

    def update_scale(self, t: Target, old: Stored, scale: Mapping[str, Any], opts: WriteOptions) -> dict[str, Any]:
        """PUT or PATCH of /scale: the replicas go to the object's spec, through its own update."""
        check_resource_version(t.resource, t.name, (scale.get("metadata") or {}).get("resourceVersion"), old.rv)
        replicas = (scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise invalid(t.resource, t.name, [FieldError("spec.replicas", ErrorType.INVALID, replicas,
                                                          "must be greater than or equal to 0")])
        new = json_copy(old.body)
        new.setdefault("spec", {})["replicas"] = replicas
        self.update(Target(t.resource, t.namespace, t.name, ""), old, new, opts)
        stored = self.store.get((t.resource.key_kind, t.namespace, t.name))
        return self.scale_of(stored.body if stored else new)

    # --- delete -----------------------------------------------------------------------

    def delete(self, t: Target, options: DeleteOptions) -> Deleted:
        """The generic store's Delete: preconditions, then the object goes now, or is marked
        (deletionTimestamp) until its finalizers are done: its own, ``orphan`` or
        ``foregroundDeletion`` as the propagation asks (the garbage collector does those), and a
        namespace's ``kubernetes`` (the namespace controller empties it first)."""
        r = t.resource
        key = (r.key_kind, t.namespace, t.name)
        old = self.store.get(key)
        if old is None:
            raise not_found(r, t.name)
        meta = old.body["metadata"]
        if options.precondition_resource_version is not None and \
                str(options.precondition_resource_version) != str(old.rv):
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {qualified(r)} "{t.name}": '
                           f"Precondition failed: ResourceVersion in precondition: "
                           f"{options.precondition_resource_version}, ResourceVersion in object meta: {old.rv}",
                           {"name": t.name, "kind": r.plural})
        if options.precondition_uid is not None and options.precondition_uid != meta.get("uid"):
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {qualified(r)} "{t.name}": '
                           f"Precondition failed: UID in precondition: {options.precondition_uid}, UID in object "
                           f"meta: {meta.get('uid', '')}", {"name": t.name, "kind": r.plural})
        self.storage(r).admit_delete(self, r, old.body)
        marked = marked_for_deletion(old.body, options.propagation or self.strategy(r).default_propagation, self.clock)
        if options.dry_run:
            return Deleted(marked if marked is not None else old.body, pending=marked is not None)
        if marked is None:
            # A client's CRD takes the objects it alone served with it, as the CRD's customresourcecleanup
            # finalizer has the API server delete them (apiextensions-apiserver, finalizer controller).
            served = self.custom.objects_of(old.body) if r.kind == "CustomResourceDefinition" else []
            self.store.commit([Write(key, None), *(Write(k, None) for k in served)])
            return Deleted(old.body)
        if marked != old.body:
            self.store.commit([Write(key, marked, old.managed)])
        stored = self.store.get(key)
        return Deleted(stored.body if stored is not None else marked, pending=True)

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
            if self.store.get((r.key_kind, namespace, candidate)) is None:
                return candidate
        raise ApiError(409, "AlreadyExists", f"no free name for generateName {base!r}")


# How the generic store words AlreadyExists for a name whose object is still being deleted.
BEING_DELETED = "object is being deleted: "
ORPHAN_FINALIZER = "orphan"
def commit_batch(store: Store, writes: Iterable[Write], meta: Mapping[str, str] | None = None, *, by: str,
                 durable: bool = False) -> list[Change]:
    """The in-process writers' path into the store (kube-controller-manager's clients, without the HTTP
    hop): ``writes`` and bookkeeping ``meta`` in one transaction. ``durable=False`` (the controllers')
    leaves the disk write for the next flush, which their batching exists for; such writes are counted
    for the loop guard. ``by`` names the writer in the registry logger's debug lines (who wrote what).

    What the writes are was decided by the helpers beside this one, which apply the rules a client's
    request meets: ``deletion`` and ``finalizer_done`` (the delete path), ``status_write`` (the kind's
    status strategy and validation). Every ``store.commit`` outside the store is in this module
    (``tests/test_writes_through_registry.py`` holds that)."""
    writes = list(writes)
    if not writes and not meta:
        return []
    if log.isEnabledFor(logging.DEBUG):
        log.debug("%s writes %s", by, ", ".join(f"{'-' if w.body is None else ''}{w.key[0]} {w.key[1]}/{w.key[2]}"
                                             for w in writes))
    return store.commit(writes, dict(meta) if meta else None, durable=durable)


def status_write(stored: Stored, key: Key, new: dict[str, Any], *, by: str) -> Write | None:
    """A ``/status`` write of ``new`` over ``stored``, as kube-apiserver's status strategy takes it: only
    the status (and what the kind's status may carry in metadata) comes from ``new``, then the kind's
    update validation runs for the status subresource. None: nothing changes, or the write is refused
    (logged, naming the writer and the fields; the API server would answer 422 and the writer retry)."""
    r = BY_KIND.get(key[0])
    if r is None:
        return Write(key, new, stored.managed)  # a kind without a strategy here: stored as written
    sub = admission.strategy(kind_of(r)).subresource_update("status")
    taken = sub.take(new, stored.body) if sub is not None else new
    if _same_object(taken, stored.body):
        return None
    errors = admission.validation_errors(taken, kind_of(r), stored.body, "status")  # with the status rules
    if errors:
        log.error("%s: status of %s %s/%s refused: %s", by, *key, "; ".join(str(e) for e in errors))
        return None
    previous = list(stored.body["metadata"].get("managedFields") or [])
    taken = with_managed_fields(taken, recorded(previous, stored.body, taken, manager=by, time=now_rfc3339(),
                                                subresource="status"))
    return Write(key, taken, stored.managed)


def controller_write(stored: Stored | None, key: Key, body: dict[str, Any], *, by: str, time: str) -> Write:
    """An in-process writer's create or update of a whole object (a controller's ``Batch.put``): its
    managedFields entry recorded as for a client's, the writer its manager."""
    r = BY_KIND.get(key[0])
    if r is not None and body.get("metadata") is not None:
        status_apart = admission.strategy(kind_of(r)).status == StatusPolicy.SUBRESOURCE
        previous = list(stored.body["metadata"].get("managedFields") or []) if stored is not None else []
        body = with_managed_fields(body, recorded(previous, stored.body if stored is not None else None, body,
                                                  manager=by, time=time, status_apart=status_apart))
    return Write(key, body, stored.managed if stored is not None else "controller")


FOREGROUND_FINALIZER = "foregroundDeletion"
NAMESPACE_FINALIZER = "kubernetes"


def marked_for_deletion(body: Mapping[str, Any], propagation: Propagation, clock: Callable[[], str]
                        ) -> dict[str, Any] | None:
    """The object as a deletion that must wait leaves it (deletionTimestamp set, the finalizer the
    propagation asks for added; a namespace Terminating), or None when it can go at once."""
    meta = body["metadata"]
    finalizers = list(meta.get("finalizers") or [])
    if propagation == Propagation.ORPHAN and ORPHAN_FINALIZER not in finalizers:
        finalizers.append(ORPHAN_FINALIZER)
    elif propagation == Propagation.FOREGROUND and FOREGROUND_FINALIZER not in finalizers:
        finalizers.append(FOREGROUND_FINALIZER)
    namespace = body.get("kind") == "Namespace"
    if not finalizers and not (namespace and (body.get("spec") or {}).get("finalizers")):
        return None
    marked = json_copy(dict(body))
    if not meta.get("deletionTimestamp"):
        marked["metadata"]["deletionTimestamp"] = clock()
        marked["metadata"]["deletionGracePeriodSeconds"] = 0
    if finalizers:
        marked["metadata"]["finalizers"] = finalizers
    if namespace:
        marked.setdefault("status", {})["phase"] = "Terminating"
    return marked


def finalizer_done(key: Key, stored: Stored, finalizer: str) -> Write | None:
    """The write that removes a finalizer whose work is done (the garbage collector's, a namespace's
    ``kubernetes`` through /finalize): an object being deleted with none left goes. None: not there."""
    body = json_copy(stored.body)
    holder = body.setdefault("spec", {}) if finalizer == NAMESPACE_FINALIZER and key[0] == "Namespace" \
        else body["metadata"]
    present = list(holder.get("finalizers") or [])
    if finalizer not in present:
        return None
    remaining = [f for f in present if f != finalizer]
    if remaining:
        holder["finalizers"] = remaining
    else:
        holder.pop("finalizers", None)
    return Write(key, None if _finalized(body) else body, stored.managed)


def deletion(key: Key, stored: Stored, propagation: Propagation, clock: Callable[[], str]) -> Write:
    """The write a deletion of ``stored`` is: gone now, or marked until its finalizers are done (what a
    controller deleting through the API gets, as its own batch)."""
    marked = marked_for_deletion(stored.body, propagation, clock)
    return Write(key, marked, stored.managed) if marked is not None else Write(key, None)


def _finalized(obj: Mapping[str, Any]) -> bool:
    """Being deleted, and nothing left to wait for."""
    meta = obj.get("metadata") or {}
    if not meta.get("deletionTimestamp") or meta.get("finalizers"):
        return False
    return not (obj.get("kind") == "Namespace" and (obj.get("spec") or {}).get("finalizers"))


def _same_object(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    def comparable(obj: Mapping[str, Any]) -> dict[str, Any]:
        return dict(obj, metadata={k: v for k, v in obj["metadata"].items() if k not in SERVER_BOOKKEEPING})
    return comparable(new) == comparable(old)


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
