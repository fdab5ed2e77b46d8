"""Admission of one object, as kube-apiserver admits it: resolve the kind, decode, default, validate.

The live API server and the offline loader both come through here, so ``kubectl apply`` against
``knetsim up`` and ``knetsim validate -f`` refuse the same objects with the same words.

    body ─ resolve kind ─ decode (typed; unknown fields by fieldValidation) ─ default ─ validate ─ object
           │               │ built-in kinds: the v1.35 Go types (model.schema)
           │               │ custom kinds:   the CRD's structural schema (model.crd): prune, default,
           │               │                 OpenAPI + CEL validation
           └ "no matches for kind ..." when the group is one knetsim knows and the kind is not in it

What each failure becomes (live status code / offline):

- the kind does not exist: 404 / ``no matches for kind "Ingres" in version "networking.k8s.io/v1"``;
- a value does not fit its type, or an unknown field under ``fieldValidation=Strict``: 400
  BadRequest, ``Service in version "v1" cannot be handled as a Service: strict decoding error:
  unknown field "spec.selectr"``;
- validation errors: 422 Invalid with field errors (``spec.ports[1].name: Required value``).

Under ``Warn`` the unknown fields are dropped and come back as warnings; under ``Ignore`` they are
dropped silently. Either way nothing the types do not describe is ever stored.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from . import crd as crds
from . import schema, shapes, storage, validation
from .fielderr import ErrorType, FieldError
from .kinds import ALL_CNI_GROUPS, BY_KIND, CLUSTER_SCOPED_BUILTINS, KindInfo
from .objects import DEFAULT_CLASS_ANNOTATION, INGRESS_CLASS_ANNOTATION
from .strategy import Strategy, custom_strategy, default_object, default_object_namespace, spec_shaped, strategy_for
from .strategy import validation_errors as kind_validation_errors
from .validation import validate_object_meta

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


class FieldValidation(StrEnum):
    STRICT = "Strict"
    WARN = "Warn"
    IGNORE = "Ignore"


class Validation(StrEnum):
    """How an offline command reads its manifests (kubectl's ``--validate``): ``strict`` as ``kubectl apply``
    sends them (an unknown or duplicate field refuses the object); ``warn`` drops such fields with the API
    server's warning; ``ignore`` also keeps objects validation would refuse, analysed as written."""

    STRICT = "strict"
    WARN = "warn"
    IGNORE = "ignore"


@dataclass(frozen=True)
class Kind:
    """A resolved kind: where its schema comes from and how knetsim treats it."""

    group: str
    version: str
    kind: str
    definition: str | None = None  # a built-in kind's OpenAPI definition
    crd: crds.CRDVersion | None = None  # a custom kind's CRD version
    info: KindInfo | None = None  # set when knetsim serves or simulates the kind
    namespaced: bool | None = None  # None: unknown (a kind knetsim can only keep)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @functools.cached_property
    def strategy(self) -> Strategy:
        """The kind's strategy (``strategy``), found once per resolved kind: admission asks twice an object."""
        if self.crd is not None:
            return custom_strategy(self.kind, self.crd.status_subresource)
        return strategy_for(self.kind, self.api_version)

    @property
    def typed(self) -> bool:
        """Has a schema (built-in or CRD): unknown fields and wrong types can be told."""
        return self.definition is not None or self.crd is not None


class AdmissionError(Exception):
    """The object is refused. ``code`` is the HTTP status the API server answers with."""

    def __init__(self, code: int, reason: str, message: str, errors: Iterable[FieldError] = (),
                 unknown_fields: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.errors = list(errors)
        self.unknown_fields = list(unknown_fields)  # the dropped paths, for "did you mean" hints


class NoKindMatch(AdmissionError):
    def __init__(self, api_version: str, kind: str) -> None:
        super().__init__(404, "NotFound", f'no matches for kind "{kind}" in version "{api_version}"')


@dataclass
class Decoded:
    obj: dict[str, Any]
    warnings: list[str] = field(default_factory=list)  # what fieldValidation=Warn reports
    unknown_fields: list[str] = field(default_factory=list)
    # Validation errors of an object admitted anyway (``admit(keep_invalid=True)``: analysed as written).
    refused: list[FieldError] = field(default_factory=list)
    # What the API server of the version in force warns of when it admits the object (model/versions.py).
    api_warnings: list[str] = field(default_factory=list)


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


# resolve's answers without CRDs from the input (they depend on nothing else: the v1.35 kinds and knetsim's own
# definitions are fixed), by (apiVersion, kind): 21,000 documents of bench/calico.py name 5 kinds. Bounded, since
# the live daemon resolves whatever clients send.
_RESOLVED: dict[tuple[str, str], Kind | None] = {}
_RESOLVED_MAX = 1024


def resolve(api_version: str, kind: str, extra_crds: Mapping[tuple[str, str, str], crds.CRDVersion] | None = None,
            ) -> Kind | None:
    """The kind ``apiVersion``/``kind`` name; None for a group knetsim knows nothing about (a foreign CRD).

    Raises NoKindMatch when the group is a built-in one (Kubernetes' or knetsim's custom groups) and has no such
    kind/version, as kubectl's REST mapping does.
    """
    if extra_crds:
        return _resolve(api_version, kind, extra_crds)
    key = (api_version, kind)
    try:
        return _RESOLVED[key]
    except KeyError:
        pass
    found = _resolve(api_version, kind, None)  # a NoKindMatch is raised every time, not remembered
    if len(_RESOLVED) < _RESOLVED_MAX:
        _RESOLVED[key] = found
    return found


def _resolve(api_version: str, kind: str, extra_crds: Mapping[tuple[str, str, str], crds.CRDVersion] | None,
             ) -> Kind | None:
    group, version = split_api_version(str(api_version))
    info = BY_KIND.get(kind)
    if info is not None and (info.group != group or version not in (info.version, *info.other_versions)):
        info = None
    definition = schema.builtin_definition(group, version, kind)
    custom = None
    if definition is None:
        custom = (extra_crds or {}).get((group, version, kind))
        # A CRD in the input replaces the built-in definition of its kind, every version of it.
        replaced = any((g, k) == (group, kind) for g, _, k in (extra_crds or {}))
        if not replaced and group in crds.builtin_groups():
            custom = crds.builtin(group, version, kind)
        if custom is None and (replaced or group in crds.builtin_groups()):
            info = None  # a version the kind's definition in force does not serve
    if definition is not None:
        namespaced = info.namespaced if info is not None else kind not in CLUSTER_SCOPED_BUILTINS
        return Kind(group, version, kind, definition=definition, info=info, namespaced=namespaced)
    if custom is not None:
        return Kind(group, version, kind, crd=custom, info=info, namespaced=custom.namespaced)
    if info is not None:
        return Kind(group, version, kind, info=info, namespaced=info.namespaced)
    if group in schema.builtin_groups() or group in crds.builtin_groups() or \
            any(g == group for g, _, _ in (extra_crds or {})):
        raise NoKindMatch(str(api_version), kind)
    return None


def _replaced(extra_crds: Mapping[tuple[str, str, str], crds.CRDVersion] | None) -> set[tuple[str, str]]:
    """The (group, kind)s whose CRD the input brings: that CRD decides their fields, not knetsim's."""
    return {(group, kind) for group, _, kind in (extra_crds or {})}


def handled_as(kind: Kind, detail: str) -> str:
    """How kube-apiserver frames a body it cannot decode."""
    return f'{kind.kind} in version "{kind.version}" cannot be handled as a {kind.kind}: {detail}'


def decode(body: Mapping[str, Any], kind: Kind, field_validation: FieldValidation = FieldValidation.STRICT,
           ) -> Decoded:
    """The body as the typed decoder leaves it; raises AdmissionError (400) for type errors and, under
    Strict, for unknown or duplicate fields."""
    if kind.definition is not None:
        try:
            decoded = schema.decode(dict(body), kind.definition)
        except schema.DecodeError as exc:
            raise AdmissionError(400, "BadRequest", handled_as(kind, str(exc))) from None
        obj, strict = decoded.obj, list(decoded.strict)
    else:
        fields = kind.crd.schema if kind.crd is not None else cni_fields(kind.group, kind.kind)
        if fields is None:
            return Decoded(dict(body))
        try:
            meta = schema.decode_field(body.get("metadata"), OBJECT_META, "metadata")
        except schema.DecodeError as exc:
            raise AdmissionError(400, "BadRequest", handled_as(kind, str(exc))) from None
        # A CNI's kind is not defaulted after pruning: its pruned rules can be shared (shapes.sharing); a CRD's are
        # defaulted in place.
        obj, strict = crds.prune_to_schema({**body, "metadata": meta.obj}, fields,
                                           shapes.shared_values() if kind.crd is None else None)
        strict = [*meta.strict, *strict]
    unknown = [s.split('"', 2)[1] for s in strict if s.startswith("unknown field")]
    if strict and field_validation == FieldValidation.STRICT:
        raise AdmissionError(400, "BadRequest", handled_as(kind, "strict decoding error: " + ", ".join(strict)),
                             unknown_fields=unknown)
    return Decoded(obj, strict if field_validation == FieldValidation.WARN else [], unknown)


def cni_fields(group: str, kind: str) -> dict[str, Any] | None:
    """The fields of a CNI's own kind (Calico's, Antrea's: model.apis.cni), whose objects are decoded by them as
    the CNI's API server or CRD decodes them; None for every other kind. Imported on the first such object."""
    if group not in ALL_CNI_GROUPS:
        return None
    from .apis.cni import object_schema

    return object_schema(group, kind)



def strategy(kind: Kind) -> Strategy:
    """The kind's strategy: a built-in kind's own, or the custom-resource strategy of its CRD version."""
    return kind.strategy


def default(obj: dict[str, Any], kind: Kind, namespace: str = "default") -> dict[str, Any]:
    """Defaulting of a decoded object (in place); cluster-scoped kinds lose any namespace, as BeforeCreate does."""
    if kind.crd is None:
        return default_object(obj, kind.namespaced, namespace)
    meta = obj.setdefault("metadata", {})
    if kind.namespaced is False:
        meta.pop("namespace", None)
    elif kind.namespaced and not meta.get("namespace"):
        meta["namespace"] = namespace
    return crds.default(obj, kind.crd)


def validation_errors(obj: dict[str, Any], kind: Kind, old: dict[str, Any] | None = None,
                      subresource: str = "") -> list[FieldError]:
    """Every validation error of a decoded, defaulted object (the API server's 422 list): a create's rules
    without ``old``, an update's with it (what may change), a subresource write's its own."""
    if kind.crd is not None:
        return validate_object_meta(obj.get("metadata"), kind.namespaced) + crds.validate_custom(obj, kind.crd, old)
    return kind_validation_errors(obj, strategy(kind), kind.namespaced, old, subresource) + cni_type_errors(obj, kind)


def cni_type_errors(obj: dict[str, Any], kind: Kind) -> list[FieldError]:
    """A CNI's kind's values of the wrong JSON type, or a required field missing (``spec.types: Invalid value:
    "object": spec.types in body must be of type array``), as the CNI's CRD refuses them; [] for other kinds."""
    if kind.crd is not None or kind.definition is not None:
        return []
    fields = cni_fields(kind.group, kind.kind)
    if fields is None:
        return []
    # Only types and required fields are declared: no CEL rule was skipped, so apiextensions' closing line about
    # unchecked rules is not said.
    return [e for e in crds.validate(obj, fields) if e.path != "<nil>"]


# --- admission plugins: the cluster's say in a write, after the kind's own defaulting -------

Lookup = Callable[[str], Iterable[Mapping[str, Any]]]  # kind → the stored objects of that kind


def default_ingress_classes(classes: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The IngressClasses marked default, in the order the DefaultIngressClass plugin prefers them: the
    newest first (v1.35; older docs say several defaults make the create fail), then by name."""
    defaults = [c for c in classes
                if ((c.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"]
    defaults.sort(key=lambda c: str(c["metadata"].get("name") or ""))
    defaults.sort(key=lambda c: str(c["metadata"].get("creationTimestamp") or ""), reverse=True)
    return defaults


def default_ingress_class(obj: dict[str, Any], classes: Iterable[Mapping[str, Any]]) -> str | None:
    """The DefaultIngressClass admission plugin on a new Ingress: one without a class (field or the
    deprecated annotation) gets the default IngressClass's name. Returns the name it set, if any. Only
    at creation: existing Ingresses keep what they have."""
    spec = obj.setdefault("spec", {})
    if spec.get("ingressClassName") or ((obj.get("metadata") or {}).get("annotations") or {}).get(
            INGRESS_CLASS_ANNOTATION):
        return None
    defaults = default_ingress_classes(classes)
    if not defaults:
        return None
    spec["ingressClassName"] = str(defaults[0]["metadata"]["name"])
    return spec["ingressClassName"]


def admit_create(obj: dict[str, Any], kind: Kind, lookup: Lookup) -> None:
    """The mutating admission plugins of a create, after defaulting and before validation."""
    if kind.kind == "Ingress" and kind.group == "networking.k8s.io":
        default_ingress_class(obj, lookup("IngressClass"))
    elif kind.kind == "PersistentVolumeClaim" and kind.group == "":
        storage.admit_claim(obj, lookup("StorageClass"))  # DefaultStorageClass


# A value the simulation has to interpret (an address, a CIDR, a selector, a port, a protocol) that does not
# parse has no meaning "as written": netpol-analyzer and NCA refuse such objects too. Missing, forbidden,
# duplicate or oversized fields, and invalid names and labels anywhere in metadata, leave a readable object.
# So is a missing one of those (a port number, a CIDR), and an object without a name, a spec, or a workload
# without its selector or pod template has no shape to read.
_UNINTERPRETABLE = frozenset({ErrorType.INVALID, ErrorType.NOT_SUPPORTED, ErrorType.TYPE_INVALID})
_METADATA = re.compile(r"^(?:.*\.)?metadata[.\[]")
_SHAPE = re.compile(r"^(?:metadata\.name|spec|spec\.(?:selector|template|jobTemplate)(?:\.spec(?:\.template)?)?)$"
                    r"|(?:^|\.)(?:port|cidr|protocol)$")


# A custom kind's notice that its CEL rules were skipped (apiextensions' "<nil>: Invalid value: null"): it says
# only that other errors came first, and those decide.
_RULES_SKIPPED = "<nil>"


def unreadable_as_written(errors: Iterable[FieldError]) -> list[FieldError]:
    """The errors that keep an object out even when it is analysed as written (``--validate=ignore``)."""
    return [e for e in errors
            if (e.type in _UNINTERPRETABLE and not _METADATA.match(e.path) and e.path != _RULES_SKIPPED)
            or (e.type == ErrorType.REQUIRED and _SHAPE.search(e.path))]


def invalid(kind: Kind, name: str, errors: list[FieldError]) -> AdmissionError:
    """The 422: ``Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: ...``."""
    subject = f"{kind.kind}.{kind.group}" if kind.group else kind.kind
    text = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
    return AdmissionError(422, "Invalid", f'{subject} "{name}" is invalid: {text}', errors)


def admit(body: Mapping[str, Any], *, namespace: str = "default",
          field_validation: FieldValidation = FieldValidation.STRICT,
          extra_crds: Mapping[tuple[str, str, str], crds.CRDVersion] | None = None,
          keep_invalid: bool = False, stored: bool = False) -> tuple[dict[str, Any], Decoded, Kind | None]:
    """The whole pipeline for one offline document; raises AdmissionError. A foreign kind (None) is kept as is.

    ``keep_invalid``: validation errors (the 422) do not refuse the object; they come back in
    ``Decoded.refused`` (analysis "as written", as netpol-analyzer and NCA read files). A body the
    typed decoder cannot read (the 400) is still refused: it has no typed form to analyse."""
    kind = resolve(str(body.get("apiVersion") or ""), str(body.get("kind") or ""), extra_crds)
    if kind is None:
        # A kind knetsim keeps as read; a CNI's own (not in BY_KIND: its names are Kubernetes kinds' too) is still
        # decoded by its fields, so a misspelt field is refused as that CNI's API server refuses it.
        group, version = split_api_version(str(body.get("apiVersion") or ""))
        kind_name = str(body.get("kind") or "")
        if cni_fields(group, kind_name) is None or (group, kind_name) in _replaced(extra_crds):
            return dict(body), Decoded(dict(body)), None
        cni_kind = Kind(group, version, kind_name)
        decoded = decode(body, cni_kind, field_validation)
        _refuse_or_keep(decoded, decoded.obj, cni_kind, cni_type_errors(decoded.obj, cni_kind), keep_invalid)
        return decoded.obj, decoded, None
    obj, decoded = admit_as(body, kind, namespace=namespace, field_validation=field_validation,
                            keep_invalid=keep_invalid, stored=stored)
    return obj, decoded, kind


def admit_as(body: Mapping[str, Any], kind: Kind, *, namespace: str = "default",
             field_validation: FieldValidation = FieldValidation.STRICT,
             keep_invalid: bool = False, stored: bool = False) -> tuple[dict[str, Any], Decoded]:
    """decode → default → validate an object of a resolved kind, as a create admits it; raises AdmissionError.
    The live registry runs the same steps with its own between them (prepare, namespace lifecycle, plugins,
    webhooks, allocation). ``keep_invalid``: as ``admit``.

    ``stored``: the object is one an API server already stored (read from a cluster, a ``kubectl get -o yaml``
    snapshot, a store read back at start-up). It is validated by its kind's rules and as an update that changes
    nothing, never by a create's own rules: a pod that ``kubectl debug`` gave ephemeral containers is stored and
    running, though a create of the same body is refused (ValidatePodCreate forbids spec.ephemeralContainers)."""
    spec_key = _written_spec_key(body, kind) if not stored else None
    spec = shapes.admitted_spec(spec_key) if spec_key is not None else None
    # Inside shapes.sharing(), a created NetworkPolicy's rules (below).
    shared = shapes.shared_values() if kind.kind == "NetworkPolicy" and kind.definition is not None and not stored \
        else None
    rule_keys = _written_rule_keys(body) if shared is not None else None
    if rule_keys is not None:
        assert shared is not None
        admitted = _with_shared_rules(body, kind, shared, rule_keys, namespace, field_validation, keep_invalid)
        if admitted is not None:
            return admitted
    if spec is not None:
        # A spec written as one admitted before: the rest of the object goes through every step, the spec is that
        # one's (decoded cleanly, defaulted, found valid: model/shapes.py). The rest decodes with an empty spec in
        # the spec's place, so the keys keep their order and every error or warning is the whole body's.
        decoded = decode({**body, "spec": {}}, kind, field_validation)
        obj = decoded.obj
        obj["spec"] = spec
        default_object_namespace(obj, kind.namespaced, namespace)
        errors = kind_validation_errors(obj, strategy(kind), kind.namespaced, spec_valid=True) + \
            cni_type_errors(obj, kind)
    else:
        decoded = decode(body, kind, field_validation)
        obj = default(decoded.obj, kind, namespace)
        errors = validation_errors(obj, kind, old=obj) if stored else validation_errors(obj, kind)
    _refuse_or_keep(decoded, obj, kind, errors, keep_invalid)
    if spec_key is not None and spec is None and not errors and field_validation != FieldValidation.IGNORE and \
            not decoded.warnings and not decoded.unknown_fields and type(obj.get("spec")) is dict:
        # Decoded without a strict error (Ignore would have dropped them unsaid), defaulted and valid.
        shapes.remember_admitted_spec(spec_key, obj["spec"])
    if kind.crd is None and kind.definition is not None:  # a built-in's (not a CNI's kind of its name)
        if kind.kind == "NetworkPolicy":  # both in one walk of its peers (10,000 policies in bench/calico.py)
            decoded.api_warnings = validation.network_policy_addresses(obj)
        else:
            decoded.api_warnings = validation.warnings_on_create(kind.kind, obj)
            validation.read_legacy_addresses(kind.kind, obj)
    if rule_keys is not None and not errors and field_validation != FieldValidation.IGNORE and \
            not decoded.warnings and not decoded.unknown_fields and not decoded.api_warnings:
        assert shared is not None
        _share_rules(obj, shared, rule_keys)
    return obj, decoded


# --- a NetworkPolicy's rules admitted once per distinct rule of an input ------------------------------------------
#
# bench/calico.py's 10,000 NetworkPolicies hold 36,000 rules of ~1,000 distinct contents (7,400 distinct specs: the
# pod selectors differ). A rule's admission reads the rule alone: its decoding (the Go type of its direction), its
# defaulting (each port's protocol), its rules (validate_network_policy keys them by content already) and its
# ipBlocks' warnings and legacy spellings. So inside shapes.sharing() (one build's whole input) a rule written as one
# an earlier policy held, in an object admitted without any error, warning or dropped field, is that policy's
# admitted rule object, shared: 8,100 of the 10,000 policies then decode, default and check all but their rules and
# skip the ipBlock walk (~20 us of their ~35). A policy with any rule not seen so yet is admitted whole, as before.
_RULE_LISTS = ("ingress", "egress")
_RULE_TAGS = {direction: f"admitted NetworkPolicy {direction} rule" for direction in _RULE_LISTS}


def _written_rule_keys(body: Mapping[str, Any]) -> dict[str, list[tuple[Any, ...]]] | None:
    """The content keys of a NetworkPolicy's rules as written, by direction; None when it has none, or rule lists
    that are not lists of objects."""
    spec = body.get("spec")
    if type(spec) is not dict:
        return None
    keys: dict[str, list[tuple[Any, ...]]] = {}
    for direction in _RULE_LISTS:
        rules = spec.get(direction)
        if rules is None:
            continue
        if type(rules) is not list or any(type(rule) is not dict for rule in rules):
            return None
        keys[direction] = shapes.content_keys(_RULE_TAGS[direction], rules)
    return keys or None


def _with_shared_rules(body: Mapping[str, Any], kind: Kind, shared: dict[tuple[Any, ...], Any],
                       rule_keys: dict[str, list[tuple[Any, ...]]], namespace: str,
                       field_validation: FieldValidation, keep_invalid: bool) -> tuple[dict[str, Any], Decoded] | None:
    """``admit_as`` of a NetworkPolicy every rule of which this scope admitted before (else None): the rest of the
    object is decoded with empty rule lists in their places (the keys keep their order; every error or warning is
    the rest's, the rules having none), the shared rules put in, then defaulted and validated but for its rules."""
    rules: dict[str, list[Any]] = {}
    for direction, keys in rule_keys.items():
        found = rules[direction] = [shared.get(key) for key in keys]
        if None in found:
            return None
    decoded = decode({**body, "spec": {**body["spec"], **{d: [] for d in rules}}}, kind, field_validation)
    obj = decoded.obj
    spec = obj["spec"]
    seen: set[int] = set()
    for direction, found in rules.items():
        for i, rule in enumerate(found):
            # A rule written twice in one policy is two objects, as decoding makes them: one object met twice in
            # one document would be written by a YAML dumper as an anchor and its alias.
            if id(rule) in seen:
                found[i] = shapes.json_tree_copy(rule)
            seen.add(id(rule))
        spec[direction] = found
    default(obj, kind, namespace)
    with validation.rules_admitted():
        errors = validation_errors(obj, kind)
    _refuse_or_keep(decoded, obj, kind, errors, keep_invalid)
    # The ipBlocks, all in the rules, were admitted without a warning and spelled as read: nothing to walk.
    return obj, decoded


def _share_rules(obj: dict[str, Any], shared: dict[tuple[Any, ...], Any],
                 rule_keys: dict[str, list[tuple[Any, ...]]]) -> None:
    """The admitted rules of a NetworkPolicy admitted cleanly, shared with the scope's later policies that write
    them so (``_with_shared_rules``)."""
    spec = obj.get("spec")
    if type(spec) is not dict:
        return
    for direction, keys in rule_keys.items():
        admitted = spec.get(direction)
        if type(admitted) is list and len(admitted) == len(keys):
            for key, rule in zip(keys, admitted, strict=True):
                if type(rule) is dict:
                    shapes.share_value(shared, key, rule)


def _written_spec_key(body: Mapping[str, Any], kind: Kind) -> tuple[Any, ...] | None:
    """The key of a create's spec as written, for a built-in kind whose stored spec depends on nothing else."""
    if kind.definition is None or kind.crd is not None or not spec_shaped(strategy(kind)):
        return None
    return shapes.written_spec_key(kind.definition, body)


def _refuse_or_keep(decoded: Decoded, obj: dict[str, Any], kind: Kind, errors: list[FieldError],
                    keep_invalid: bool) -> None:
    """Validation errors refuse the object (the 422), or with ``keep_invalid`` come back in ``decoded.refused``
    unless they leave it unreadable as written."""
    if errors and keep_invalid and not unreadable_as_written(errors):
        decoded.refused = errors
    elif errors:
        meta = obj.get("metadata")
        name = str(meta.get("name") or "") if isinstance(meta, dict) else ""  # untyped kinds: any shape
        raise invalid(kind, name, errors)


def definitions_in_force(bodies: Iterable[Mapping[str, Any]],
                         extra_crds: Mapping[tuple[str, str, str], crds.CRDVersion] | None = None,
                         ) -> dict[str, list[str]]:
    """Which CRD each custom kind of these objects is admitted by: its source (knetsim's built-in definition,
    or a CRD of the input, with the bundle version it carries) → the kinds, sorted."""
    out: dict[str, set[str]] = {}
    for body in bodies:
        try:
            kind = resolve(str(body.get("apiVersion") or ""), str(body.get("kind") or ""), extra_crds)
        except NoKindMatch:
            continue
        if kind is not None and kind.crd is not None:
            out.setdefault(kind.crd.source, set()).add(kind.kind)
    return {source: sorted(kinds) for source, kinds in sorted(out.items())}


def _crd_fields(schema_node: dict[str, Any], path: list[str]) -> list[str]:
    node: dict[str, Any] | None = schema_node
    for part in path:
        while node is not None and node.get("type") == "array":
            node = node.get("items")
        props = (node or {}).get("properties") or {}
        node = props.get(part)
    while node is not None and node.get("type") == "array":
        node = node.get("items")
    return sorted((node or {}).get("properties") or {})


def did_you_mean(body: Mapping[str, Any], unknown: str,
                 extra_crds: Mapping[tuple[str, str, str], crds.CRDVersion] | None = None) -> str | None:
    """The real field nearest to an unknown one: ``spec.selectr`` → ``spec.selector``."""
    from .labels import edit_distance

    try:
        kind = resolve(str(body.get("apiVersion") or ""), str(body.get("kind") or ""), extra_crds)
    except NoKindMatch:
        return None
    if kind is None:
        return None
    parts = [p for p in unknown.replace("[", ".[").split(".") if p and not p.startswith("[")]
    parent, name = parts[:-1], parts[-1] if parts else ""
    if kind.definition is not None:
        candidates = schema.known_fields(kind.definition, parent)
    elif kind.crd is not None:
        candidates = _crd_fields(kind.crd.schema, parent)
    else:
        return None
    best: tuple[int, str] | None = None
    for candidate in candidates:
        distance = 0 if candidate.lower() == name.lower() else edit_distance(candidate, name)
        if distance <= max(2, len(name) // 3) and (best is None or distance < best[0]):
            best = (distance, candidate)
    if best is None:
        return None
    return unknown[: len(unknown) - len(name)] + best[1]
