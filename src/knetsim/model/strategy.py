"""One strategy per kind: everything a kind does when it is written, under one name.

kube-apiserver binds a kind's behaviour in its registry strategy (``pkg/registry/<group>/<kind>/
strategy.go``): ``PrepareForCreate`` and ``PrepareForUpdate`` (what a client may not set, what an
update keeps), defaulting (the scheme's ``SetDefaults_*``), ``Validate`` and ``ValidateUpdate``,
whether ``metadata.generation`` counts spec changes, and the variants for its subresources
(``serviceStatusStrategy{Strategy}``: ``/status`` keeps the old spec and takes the new status). Here
a ``Strategy`` holds those for one kind, referring to the functions in ``defaults``, ``validation``
and ``updates``; ``model.admission`` runs them in the one pipeline the offline loader, the live
registry and the start-up recheck share.

What is not the kind's own stays out, as upstream keeps it out of strategies: admission plugins
(DefaultIngressClass: ``model.admission``), allocation of addresses and ports (the live registry's
storage), webhooks, and the work of controllers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from . import defaults, storage, updates, validation
from .fielderr import FieldError
from .jsonvalue import json_copy
from .kinds import BY_KIND, info_for
from .names import is_canonical_ip, is_dns1123_label, is_dns1123_subdomain
from .shapes import spec_errors
from .validation import is_path_segment_name

Errors = list[FieldError]
Body = dict[str, Any]


class StatusPolicy(StrEnum):
    """Who writes ``.status``."""

    SUBRESOURCE = "subresource"  # only ``/status`` (the controllers, the kubelet); create and update keep it out
    CLIENT = "client"  # the object has no status subresource: what the client sends is kept
    NONE = "none"  # the kind has no status


@dataclass(frozen=True)
class SubresourceUpdate:
    """A subresource written by PUT or PATCH (``/status``, a Pod's ``/ephemeralcontainers``): the object
    to store is the old one with the part the subresource owns taken from the request, then checked
    by the kind's rules and the subresource's own. The object ``take`` returns may share parts with
    both (the in-process status writers' path relies on it for speed): copy it before changing it."""

    take: Callable[[Mapping[str, Any], Mapping[str, Any]], Body]  # (request, old) → the new object
    validate: Callable[[Mapping[str, Any], Mapping[str, Any]], Errors] = lambda _new, _old: []


def _take_status(new: Mapping[str, Any], old: Mapping[str, Any]) -> Body:
    """The status strategy's PrepareForUpdate: everything from the old object but the new status (sharing
    their parts; its metadata is its own)."""
    merged = dict(old)
    merged["metadata"] = dict(old.get("metadata") or {})
    if "status" in new:
        merged["status"] = new["status"]
    else:
        merged.pop("status", None)
    return merged


def _take_ephemeral_containers(new: Mapping[str, Any], old: Mapping[str, Any]) -> Body:
    """podEphemeralContainersStrategy: only the debugging containers come from the request."""
    merged = json_copy(dict(old))
    merged.setdefault("spec", {})["ephemeralContainers"] = json_copy(
        (new.get("spec") or {}).get("ephemeralContainers") or [])
    return merged


def _take_namespace_finalizers(new: Mapping[str, Any], old: Mapping[str, Any]) -> Body:
    """namespaceFinalizeStrategy: /finalize changes spec.finalizers (the namespace controller's work)."""
    merged = json_copy(dict(old))
    merged.setdefault("spec", {})["finalizers"] = json_copy((new.get("spec") or {}).get("finalizers") or [])
    return merged


STATUS_UPDATE = SubresourceUpdate(_take_status)

# The metadata a built-in kind's /status write may change. Their status strategies reset the spec only, so the
# request's labels, annotations, finalizers and owners are stored (`kubectl patch --subresource=status` of an
# annotation sticks, which Kubernetes' e2e "should complete a service status lifecycle" checks), except: the apps
# kinds' strategies keep the old labels (pkg/registry/apps/*/strategy.go: newX.Labels = oldX.Labels), and the Pod's
# keeps its owners (pkg/registry/core/pod/strategy.go, as old kubelets corrupted them). A custom resource's
# /status takes the status alone (apiextensions-apiserver's statusStrategy).
_STATUS_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")
_STATUS_KEEPS_OLD = {"Deployment": ("labels",), "ReplicaSet": ("labels",), "StatefulSet": ("labels",),
                     "DaemonSet": ("labels",), "Pod": ("ownerReferences",)}


def _status_with_metadata(kind: str) -> SubresourceUpdate:
    kept = _STATUS_KEEPS_OLD.get(kind, ())

    def take(new: Mapping[str, Any], old: Mapping[str, Any]) -> Body:
        merged = _take_status(new, old)
        meta = merged.setdefault("metadata", {})
        asked = new.get("metadata") or {}
        for name in _STATUS_METADATA:
            if name in kept:
                continue
            if asked.get(name):
                meta[name] = asked[name]
            else:
                meta.pop(name, None)
        return merged
    return SubresourceUpdate(take)


class Propagation(StrEnum):
    """``DeleteOptions.propagationPolicy``: what becomes of the dependents of a deleted object."""

    BACKGROUND = "Background"  # the owner goes now; the garbage collector deletes the dependents
    FOREGROUND = "Foreground"  # the owner waits (finalizer foregroundDeletion) until its dependents are gone
    ORPHAN = "Orphan"  # the dependents stay, released (finalizer orphan)


def _nothing(*_args: Any) -> None:
    return None


def _no_errors(*_args: Any) -> Errors:
    return []


@dataclass(frozen=True)
class Strategy:
    kind: str
    default: Callable[[Body], None] = _nothing
    validate: Callable[[Mapping[str, Any]], Errors] = _no_errors
    # Rules of an update beyond the object's own (what may not change), and of a create only.
    validate_update: Callable[[Mapping[str, Any], Mapping[str, Any]], Errors] = _no_errors
    validate_create: Callable[[Mapping[str, Any]], Errors] = _no_errors
    prepare_for_create: Callable[[Body], None] = _nothing
    prepare_for_update: Callable[[Body, Mapping[str, Any]], None] = _nothing
    name_rule: validation.NameRule = is_dns1123_subdomain
    generation: bool = False
    status: StatusPolicy = StatusPolicy.NONE
    # Subresources served beside status (scale: spec.replicas through autoscaling/v1 Scale).
    subresources: tuple[str, ...] = ()
    # The propagation a delete without one gets (kubectl sends Background; the API's default is the kind's).
    default_propagation: Propagation = Propagation.BACKGROUND
    # Set at identity time, once uid and name are known (a Job's selector is its uid).
    after_identity: Callable[[Body], None] = _nothing
    # What every request on the kind is warned of (a deprecated API: the Warning header kubectl prints).
    deprecation: str = ""
    # Subresources written by PUT/PATCH other than status (a Pod's ephemeralcontainers).
    subresource_updates: Mapping[str, SubresourceUpdate] = field(default_factory=dict)

    @property
    def scale(self) -> bool:
        return "scale" in self.subresources

    @property
    def all_subresources(self) -> tuple[str, ...]:
        """What discovery lists: status (when the kind has the subresource) and the others, sorted."""
        subs = set(self.subresources) | ({"status"} if self.status == StatusPolicy.SUBRESOURCE else set())
        return tuple(sorted(subs))

    # --- the generic store's status rules, which every kind's PrepareFor* starts with ----------

    def for_create(self, obj: Body) -> None:
        """PrepareForCreate: a client cannot set what /status writes."""
        if self.status == StatusPolicy.SUBRESOURCE:
            obj.pop("status", None)
        self.prepare_for_create(obj)

    def for_update(self, new: Body, old: Mapping[str, Any]) -> None:
        """PrepareForUpdate: the main resource cannot change status (/status does); then the kind's own."""
        if self.status == StatusPolicy.SUBRESOURCE:
            if "status" in old:
                new["status"] = json_copy(old["status"])
            else:
                new.pop("status", None)
        self.prepare_for_update(new, old)

    def subresource_update(self, name: str) -> SubresourceUpdate | None:
        """How a write to ``name`` is taken (None: the subresource cannot be written)."""
        if name == "status" and self.status in (StatusPolicy.SUBRESOURCE, StatusPolicy.CLIENT):
            info = BY_KIND.get(self.kind)
            return _status_with_metadata(self.kind) if info is not None and not info.crd else STATUS_UPDATE
        return self.subresource_updates.get(name)


# --- kinds' own preparation ---------------------------------------------------------------


def _namespace_for_create(obj: Body) -> None:
    # namespaceStrategy.PrepareForCreate: a new namespace is Active, whatever the client sent.
    obj["status"] = {"phase": "Active"}


def _namespace_for_update(new: Body, old: Mapping[str, Any]) -> None:
    # namespaceStrategy.PrepareForUpdate: spec.finalizers change through /finalize, status through /status.
    new.setdefault("spec", {})["finalizers"] = json_copy((old.get("spec") or {}).get("finalizers") or [])
    if "status" in old:
        new["status"] = json_copy(old["status"])


def _job_selector(obj: Body) -> None:
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


# --- the Service's dropTypeDependentFields, as named predicates -----------------------------
# (svcStrategy, pkg/registry/core/service/strategy.go). Each field is wiped only when a) the new type
# no longer uses it, b) it may have been filled in automatically, c) the client did not also change
# it, in which case validation gets to refuse the new value.


def _spec(svc: Mapping[str, Any]) -> Mapping[str, Any]:
    return svc.get("spec") or {}


def _type(svc: Mapping[str, Any]) -> str:
    return str(_spec(svc).get("type") or "ClusterIP")


def _same(name: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    return _spec(old).get(name) == _spec(new).get(name)


def needs_cluster_ip(svc: Mapping[str, Any]) -> bool:
    return _type(svc) != "ExternalName"  # even "None" counts as a value


def same_cluster_ips(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    return _same("clusterIP", old, new) and _same("clusterIPs", old, new)


def needs_node_port(svc: Mapping[str, Any]) -> bool:
    return _type(svc) in ("NodePort", "LoadBalancer")


def _node_ports(svc: Mapping[str, Any]) -> set[Any]:
    return {p.get("nodePort") for p in _spec(svc).get("ports") or [] if p.get("nodePort")}


def same_node_ports(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    # Users can add, remove or modify ports, as long as they add no net-new NodePort.
    return _node_ports(old) >= _node_ports(new)


def needs_health_check_node_port(svc: Mapping[str, Any]) -> bool:
    return _type(svc) == "LoadBalancer" and _spec(svc).get("externalTrafficPolicy") == "Local"


def can_set_load_balancer_class(svc: Mapping[str, Any]) -> bool:
    return _type(svc) == "LoadBalancer"


def needs_external_traffic_policy(svc: Mapping[str, Any]) -> bool:
    return validation.externally_accessible(_spec(svc))


def drop_type_dependent_fields(new: Body, old: Mapping[str, Any]) -> None:
    """Services are a union discriminated by ``type``: on an update, what the new type no longer uses
    is cleared, so the allocations behind it (ClusterIPs, NodePorts) can be released. Upstream calls
    it an unusual case, never to be copied lightly: it is the one place a strategy changes input."""
    spec = new.setdefault("spec", {})
    if needs_cluster_ip(old) and not needs_cluster_ip(new):
        if same_cluster_ips(old, new):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        for name in ("ipFamilies", "ipFamilyPolicy"):
            if _same(name, old, new):
                spec.pop(name, None)
    if needs_node_port(old) and not needs_node_port(new) and same_node_ports(old, new):
        for port in spec.get("ports") or []:
            port.pop("nodePort", None)
    if needs_health_check_node_port(old) and not needs_health_check_node_port(new) and \
            _same("healthCheckNodePort", old, new):
        spec.pop("healthCheckNodePort", None)
    if _type(old) == "LoadBalancer" and _type(new) != "LoadBalancer" and \
            spec.get("allocateLoadBalancerNodePorts") is not None and _same("allocateLoadBalancerNodePorts", old, new):
        spec.pop("allocateLoadBalancerNodePorts")
    if can_set_load_balancer_class(old) and not can_set_load_balancer_class(new) and \
            _same("loadBalancerClass", old, new):
        spec.pop("loadBalancerClass", None)
    if needs_external_traffic_policy(old) and not needs_external_traffic_policy(new) and \
            _same("externalTrafficPolicy", old, new):
        spec.pop("externalTrafficPolicy", None)
    # Selector and the rest are not drawn from a pool: they stay. A load balancer's status goes with its type.
    if _type(new) != "LoadBalancer" and isinstance(new.get("status"), dict):
        new["status"].pop("loadBalancer", None)


# --- the strategies ------------------------------------------------------------------------

_WORKLOAD = {"generation": True, "status": StatusPolicy.SUBRESOURCE}

STRATEGIES: dict[str, Strategy] = {s.kind: s for s in (
    Strategy("Namespace", default=defaults.default_namespace, name_rule=is_dns1123_label,
             prepare_for_create=_namespace_for_create, prepare_for_update=_namespace_for_update,
             status=StatusPolicy.CLIENT, subresources=("finalize", "status"),
             subresource_updates={"finalize": SubresourceUpdate(_take_namespace_finalizers)}),
    # Nodes are the simulation's own (their status is what the cluster config says).
    Strategy("Node", status=StatusPolicy.CLIENT, subresources=("status",)),
    # binding and eviction are not served, so not advertised: kubectl drain, finding no policy/v1 eviction in
    # discovery, deletes the pods itself (what an eviction without PodDisruptionBudgets amounts to), and the
    # scheduler is knetsim's own.
    Strategy("Pod", default=defaults.default_pod, validate=validation.validate_pod,
             validate_create=updates.pod_create_errors, validate_update=updates.validate_pod_update,
             generation=True, status=StatusPolicy.SUBRESOURCE,
             subresources=("attach", "ephemeralcontainers", "exec", "log", "portforward"),
             subresource_updates={"ephemeralcontainers": SubresourceUpdate(
                 _take_ephemeral_containers, updates.ephemeral_container_errors)}),
    Strategy("Service", default=defaults.default_service, validate=validation.validate_service,
             prepare_for_update=drop_type_dependent_fields, name_rule=validation.service_name_problems,
             status=StatusPolicy.SUBRESOURCE),
    Strategy("Endpoints", default=defaults.default_endpoints, status=StatusPolicy.NONE,
             deprecation="v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"),
    Strategy("Deployment", default=defaults.default_deployment, validate=validation.validate_workload,
             validate_update=updates.validate_selector_unchanged, subresources=("scale",), **_WORKLOAD),
    Strategy("ReplicaSet", default=defaults.default_replicaset, validate=validation.validate_workload,
             validate_update=updates.validate_selector_unchanged, subresources=("scale",), **_WORKLOAD),
    # core/v1's older ReplicaSet: the same controller (pkg/controller/replication adapts the ReplicaSet one), a
    # selector map instead of a LabelSelector; its selector may change (no immutability rule, unlike apps/v1). A
    # delete without a propagation policy orphans its pods, for compatibility (rcStrategy's
    # DefaultGarbageCollectionPolicy for v1); kubectl sends Background.
    Strategy("ReplicationController", default=defaults.default_replication_controller,
             validate=validation.validate_replication_controller, subresources=("scale",),
             default_propagation=Propagation.ORPHAN, **_WORKLOAD),
    Strategy("StatefulSet", default=defaults.default_statefulset, validate=validation.validate_statefulset,
             validate_update=updates.validate_statefulset_update, subresources=("scale",), **_WORKLOAD),
    # DaemonSets are orphaned by default in apps/v1beta*; apps/v1 (the only version served) propagates.
    Strategy("DaemonSet", default=defaults.default_daemonset, validate=validation.validate_workload,
             validate_update=updates.validate_selector_unchanged, **_WORKLOAD),
    Strategy("Job", default=defaults.default_job, validate=validation.validate_job,
             validate_update=updates.validate_job_update, after_identity=_job_selector, **_WORKLOAD),
    Strategy("CronJob", default=defaults.default_cronjob, validate=validation.validate_cronjob, **_WORKLOAD),
    Strategy("EndpointSlice", default=defaults.default_endpoint_slice, validate=validation.validate_endpoint_slice,
             validate_update=updates.validate_endpoint_slice_update, generation=True),
    Strategy("Ingress", validate=validation.validate_ingress, generation=True, status=StatusPolicy.SUBRESOURCE),
    Strategy("IngressClass", default=defaults.default_ingress_class, validate=validation.validate_ingress_class,
             validate_update=updates.validate_ingress_class_update, generation=True),
    Strategy("NetworkPolicy", default=defaults.default_network_policy, validate=validation.validate_network_policy,
             generation=True),
    Strategy("ConfigMap", validate=validation.validate_config_map, validate_update=updates.validate_config_map_update),
    Strategy("Secret", default=defaults.default_secret, validate=validation.validate_secret,
             validate_update=updates.validate_secret_update),
    Strategy("ServiceAccount"),
    # The custom kinds knetsim defines (model/apis/catalog.py) have no row: their CRD is always in force, and
    # admission gives them its custom-resource strategy (admission.strategy → custom_strategy).
    # Envoy Gateway's policies, custom resources with a status subresource on a cluster running it.
    *(Strategy(kind, generation=True, status=StatusPolicy.SUBRESOURCE)
      for kind in ("SecurityPolicy", "BackendTrafficPolicy", "ClientTrafficPolicy")),
    # cilium.io/v2, a custom resource on a real cluster (knetsim serves it without its CRD).
    Strategy("CiliumNetworkPolicy", generation=True, status=StatusPolicy.CLIENT),
    Strategy("CiliumClusterwideNetworkPolicy", generation=True, status=StatusPolicy.CLIENT),
    # core/v1 Events skip ObjectMeta's name rule (ValidateEventCreate, "backwards compatibility").
    Strategy("Event", validate=validation.validate_event, name_rule=is_path_segment_name),
    # networking.k8s.io/v1: the Service IP ranges (status Ready from the servicecidrs controller), and one object
    # per allocated ClusterIP, named by the address itself (ValidateIPAddressName).
    Strategy("ServiceCIDR", validate=validation.validate_service_cidr, status=StatusPolicy.SUBRESOURCE),
    Strategy("IPAddress", validate=validation.validate_ip_address, name_rule=is_canonical_ip),
    # Storage (model/storage.py): a claim's and a volume's status are the PV controller's.
    Strategy("PersistentVolumeClaim", default=storage.default_claim, validate=storage.validate_claim,
             validate_update=storage.validate_claim_update, status=StatusPolicy.SUBRESOURCE),
    Strategy("PersistentVolume", default=storage.default_volume, validate=storage.validate_volume,
             status=StatusPolicy.SUBRESOURCE),
    Strategy("StorageClass", default=storage.default_storage_class, validate=storage.validate_storage_class,
             validate_update=storage.validate_storage_class_update),
)}

# Kinds knetsim serves no strategy of its own for, but admits from manifests (v1.35's other built-in
# kinds): the generic store's behaviour. RBAC names are path segments (ValidateRBACName).
GENERIC = Strategy("")
_PATH_SEGMENT_NAMED = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})


def custom_strategy(kind: str, status_subresource: bool) -> Strategy:
    """customResourceStrategy: generation always counts spec changes; status is a subresource when the
    CRD version enables it (validation and defaults come from the CRD's schema, in model.crd)."""
    return Strategy(kind, generation=True,
                    status=StatusPolicy.SUBRESOURCE if status_subresource else StatusPolicy.CLIENT)


_CNI_STRATEGIES: dict[str, Strategy] = {}
# strategy_for's answers, which depend on nothing but its arguments: admission asks twice an object (defaulting,
# validation), 42,000 times for bench/calico.py's input. Bounded: the live daemon is asked of any kind sent.
_FOUND: dict[tuple[str, str], Strategy] = {}
_FOUND_MAX = 1024


def strategy_for(kind: str, api_version: str = "") -> Strategy:
    """The strategy of a built-in kind (a core/v1 Event's own; events.k8s.io Events are checked by
    their schema alone)."""
    key = (kind, api_version)
    found = _FOUND.get(key)
    if found is None:
        found = _strategy_for(kind, api_version)
        if len(_FOUND) < _FOUND_MAX:
            _FOUND[key] = found
    return found


def _strategy_for(kind: str, api_version: str) -> Strategy:
    if kind == "Event" and api_version not in ("", "v1"):
        return GENERIC
    row = info_for(api_version, kind) if api_version else None
    if row is not None and row.cni and BY_KIND.get(kind) is not row:
        # A CNI's kind of a built-in's name (Calico's or Antrea's NetworkPolicy) is not the built-in: a custom
        # resource's strategy (generation counted, status written with the object), its rules the CNI's.
        return _CNI_STRATEGIES.setdefault(kind, custom_strategy(kind, False))
    found = STRATEGIES.get(kind)
    if found is not None:
        return found
    if kind in _PATH_SEGMENT_NAMED:
        return Strategy(kind, name_rule=is_path_segment_name)
    return GENERIC


def apply_defaults(body: Mapping[str, Any], namespace: str = "default") -> Body:
    """A defaulted copy of a built-in object the simulation made itself (system manifests, what the
    offline controllers create): what the API server would store."""
    info = BY_KIND.get(str(body.get("kind") or ""))
    return default_object(json_copy(dict(body)), info.namespaced if info is not None else None, namespace)


def default_object(obj: Body, namespaced: bool | None, namespace: str = "default") -> Body:
    """The scheme's defaulting of a decoded built-in object, in place: its namespace (cluster-scoped
    kinds lose theirs, as BeforeCreate does), then the kind's SetDefaults."""
    default_object_namespace(obj, namespaced, namespace)
    strategy_for(str(obj.get("kind") or ""), str(obj.get("apiVersion") or "")).default(obj)
    return obj


def default_object_namespace(obj: Body, namespaced: bool | None, namespace: str = "default") -> Body:
    """``default_object``'s first step alone: the object's namespace, set or dropped by the kind's scope."""
    meta = obj.setdefault("metadata", {})
    if namespaced is False:
        meta.pop("namespace", None)
    elif namespaced and not meta.get("namespace"):
        meta["namespace"] = namespace
    return obj


# The kinds' rules that read nothing of an object but its ``spec`` (validation.validate_workload: spec.replicas,
# spec.selector, spec.template), for specs that repeat: 9,000 Deployments of bench/calico.py hold 9 distinct specs.
# NetworkPolicy specs repeat less (7,400 of 10,000 there): validate_network_policy remembers its rules instead.
_SPEC_ONLY_RULES = (validation.validate_workload,)
# The kinds' defaulting that writes nothing of an object but its ``spec`` (model/defaults.py).
_SPEC_ONLY_DEFAULTS = (defaults.default_deployment, defaults.default_replicaset, defaults.default_daemonset)


def spec_shaped(strategy: Strategy) -> bool:
    """Whether the kind's defaulting and own rules read nothing of an object but its spec, so that a create's
    stored spec and its verdict depend on the spec as written alone (model/shapes.py's admitted specs)."""
    return strategy.validate in _SPEC_ONLY_RULES and strategy.default in _SPEC_ONLY_DEFAULTS


def validation_errors(obj: Mapping[str, Any], strategy: Strategy, namespaced: bool | None,
                      old: Mapping[str, Any] | None = None, subresource: str = "", *,
                      spec_valid: bool = False) -> Errors:
    """Validate, or ValidateUpdate with ``old`` (of the main resource, or of a subresource write):
    ObjectMeta by the kind's name rule, then the kind's own rules, then what the write may change.
    ``spec_valid``: a create whose spec is one the kind's spec-only rules found valid (``spec_shaped``)."""
    errors = validation.validate_object_meta(obj.get("metadata"), namespaced, strategy.name_rule)
    if spec_valid and old is None and not subresource and spec_shaped(strategy):
        return errors + strategy.validate_create(obj)
    # An update's legacy addresses the stored object holds stand as they are (KEP-4008 ratcheting).
    ratchet = old if strategy.kind in validation.RATCHETED_KINDS else None
    if subresource and old is not None:
        # A subresource's ValidateUpdate checks the metadata and what the subresource writes, not again the rest
        # it kept from the stored object (ValidatePodStatusUpdate validates no spec): the kind's rules run only
        # on a part that changed. The controllers' and kubelet's many status writes need not pay for the spec.
        if any(obj.get(k) != old.get(k) for k in obj.keys() | old.keys() if k not in ("metadata", "status")):
            with validation.ratcheting(ratchet):
                errors += strategy.validate(obj)
        sub = strategy.subresource_update(subresource)
        return errors + (sub.validate(obj, old) if sub is not None else [])
    if old is None and strategy.validate in _SPEC_ONLY_RULES:
        # A create, by rules that read the spec alone: an equal spec found valid before is valid (model/shapes.py).
        with validation.ratcheting(None):
            errors += spec_errors(strategy.validate, obj)
        return errors + strategy.validate_create(obj)
    with validation.ratcheting(ratchet):
        errors += strategy.validate(obj)
    if old is None:
        return errors + strategy.validate_create(obj)
    return errors + strategy.validate_update(obj, old)
