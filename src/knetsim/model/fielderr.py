"""Field errors, formatted the way the API server formats them.

The text follows apimachinery's ``field.Error.Error()``: ``<path>: <type>: <value>: <detail>``
where the value is omitted for ``Required``/``Forbidden``/``Too long``, strings are
``%q``-quoted, integers are bare. Tests compare these strings with upstream messages, so
keep the wording byte-exact.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class ErrorType(StrEnum):
    """apimachinery's field.ErrorType: the value is the Status cause reason, ``label`` what the message says."""

    REQUIRED = "FieldValueRequired"
    INVALID = "FieldValueInvalid"
    TYPE_INVALID = "FieldValueTypeInvalid"  # a schema type mismatch; printed as "Invalid value"
    DUPLICATE = "FieldValueDuplicate"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    NOT_FOUND = "FieldValueNotFound"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"
    INTERNAL = "InternalError"

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    ErrorType.REQUIRED: "Required value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.TYPE_INVALID: "Invalid value",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.NOT_FOUND: "Not found",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.TOO_MANY: "Too many",
    ErrorType.INTERNAL: "Internal error",
}

# Status cause reasons, as apimachinery's CauseType values (used by the API server's 422).
CAUSE_REASON = {t: t.value for t in ErrorType}

_NO_VALUE = object()


class GoValue(str):
    """A value already rendered the way Go's ``%#v`` prints it (``map[string]string{...}``)."""


def go_map(labels: dict[str, str]) -> GoValue:
    inner = ", ".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in sorted(labels.items()))
    return GoValue(f"map[string]string{{{inner}}}")


def go_slice(values: list[str], element_type: str = "string") -> GoValue:
    """A string slice as ``%#v`` prints it: ``[]string{"10.96.0.10"}``."""
    return GoValue(f"[]{element_type}{{{', '.join(json.dumps(v) for v in values)}}}")


def _quote(value: Any) -> str:
    if isinstance(value, GoValue):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return "null"
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class FieldError:
    path: str
    type: ErrorType
    value: Any = _NO_VALUE
    detail: str = ""

    def body(self) -> str:
        if self.type in (ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL) or (
            self.value is _NO_VALUE
        ):
            text = self.type.label
        else:
            text = f"{self.type.label}: {_quote(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.path}: {self.body()}" if self.path else self.body()


class Path:
    """A field path builder: ``Path("spec").child("ports").index(1).child("name")``."""

    __slots__ = ("_text",)

    def __init__(self, text: str = "") -> None:
        self._text = text

    def child(self, *names: str) -> Path:
        text = self._text
        for name in names:
            text = f"{text}.{name}" if text else name
        return Path(text)

    def index(self, i: int) -> Path:
        return Path(f"{self._text}[{i}]")

    def key(self, k: str) -> Path:
        return Path(f"{self._text}[{k}]")

    def __str__(self) -> str:
        return self._text

    def required(self, detail: str = "") -> FieldError:
        return FieldError(self._text, ErrorType.REQUIRED, detail=detail)

    def invalid(self, value: Any, detail: str = "") -> FieldError:
        return FieldError(self._text, ErrorType.INVALID, value, detail)

    def duplicate(self, value: Any) -> FieldError:
        return FieldError(self._text, ErrorType.DUPLICATE, value)

    def not_supported(self, value: Any, supported: list[str]) -> FieldError:
        detail = "supported values: " + ", ".join(json.dumps(s) for s in supported) if supported else ""
        return FieldError(self._text, ErrorType.NOT_SUPPORTED, value, detail)

    def forbidden(self, detail: str) -> FieldError:
        return FieldError(self._text, ErrorType.FORBIDDEN, detail=detail)

    def too_long(self, max_length: int) -> FieldError:
        unit = "byte" if max_length == 1 else "bytes"
        return FieldError(self._text, ErrorType.TOO_LONG, detail=f"may not be more than {max_length} {unit}")

    def too_many(self, actual: int | None, limit: int) -> FieldError:
        unit = "item" if limit == 1 else "items"
        return FieldError(self._text, ErrorType.TOO_MANY, _NO_VALUE if actual is None else actual,
                          f"must have at most {limit} {unit}")

    def type_invalid(self, value: Any, detail: str) -> FieldError:
        return FieldError(self._text, ErrorType.TYPE_INVALID, value, detail)

    def internal(self, detail: str) -> FieldError:
        return FieldError(self._text, ErrorType.INTERNAL, detail=detail)

    def omitted(self, error_type: ErrorType, detail: str = "") -> FieldError:
        """An error whose value is not printed (field.OmitValueType): CEL failures on objects and lists."""
        return FieldError(self._text, error_type, _NO_VALUE, detail)
