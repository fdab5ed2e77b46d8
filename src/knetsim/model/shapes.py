"""Admission once per distinct shape: the "no errors" verdict of a kind's rules, remembered by content.

Generated and templated manifests repeat: 9,000 Deployments from a handful of pod templates, 10,000
NetworkPolicies of a few rule shapes. A kind's own rules (``Strategy.validate``) whose input is the object's
``spec`` alone give the same verdict for every spec equal to one already checked. Only the verdict "valid" is
reused: an invalid spec is checked again every time, so its errors are computed for the object they name, as
before. The key is the value serialised by marshal (format 2: no back-references, so equal values give equal
bytes however they share objects): bytes made in C that name every value's exact type (``1``, ``1.0``, ``True`` and
``"1"`` read differently), so two equal keys are two equal values; a different key order is a different key, a miss
and no harm. A value marshal refuses (a subclass, such as the JSON reader's GoNumber) is pickled, which names its
class. It costs less than half the ``repr`` this used before (bench/calico.py's 36,000 NetworkPolicy rules: 0.036
against 0.064 s; pickle 0.051) and a tenth of the rules' own cost (~25 us a Deployment).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from . import objects
from .fielderr import FieldError
from .versions import in_force

# Rules that read nothing of an object but its ``spec`` (and the feature gates of the version in force, which are
# part of the key), such as ``validate_workload``. Ratcheting (an update's stored values) is not part of the key:
# the callers use the cache for creates only.
SpecRules = Callable[[Mapping[str, Any]], list[FieldError]]

# At most this many distinct valid values are remembered, each of at most this many bytes (or characters): the live
# daemon admits for days, and a table of all-distinct large specs must not grow without bound (at most ~16 MB).
_REMEMBERED = 4096
_LONGEST = 4096

_valid: set[tuple[Any, ...]] = set()


def content_key(rules: object, value: Any) -> tuple[Any, ...]:
    """What a verdict of ``rules`` on ``value`` depends on: the rules, the version in force (its feature gates),
    the value's bytes (``objects.content_key``)."""
    version = in_force()  # by its numbers: its dataclass hash is Python code, run at every lookup
    return (rules, version.major, version.minor, type(value), objects.content_key(value))


def content_keys(rules: object, values: list[Any]) -> list[tuple[Any, ...]]:
    """``content_key`` of each of ``values``, the version in force read once."""
    version = in_force()
    major, minor = version.major, version.minor
    key = objects.content_key
    return [(rules, major, minor, type(v), key(v)) for v in values]


def known_valid(key: tuple[Any, ...]) -> bool:
    return key in _valid


def remember_valid(key: tuple[Any, ...]) -> None:
    if len(_valid) < _REMEMBERED and len(key[-1]) <= _LONGEST:
        _valid.add(key)


def spec_errors(rules: SpecRules, obj: Mapping[str, Any]) -> list[FieldError]:
    """``rules(obj)``, or no errors at once when an equal spec was already found valid by the same rules under
    the same Kubernetes version."""
    key = content_key(rules, obj.get("spec"))
    if key in _valid:
        return []
    errors = rules(obj)
    if not errors:
        remember_valid(key)
    return errors


# --- admitted specs: decoded, defaulted and found valid once per distinct spec as written ----------------------
#
# For a kind whose defaulting and own rules read nothing but ``spec`` (a Deployment's, ReplicaSet's, DaemonSet's:
# model/strategy.py says which), the spec an object is stored with depends only on the spec as written (and the
# version in force). Remembered by the written spec's bytes, it is handed out as a copy (a caller may write into what
# admission returns), or inside ``sharing()`` as the one object the scope's objects share (below):
# bench/calico.py's 9,000 Deployments of 9 distinct specs each skip decoding (~6.5 us), defaulting (~4) and the
# spec's key (~2) for a key of the written spec (~1.4) and a copy (~4.3) or nothing.
# Only a spec that decoded without a strict error and was found valid is remembered, so nothing refused or warned
# about is ever skipped.

