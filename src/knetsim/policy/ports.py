"""Sets of connections: protocol + port ranges, or everything.

NetworkPolicy can only name TCP, UDP and SCTP. A rule without ``ports`` also lets every
other protocol through (ICMP, ...), so a set keeps a separate ``other`` flag: a set is
"all connections" only when every port of the three protocols *and* ``other`` are in it,
which is what ``nca`` prints as ``All connections``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

PROTOCOLS = ("TCP", "UDP", "SCTP")
MIN_PORT = 1
MAX_PORT = 65535
FULL: tuple[tuple[int, int], ...] = ((MIN_PORT, MAX_PORT),)

Ranges = tuple[tuple[int, int], ...]


def merge(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sorted, disjoint, non-adjacent inclusive intervals."""
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def _intersect(a: Ranges, b: Ranges) -> Ranges:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def _complement(ranges: Ranges) -> Ranges:
    out, start = [], MIN_PORT
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= MAX_PORT:
        out.append((start, MAX_PORT))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class ConnSet:
    """``ranges``: per protocol (sorted by protocol), inclusive port intervals; ``other``: non-port protocols."""

    ranges: tuple[tuple[str, Ranges], ...] = ()
    other: bool = False

    @classmethod
    def all(cls) -> ConnSet:
        return cls(tuple((p, FULL) for p in sorted(PROTOCOLS)), True)

    @classmethod
    def none(cls) -> ConnSet:
        return cls()

    @classmethod
    def of(cls, by_protocol: Mapping[str, Iterable[tuple[int, int]]], other: bool = False) -> ConnSet:
        items = []
        for protocol in sorted(by_protocol):
            merged = merge(by_protocol[protocol])
            if merged:
                items.append((protocol, merged))
        return cls(tuple(items), other)

    @classmethod
    def port(cls, protocol: str, lo: int, hi: int | None = None) -> ConnSet:
        return cls.of({protocol: [(lo, lo if hi is None else hi)]})

    def as_dict(self) -> dict[str, Ranges]:
        return dict(self.ranges)

    @property
    def is_all(self) -> bool:
        return self.other and all(self.as_dict().get(p) == FULL for p in PROTOCOLS)

    @property
    def is_empty(self) -> bool:
        return not self.ranges and not self.other

    def __bool__(self) -> bool:
        return not self.is_empty

    def __or__(self, other: ConnSet) -> ConnSet:
        a, b = self.as_dict(), other.as_dict()
        return ConnSet.of({p: a.get(p, ()) + b.get(p, ()) for p in set(a) | set(b)}, self.other or other.other)

    def __and__(self, other: ConnSet) -> ConnSet:
        a, b = self.as_dict(), other.as_dict()
        return ConnSet.of({p: _intersect(a[p], b[p]) for p in set(a) & set(b)}, self.other and other.other)

    def __invert__(self) -> ConnSet:
        """Every connection not in this set (ClusterNetworkPolicy rules take away what earlier rules decided)."""
        have = self.as_dict()
        return ConnSet.of({p: _complement(have.get(p, ())) for p in PROTOCOLS}, not self.other)

    def __sub__(self, other: ConnSet) -> ConnSet:
        return self & ~other

    def contains(self, protocol: str, port: int) -> bool:
        return any(lo <= port <= hi for lo, hi in self.as_dict().get(protocol, ()))

    def to_json(self) -> Any:
        """``"all"`` or ``[{"protocol": "TCP", "ports": [[80, 80], [8080, 8090]]}]`` (docs/policy.md)."""
        if self.is_all:
            return "all"
        return [{"protocol": p, "ports": [[lo, hi] for lo, hi in r]} for p, r in self.ranges]

    def describe(self) -> str:
        """``All connections`` or ``TCP 80,8080-8090; UDP 53`` (``other`` only ever comes with all ports)."""
        if self.is_all:
            return "All connections"
        if self.is_empty:
            return "No connections"
        parts = []
        for protocol, ranges in self.ranges:
            text = "all ports" if ranges == FULL else ",".join(
                str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in ranges)
            parts.append(f"{protocol} {text}")
        if self.other:
            parts.append("other protocols")
        return "; ".join(parts)

    def __str__(self) -> str:
        return self.describe()
