"""What an update may change: the API server's ``Validate<Kind>Update`` rules for the built-in kinds.

Creating an object and changing it are judged differently upstream: a Pod's spec is fixed once
created except for images, ``activeDeadlineSeconds`` (only down), tolerations (only additions) and
``terminationGracePeriodSeconds`` (negative to 1); a workload's selector and a Job's template never
change; an ``immutable`` ConfigMap or Secret keeps its data. These are the rules CKA/CKAD users meet
as ``kubectl edit`` refusals, so the messages are kube-apiserver's (pkg/apis/core/validation,
pkg/apis/apps/validation, pkg/apis/batch/validation).

One difference is deliberate: upstream appends ``cmp.Diff`` of the Go structs to the Pod message,
whose layout go-cmp randomises on purpose so nobody parses it. Here the diff is one line per changed
field path (``- old``/``+ new`` in JSON), which says the same thing and stays byte-identical run to run.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from typing import Any

from .fielderr import ErrorType, FieldError, GoValue, Path

Errors = list[FieldError]

UPDATABLE_POD_SPEC_FIELDS = ",".join([
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
])
IMMUTABLE = "field is immutable"
INT32_MAX = 2**31 - 1


def _spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _forbidden(path: Path | str, detail: str) -> FieldError:
    return FieldError(str(path), ErrorType.FORBIDDEN, detail=detail)


# --- Pod ----------------------------------------------------------------------------------------------


def validate_pod_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> Errors:
    spec, old_spec = _spec(new), _spec(old)
    path = Path("spec")
    errors: Errors = []
    for field in ("containers", "initContainers"):
        found, stop = _container_updates(spec.get(field) or [], old_spec.get(field) or [], path.child(field))
        errors += found
        if stop:
            return errors
    deadline, old_deadline = spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    if deadline is not None:
        if not isinstance(deadline, int) or deadline < 0 or deadline > INT32_MAX:
            return [*errors, path.child("activeDeadlineSeconds").invalid(
                deadline, f"must be between 0 and {INT32_MAX}, inclusive")]
        if isinstance(old_deadline, int) and old_deadline < deadline:
            return [*errors, path.child("activeDeadlineSeconds").invalid(
                deadline, "must be less than or equal to previous value")]
    elif old_deadline is not None:
        errors.append(path.child("activeDeadlineSeconds").invalid(None, "must not update from a positive integer "
                                                                          "to nil value"))
    errors += _only_added_tolerations(spec.get("tolerations") or [], old_spec.get("tolerations") or [],
                                      path.child("tolerations"))
    if spec == old_spec:
        return errors
    munged = copy.deepcopy(spec)
    for field in ("containers", "initContainers"):
        for container, before in zip(munged.get(field) or [], old_spec.get(field) or [], strict=False):
            _set_or_drop(container, "image", before.get("image"))
    _set_or_drop(munged, "activeDeadlineSeconds", old_deadline)
    _set_or_drop(munged, "schedulingGates", old_spec.get("schedulingGates"))
    _set_or_drop(munged, "tolerations", old_spec.get("tolerations"))
    grace, old_grace = munged.get("terminationGracePeriodSeconds"), old_spec.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and grace == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if munged != old_spec:
        diff = "\n".join(_diff(old_spec, munged, "spec"))
        errors.append(_forbidden(path, f"pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}\n"
                                       f"{diff}"))
    return errors


def _set_or_drop(obj: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        obj.pop(key, None)
    else:
        obj[key] = copy.deepcopy(value)


def _container_updates(new: list[Any], old: list[Any], path: Path) -> tuple[Errors, bool]:
    if len(new) != len(old):
        return [_forbidden(path, "pod updates may not add or remove containers")], True
    errors: Errors = []
    for i, container in enumerate(new):
        image = container.get("image") if isinstance(container, dict) else None
        if not image:
            errors.append(path.index(i).child("image").required())
        elif isinstance(image, str) and image.strip() != image:
            errors.append(path.index(i).child("image").invalid(image, "must not have leading or trailing whitespace"))
    return errors, False


def _only_added_tolerations(new: list[Any], old: list[Any], path: Path) -> Errors:
    """validateOnlyAddedTolerations: every old toleration is still there (its tolerationSeconds may shrink)."""
    errors: Errors = []
    for before in old:
        if not isinstance(before, dict):
            continue
        if not any(isinstance(after, dict) and _same_toleration(before, after) for after in new):
            errors.append(_forbidden(path, "existing toleration can not be modified except its tolerationSeconds"))
    return errors


def _same_toleration(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    if {k: v for k, v in old.items() if k != "tolerationSeconds"} != \
            {k: v for k, v in new.items() if k != "tolerationSeconds"}:
        return False
    before, after = old.get("tolerationSeconds"), new.get("tolerationSeconds")
    # A NoExecute toleration may be shortened (set where it was unset, or lowered), never lengthened.
    if before is None:
        return True
    return after is not None and after <= before


def _diff(old: Any, new: Any, path: str) -> Iterator[str]:
    """One ``-``/``+`` pair per changed leaf or list, in field order."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [k for k in new if k not in old]:
            if old.get(key) != new.get(key):
                yield from _diff(old.get(key), new.get(key), f"{path}.{key}")
        return
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                yield from _diff(a, b, f"{path}[{i}]")
        return
    dump = lambda v: "null" if v is None else json.dumps(v, sort_keys=True, separators=(",", ":"))  # noqa: E731
    yield f"  - {path}: {dump(old)}"
    yield f"  + {path}: {dump(new)}"


