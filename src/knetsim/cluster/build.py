"""From documents to a ClusterState: admission, then the controllers, in dependency order.

    documents ─ defaulting ─ validation ─┐
    system objects (fresh kind cluster) ─┴─ namespaces, nodes
                                           ─ workloads → ReplicaSets → Pods (schedule, IPs, status)
                                           ─ Services (ClusterIP / NodePort / LB allocation)
                                           ─ EndpointSlice controller (drift against a snapshot)
                                           ─ IngressClass defaulting

Errors are collected across all documents (never only the first). A document with errors is
left out of the state; the rest still builds, so callers can show every problem at once.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..model import admission, shapes
from ..model.admission import FieldValidation, Validation
from ..model.crd import CRDVersion, source_of, versions_of
from ..model.defaults import DEFAULT_ACCOUNT, account_not_found, admit_service_account, default_service_account
from ..model.fielderr import FieldError
from ..model.kinds import (
    ALL_CNI_GROUPS,
    ANTREA,
    BY_KIND,
    CALICO,
    CLUSTER_SCOPED_BUILTINS,
    CNI_GROUPS,
    GATEWAY_API_KINDS,
    GATEWAY_READ_AS_KEPT,
    KINDS,
    WORKLOADS,
    info_for,
    view_of,
)
from ..model.loader import BUILTIN, CONTROLLER, Document, Source, many_objects
from ..model.objects import (
    ENDPOINTSLICE_CONTROLLER,
    INGRESS_CLASS_ANNOTATION,
    EndpointSlice,
    Ingress,
    IngressClass,
    Meta,
    Namespace,
    NetworkPolicy,
    Node,
    Object,
    Pod,
    Service,
)
from ..model.strategy import apply_defaults, strategy_for
from . import rollout, servicecidrs, storage
from .config import ClusterConfig
from .endpointslices import describe_drift, reconcile
from .gatewayinfra import infra_manifests
from .mirroring import mirror
from .services import Allocator, allocate_services
from .state import COLLECTIONS, WORKLOAD_KINDS, ClusterState, Notice, stored_kind
from .system import ingress_nginx_status, system_manifests
from .workloads import WorkloadInput, annotate_replica_set, assign_ips_and_status, expand_workloads, schedule
from .workloadstatus import daemon_set_status, is_active, is_ready, replica_set_status, stateful_set_status

# Calico's API groups (its rows in model.kinds): its kinds are read by knetsim.policy (on a Calico cluster), not
# by a layer of the build.
CALICO_GROUPS = CNI_GROUPS[CALICO]
# Antrea's policy kinds share their names with Kubernetes' (NetworkPolicy, ClusterNetworkPolicy): kept untyped,
# keyed Kind.crd.antrea.io (state.stored_kind), read by knetsim.policy.antrea.
ANTREA_GROUPS = CNI_GROUPS[ANTREA]
INVALID_KEPT = "InvalidKept"  # notice code: an object validation refuses, kept (--validate=ignore)
API_WARNING = "APIServerWarning"  # notice code: a warning the API server of the version in force sends
UNKNOWN_FIELD = "UnknownField"  # notice code: a field the types do not know, dropped (fieldValidation=Warn)
STORED_INVALID = "StoredInvalid"  # notice code: an object a cluster stored that validation refuses, kept as stored


@dataclass(frozen=True, slots=True)
class ManifestError:
    """One problem with one document: where, which object, and what (a field error or a sentence)."""

    source: Source | None
    subject: str
    error: FieldError | str
    # Fields the API server did not know (strict decoding), each with the nearest real field if any.
    unknown_fields: tuple[tuple[str, str | None], ...] = ()

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source else ""
        subject = f"{self.subject}: " if self.subject else ""
        return f"{where}{subject}{self.error}"


@dataclass(slots=True)
class BuildResult:
    state: ClusterState
    errors: list[ManifestError] = field(default_factory=list)


def from_live_cluster(body: dict[str, Any]) -> bool:
    """Was this object read from a real cluster (``kubectl get -o yaml``) rather than written by hand?"""
    meta = body.get("metadata") or {}
    return isinstance(meta, dict) and _stored_by_a_cluster(meta)


def _stored_by_a_cluster(meta: dict[str, Any]) -> bool:
    """``from_live_cluster`` of an object whose metadata dict is at hand: what only a cluster's store writes."""
    return bool(meta.get("uid") or meta.get("resourceVersion") or meta.get("creationTimestamp"))


@dataclass(slots=True)
class Admitted:
    documents: list[Document] = field(default_factory=list)
    errors: list[ManifestError] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    # (kind, namespace, name, source) of every admitted document, in input order (kept or not)
    identities: list[tuple[str, str, str, Source]] = field(default_factory=list)


def input_crds(documents: Iterable[Document]) -> dict[tuple[str, str, str], CRDVersion]:
    """The CustomResourceDefinitions in the input: their kinds are admitted by their own schemas."""
    out: dict[tuple[str, str, str], CRDVersion] = {}
    for doc in documents:
        if doc.kind == "CustomResourceDefinition" and str(doc.body.get("apiVersion")) == "apiextensions.k8s.io/v1":
            try:
                versions = versions_of(doc.body, source_of(doc.body, str(doc.source)))
            except (AttributeError, TypeError, ValueError):
                continue  # a malformed CRD is reported by its own admission below
            out.update(((v.group, v.version, v.kind), v) for v in versions)
    return out


