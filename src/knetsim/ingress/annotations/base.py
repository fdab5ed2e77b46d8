"""What every annotation family shares: the parse context and the problems it reports.

A family's parser reads its annotations (``values.Reader``) and reports each problem with its
effect, as ingress-nginx's ``Extract`` treats the error the family's ``Parse`` returns:

* ``rejected`` — a validation error the family returns (or an annotation over the risk level):
  the admission webhook denies the Ingress and the controller skips it, so it does not exist;
* ``denied`` — a ``LocationDenied`` error: every location of the Ingress answers 503;
* ``ignored`` — any other error the family returns: the whole family is dropped, as if absent;
* ``default`` — the family swallows the error and keeps its default for that annotation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...cluster.state import ClusterState
from ...model.objects import Ingress, Object
from ..config import ControllerConfig
from .values import Read, Reader

REJECTED = "rejected"
DENIED = "denied"
IGNORED = "ignored"
DEFAULT = "default"


@dataclass(frozen=True, slots=True)
class Problem:
    annotation: str  # the full annotation name
    effect: str  # rejected | denied | ignored | default
    message: str

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

    def report(self, annotation: str, effect: str, message: str) -> None:
        self.problems.append(Problem(annotation, effect, message))

    def reported(self, read: Read[Any], effect: str, what: str = "") -> None:
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