def pod_create_errors(pod: Mapping[str, Any]) -> Errors:
    """ValidatePodCreate's own rule: ephemeral containers arrive only through their subresource."""
    if _spec(pod).get("ephemeralContainers"):
        return [_forbidden("spec.ephemeralContainers", "cannot be set on create")]
    return []


# validateEphemeralContainers: what a debugging container may not declare.
_NOT_FOR_EPHEMERAL = ("lifecycle", "livenessProbe", "ports", "readinessProbe", "resources", "resizePolicy",
                      "startupProbe")


def ephemeral_container_errors(new: Mapping[str, Any], old: Mapping[str, Any]) -> Errors:
    """ValidatePodEphemeralContainersUpdate: containers may be added, never changed or removed."""
    errors: Errors = []
    spec = _spec(new)
    regular = {c.get("name") for field in ("containers", "initContainers") for c in spec.get(field) or []
               if isinstance(c, dict)}
    seen: set[Any] = set()
    path = Path("spec.ephemeralContainers")
    for i, container in enumerate(spec.get("ephemeralContainers") or []):
        if not isinstance(container, dict):
            continue
        name = container.get("name")
        if name in regular or name in seen:
            errors.append(path.index(i).child("name").duplicate(name))
        seen.add(name)
        for field in _NOT_FOR_EPHEMERAL:
            if container.get(field):
                errors.append(_forbidden(path.index(i).child(field), "cannot be set for an Ephemeral Container"))
        target = container.get("targetContainerName")
        if target and target not in regular:
            errors.append(FieldError(str(path.index(i).child("targetContainerName")), ErrorType.NOT_FOUND, target))
    added = {c.get("name"): c for c in spec.get("ephemeralContainers") or [] if isinstance(c, dict)}
    for before in _spec(old).get("ephemeralContainers") or []:
        name = before.get("name")
        if name not in added:
            errors.append(_forbidden("spec.ephemeralContainers",
                                     f"existing ephemeral containers {json.dumps(name)} may not be removed\n"))
        elif added[name] != before:
            diff = "\n".join(_diff(before, added[name], "ephemeralContainer"))
            errors.append(_forbidden("spec.ephemeralContainers",
                                     f"existing ephemeral containers {json.dumps(name)} may not be changed\n{diff}"))
    return errors


# --- workloads, Jobs, ConfigMaps, Secrets, EndpointSlices --------------------------------------------