def _describe(doc: Document, namespace: str) -> str:
    """``Service shop/web``: the namespace the object would get, as errors name it."""
    # By group first: Calico's GlobalNetworkPolicy has no namespace, and no row of BY_KIND names it.
    info = info_for(doc.body.get("apiVersion"), doc.kind) or BY_KIND.get(doc.kind)
    cluster_scoped = (info is not None and not info.namespaced) or doc.kind in CLUSTER_SCOPED_BUILTINS
    if doc.namespace or cluster_scoped or not isinstance(doc.body.get("metadata"), dict):
        return doc.describe()
    return Document(doc.source, {**doc.body, "metadata": {**doc.body["metadata"], "namespace": namespace}}).describe()


@shapes.sharing()  # the input's objects share each admitted spec they repeat (model/shapes.py)
def admit(documents: Iterable[Document], namespace: str = "default",
          validation: Validation = Validation.STRICT, *, keep: Callable[[Document], bool] | None = None,
          keep_stored: bool = False) -> Admitted:
    """Decoding, defaulting and validation of every document (model.admission), errors collected.

    Hand-written manifests are decoded as ``kubectl apply`` sends them (fieldValidation=Strict: an
    unknown field refuses the object); objects read from a live cluster with Warn, since a field a
    newer server knows is no reason to drop what that cluster runs. ``validation`` is kubectl's
    ``--validate``: ``warn`` decodes everything with Warn; ``ignore`` also keeps what validation refuses,
    each such object noticed (``InvalidKept``) so that every answer can say it was analysed as written.
    ``keep`` picks which admitted documents to return (all by default): a caller that needs a few of them
    (``validate``) does not hold a second copy of a large input. ``keep_stored``: an object a cluster stored
    that knetsim's validation refuses (a newer or older API server's rules) is kept as it is stored, noticed
    (``STORED_INVALID``), not dropped: dropping a running pod would make its ReplicaSet's stand-in appear, at
    another IP on another node. ``validate`` does not keep them: checking them is its purpose.
    """
    docs = list(documents)
    crds = input_crds(docs)
    out = Admitted()
    keep_invalid = validation == Validation.IGNORE
    for i, doc in enumerate(docs):
        if keep is not None:
            docs[i] = None  # type: ignore[call-overload]  # this list's hold on the input ends with its turn
        live = from_live_cluster(doc.body)
        mode = FieldValidation.WARN if live or validation != Validation.STRICT else FieldValidation.STRICT
        stored_kept = live and keep_stored and not keep_invalid
        try:
            # What a cluster stored is taken as stored: no create-time rules (``admission.admit_as``).
            body, decoded, kind = admission.admit(doc.body, namespace=namespace, field_validation=mode,
                                                  extra_crds=crds, keep_invalid=keep_invalid or stored_kept,
                                                  stored=live)
        except admission.NoKindMatch as exc:
            out.errors.append(ManifestError(doc.source, doc.describe(), f"{exc.message}; ensure CRDs are installed "
                                                                        "first"))
            continue
        except admission.AdmissionError as exc:
            subject = _describe(doc, namespace)
            hints = tuple((f, admission.did_you_mean(doc.body, f, crds)) for f in exc.unknown_fields)
            if exc.errors:
                out.errors.extend(ManifestError(doc.source, subject, e) for e in exc.errors)
            else:
                out.errors.append(ManifestError(doc.source, subject, exc.message, hints))
            continue
        admitted = Document(doc.source, body)
        out.identities.append((_stored_kind(admitted), admitted.namespace, admitted.name, admitted.source))
        cni = ""
        if kind is None:  # only an unknown kind's notice names its CNI: the group is not looked at for the rest
            group = _group(doc.body)
            cni = "Calico" if group in CALICO_GROUPS else "Antrea" if group in ANTREA_GROUPS else ""
        if kind is None and cni:
            out.notices.append(Notice("UnknownKind", f"kind {doc.kind} in version {doc.body.get('apiVersion')} is "
                                      f"{cni}'s and its CustomResourceDefinition is not in the input: checked by "
                                      f"{cni}'s fields as knetsim declares them; policy answers read it as {cni} does",
                                      admitted.describe(), doc.source))
        elif kind is None:
            out.notices.append(Notice("UnknownKind", f"kind {doc.kind} in version {doc.body.get('apiVersion')} is "
                                      "not known to knetsim and its CustomResourceDefinition is not in the input; "
                                      "kept but not checked or simulated", admitted.describe(), doc.source))
        for warning in decoded.warnings:
            out.notices.append(Notice(UNKNOWN_FIELD, f"{warning} (dropped, as the API server does with "
                                      "fieldValidation=Warn)", admitted.describe(), doc.source))
        for warning in decoded.api_warnings:  # the Warning: lines kubectl apply prints
            out.notices.append(Notice(API_WARNING, warning, admitted.describe(), doc.source))
        if decoded.refused and stored_kept:
            out.notices.append(Notice(STORED_INVALID, "analysed as the cluster stores it, though knetsim's "
                                      f"validation refuses it: {'; '.join(str(e) for e in decoded.refused)}",
                                      admitted.describe(), doc.source))
        elif decoded.refused:
            out.notices.append(Notice(INVALID_KEPT, "analysed as written (--validate=ignore); the API server would "
                                      f"refuse it: {'; '.join(str(e) for e in decoded.refused)}",
                                      admitted.describe(), doc.source))
        if keep is None or keep(admitted):
            out.documents.append(admitted)
    return out


