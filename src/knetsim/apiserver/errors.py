"""``metav1.Status`` errors, worded and coded as kube-apiserver words and codes them.

    ApiError                 any failure answered to a client (its Status body, its HTTP code)
      400 BadRequest         undecodable body, strict decoding error, bad query parameter
      404 NotFound           no such object, namespace or resource
      409 AlreadyExists / Conflict
      410 Expired            a watch resumed from a compacted resourceVersion (as a watch event)
      415 UnsupportedMediaType
      422 Invalid            validation, with one cause per field error
      500 InternalError      a bug in knetsim: the traceback is in the daemon log
      504 Timeout            a watch from a resourceVersion the store has not reached
"""

from __future__ import annotations

from typing import Any

from ..model.admission import AdmissionError
from ..model.fielderr import CAUSE_REASON, FieldError
from .resources import Resource


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None,
                 metadata: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details
        self.metadata = metadata or {}  # the Status's ListMeta (a 410's continue token)

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": dict(self.metadata),
                               "status": "Failure", "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            out["details"] = self.details
        return out


def qualified(r: Resource) -> str:
    """``deployments.apps``: how NotFound and Conflict messages name a resource."""
    return f"{r.plural}.{r.group}" if r.group else r.plural


def no_such_path() -> ApiError:
    """A path the server does not serve (an unknown group, resource or subresource). The Status carries an
    empty ``details`` as kube-apiserver's does (apierrors.NewNotFound with no name): kubectl tells a missing
    subresource from a missing object by ``details.name == ""`` and dereferences ``details`` to ask."""
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def not_found(r: Resource, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{qualified(r)} "{name}" not found',
                    {"name": name, "group": r.group, "kind": r.plural})


def invalid(r: Resource, name: str, errors: list[FieldError]) -> ApiError:
    kind = f"{r.kind}.{r.group}" if r.group else r.kind
    text = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
    causes = [{"reason": CAUSE_REASON.get(e.type, "FieldValueInvalid"), "message": e.body(), "field": e.path}
              for e in errors]
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {text}',
                    {"name": name, "group": r.group, "kind": r.kind, "causes": causes})


def conflict(r: Resource, name: str) -> ApiError:
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {qualified(r)} "{name}": the object has '
                    "been modified; please apply your changes to the latest version and try again",
                    {"name": name, "group": r.group, "kind": r.plural})


def from_admission(r: Resource, name: str, exc: AdmissionError) -> ApiError:
    if exc.errors:
        return invalid(r, name, exc.errors)
    return ApiError(exc.code, exc.reason, exc.message)


def internal(exc: BaseException) -> ApiError:
    """A bug: kube-apiserver answers 500 InternalError ("Internal error occurred: ..."), never a 4xx."""
    text = f"{type(exc).__name__}: {exc}"
    return ApiError(500, "InternalError", f"Internal error occurred: {text}", {"causes": [{"message": text}]})