def go_label_selector(selector: Any) -> GoValue:
    """A ``*metav1.LabelSelector`` as field.Invalid prints it (dereferenced, then ``%#v``)."""
    if not isinstance(selector, dict):
        return GoValue("null")
    labels = selector.get("matchLabels") or {}
    match_labels = ("map[string]string{" + ", ".join(f"{json.dumps(k)}:{json.dumps(v)}"
                                                      for k, v in sorted(labels.items())) + "}") if labels \
        else "map[string]string(nil)"
    exprs = selector.get("matchExpressions") or []
    if exprs:
        items = []
        for e in exprs:
            values = e.get("values")
            values_text = ("[]string{" + ", ".join(json.dumps(v) for v in values) + "}") if values \
                else "[]string(nil)"
            items.append(f'v1.LabelSelectorRequirement{{Key:{json.dumps(e.get("key", ""))}, '
                         f'Operator:{json.dumps(e.get("operator", ""))}, Values:{values_text}}}')
        match_exprs = "[]v1.LabelSelectorRequirement{" + ", ".join(items) + "}"
    else:
        match_exprs = "[]v1.LabelSelectorRequirement(nil)"
    return GoValue(f"v1.LabelSelector{{MatchLabels:{match_labels}, MatchExpressions:{match_exprs}}}")


def validate_selector_unchanged(new: Mapping[str, Any], old: Mapping[str, Any]) -> Errors:
    selector, before = _spec(new).get("selector"), _spec(old).get("selector")
    if selector != before:
        return [Path("spec.selector").invalid(go_label_selector(selector), IMMUTABLE)]
    return []


_STATEFULSET_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit",
                        "persistentVolumeClaimRetentionPolicy", "minReadySeconds")


def validate_statefulset_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> Errors:
    """ValidateStatefulSetUpdate: serviceName, selector, volumeClaimTemplates, podManagementPolicy... are fixed."""
    spec, before = _spec(new), _spec(old)
    fixed = {k: v for k, v in spec.items() if k not in _STATEFULSET_MUTABLE}
    if fixed != {k: v for k, v in before.items() if k not in _STATEFULSET_MUTABLE}:
        return [_forbidden("spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                                   "'template', 'updateStrategy', 'revisionHistoryLimit', "
                                   "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")]
    return []


def validate_job_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> Errors:
    spec, before = _spec(new), _spec(old)
    errors: Errors = []
    if spec.get("completions") != before.get("completions") and spec.get("completionMode") != "Indexed":
        errors.append(Path("spec.completions").invalid(spec.get("completions"), IMMUTABLE))
    errors += validate_selector_unchanged(new, old)
    if spec.get("template") != before.get("template"):
        # The value is the whole internal core.PodTemplateSpec upstream; named, not spelled out, here.
        errors.append(Path("spec.template").invalid(GoValue("core.PodTemplateSpec{...}"), IMMUTABLE))
    if spec.get("completionMode") != before.get("completionMode"):
        errors.append(Path("spec.completionMode").invalid(spec.get("completionMode"), IMMUTABLE))
    return errors


def _immutable_data(new: Mapping[str, Any], old: Mapping[str, Any], fields: tuple[str, ...]) -> Errors:
    """ConfigMap/Secret with ``immutable: true``: neither the data nor the flag change again."""
    if not old.get("immutable"):
        return []
    detail = "field is immutable when `immutable` is set"
    errors: Errors = []
    if new.get("immutable") is not True:
        errors.append(_forbidden("immutable", detail))
    for field in fields:
        if (new.get(field) or {}) != (old.get(field) or {}):
            errors.append(_forbidden(field, detail))
    return errors


def validate_config_map_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> Errors:
    return _immutable_data(new, old, ("data", "binaryData"))


def validate_secret_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> Errors:
    errors: Errors = []
    if new.get("type") != old.get("type"):
        errors.append(Path("type").invalid(new.get("type"), IMMUTABLE))
    return errors + _immutable_data(new, old, ("data",))


def validate_ingress_class_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> Errors:
    """ValidateIngressClassUpdate (pkg/apis/networking/validation): the controller is fixed at creation."""
    controller = _spec(new).get("controller")
    if controller != _spec(old).get("controller"):
        return [Path("spec.controller").invalid(controller, IMMUTABLE)]
    return []


def validate_endpoint_slice_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> Errors:
    if new.get("addressType") != old.get("addressType"):
        return [Path("addressType").invalid(new.get("addressType"), IMMUTABLE)]
    return []