def validate_documents(documents: list[Document], config: ClusterConfig | None = None,
                       namespace: str = "default", validation: Validation = Validation.STRICT) -> BuildResult:
    """What ``knetsim validate`` checks, and only that: every document's admission and the allocations the API
    server makes when it stores one (ClusterIPs, NodePorts, LoadBalancer addresses); nothing is scheduled or
    simulated. ``documents`` keeps only the CRDs and the objects of custom kinds (which definition admitted
    them is reported), so a large input is not held twice."""
    config = config or ClusterConfig()
    taken = list(documents)
    # A CNI's kinds by group too: Calico's and Antrea's NetworkPolicy share the Kubernetes kind's name.
    documents[:] = [d for d in taken if d.kind == "CustomResourceDefinition" or d.kind not in BY_KIND
                    or BY_KIND[d.kind].crd or _group(d.body) in ALL_CNI_GROUPS]
    with many_objects():
        result = admit(taken, namespace, validation, keep=lambda d: d.kind == "Service")
    state = ClusterState(config=config)
    state.notices.extend(result.notices)
    seen: dict[tuple[str, str, str], Source] = {}
    for kind, ns, name, source in result.identities:
        key = (kind, ns, name)
        if key in seen:
            state.warn("Duplicate", f"defined again at {source}; the later definition wins",
                       f"{kind} {ns + '/' if ns else ''}{name}", seen[key])
        seen[key] = source
    services: dict[tuple[str, str], Document] = {}
    for doc in result.documents:
        services[(doc.namespace, doc.name)] = doc  # the later definition wins, as in a build
    errors = list(result.errors)
    for failure in allocate_services([(d.body, d.source) for _, d in sorted(services.items())], config,
                                     live=from_live_cluster):
        errors.append(ManifestError(failure.source, failure.subject, failure.error))
    return BuildResult(state, errors)



