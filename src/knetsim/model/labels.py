"""Label selectors with apimachinery's semantics.

Three spellings reach the same ``Selector``:

* a Service ``spec.selector`` map (equality only; an empty map selects nothing for a
  Service because the endpoints controller skips it — callers decide that, not us);
* a ``metav1.LabelSelector`` (``matchLabels`` + ``matchExpressions``), where ``{}`` selects
  everything and a missing selector selects nothing;
* the string form kubectl takes with ``-l``: ``app=web,tier!=db,env in (a,b),!canary``.

``!=`` and ``notin`` also match objects that lack the key, as upstream does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .fielderr import FieldError, Path
from .names import is_label_value, is_qualified_name

IN = "in"
NOT_IN = "notin"
EQUALS = "="
NOT_EQUALS = "!="
EXISTS = "exists"
DOES_NOT_EXIST = "!"
GREATER = "gt"
LESS = "lt"

_EXPRESSION_OPS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


class SelectorSyntaxError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op in (EQUALS, IN):
            return labels.get(self.key) in self.values
        if op in (NOT_EQUALS, NOT_IN):
            value = labels.get(self.key)
            return value is None or value not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        value = labels.get(self.key)
        if value is None:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        bound = int(self.values[0])
        return number > bound if op == GREATER else number < bound

    def __str__(self) -> str:
        if self.op == EXISTS:
            return self.key
        if self.op == DOES_NOT_EXIST:
            return "!" + self.key
        if self.op in (EQUALS, NOT_EQUALS):
            return f"{self.key}{self.op}{self.values[0]}"
        if self.op == GREATER:
            return f"{self.key}>{self.values[0]}"
        if self.op == LESS:
            return f"{self.key}<{self.values[0]}"
        return f"{self.key} {self.op} ({','.join(sorted(self.values))})"


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements. ``nothing`` is the nil selector, which matches no object."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @classmethod
    def everything(cls) -> Selector:
        return cls(())

    @classmethod
    def none(cls) -> Selector:
        return cls((), nothing=True)

    @classmethod
    def from_map(cls, labels: Mapping[str, str] | None) -> Selector:
        if labels is None:
            return cls.none()
        return cls(tuple(Requirement(k, EQUALS, (str(v),)) for k, v in sorted(labels.items())))

    @classmethod
    def of_workload(cls, kind: str, selector: Mapping[str, Any] | None) -> Selector:
        """A workload's ``spec.selector``: a ReplicationController's is a plain label map (core/v1 predates
        LabelSelector), every other workload's a LabelSelector."""
        return cls.from_map(selector) if kind == "ReplicationController" else cls.from_label_selector(selector)

    @classmethod
    def from_label_selector(cls, selector: Mapping[str, Any] | None) -> Selector:
        """A ``metav1.LabelSelector`` dict; assumes it was validated."""
        if selector is None:
            return cls.none()
        reqs = [Requirement(k, EQUALS, (str(v),)) for k, v in (selector.get("matchLabels") or {}).items()]
        for expr in selector.get("matchExpressions") or []:
            op = _EXPRESSION_OPS[expr["operator"]]
            values = tuple(str(v) for v in expr.get("values") or ())
            reqs.append(Requirement(expr["key"], op, values))
        reqs.sort(key=lambda r: r.key)
        return cls(tuple(reqs))

    @classmethod
    def parse(cls, text: str) -> Selector:
        return cls(tuple(sorted(_parse(text), key=lambda r: r.key)))

    @property
    def empty(self) -> bool:
        return not self.requirements and not self.nothing

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def formatted(self) -> str:
        """``metav1.FormatLabelSelector``: the string form, ``<none>`` when it is empty."""
        return str(self) or "<none>"

    def equality_map(self) -> dict[str, str] | None:
        """The ``key=value`` pairs if every requirement is an equality (lets callers index)."""
        if self.nothing or any(r.op != EQUALS for r in self.requirements):
            return None
        return {r.key: r.values[0] for r in self.requirements}


_TOKEN = re.compile(r"\s*(!=|==|=|!|\(|\)|,|<|>|[^\s!=(),<>]+)")


def _tokens(text: str) -> list[str]:
    pos, out = 0, []
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise SelectorSyntaxError(f"unable to parse requirement: {text[pos:]!r}")
        out.append(m.group(1))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


