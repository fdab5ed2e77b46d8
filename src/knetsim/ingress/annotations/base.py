"""What every annotation family shares: the parse context and the problems it reports.

A family's parser reads its annotations (``values.Reader``) and reports each problem with its
effect, as ingress-nginx's ``Extract`` treats the error the family's ``Parse`` returns:

* ``rejected`` — a validation error the family returns (or an annotation over the risk level):
  the admission webhook denies the Ingress and the controller skips it, so it does not exist;
* ``denied`` — a ``LocationDenied`` error: every location of the Ingress answers 503;
* ``ignored`` — any other error the family returns: the whole family is dropped, as if absent;
* ``default`` — the family swallows the error and keeps its default for that annotation.

Each problem also carries its ``cause`` (``Cause``), set where it is made, so that a reader (the webhook,
the doctor) decides by it rather than by the words of the message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ...cluster.state import ClusterState
from ...model.objects import Ingress, Object
from ..config import ControllerConfig
from .values import Read, Reader


class Effect(StrEnum):
    """What the controller does about a problem (the module docstring)."""

    REJECTED = "rejected"
    DENIED = "denied"
    IGNORED = "ignored"
    DEFAULT = "default"


REJECTED, DENIED, IGNORED, DEFAULT = Effect.REJECTED, Effect.DENIED, Effect.IGNORED, Effect.DEFAULT


class Cause(StrEnum):
    """Why the problem arose, as the webhook answers it."""

    SNIPPETS_DISABLED = "snippets-disabled"  # a *-snippet while allow-snippet-annotations is false
    RISKY = "risky"  # an annotation above annotations-risk-level
    INVALID_VALUE = "invalid-value"  # a value its validator or its conversion refuses
    LOCATION_DENIED = "location-denied"  # LocationDenied: the message says every location answers 503


@dataclass(frozen=True, slots=True)
class Problem:
    annotation: str  # the full annotation name
    effect: Effect
    message: str
    cause: Cause = Cause.INVALID_VALUE

    def to_dict(self) -> dict[str, str]:
        return {"annotation": self.annotation, "effect": self.effect, "message": self.message}


class FamilyDropped(Exception):
    """A family's parser returned an error Extract skips: the family is as if absent."""


@dataclass(slots=True)
class Context:
    ingress: Ingress
    config: ControllerConfig
    state: ClusterState
    reader: Reader
    problems: list[Problem] = field(default_factory=list)

    def report(self, annotation: str, effect: Effect, message: str, cause: Cause | None = None) -> None:
        """One problem; its cause, unless given, follows from the effect (a denied location is LocationDenied,
        anything else a value refused)."""
        if cause is None:
            cause = Cause.LOCATION_DENIED if effect == Effect.DENIED else Cause.INVALID_VALUE
        self.problems.append(Problem(annotation, effect, message, cause))

    def reported(self, read: Read[Any], effect: Effect, what: str = "") -> None:
        """Report a read that failed; ``what`` says what the family does instead."""
        text = read.why or f"annotation {read.name} is invalid"
        self.report(read.name, effect, f"{text}{': ' + what if what else ''}")

    def secret(self, namespace: str, name: str) -> Object | None:
        return _lookup(self.state, "Secret", namespace, name)

    def configmap(self, namespace: str, name: str) -> Object | None:
        return _lookup(self.state, "ConfigMap", namespace, name)


def _lookup(state: ClusterState, kind: str, namespace: str, name: str) -> Object | None:
    found = state.others.get((kind, f"{namespace}/{name}"))
    if found is not None:
        return found
    # A manifest without metadata.namespace lands in the namespace of -n, which the state does not record.
    other = state.others.get((kind, name))
    return other if other is not None and not other.namespace else None


def split_key(value: str, namespace: str) -> tuple[str, str] | None:
    """``cache.SplitMetaNamespaceKey``: ``name`` or ``namespace/name``; None for more slashes."""
    parts = value.split("/")
    if len(parts) == 1:
        return namespace, parts[0]
    if len(parts) == 2:
        return parts[0] or namespace, parts[1]
    return None