def build_cluster(documents: Iterable[Document], config: ClusterConfig | None = None,
                  namespace: str = "default", *, authoritative: frozenset[str] = frozenset(),
                  validation: Validation = Validation.STRICT) -> BuildResult:
    """``authoritative``: kinds the input lists completely (a live cluster's read): the built-in system
    objects of those kinds are left out, so a cloud cluster without ingress-nginx does not gain kind's.
    ``validation``: kubectl's ``--validate`` (``admit``)."""
    config = config or ClusterConfig()
    result = admit(documents, namespace, validation, keep_stored=True)
    admitted, errors = result.documents, result.errors
    state = ClusterState(config=config)
    state.notices.extend(result.notices)

    # Later documents replace earlier ones with the same identity, as repeated `kubectl apply` would.
    user: dict[tuple[str, str, str], Document] = {}
    # admit recorded each admitted document's identity (kind, namespace, name) in order, one per document when it
    # keeps them all: read there, not computed again for each of 21,000 documents.
    for doc, (kind, doc_namespace, name, _) in zip(admitted, result.identities, strict=True):
        key = (kind, doc_namespace, name)
        if key in user:
            state.warn("Duplicate", f"defined again at {doc.source}; the later definition wins",
                       f"{doc.kind} {doc.namespace + '/' if doc.namespace else ''}{doc.name}", user[key].source)
        user[key] = doc
    # The namespace from the key first (a tuple item, not two properties of each of 21,000 documents).
    snapshot_has_system = any(key[1] == "kube-system" and doc.kind == "Pod" for key, doc in user.items())
    system = [Document(BUILTIN, apply_defaults(body)) for body in system_manifests(config)
              if body.get("kind") not in authoritative]
    if snapshot_has_system:
        # A snapshot shows its own kube-system; ours would only add phantom pods.
        system = [d for d in system if d.kind not in ("Pod", *WORKLOAD_KINDS)]
    merged: dict[tuple[str, str, str], Document] = {(d.kind, d.namespace, d.name): d for d in system}
    merged.update(user)  # keyed as `user` is
    # One sort of the 21,000 keys serves both orders: the user's documents are the merged ones under their keys.
    merged_keys = sorted(merged)
    # The user's documents with the namespace their key holds (admit recorded it): not the property again for each.
    user_namespaced = [(k[1], user[k]) for k in merged_keys if k in user]
    by_kind: dict[str, list[Document]] = {}
    for key in merged_keys:
        by_kind.setdefault(key[0], []).append(merged[key])
    gateway_views = _gateway_views(by_kind)
    _gateway_infra(gateway_views, by_kind, merged)

    _namespaces(state, by_kind, user_namespaced)
    _default_service_accounts(state)
    _nodes(state, by_kind, config)
    nodes = list(state.nodes.values())

    # Workloads and pods.
    workload_inputs = [WorkloadInput(d.body, d.source) for k in WORKLOAD_KINDS for d in by_kind.get(k, [])]
    pod_bodies = [(d.body, d.source) for d in by_kind.get("Pod", [])]
    for body, _ in pod_bodies:
        if not from_live_cluster(body):
            admit_service_account(body)  # the ServiceAccount admission plugin, as each pod's create meets it
    # The ReplicaSets' replica annotations are written with the workloads' status, when first read (_finish_workloads).
    expanded = expand_workloads(workload_inputs, pod_bodies, nodes, annotate=False)
    # More pods than replicas (a snapshot after a scale-down): the controller would delete the surplus.
    surplus = set(expanded.surplus)
    if surplus:  # most inputs have none: no key made for each of their pods
        pod_bodies = [(b, s) for b, s in pod_bodies
                      if f"{b['metadata'].get('namespace', '')}/{b['metadata']['name']}" not in surplus]
    pod_bodies += expanded.pods
    # A pod the cluster stored without a node is pending there: it is taken as stored, never scheduled here.
    storage.add_claims(by_kind, expanded.claims)
    volumes = storage.offline_volumes(by_kind)
    storage.provision_offline(state, by_kind, volumes, [], before_scheduling=True)
    state.notices.extend(schedule([p for p in pod_bodies if not from_live_cluster(p[0])], nodes, volumes))
    storage.provision_offline(state, by_kind, volumes, [b for b, _ in pod_bodies])
    state.notices.extend(assign_ips_and_status(pod_bodies, nodes, config,
                                               frozenset((d.namespace, d.name) for d in by_kind.get("Service", [])),
                                               {(d.namespace, d.name): d.body.get("data") or {}
                                                for d in by_kind.get("ConfigMap", [])},
                                               # A Secret's keys: data and the stringData the API server folds in.
                                               {(d.namespace, d.name): {**(d.body.get("data") or {}),
                                                                        **(d.body.get("stringData") or {})}
                                                for d in by_kind.get("Secret", [])}))
    for body, source in pod_bodies:
        pod = Pod.parse(body, source)
        state.pods[pod.key] = pod
    _service_accounts_assumed(state, by_kind, pod_bodies, [b for b, _ in expanded.workloads])
    for w in workload_inputs:
        _keep(state, w.body, w.source)
    for body, source in expanded.workloads:
        _keep(state, body, source)

    # Services, their ClusterIPs from the ready ServiceCIDRs; an IPAddress written by hand holds its address.
    service_bodies = [(d.body, d.source) for d in by_kind.get("Service", [])]
    cidr_docs = by_kind.get("ServiceCIDR", [])
    # A cluster read without its ServiceCIDRs (older than v1.33, or no right to list them) still has the
    # configured range.
    alloc = Allocator(config, servicecidrs.ranges(d.body for d in cidr_docs) if cidr_docs else None)
    for doc in by_kind.get("IPAddress", []):
        alloc.keep_ip(doc.name)
    # A Service whose allocation fails is not stored; one refused at admission was dropped above, and the
    # earlier definition of it, if any, stays (a refused `kubectl apply` leaves the stored object as it was).
    failed = set()
    for failure in allocate_services(service_bodies, config, live=from_live_cluster, alloc=alloc):
        errors.append(ManifestError(failure.source, failure.subject, failure.error))
        failed.add(str(failure.subject))
    for body, source in service_bodies:
        svc = Service.parse(body, source)
        if f"Service {svc.key}" in failed and source is not BUILTIN:
            continue
        state.services[svc.key] = svc

    _service_cidrs(state, by_kind)

    # EndpointSlices: user-written ones are kept; the controller manages the rest.
    for doc in by_kind.get("EndpointSlice", []):
        es = EndpointSlice.parse(doc.body, doc.source)
        state.endpoint_slices[es.key] = es
    _endpoint_slices(state)

    for doc in by_kind.get("Endpoints", []):
        if doc.source is not BUILTIN:
            state.warn("EndpointsDeprecated", strategy_for("Endpoints").deprecation, doc.describe(), doc.source)
        _keep(state, doc.body, doc.source)
    _mirrored_slices(state)

    for doc in by_kind.get("IngressClass", []):
        state.ingress_classes[doc.name] = IngressClass.parse(doc.body, doc.source)
    for doc in by_kind.get("Ingress", []):
        ing = _ingress(state, doc)
        state.ingresses[ing.key] = ing
    for doc in by_kind.get("NetworkPolicy", []):
        np = NetworkPolicy.parse(doc.body, doc.source)
        state.network_policies[np.key] = np

    _gateway_api(state, gateway_views)

    # Every other kind is kept as read (state.others): a layer that reads it parses it itself (policies, a
    # Gateway's Secrets and CA bundles). Warned about unless it is simulated or read so (model.kinds): a CronJob
    # acts over time (the live cluster's controller makes its Jobs, which are simulated once they exist), and at
    # one instant there is nothing more to simulate; a CustomResourceDefinition in the input is used by admission
    # (it defines its kind). ServiceCIDRs and IPAddresses were placed by _service_cidrs, computed.
    placed = {info.kind for info in KINDS if info.collection} | {"ServiceCIDR", "IPAddress"}
    quiet = {info.kind for info in KINDS if info.simulated} | GATEWAY_READ_AS_KEPT | {"CustomResourceDefinition"}
    for kind, kind_docs in sorted(by_kind.items()):
        if all(_group(d.body) in CALICO_GROUPS | ANTREA_GROUPS for d in kind_docs):
            for d in kind_docs:
                _keep_other(state, d)  # read by knetsim.policy
            continue
        if kind in placed:
            continue
        for d in kind_docs:
            _keep_other(state, d)
        if kind not in quiet:
            state.warn("NotSimulated", f"{len(kind_docs)} object(s) of kind {kind} kept but not simulated", kind)
    _first_generation(state, [name for name in COLLECTIONS if name != WORKLOADS])
    # The workloads' status and generation are written when something first reads state.workloads (what kubectl
    # get, doctor, snapshots read), not here: `matrix` never reads them. Nothing after this point changes what
    # they are computed from (the pods, the workloads' manifests), so they come out as written here before.
    # A partial of a module function, not a closure: a state still unfinished pickles.
    state._finish_workloads = partial(_finish_workloads, unannotated=expanded.unannotated)
    return BuildResult(state, errors)