_ADMITTED: dict[tuple[Any, ...], dict[str, Any]] = {}
_ADMITTED_MAX = 1024


def written_spec_key(kind: str, body: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The key of ``body``'s spec as written, for an object of ``kind``; None when it has no spec object or one too
    large to remember."""
    spec = body.get("spec")
    if type(spec) is not dict:
        return None
    key = content_key(("written spec", kind), spec)
    return key if len(key[-1]) <= _LONGEST else None


def admitted_spec(key: tuple[Any, ...]) -> dict[str, Any] | None:
    """The admitted spec remembered for ``key``, or None: inside ``sharing()`` the one object that scope's admissions
    share, else a copy."""
    shared = _SHARED.get()
    if shared is not None:
        spec = shared.get(key)
        if spec is not None:
            return spec
    spec = _ADMITTED.get(key)
    if spec is None:
        return None
    spec = json_tree_copy(spec)
    if shared is not None:
        shared[key] = spec
    return spec


def remember_admitted_spec(key: tuple[Any, ...], spec: dict[str, Any]) -> None:
    """``spec`` (decoded cleanly, defaulted and valid) is what every spec written as ``key`` says is admitted as."""
    if len(_ADMITTED) < _ADMITTED_MAX:
        _ADMITTED[key] = json_tree_copy(spec)
        shared = _SHARED.get()
        if shared is not None:
            shared[key] = spec  # the object admitted it: the scope's next equal specs are this one


# --- one admitted value shared by a scope's objects -------------------------------------------------------------
#
# Stored objects are never changed in place (model/jsonvalue.py: whoever edits one edits a copy; the offline
# controllers' rollout copies what it writes and shares the template), so the objects of one admission of a
# whole input (cluster.build.admit) can share one admitted spec instead of a copy each: bench/calico.py's 9,000
# Deployments of 9 distinct specs made 9,000 copies (~0.08 s) for 9 values. The sharing is scoped to that call
# (a context variable: the live daemon's threads admit outside it and get copies): what one build's objects
# share, no other build, request or test sees, and the remembered values themselves are never handed out.


_SHARED: ContextVar[dict[tuple[Any, ...], Any] | None] = ContextVar("shapes_shared", default=None)


def shared_values() -> dict[tuple[Any, ...], Any] | None:
    """The values this scope's admissions share, by key (None outside ``sharing()``): a part of an object admitted
    cleanly that later objects of the scope writing the same content hold too. Put in only what is exactly what an
    object so written would be admitted with; ``share_value`` bounds each entry's size."""
    return _SHARED.get()


def share_value(values: dict[tuple[Any, ...], Any], key: tuple[Any, ...], value: Any) -> None:
    if len(key[-1]) <= _LONGEST:
        values.setdefault(key, value)


@contextlib.contextmanager
def sharing() -> Iterator[None]:
    """Admissions in this scope share each remembered admitted value among their objects (see above)."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


_ATOMS = frozenset({str, int, float, bool, type(None)})


def json_tree_copy(value: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a decoded JSON object: its dicts and lists are new, its immutable leaves shared. Tests exact
    types, so it takes about half the time of model.jsonvalue.json_copy (4.3 against 8.2 us a Deployment spec);
    anything else (a subclass a raw field kept) is deep-copied."""
    out: dict[str, Any] = {}
    for key, v in value.items():
        kind = type(v)
        if kind is str:
            out[key] = v
        elif kind is dict:
            out[key] = json_tree_copy(v)
        else:
            out[key] = _copy(v)
    return out


def _copy(v: Any) -> Any:
    kind = type(v)
    if kind is str:
        return v
    if kind is dict:
        return json_tree_copy(v)
    if kind is list:
        return [_copy(e) for e in v]
    return v if kind in _ATOMS else copy.deepcopy(v)