def _parse(text: str) -> list[Requirement]:
    tokens = _tokens(text)
    reqs: list[Requirement] = []
    i = 0

    def expect_key(tok: str) -> str:
        if tok in ("!=", "==", "=", "!", "(", ")", ",", "<", ">"):
            raise SelectorSyntaxError(f"found '{tok}', expected: identifier")
        problems = is_qualified_name(tok)
        if problems:
            raise SelectorSyntaxError(f"invalid label key \"{tok}\": {'; '.join(problems)}")
        return tok

    while i < len(tokens):
        tok = tokens[i]
        if tok == "!":
            key = expect_key(tokens[i + 1] if i + 1 < len(tokens) else "")
            reqs.append(Requirement(key, DOES_NOT_EXIST))
            i += 2
        else:
            key = expect_key(tok)
            i += 1
            nxt = tokens[i] if i < len(tokens) else ","
            if nxt == ",":
                reqs.append(Requirement(key, EXISTS))
            elif nxt in ("=", "==", "!="):
                value = tokens[i + 1] if i + 1 < len(tokens) and tokens[i + 1] != "," else ""
                _check_value(value)
                reqs.append(Requirement(key, NOT_EQUALS if nxt == "!=" else EQUALS, (value,)))
                i += 2 if value else 1
            elif nxt in ("<", ">"):
                value = tokens[i + 1] if i + 1 < len(tokens) else ""
                if not value.lstrip("-").isdigit():
                    raise SelectorSyntaxError(f"for 'Gt', 'Lt' operators, the value must be an integer: {value!r}")
                reqs.append(Requirement(key, GREATER if nxt == ">" else LESS, (value,)))
                i += 2
            elif nxt.lower() in (IN, NOT_IN):
                op = nxt.lower()
                if i + 1 >= len(tokens) or tokens[i + 1] != "(":
                    raise SelectorSyntaxError(f"found '{tokens[i + 1] if i + 1 < len(tokens) else ''}', expected: '('")
                i += 2
                values: list[str] = []
                while i < len(tokens) and tokens[i] != ")":
                    if tokens[i] != ",":
                        _check_value(tokens[i])
                        values.append(tokens[i])
                    i += 1
                if i >= len(tokens):
                    raise SelectorSyntaxError("found '', expected: ')'")
                i += 1
                reqs.append(Requirement(key, op, tuple(values) or ("",)))
            else:
                raise SelectorSyntaxError(f"found '{nxt}', expected: in, notin, =, ==, !=, gt, lt")
        if i < len(tokens):
            if tokens[i] != ",":
                raise SelectorSyntaxError(f"found '{tokens[i]}', expected: ',' or 'end of string'")
            i += 1
    return reqs


def _check_value(value: str) -> None:
    problems = is_label_value(value)
    if problems:
        raise SelectorSyntaxError(f"invalid label value: \"{value}\": {'; '.join(problems)}")


def validate_labels(labels: Any, path: Path) -> list[FieldError]:
    """``ValidateLabels``: keys are qualified names, values label values."""
    if labels is None:
        return []
    if not isinstance(labels, Mapping):
        return [path.invalid(labels, "must be a map of string keys to string values")]
    errs = []
    for key, value in labels.items():
        for problem in is_qualified_name(str(key)):
            errs.append(path.invalid(key, problem))
        if not isinstance(value, str):
            errs.append(path.key(str(key)).invalid(value, "label values must be strings"))
            continue
        for problem in is_label_value(value):
            errs.append(path.key(str(key)).invalid(value, problem))
    return errs


def validate_label_selector(selector: Any, path: Path) -> list[FieldError]:
    """``ValidateLabelSelector`` from apimachinery's metav1 validation."""
    if selector is None:
        return []
    if not isinstance(selector, Mapping):
        return [path.invalid(selector, "must be a label selector object")]
    errs = validate_labels(selector.get("matchLabels"), path.child("matchLabels"))
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        p = path.child("matchExpressions").index(i)
        if not isinstance(expr, Mapping):
            errs.append(p.invalid(expr, "must be an object"))
            continue
        op = expr.get("operator")
        values = expr.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                errs.append(p.child("values").required("must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(
                    p.child("values").forbidden("may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
                )
        else:
            errs.append(p.child("operator").invalid(op, "not a valid selector operator"))
        key = expr.get("key")
        if not key:
            errs.append(p.child("key").invalid(key or "", "name part must be non-empty"))
        else:
            errs.extend(p.child("key").invalid(key, problem) for problem in is_qualified_name(str(key)))
        for j, value in enumerate(values):
            errs.extend(
                p.child("values").index(j).invalid(value, problem) for problem in is_label_value(str(value))
            )
    return errs


def closest_labels(wanted: Mapping[str, str], candidates: Iterable[Mapping[str, str]]) -> list[tuple[str, str, str]]:
    """For each wanted ``key=value`` that no candidate has, the nearest existing pair by edit distance.

    Returns ``(wanted_pair, nearest_pair, how)`` triples; used to name a one-character typo
    such as ``app: wbe`` beside an existing ``app: web``.
    """
    existing = sorted({(k, v) for labels in candidates for k, v in labels.items()})
    out = []
    for key, value in sorted(wanted.items()):
        if (key, value) in existing:
            continue
        best: tuple[int, str, str] | None = None
        for k, v in existing:
            distance = edit_distance(key, k) + edit_distance(value, v)
            if best is None or distance < best[0]:
                best = (distance, k, v)
        if best is None:
            continue
        distance, k, v = best
        if key == k:
            how = f"value differs by {distance} character(s)" if distance <= 2 else "value differs"
        elif value == v:
            how = f"key differs by {distance} character(s)" if distance <= 2 else "key differs"
        else:
            how = f"{distance} character(s) apart"
        out.append((f"{key}={value}", f"{k}={v}", how))
    return out


def edit_distance(a: str, b: str) -> int:
    """Damerau-Levenshtein (optimal string alignment): a swapped pair like ``wbe``/``web`` costs 1."""
    if a == b:
        return 0
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][len(b)]