def _finish_workloads(state: ClusterState, unannotated: list[tuple[dict[str, Any], Any]]) -> None:
    """What the build defers to the first read of ``state.workloads``: the replica annotations of the ReplicaSets
    it made (after the revision their annotations begin with), each workload's status, then its first generation, in
    the order the build wrote them in (a Deployment's revision annotation is added to its metadata before its
    generation)."""
    for replica_set, deployment in unannotated:
        annotate_replica_set(replica_set, deployment)
    _workload_status(state)
    _first_generation(state, [WORKLOADS])


def _first_generation(state: ClusterState, collections: Iterable[str]) -> None:
    """``metadata.generation: 1`` on every object the build created of a kind whose strategy counts spec changes
    (PrepareForCreate sets it, as the live registry does), so it agrees with the observedGeneration its status
    reports. What a live cluster stored keeps its own. The strategy is the one admission used (a custom kind's
    is its CRD's)."""
    counted: dict[str, bool] = {}
    for name in collections:
        objects = state.workloads_without_status if name == WORKLOADS else getattr(state, name)
        for obj in objects.values():
            # The kind's answer first (a dict lookup): a kind that counts no generation (10,000 pods) needs none
            # of the metadata checks below.
            counts = counted.get(obj.kind)
            if counts is None:
                counts = counted[obj.kind] = _counts_generation(obj.kind)
            if not counts:
                continue
            meta = obj.raw.get("metadata")
            if not isinstance(meta, dict) or "generation" in meta or _stored_by_a_cluster(meta):
                continue
            meta["generation"] = 1


def _counts_generation(kind: str) -> bool:
    info = BY_KIND.get(kind)
    resolved = admission.resolve(info.api_version, kind) if info is not None else None
    return resolved is not None and admission.strategy(resolved).generation


def _service_cidrs(state: ClusterState, by_kind: dict[str, list[Document]]) -> None:
    """The IPAddress of every ClusterIP (the input's own kept as written), and each ServiceCIDR as the
    servicecidrs controller leaves it: finalizer and Ready, or Terminating while addresses depend on it."""
    written = {d.name: d for d in by_kind.get("IPAddress", [])}
    addresses = [d.body for d in written.values()]
    for body in servicecidrs.service_ip_addresses(s.raw for s in state.services.values()):
        if body["metadata"]["name"] not in written:
            addresses.append(body)
            _keep_other(state, Document(CONTROLLER, body))
    for doc in written.values():
        _keep_other(state, doc)
    cidrs = [d.body for d in by_kind.get("ServiceCIDR", [])]
    for doc in by_kind.get("ServiceCIDR", []):
        verdict = servicecidrs.reconcile(doc.body, cidrs, addresses)
        if servicecidrs.FINALIZER not in verdict.finalizers and doc.body["metadata"].get("deletionTimestamp"):
            continue  # nothing depends on it any more: the controller lets it go
        body = dict(doc.body)
        body["metadata"] = {**doc.body["metadata"], "finalizers": list(verdict.finalizers)}
        body["status"] = {"conditions": [verdict.condition]}
        if verdict.blocking:
            state.warn("ServiceCIDRTerminating", f"{servicecidrs.TERMINATING_MESSAGE} (only this ServiceCIDR "
                       f"contains {', '.join(verdict.blocking)})", f"ServiceCIDR {doc.name}", doc.source)
        _keep_other(state, Document(doc.source, body))


def _gateway_views(by_kind: dict[str, list[Document]]) -> dict[str, list[Object]]:
    """The typed view of every Gateway API object (model.kinds.view_of), parsed once: the infrastructure
    reads the classes, Gateways and ListenerSets before the controllers run, the state keeps them all."""
    out: dict[str, list[Object]] = {}
    for kind in sorted(GATEWAY_API_KINDS):
        docs = by_kind.get(kind)
        if docs:
            parse = view_of(kind)
            assert parse is not None, kind  # every Gateway API kind declares its view (model/apis/catalog.py)
            out[kind] = [parse(d.body, d.source) for d in docs]
    return out


