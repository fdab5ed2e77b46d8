"""CEL for ``x-kubernetes-validations``: cel-python plus the Kubernetes CEL libraries CRDs use.

kube-apiserver evaluates each rule with ``self`` bound to the value at the rule's place in the
schema (and ``oldSelf`` on updates). cel-python (a maintained implementation of the CEL spec)
does the language; this module adds what Kubernetes adds on top:

- property names that are CEL keywords or hold ``_ . - /`` are reached through escapes
  (``self.__namespace__`` for ``namespace``, ``__dash__`` for ``-``...);
- the strings library (``split``, ``lowerAscii``, ``join``...), the IP and CIDR library
  (``isCIDR``, ``cidr(...).containsIP(...)``...), ``isURL``, and regex ``find``;
- a cost guard: Kubernetes bounds a rule's cost before running it; here a rule whose nested
  macros would visit more than a million elements of this object is refused with the API
  server's "running out of cost budget" message instead of hanging.

Programs are compiled once per rule text and cached.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlparse

import celpy
from celpy import celtypes

from . import saferegex

# CEL's reserved words: a property with one of these names is written __name__ in a rule.
_RESERVED = {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if",
             "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}
_MACROS = re.compile(r"\.(all|exists|exists_one|map|filter)\(")
COST_LIMIT = 1_000_000


class CelError(Exception):
    """A rule that cannot be compiled or evaluated; the message is what the API server reports.

    ``detail`` is the evaluation error alone (cel-go's words: ``no such key: certificateRefs``): the API server
    reports it as ``<detail> evaluating rule: <the rule's message, or the rule>``, so the caller that knows the
    rule's message finishes the sentence.
    """

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail

    @property
    def evaluating(self) -> bool:
        return bool(self.detail)


def escape(name: str) -> str | None:
    """The name a rule uses for property ``name`` (None when it needs no escape)."""
    if name in _RESERVED:
        return f"__{name}__"
    if any(ch in name for ch in "_.-/"):
        out = name.replace("__", "__underscores__").replace(".", "__dot__").replace("-", "__dash__")
        out = out.replace("/", "__slash__")
        return out if out != name else None
    return None


class _Fields(celtypes.MapType):
    """A JSON object as CEL sees it: its own keys (what ``size()``, ``all()`` and ``==`` see), plus the escaped
    names rules use to reach properties that are CEL keywords or hold ``_ . - /`` (``self.__namespace__``)."""

    def __init__(self, items: dict[Any, Any], aliases: dict[Any, Any]) -> None:
        super().__init__(items)
        self._aliases = aliases

    def _own(self, key: Any) -> Any:
        return key if dict.__contains__(self, key) else self._aliases.get(key, key)

    def __getitem__(self, key: Any) -> Any:
        return super().__getitem__(self._own(key))

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, self._own(key))

    def get(self, key: Any, default: Any = None) -> Any:
        return dict.get(self, self._own(key), default)


def to_cel(value: Any) -> Any:
    """A JSON value as a CEL value; objects also answer to the escaped names of their keys."""
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    if isinstance(value, float):
        return celtypes.DoubleType(value)
    if isinstance(value, str):
        return celtypes.StringType(value)
    if isinstance(value, list):
        return celtypes.ListType([to_cel(v) for v in value])
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        aliases: dict[Any, Any] = {}
        for k, v in value.items():
            key = celtypes.StringType(k)
            out[key] = to_cel(v)
            escaped = escape(k)
            if escaped is not None and escaped not in value:
                aliases[celtypes.StringType(escaped)] = key
        return _Fields(out, aliases)
    return None


# --- the Kubernetes libraries ------------------------------------------------------------


@dataclass(frozen=True)
class _CIDR:
    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    address: ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class _IP:
    address: ipaddress.IPv4Address | ipaddress.IPv6Address


def _parse_ip(text: str) -> _IP:
    try:
        addr = ipaddress.ip_address(str(text))
    except ValueError:
        raise CelError(f"IP Address {text!r} parse error during conversion from string") from None
    if addr.version == 6 and addr.ipv4_mapped is not None:
        raise CelError(f"IPv4-mapped IPv6 address {text!r} is not allowed")
    return _IP(addr)


def _parse_cidr(text: str) -> _CIDR:
    try:
        iface = ipaddress.ip_interface(str(text))
        if "/" not in str(text):
            raise ValueError
    except ValueError:
        raise CelError(f"network address parse error during conversion from string: {text}") from None
    return _CIDR(iface.network, iface.ip)


def _is_ip(text: Any) -> Any:
    try:
        _parse_ip(str(text))
    except CelError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _is_cidr(text: Any) -> Any:
    try:
        _parse_cidr(str(text))
    except CelError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _ip(value: Any) -> Any:
    if isinstance(value, _CIDR):
        return _IP(value.address)
    return _parse_ip(str(value))


def _family(value: Any) -> Any:
    target = value.address if isinstance(value, _IP | _CIDR) else _parse_ip(str(value)).address
    return celtypes.IntType(target.version)


def _contains_ip(cidr: Any, ip: Any) -> Any:
    addr = ip.address if isinstance(ip, _IP) else _parse_ip(str(ip)).address
    return celtypes.BoolType(addr.version == cidr.network.version and addr in cidr.network)


def _contains_cidr(cidr: Any, other: Any) -> Any:
    net = other.network if isinstance(other, _CIDR) else _parse_cidr(str(other)).network
    return celtypes.BoolType(net.version == cidr.network.version and net.subnet_of(cidr.network))  # type: ignore[arg-type]


def _split(text: Any, sep: Any, limit: Any = None) -> Any:
    parts = str(text).split(str(sep)) if limit is None or int(limit) < 0 else \
        ([] if int(limit) == 0 else str(text).split(str(sep), int(limit) - 1))
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _join(items: Any, sep: Any = "") -> Any:
    return celtypes.StringType(str(sep).join(str(x) for x in items))


def _replace(text: Any, old: Any, new: Any, limit: Any = None) -> Any:
    count = -1 if limit is None else int(limit)
    return celtypes.StringType(str(text).replace(str(old), str(new), count))


def _index_of(value: Any, target: Any, start: Any = None) -> Any:
    if isinstance(value, list):
        try:
            return celtypes.IntType(list(value).index(target))
        except ValueError:
            return celtypes.IntType(-1)
    return celtypes.IntType(str(value).find(str(target), int(start or 0)))


def _substring(text: Any, start: Any, end: Any = None) -> Any:
    s = str(text)
    return celtypes.StringType(s[int(start):] if end is None else s[int(start):int(end)])


def _is_url(text: Any) -> Any:
    parsed = urlparse(str(text))
    return celtypes.BoolType(bool(parsed.scheme and (parsed.netloc or parsed.path)))


def _regex(pattern: Any) -> Any:
    rx = saferegex.compiled(str(pattern))
    if rx is None:
        raise ValueError(f"invalid regular expression {str(pattern)!r}")
    return rx


def _find(text: Any, pattern: Any) -> Any:
    # Kubernetes' CEL regexes are RE2 (linear-time); here a runaway match is an evaluation error, not a stall.
    m = saferegex.search(_regex(pattern), str(text))
    return celtypes.StringType(m.group(0) if m else "")


def _find_all(text: Any, pattern: Any, limit: Any = None) -> Any:
    found = [m.group(0) for m in _regex(pattern).finditer(str(text), timeout=saferegex.MATCH_TIMEOUT)]
    if limit is not None and int(limit) >= 0:
        found = found[:int(limit)]
    return celtypes.ListType([celtypes.StringType(f) for f in found])


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "split": _split, "join": _join, "replace": _replace, "indexOf": _index_of,
    "lastIndexOf": lambda s, t: celtypes.IntType(str(s).rfind(str(t))),
    "lowerAscii": lambda s: celtypes.StringType(str(s).lower()),
    "upperAscii": lambda s: celtypes.StringType(str(s).upper()),
    "trim": lambda s: celtypes.StringType(str(s).strip()),
    "substring": _substring, "charAt": lambda s, i: celtypes.StringType(str(s)[int(i):int(i) + 1]),
    "isIP": _is_ip, "ip": _ip, "family": _family, "isCIDR": _is_cidr, "cidr": lambda s: _parse_cidr(str(s)),
    "containsIP": _contains_ip, "containsCIDR": _contains_cidr,
    "prefixLength": lambda c: celtypes.IntType(c.network.prefixlen),
    "masked": lambda c: _CIDR(c.network, c.network.network_address),
    "isLoopback": lambda i: celtypes.BoolType(i.address.is_loopback),
    "isUnspecified": lambda i: celtypes.BoolType(i.address.is_unspecified),
    "isURL": _is_url, "find": _find, "findAll": _find_all,
    # CEL's own matches(), bounded in time as find() is (a partial match, as RE2's in Kubernetes).
    "matches": lambda s, pattern: celtypes.BoolType(saferegex.search(_regex(pattern), str(s)) is not None),
}


def _operators() -> dict[str, Callable[..., Any]]:
    # cel-python reports "found no matching overload for _||_" when both sides are errors; cel-go passes the
    # first error on, and the API server prints that one.
    return {"_||_": _logical_or, "_&&_": _logical_and}


@lru_cache(maxsize=1)
def _environment() -> celpy.Environment:
    return celpy.Environment()


@lru_cache(maxsize=4096)
def compile_rule(rule: str) -> Any:
    """A runnable program for ``rule``; raises CelError with the compiler's message."""
    try:
        env = _environment()
        return env.program(env.compile(rule), functions={**FUNCTIONS, **_operators()})
    except Exception as exc:  # cel-python raises its own parse errors and, for odd input, anything
        raise CelError(f"rule compile error: compilation failed: {str(exc).strip()}") from None


def _collection_size(value: Any) -> int:
    """The largest list or map anywhere in ``value``: what one macro level can iterate over."""
    best = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            best = max(best, len(v))
            stack.extend(v)
        elif isinstance(v, dict):
            best = max(best, len(v))
            stack.extend(v.values())
    return best


# A rule without oldSelf is a function of `self`: the same small value (a CIDR, a port range) in a
# thousand ClusterNetworkPolicies is evaluated once (cel-python takes about 0.5 ms an evaluation).
_RESULTS: dict[tuple[str, str], bool | CelError] = {}
_RESULT_KEY_LIMIT = 4096
_RESULTS_LIMIT = 1 << 16


def evaluate(rule: str, self_value: Any, old_value: Any = None, *, has_old: bool = False) -> bool:
    """Run ``rule``; True when it holds. Raises CelError with the API server's wording otherwise."""
    key = None
    if not has_old:
        try:
            text = json.dumps(self_value, sort_keys=True, separators=(",", ":"))
        except (TypeError, ValueError):
            text = ""
        if text and len(text) <= _RESULT_KEY_LIMIT:
            key = (rule, text)
            known = _RESULTS.get(key)
            if known is not None:
                if isinstance(known, CelError):
                    raise CelError(str(known), detail=known.detail)
                return known
    try:
        result = _evaluate(rule, self_value, old_value, has_old)
    except CelError as exc:
        if key is not None and len(_RESULTS) < _RESULTS_LIMIT:
            _RESULTS[key] = exc
        raise
    if key is not None and len(_RESULTS) < _RESULTS_LIMIT:
        _RESULTS[key] = result
    return result


def _evaluate(rule: str, self_value: Any, old_value: Any, has_old: bool) -> bool:
    program = compile_rule(rule)
    depth = len(_MACROS.findall(rule))
    if depth > 1 and _collection_size(self_value) ** depth > COST_LIMIT:
        raise CelError("validation failed due to running out of cost budget, no further validation rules "
                       "will be run")
    activation = {"self": to_cel(self_value)}
    if has_old:
        activation["oldSelf"] = to_cel(old_value)
    try:
        result = program.evaluate(activation)
    except Exception as exc:
        result = exc
    if isinstance(result, Exception):
        detail = go_error(result)
        raise CelError(f"{detail} evaluating rule: {rule.strip()}", detail=detail) from None
    if isinstance(result, celtypes.BoolType):
        return bool(result)
    raise CelError(f"rule did not evaluate to a boolean: {rule.strip()}")


def go_error(exc: BaseException) -> str:
    """An evaluation error in cel-go's words (``no such key: certificateRefs``, ``index out of bounds``,
    ``division by zero``), which the API server prints."""
    args = getattr(exc, "args", ())
    text = args[0] if args and isinstance(args[0], str) else str(exc)
    cause = args[1] if len(args) > 1 else None
    details = args[2] if len(args) > 2 and isinstance(args[2], tuple) else ()
    missing = re.match(r"no such member in mapping: '(.*)'$", text)
    if missing:
        return f"no such key: {missing.group(1)}"
    if text == "no such key" and details:
        return f"no such key: {details[0]}"
    if cause is IndexError:
        return "index out of bounds"
    if cause is ZeroDivisionError:
        return "modulus by zero" if details and "modulo by zero" in str(details[0]) and "division" not in \
            str(details[0]) else "division by zero"
    return text


def _logical_or(left: Any, right: Any) -> Any:
    """CEL's ``||`` as cel-go runs it: true if either side is true, else the first error, else false."""
    if left is celtypes.BoolType(True) or (isinstance(left, celtypes.BoolType) and left):
        return celtypes.BoolType(True)
    if isinstance(right, celtypes.BoolType) and right:
        return celtypes.BoolType(True)
    for side in (left, right):
        if not isinstance(side, celtypes.BoolType):
            return side if isinstance(side, Exception) else celpy.CELEvalError(
                "no such overload", TypeError, (type(side).__name__,))
    return celtypes.BoolType(False)


def _logical_and(left: Any, right: Any) -> Any:
    """CEL's ``&&`` as cel-go runs it: false if either side is false, else the first error, else true."""
    if isinstance(left, celtypes.BoolType) and not left:
        return celtypes.BoolType(False)
    if isinstance(right, celtypes.BoolType) and not right:
        return celtypes.BoolType(False)
    for side in (left, right):
        if not isinstance(side, celtypes.BoolType):
            return side if isinstance(side, Exception) else celpy.CELEvalError(
                "no such overload", TypeError, (type(side).__name__,))
    return celtypes.BoolType(True)


def message(expression: str, self_value: Any) -> str | None:
    """A ``messageExpression``'s text, or None when it fails (the API server then uses ``message``)."""
    try:
        result = compile_rule(expression).evaluate({"self": to_cel(self_value)})
    except Exception:
        return None
    return str(result) if isinstance(result, celtypes.StringType) else None


def uses_old_self(rule: str) -> bool:
    return re.search(r"\boldSelf\b", rule) is not None
