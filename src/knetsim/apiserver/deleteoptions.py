"""``metav1.DeleteOptions`` of a DELETE request, decoded and validated as kube-apiserver's handler does.

The options come from the body when there is one (kubectl sends them there: ``dryRun``,
``preconditions``, ``propagationPolicy``), else from the query string; never from both
(handlers/delete.go reads the query only for an empty body). The body is decoded into the Go
struct, so a value of the wrong type is encoding/json's error (``json: cannot unmarshal number into
Go struct field DeleteOptions.dryRun of type []string``), answered 400 BadRequest, and unknown
fields are ignored (the decoder is not strict). Then ``ValidateDeleteOptions`` runs:
``propagationPolicy`` must be Foreground, Background or Orphan, not together with
``orphanDependents``, and ``dryRun`` may only hold ``All``: a 422 Invalid on the
``DeleteOptions.meta.k8s.io`` kind.

``decode`` returns a plain dict with only the fields that were set, each of its Go type, so the
delete path can read them without checking types again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.fielderr import FieldError, Path, go_slice
from ..model.schema import DecodeError
from ..model.schema import decode as decode_struct
from .errors import ApiError
from .requestoptions import parse_int64

DEFINITION = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")
DRY_RUN_VALUES = ("All",)
# The kinds a DELETE body may declare: meta.k8s.io's, or any group's (per-group DeleteOptions are still
# accepted for old clients).
KIND = "DeleteOptions"


def decode(body: Mapping[str, Any] | None, query: Mapping[str, Any]) -> dict[str, Any]:
    """The request's DeleteOptions from its decoded body (None: the body was empty) or else its query;
    ApiError 400/422 as kube-apiserver answers bad ones."""
    if body is not None:
        options = _from_body(body)
    else:
        options = _from_query(query)
    errors = validation_errors(options)
    if errors:
        text = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
        causes = [{"reason": e.type.value, "message": e.body(), "field": e.path} for e in errors]
        raise ApiError(422, "Invalid", f'{KIND}.meta.k8s.io "" is invalid: {text}',
                       {"group": "meta.k8s.io", "kind": KIND, "causes": causes})
    return options


def _from_body(body: Mapping[str, Any]) -> dict[str, Any]:
    kind = body.get("kind")
    if kind not in (None, "", KIND):
        raise ApiError(400, "BadRequest", "decoded object cannot be converted to DeleteOptions")
    try:
        decoded = decode_struct(dict(body), DEFINITION)
    except DecodeError as exc:
        raise ApiError(400, "BadRequest", str(exc)) from None
    return {k: v for k, v in decoded.obj.items() if k not in ("kind", "apiVersion")}


def _from_query(query: Mapping[str, Any]) -> dict[str, Any]:
    """The query parameters DeleteOptions has, converted as the parameter codec converts them."""
    options: dict[str, Any] = {}
    getall = getattr(query, "getall", None)

    def values(name: str) -> list[str]:
        if getall is not None:
            return [str(v) for v in getall(name, [])]
        value = query.get(name)
        return [] if value is None else [str(value)]

    if dry_run := values("dryRun"):
        options["dryRun"] = dry_run
    if policy := values("propagationPolicy"):
        options["propagationPolicy"] = policy[0]
    if orphan := values("orphanDependents"):
        # runtime.Convert_Slice_string_To_Pointer_bool: anything but "0" or "false" is true.
        options["orphanDependents"] = not (orphan[0] == "0" or orphan[0].lower() == "false")
    if grace := values("gracePeriodSeconds"):
        options["gracePeriodSeconds"] = parse_int64(grace[0])
    return options


def validation_errors(options: Mapping[str, Any]) -> list[FieldError]:
    """apimachinery's ValidateDeleteOptions."""
    errors: list[FieldError] = []
    policy = options.get("propagationPolicy")
    if options.get("orphanDependents") is not None and policy is not None:
        errors.append(Path("propagationPolicy").invalid(policy, "orphanDependents and deletionPropagation cannot "
                                                                "be both set"))
    if policy is not None and policy not in PROPAGATION_POLICIES:
        errors.append(Path("propagationPolicy").not_supported(policy, [*PROPAGATION_POLICIES, "nil"]))
    dry_run = options.get("dryRun")
    if dry_run and any(v not in DRY_RUN_VALUES for v in dry_run):
        errors.append(Path("dryRun").not_supported(go_slice(list(dry_run)), list(DRY_RUN_VALUES)))
    return errors


def is_dry_run(options: Mapping[str, Any]) -> bool:
    return "All" in (options.get("dryRun") or ())


def orphans(options: Mapping[str, Any]) -> bool:
    """Whether dependents are left behind (propagationPolicy Orphan, or the deprecated orphanDependents)."""
    return options.get("propagationPolicy") == "Orphan" or bool(options.get("orphanDependents"))