def _gateway_infra(views: dict[str, list[Object]], by_kind: dict[str, list[Document]],
                   merged: dict[tuple[str, str, str], Document]) -> None:
    """Envoy Gateway's control plane and one proxy Deployment + LoadBalancer Service per Gateway of an
    accepted class (cluster/gatewayinfra.py), added before the controllers run so they get pods and IPs.
    What the input already has (a snapshot of a cluster running Envoy Gateway) is kept as it is."""
    if not views.get("GatewayClass"):
        return  # no class, no Gateway controller: nothing to install
    labels = {d.name: {**((d.body.get("metadata") or {}).get("labels") or {}), "kubernetes.io/metadata.name": d.name}
              for d in by_kind.get("Namespace", [])}
    pods = [d for d in by_kind.get("Pod", []) if d.namespace == "envoy-gateway-system"]
    def exists(kind: str, namespace: str, name: str) -> bool:
        return any(d.name == name and d.namespace in (namespace, "") for d in by_kind.get(kind, []))

    for body in infra_manifests(views["GatewayClass"], views.get("Gateway", []),  # type: ignore[arg-type]
                                views.get("ListenerSet", []), labels, exists):  # type: ignore[arg-type]
        meta = body["metadata"]
        key = (body["kind"], meta.get("namespace", ""), meta["name"])
        if key in merged:
            continue
        if body["kind"] == "Deployment":
            wanted = body["spec"]["selector"]["matchLabels"].items()
            if any(wanted <= ((d.body.get("metadata") or {}).get("labels") or {}).items() for d in pods):
                continue  # a live snapshot: the proxy's pods are already there, with their own names and IPs
        doc = Document(CONTROLLER, apply_defaults(body))
        merged[key] = doc
        docs = by_kind.setdefault(body["kind"], [])
        docs.append(doc)
        docs.sort(key=lambda d: (d.namespace, d.name))


def _gateway_api(state: ClusterState, views: dict[str, list[Object]]) -> None:
    """The Gateway API objects, kept typed for knetsim.gateway (which computes routing and status), each in its
    kind's collection."""
    for kind, objs in views.items():
        collection = getattr(state, BY_KIND[kind].collection)
        for obj in objs:
            collection[obj.key] = obj


def _keep(state: ClusterState, body: dict[str, Any], source: Source) -> None:
    obj = Object(body["kind"], Meta.parse(body["kind"], body["metadata"]), body, source)
    state.workloads_without_status[(obj.kind, obj.key)] = obj


def _keep_other(state: ClusterState, doc: Document) -> None:
    obj = Object(doc.kind, Meta.parse(doc.kind, doc.body.get("metadata") or {}), doc.body, doc.source)
    state.others[(_stored_kind(doc), obj.key)] = obj


def _group(body: dict[str, Any]) -> str:
    return str(body.get("apiVersion") or "").rpartition("/")[0]


# stored_kind per (kind, apiVersion): asked twice for each of 20,000 documents (admission, then the build) of a
# few dozen distinct pairs. Bounded: an input of many made-up kinds only stops being remembered.
_STORED_KINDS: dict[tuple[str, str], str] = {}


def _stored_kind(doc: Document) -> str:
    """The kind a document is grouped and kept under (``NetworkPolicy.projectcalico.org`` for a kind name knetsim
    knows in another group), so that a foreign group's kind never takes a built-in kind's path."""
    kind, api_version = doc.kind, doc.body.get("apiVersion")
    if type(api_version) is not str:
        return stored_kind(kind, api_version)
    known = _STORED_KINDS.get((kind, api_version))
    if known is None:
        known = stored_kind(kind, api_version)
        if len(_STORED_KINDS) < 1024:
            _STORED_KINDS[(kind, api_version)] = known
    return known


