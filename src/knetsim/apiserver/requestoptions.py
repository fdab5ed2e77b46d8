"""A request's query parameters, decoded and validated as kube-apiserver's handlers decode them.

The handlers decode the query into ``metav1.CreateOptions`` / ``UpdateOptions`` / ``PatchOptions``
(writes) or ``ListOptions`` (list and watch) with the parameter codec, then validate them
(apimachinery's ``ValidateCreateOptions``... ``ValidateListOptions``). Two kinds of failure, as
upstream answers them:

- a value the codec cannot convert (``limit=abc``: ``strconv.ParseInt: parsing "abc": invalid
  syntax``) is a 400 BadRequest;
- a converted value validation refuses (``dryRun=x``, ``fieldValidation=Loose``, a field manager
  of 200 bytes, ``resourceVersionMatch`` without ``resourceVersion``) is a 422 Invalid on the
  options kind: ``CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value:
  []string{"x"}: supported values: "All"``.

Booleans convert as the codec converts them: anything but ``0`` and ``false`` is true.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..model.admission import FieldValidation
from ..model.fielderr import FieldError, Path, go_slice
from .errors import ApiError
from .registry import WriteOptions

FIELD_MANAGER_MAX_LENGTH = 128  # apimachinery's FieldManagerMaxLength
FIELD_VALIDATION_VALUES = ("", "Ignore", "Strict", "Warn")  # sets.List order: sorted
RESOURCE_VERSION_MATCHES = ("Exact", "NotOlderThan")
INCLUDE_OBJECT_VALUES = ("", "None", "Metadata", "Object")


def _values(query: Mapping[str, Any], name: str) -> list[str]:
    getall = getattr(query, "getall", None)
    if getall is not None:
        return [str(v) for v in getall(name, [])]
    value = query.get(name)
    return [] if value is None else [str(value)]


def _first(query: Mapping[str, Any], name: str) -> str | None:
    values = _values(query, name)
    return values[0] if values else None


def parse_bool(text: str) -> bool:
    """runtime.Convert_Slice_string_To_bool: only ``0`` and ``false`` (any case) are false."""
    return not (text == "0" or text.lower() == "false")


def parse_int64(text: str) -> int:
    """strconv.ParseInt(text, 10, 64), with Go's error words as a 400."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or not digits.isascii() or not digits.isdigit():
        raise ApiError(400, "BadRequest", f'strconv.ParseInt: parsing "{text}": invalid syntax')
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise ApiError(400, "BadRequest", f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def invalid_options(kind: str, errors: list[FieldError]) -> ApiError:
    """errors.NewInvalid on ``<kind>.meta.k8s.io`` with no name, as the handlers answer bad options."""
    text = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
    causes = [{"reason": e.type.value, "message": e.body(), "field": e.path} for e in errors]
    return ApiError(422, "Invalid", f'{kind}.meta.k8s.io "" is invalid: {text}',
                    {"group": "meta.k8s.io", "kind": kind, "causes": causes})


def _go_rune(ch: str) -> str:
    """Go's ``%#U``: ``U+0007`` for a character it cannot print, ``U+00E9 'é'`` otherwise."""
    code = f"U+{ord(ch):04X}"
    return code if not ch.isprintable() else f"{code} '{ch}'"


def _is_print(ch: str) -> bool:
    """unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space."""
    return ch == " " or unicodedata.category(ch)[0] in "LMNPS"


def field_manager_errors(manager: str) -> list[FieldError]:
    """apimachinery's ValidateFieldManager."""
    errors: list[FieldError] = []
    path = Path("fieldManager")
    if len(manager.encode()) > FIELD_MANAGER_MAX_LENGTH:
        errors.append(path.too_long(FIELD_MANAGER_MAX_LENGTH))
    position = 0
    for ch in manager:
        if not _is_print(ch):
            errors.append(path.invalid(manager, f"invalid character {_go_rune(ch)} (at position {position})"))
        position += len(ch.encode())  # Go ranges over a string by byte offset
    return errors


def dry_run_errors(values: list[str]) -> list[FieldError]:
    if values and any(v != "All" for v in values):
        return [Path("dryRun").not_supported(go_slice(values), ["All"])]
    return []


def write_options(query: Mapping[str, Any], kind: str, *, apply: bool = False) -> WriteOptions:
    """The options of a create (``CreateOptions``), update (``UpdateOptions``) or patch (``PatchOptions``);
    ``apply`` for a server-side apply patch, which must name its field manager."""
    dry_run = _values(query, "dryRun")
    manager = _first(query, "fieldManager") or ""
    mode = _first(query, "fieldValidation") or ""
    force = _first(query, "force")
    errors: list[FieldError] = []
    if kind == "PatchOptions":
        if not apply and force is not None:
            errors.append(Path("force").forbidden("may not be specified for non-apply patch"))
        if apply and not manager:
            errors.append(Path("fieldManager").required("is required for apply patch"))
    errors += field_manager_errors(manager)
    errors += dry_run_errors(dry_run)
    if mode not in FIELD_VALIDATION_VALUES:
        errors.append(Path("fieldValidation").not_supported(mode, list(FIELD_VALIDATION_VALUES)))
    if errors:
        raise invalid_options(kind, errors)
    # An empty fieldValidation is Warn (kube-apiserver's default since v1.27).
    return WriteOptions(FieldValidation(mode or "Warn"), bool(dry_run), field_manager=manager,
                        operation="Apply" if apply else "Update")


@dataclass(frozen=True)
class ListOptions:
    """``metav1.ListOptions`` of a list or watch request, converted and validated."""

    label_selector: str = ""
    field_selector: str = ""
    watch: bool = False
    resource_version: str = ""
    resource_version_match: str = ""
    limit: int = 0
    continue_token: str = ""
    timeout_seconds: int | None = None
    send_initial_events: bool | None = None
    include_object: str = ""


def list_options(query: Mapping[str, Any]) -> ListOptions:
    watch = _first(query, "watch")
    limit = _first(query, "limit")
    timeout = _first(query, "timeoutSeconds")
    initial = _first(query, "sendInitialEvents")
    options = ListOptions(
        label_selector=_first(query, "labelSelector") or "",
        field_selector=_first(query, "fieldSelector") or "",
        watch=parse_bool(watch) if watch is not None else False,
        resource_version=_first(query, "resourceVersion") or "",
        resource_version_match=_first(query, "resourceVersionMatch") or "",
        limit=parse_int64(limit) if limit else 0,
        continue_token=_first(query, "continue") or "",
        timeout_seconds=parse_int64(timeout) if timeout else None,
        send_initial_events=parse_bool(initial) if initial is not None else None,
        include_object=_first(query, "includeObject") or "",
    )
    errors = list_option_errors(options)
    if errors:
        raise invalid_options("ListOptions", errors)
    if options.include_object not in INCLUDE_OBJECT_VALUES:
        raise invalid_options("TableOptions", [Path("includeObject").invalid(
            options.include_object, "must be 'Metadata', 'Object', 'None', or empty")])
    return options


def list_option_errors(options: ListOptions) -> list[FieldError]:
    """apimachinery's ValidateListOptions (a list) and validateWatchOptions (a watch). The WatchList feature
    (``sendInitialEvents``) is answered as a server without it answers: client-go then lists and watches."""
    path = Path("resourceVersionMatch")
    match = options.resource_version_match
    errors: list[FieldError] = []
    if options.watch:
        if options.send_initial_events is not None:
            if match != "NotOlderThan":
                errors.append(path.forbidden("sendInitialEvents requires setting resourceVersionMatch to "
                                             "NotOlderThan"))
            errors.append(Path("sendInitialEvents").forbidden(
                "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"))
        if match:
            if options.send_initial_events is None:
                errors.append(path.forbidden("resourceVersionMatch is forbidden for watch unless "
                                             "sendInitialEvents is provided"))
            if match != "NotOlderThan":
                errors.append(path.not_supported(match, ["NotOlderThan"]))
            if options.continue_token:
                errors.append(path.forbidden("resourceVersionMatch is forbidden when continue is provided"))
        return errors
    if match:
        if not options.resource_version:
            errors.append(path.forbidden("resourceVersionMatch is forbidden unless resourceVersion is provided"))
        if options.continue_token:
            errors.append(path.forbidden("resourceVersionMatch is forbidden when continue is provided"))
        if match not in RESOURCE_VERSION_MATCHES:
            errors.append(path.not_supported(match, [*RESOURCE_VERSION_MATCHES, ""]))
        if match == "Exact" and options.resource_version == "0":
            errors.append(path.forbidden('resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    if options.send_initial_events is not None:
        errors.append(Path("sendInitialEvents").forbidden("sendInitialEvents is forbidden for list"))
    return errors


def parse_resource_version(text: str) -> int:
    """APIObjectVersioner.ParseResourceVersion: "" and "0" are 0; anything else a uint64, or a 400."""
    if text in ("", "0"):
        return 0
    if not text.isascii() or not text.isdigit() or int(text) >= 2**64:
        reason = "value out of range" if text.isascii() and text.isdigit() else "invalid syntax"
        raise ApiError(400, "BadRequest", f'invalid resource version: resourceVersion: Invalid value: "{text}": '
                                          f'strconv.ParseUint: parsing "{text}": {reason}')
    return int(text)
