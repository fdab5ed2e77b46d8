"""CEL results are remembered per (rule, value) for rules without oldSelf: the second answer is the first."""

from __future__ import annotations

import pytest

from knetsim.model import cel


@pytest.mark.parametrize(("rule", "value", "expected"), [
    ("isCIDR(self)", "10.0.0.0/8", True),
    ("isCIDR(self)", "bad", False),
    ("self.start < self.end", {"start": 9, "end": 3}, False),
    ("self.start < self.end", {"start": 3, "end": 9}, True),
])
def test_a_remembered_result_is_the_computed_one(rule: str, value: object, expected: bool) -> None:
    assert cel.evaluate(rule, value) is expected
    assert cel.evaluate(rule, value) is expected


def test_a_remembered_error_is_raised_again() -> None:
    for _ in range(2):
        with pytest.raises(cel.CelError, match="no such key"):
            cel.evaluate("self.missing == 1", {"present": 1})


def test_transition_rules_are_never_remembered() -> None:
    assert cel.evaluate("self == oldSelf", 1, 1, has_old=True)
    assert not cel.evaluate("self == oldSelf", 1, 2, has_old=True)


def test_a_runaway_regex_in_a_rule_is_an_evaluation_error_not_a_stall() -> None:
    """CEL's matches()/find() are RE2 (linear) in Kubernetes; a backtracking runaway here is bounded."""
    import time

    from knetsim.model import cel

    started = time.monotonic()
    with pytest.raises(cel.CelError, match=r"ran past 50 ms evaluating rule: self.matches"):
        cel._evaluate("self.matches('^(a|aa)+$')", "a" * 60 + "!", None, False)
    assert time.monotonic() - started < 5
    assert cel._evaluate("self.matches('^a+$')", "aaa", None, False) is True