def _namespaces(state: ClusterState, by_kind: dict[str, list[Document]],
                docs: list[tuple[str, Document]]) -> None:
    """The input's Namespaces, and each namespace another of its ``docs`` (namespace, document) is in, assumed."""
    for doc in by_kind.get("Namespace", []):
        ns = Namespace.parse(doc.body, doc.source)
        state.namespaces[ns.name] = ns
    missing: dict[str, Document] = {}
    for namespace, doc in docs:
        if namespace and namespace not in state.namespaces and namespace not in missing:
            info = BY_KIND.get(doc.kind)
            if info is None or info.namespaced:
                missing[namespace] = doc
    for name, doc in sorted(missing.items()):
        if from_live_cluster(doc.body):
            # It exists on the cluster the object was read from; what the snapshot lacks is its labels.
            state.warn("NamespaceCreated", f"namespace {name!r} is not in the snapshot; assumed to have only the "
                       "label kubernetes.io/metadata.name (namespaceSelector verdicts need the namespaces in the "
                       "snapshot)", doc.describe(), doc.source)
        else:
            # kubectl apply would fail here; offline we assume the namespace exists and say so.
            state.warn("NamespaceCreated", f"namespace {name!r} is not in the input; assumed to exist (kubectl "
                       f"apply would fail with: namespaces \"{name}\" not found)", doc.describe(), doc.source)
        body = apply_defaults({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        state.namespaces[name] = Namespace.parse(body, CONTROLLER)


def _default_service_accounts(state: ClusterState) -> None:
    """The service account controller's ``default`` in every namespace not being deleted, as a live cluster has it
    (controllers/serviceaccount.py)."""
    for name, namespace in sorted(state.namespaces.items()):
        if namespace.meta.deletion_timestamp is None and \
                ("ServiceAccount", f"{name}/{DEFAULT_ACCOUNT}") not in state.others:
            _keep_other(state, Document(CONTROLLER, default_service_account(name)))


def _service_accounts_assumed(state: ClusterState, by_kind: dict[str, list[Document]],
                              pod_bodies: list[tuple[dict[str, Any], Source]], made: list[dict[str, Any]]) -> None:
    """A pod runs as an account the input does not hold: the API server would refuse it (the ServiceAccount admission
    plugin; a workload's controller records FailedCreate and makes no pod). Offline the account is assumed to exist,
    as a namespace is, and said once per account."""
    # Who owns each controller-made owner: made only when an account is missing (the 9,000 ReplicaSets of
    # bench/calico.py are walked for nothing otherwise).
    parents: dict[tuple[str, str, str], Any] | None = None
    accounts = {(d.namespace, d.name) for d in by_kind.get("ServiceAccount", [])} | \
        {(namespace, DEFAULT_ACCOUNT) for namespace in state.namespaces}
    for body, source in pod_bodies:
        meta, spec = body.get("metadata") or {}, body.get("spec") or {}
        account, namespace = str(spec.get("serviceAccountName") or ""), str(meta.get("namespace") or "")
        if not account or (namespace, account) in accounts or from_live_cluster(body):
            continue
        accounts.add((namespace, account))
        owner = next(iter(meta.get("ownerReferences") or ()), None)
        if parents is None:
            parents = {(str(body["metadata"].get("namespace") or ""), str(body.get("kind")),
                        str(body["metadata"]["name"])): ref
                       for body in made for ref in (body["metadata"].get("ownerReferences") or ())[:1]}
        # A controller-made owner (a Deployment's ReplicaSet, a CronJob's Job) is named by what the input holds.
        owner = parents.get((namespace, str((owner or {}).get("kind")), str((owner or {}).get("name"))), owner)
        refused = account_not_found(namespace, account)
        if owner is not None:
            subject = f"{owner.get('kind')} {namespace}/{owner.get('name')}"
            name = meta.get("generateName") or meta.get("name")
            would = f"its pods would not be created (FailedCreate: pods \"{name}\" is forbidden: {refused})"
        else:
            subject = f"Pod {namespace}/{meta.get('name')}"
            would = f"kubectl apply would fail with: pods \"{meta.get('name')}\" is forbidden: {refused}"
        state.warn("ServiceAccountAssumed", f"service account {account!r} is not in the input; assumed to exist in "
                   f"namespace {namespace!r} ({would})", subject, source)


def _nodes(state: ClusterState, by_kind: dict[str, list[Document]], config: ClusterConfig) -> None:
    node_docs = by_kind.get("Node", [])
    user_nodes = [d for d in node_docs if d.source is not BUILTIN]
    if user_nodes:
        node_docs = user_nodes
    else:
        # A snapshot without Node objects still names its nodes in the pods it has.
        seen: dict[str, tuple[str, str]] = {}
        for doc in by_kind.get("Pod", []):
            node_name = (doc.body.get("spec") or {}).get("nodeName")
            status = doc.body.get("status") or {}
            if node_name and status.get("hostIP") and node_name not in {n.name for n in config.nodes}:
                pod_ip = status.get("podIP") or ""
                cidr = ""
                if pod_ip and pod_ip != status["hostIP"]:
                    cidr = str(ipaddress.ip_network(f"{pod_ip}/{config.node_cidr_mask}", strict=False))
                prev = seen.get(node_name)
                seen[node_name] = (status["hostIP"], cidr or (prev[1] if prev else ""))
        if seen:
            node_docs = []
            # A node seen only through hostNetwork pods shows no pod CIDR: give it the first /24 no other
            # inferred node uses, so pods scheduled there (CoreDNS, say) still get addresses.
            used = {cidr for _, cidr in seen.values() if cidr}
            free = (str(n) for n in ipaddress.ip_network(config.pod_cidr).subnets(new_prefix=config.node_cidr_mask)
                    if str(n) not in used)
            seen = {name: (ip, cidr or next(free, "")) for name, (ip, cidr) in sorted(seen.items())}
            for name, (ip, cidr) in sorted(seen.items()):
                body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
                    "kubernetes.io/hostname": name}}, "spec": {"podCIDR": cidr},
                    "status": {"addresses": [{"type": "InternalIP", "address": ip}]}}
                node_docs.append(Document(CONTROLLER, body))
            state.warn("NodesInferred", "no Node objects in the input; nodes inferred from the pods' "
                       f"nodeName and hostIP: {', '.join(sorted(seen))}")
    for doc in node_docs:
        node = Node.parse(doc.body, doc.source)
        state.nodes[node.name] = node


def _workload_status(state: ClusterState) -> None:
    """The status each workload's controller would write for the pods it made (cluster.workloadstatus,
    the live controllers' own computation; no conditions or times: the offline build has no clock)."""
    # Each workload's pods, in no particular order: the statuses count them, nothing reads their order.
    owned: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for pod in state.pods.values():
        owner = pod.meta.owner
        if owner:
            owned.setdefault((pod.namespace, owner.kind, owner.name), []).append(pod.raw)
    workloads = sorted(state.workloads_without_status.items())
    rs_by_deploy: dict[tuple[str, str], list[Object]] = {}
    for (kind, _), obj in workloads:
        if kind == "ReplicaSet" and obj.meta.owner and obj.meta.owner.kind == "Deployment":
            rs_by_deploy.setdefault((obj.namespace, obj.meta.owner.name), []).append(obj)
    # ReplicaSets first: a Deployment's status adds theirs up.
    for (kind, _), obj in [*(w for w in workloads if w[0][0] != "Deployment"),
                           *(w for w in workloads if w[0][0] == "Deployment")]:
        if obj.raw.get("status") and from_live_cluster(obj.raw):
            continue
        pods = [p for p in owned.get((obj.namespace, kind, obj.name), []) if is_active(p)]
        if kind in ("ReplicaSet", "ReplicationController"):
            obj.raw["status"] = replica_set_status(obj.raw, pods)[0]
        elif kind == "DaemonSet":
            obj.raw["status"] = daemon_set_status(obj.raw, pods, len(pods))
        elif kind == "StatefulSet":
            obj.raw["status"] = stateful_set_status(obj.raw, pods)
        elif kind == "Job":
            ready = sum(1 for p in pods if is_ready(p))
            obj.raw["status"] = {"active": len(pods), "ready": ready} if pods else {"ready": ready}
        elif kind == "Deployment":
            rss = [rs.raw for rs in rs_by_deploy.get((obj.namespace, obj.name), [])]
            new_rs = rollout.find_new_replica_set(obj.raw, rss)
            obj.raw["status"] = rollout.deployment_counts(rss, new_rs, obj.raw)
            if new_rs is not None and not rollout.annotations(obj.raw).get(rollout.REVISION):
                rollout.annotations(obj.raw)[rollout.REVISION] = rollout.annotations(new_rs).get(rollout.REVISION, "1")


