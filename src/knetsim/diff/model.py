"""The shapes of a diff: two sides, and per layer the items that changed between them.

An ``Item`` is one thing a person reads in a pull-request comment ("Service shop/web port http: 2
endpoints of shop/web[Deployment] lost: the selector app=wbe matches none of their pods") and a
tool reads in JSON. Its ``effect`` is what a CI gate keys on (``--fail-on``):

* ``lost``   — something that worked stops working: a connection policy now denies, endpoints a
  Service loses, a route whose answer turns into an error, a name that stops resolving, an object
  the API server now refuses;
* ``gained`` — something new works: a connection now allowed (a new exposure, for a security gate),
  endpoints gained, a route that starts answering;
* ``changed`` — neither (a backend share, an address, a field of an object);
* ``introduced`` / ``fixed`` / ``unchanged`` — doctor findings, as gwctl's ``analyze`` buckets them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..cluster.build import ManifestError
from ..cluster.state import ClusterState
from ..model.loader import Document

if TYPE_CHECKING:
    from ..doctor import Finding
    from .parallel import Pending

LOST, GAINED, CHANGED = "lost", "gained", "changed"
INTRODUCED, FIXED, UNCHANGED = "introduced", "fixed", "unchanged"
EFFECTS = (LOST, GAINED, CHANGED, INTRODUCED, FIXED, UNCHANGED)


@dataclass(frozen=True, slots=True)
class Side:
    """One side of the comparison: what every command would read there (objects admitted and refused)."""

    label: str  # how the report names it: "examples/shop", "git:main:deploy", "cluster kind-kind"
    state: ClusterState
    errors: Sequence[ManifestError] = ()
    documents: Sequence[Document] = ()
    namespace: str = "default"  # of objects that name none
    doctor: Pending[list[Finding]] | None = None  # the doctor's findings, when begun ahead (``diff.prepare``)


@dataclass(frozen=True, slots=True)
class Item:
    """One change: ``effect`` (see the module docstring), what it concerns, and one line for people.

    ``before``/``after`` carry the layer's own JSON values (an allowed set and the rule that decided it,
    a route answer, a list of records); ``why`` says what made the difference, in the layer's words."""

    effect: str
    subject: str
    text: str
    before: Any = None
    after: Any = None
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"effect": self.effect, "subject": self.subject, "text": self.text}
        if self.before is not None or self.after is not None:
            out["before"], out["after"] = self.before, self.after
        if self.why:
            out["why"] = self.why
        return out


@dataclass(frozen=True, slots=True)
class Layer:
    """One layer's changes, in a stable order (subject, then effect)."""

    name: str
    title: str  # "reachability (NetworkPolicy and the cluster tiers, per workload pair)"
    items: tuple[Item, ...] = ()
    notes: tuple[str, ...] = ()

    def count(self, effect: str) -> int:
        return sum(1 for i in self.items if i.effect == effect)

    @property
    def changes(self) -> tuple[Item, ...]:
        """Every item but unchanged findings: what makes the two sides differ here."""
        return tuple(i for i in self.items if i.effect != UNCHANGED)

    def counts(self) -> dict[str, int]:
        return {e: self.count(e) for e in EFFECTS if self.count(e)}

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "counts": self.counts(), "items": [i.to_dict() for i in self.items],
                "notes": list(self.notes)}


@dataclass(frozen=True, slots=True)
class Diff:
    before: str
    after: str
    layers: tuple[Layer, ...] = field(default_factory=tuple)

    def layer(self, name: str) -> Layer:
        return next(lay for lay in self.layers if lay.name == name)

    @property
    def changed(self) -> bool:
        return any(lay.changes for lay in self.layers)

    def fails(self, on: Sequence[str]) -> list[str]:
        """Which of the ``--fail-on`` conditions hold (empty: the gate passes)."""
        found = {
            "any": self.changed,
            LOST: any(lay.count(LOST) for lay in self.layers),
            GAINED: any(lay.count(GAINED) for lay in self.layers),
            "findings": any(i.effect == INTRODUCED and isinstance(i.after, dict)
                            and i.after.get("severity") in ("error", "warning")
                            for lay in self.layers for i in lay.items),
        }
        held = [condition for condition in on if found.get(condition)]
        return held

    def to_dict(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after,
                "summary": {lay.name: lay.counts() for lay in self.layers},
                "layers": {lay.name: lay.to_dict() for lay in self.layers}}


__all__ = ["CHANGED", "EFFECTS", "FIXED", "GAINED", "INTRODUCED", "LOST", "UNCHANGED", "Diff", "Item", "Layer",
           "Side"]
