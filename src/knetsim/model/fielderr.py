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
    REQUIRED = "Required value"
    INVALID = "Invalid value"
    DUPLICATE = "Duplicate value"
    NOT_SUPPORTED = "Unsupported value"
    FORBIDDEN = "Forbidden"
    NOT_FOUND = "Not found"
    TOO_LONG = "Too long"
    TOO_MANY = "Too many"


# Status cause reasons, as apimachinery's CauseType values (used by the API server's 422).
CAUSE_REASON = {
    ErrorType.REQUIRED: "FieldValueRequired",
    ErrorType.INVALID: "FieldValueInvalid",
    ErrorType.DUPLICATE: "FieldValueDuplicate",
    ErrorType.NOT_SUPPORTED: "FieldValueNotSupported",
    ErrorType.FORBIDDEN: "FieldValueForbidden",
    ErrorType.NOT_FOUND: "FieldValueNotFound",
    ErrorType.TOO_LONG: "FieldValueTooLong",
    ErrorType.TOO_MANY: "FieldValueTooMany",
}

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
        if self.type in (ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG) or (
            self.value is _NO_VALUE
        ):
            text = self.type.value
        else:
            text = f"{self.type.value}: {_quote(self.value)}"
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
        return FieldError(self._text, ErrorType.TOO_LONG, detail=f"must have at most {max_length} bytes")

    def too_many(self, actual: int, limit: int) -> FieldError:
        return FieldError(self._text, ErrorType.TOO_MANY, actual, f"must have at most {limit} items")