def _endpoint_slices(state: ClusterState) -> None:
    existing: dict[str, list[EndpointSlice]] = {}
    for es in state.endpoint_slices.values():
        if es.service_name:
            existing.setdefault(f"{es.namespace}/{es.service_name}", []).append(es)
    for key in sorted(state.services):
        svc = state.services[key]
        current = existing.get(key, [])
        pods = state.select_pods(svc.namespace, svc.selector_view) if svc.selector else []
        plan = reconcile(svc, pods, current, state.nodes)
        for event in plan.events:
            if event.type == "Warning":
                # What `kubectl describe svc` would list under Events.
                state.warn(event.reason, event.message, f"Service {svc.key}", svc.source)
        by_name = {es.name: es for es in current}
        for name in plan.delete:
            old = by_name[name]
            state.endpoint_slices.pop(old.key, None)
            if old.source is not BUILTIN and old.source is not CONTROLLER:
                state.warn("EndpointSliceDrift", "the controller would delete this slice", f"EndpointSlice {old.key}",
                           old.source)
        for body in plan.desired:
            name = body["metadata"]["name"]
            old = by_name.get(name)
            if old is not None and name not in plan.unchanged and old.managed_by == ENDPOINTSLICE_CONTROLLER:
                state.warn("EndpointSliceDrift", "differs from what the EndpointSlice controller computes: "
                           + describe_drift(old.raw, body), f"EndpointSlice {old.key}", old.source)
            es = EndpointSlice.parse(body, CONTROLLER if old is None else old.source)
            state.endpoint_slices[es.key] = es
    state.__dict__.pop("_slices_by_service", None)


def _mirrored_slices(state: ClusterState) -> None:
    """The EndpointSliceMirroring controller: each selector-less Service's own Endpoints, as slices."""
    # The Endpoints picked out before the sort (18,000 workloads of bench/calico.py hold none).
    for (_, key), endpoints in sorted(item for item in state.workloads_without_status.items()
                                      if item[0][0] == "Endpoints"):
        svc = state.services.get(key)
        if svc is None:
            continue
        plan = mirror(svc, endpoints.raw, state.slices_for(svc))
        for name in plan.delete:
            state.endpoint_slices.pop(f"{svc.namespace}/{name}", None)
        for body in (*plan.create, *plan.update):
            es = EndpointSlice.parse(body, CONTROLLER)
            state.endpoint_slices[es.key] = es
    state.__dict__.pop("_slices_by_service", None)


def _ingress(state: ClusterState, doc: Document) -> Ingress:
    """An Ingress as the cluster holds it, parsed once: the DefaultIngressClass admission plugin's class
    (``admission.admit_create`` over the admitted IngressClasses, as the live registry runs it) and the status
    its controller publishes are set on the dict first."""
    body = doc.body
    meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    if annotations.get(INGRESS_CLASS_ANNOTATION) is not None:
        state.warn("IngressClassAnnotation", "annotation \"kubernetes.io/ingress.class\" is deprecated, please use "
                   "'spec.ingressClassName' instead", doc.describe(), doc.source)
    elif spec.get("ingressClassName") is None:
        classes = [c.raw for c in state.ingress_classes.values()]
        body = dict(body, spec=dict(spec))
        kind = admission.resolve(str(body.get("apiVersion") or "networking.k8s.io/v1"), "Ingress")
        if kind is not None:
            admission.admit_create(body, kind, lambda k: classes if k == "IngressClass" else [])
        chosen = body["spec"].get("ingressClassName")
        defaults = admission.default_ingress_classes(classes) if chosen is not None else []
        if len(defaults) > 1:
            names = sorted(str(c["metadata"]["name"]) for c in defaults)
            state.warn("MultipleDefaultIngressClasses",
                       f"{len(defaults)} default IngressClasses ({', '.join(names)}); "
                       f"a v1.35 API server picks the newest, {chosen!r} (older docs say the Ingress is rejected)",
                       doc.describe(), doc.source)
    controllers = {c.name: c.controller for c in state.ingress_classes.values()}
    status = ingress_nginx_status(body, controllers, state.config)
    if status is not None:
        body = dict(body, status=status)
    return Ingress.parse(body, doc.source)
