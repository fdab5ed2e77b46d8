"""Regular expressions from user objects, matched with a time bound.

Ingress paths (ingress-nginx's regex locations) and HTTPRoute RegularExpression matches are written
by whoever creates the object and matched against whatever path a client sends: a pattern such as
``(a|aa)+$`` against a long run of ``a`` takes exponential time in a backtracking engine, and would
stall the whole simulation (the live server answers every client from one loop). The ``regex``
package is ``re``'s syntax with a timeout per match: a match that takes longer than
``MATCH_TIMEOUT`` is given up on and reported, never waited for. (nginx's PCRE stops at its match
limit and answers 500; Envoy's RE2 is linear-time: both stop too, each in its own way.)
"""

from __future__ import annotations

from functools import lru_cache

import regex

MATCH_TIMEOUT = 0.05  # seconds per match


class RegexTimeout(Exception):
    """A match ran past ``MATCH_TIMEOUT``."""


@lru_cache(maxsize=2048)
def compiled(pattern: str, ignore_case: bool = False) -> regex.Pattern[str] | None:
    """The pattern compiled, or None when it is no valid regular expression."""
    try:
        return regex.compile(pattern, (regex.IGNORECASE if ignore_case else 0) | regex.V0)
    except (regex.error, RecursionError, OverflowError, ValueError):
        return None


def compile_error(pattern: str) -> str | None:
    try:
        regex.compile(pattern, regex.V0)
    except regex.error as exc:
        return str(exc)
    except (RecursionError, OverflowError, ValueError):
        return "too complex"
    return None


def _run(method: str, pattern: regex.Pattern[str], text: str) -> regex.Match[str] | None:
    try:
        return getattr(pattern, method)(text, timeout=MATCH_TIMEOUT)  # type: ignore[no-any-return]
    except TimeoutError:
        raise RegexTimeout(f"regular expression {pattern.pattern!r} ran past {MATCH_TIMEOUT * 1000:.0f} ms") \
            from None


def match(pattern: regex.Pattern[str], text: str) -> regex.Match[str] | None:
    return _run("match", pattern, text)


def search(pattern: regex.Pattern[str], text: str) -> regex.Match[str] | None:
    return _run("search", pattern, text)


def fullmatch(pattern: regex.Pattern[str], text: str) -> regex.Match[str] | None:
    return _run("fullmatch", pattern, text)


def envoy_full_match(pattern: str, text: str) -> bool:
    """Envoy's RE2 full match (HTTPRoute and GRPCRoute RegularExpression values, Cilium's L7 rules): an
    invalid pattern matches nothing, and a match that runs past the bound is no match — RE2 is linear-time
    and would answer, a backtracking engine here must not stall."""
    rx = compiled(pattern)
    if rx is None:
        return False
    try:
        return fullmatch(rx, text) is not None
    except RegexTimeout:
        return False
