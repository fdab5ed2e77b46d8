"""Calico's selector language, against the cases of Calico's own parser test table.

Restated as data from projectcalico/calico ``libcalico-go/lib/selector/parser/parser_test.go``
(selectorTests: each selector with label sets that must and must not match; badSelectors;
canonicalisationTests without their hash UIDs, which knetsim does not compute).
"""

from __future__ import annotations

import pytest

from knetsim.policy.calico.selector import SelectorError, canonical, parse, parse_field

# (selector, label sets that match, label sets that do not)
CASES: list[tuple[str, list[dict[str, str]], list[dict[str, str]]]] = [
    ('a == "b"', [{"a": "b"}, {"a": "b", "c": "d"}], [{}, {"a": "c"}, {"c": "d"}]),
    ('a == "b" && c == "d"', [{"a": "b", "c": "d"}],
     [{}, {"a": "b", "c": "e"}, {"a": "c", "c": "d"}, {"c": "d"}, {"a": "b"}]),
    ('a == "b" || c == "d"', [{"a": "b", "c": "d"}, {"a": "b"}, {"c": "d"}],
     [{}, {"a": "e", "c": "e"}, {"c": "e"}, {"a": "e"}]),
    ("a in {\"'\", '\"', \"c\"}", [{"a": "c"}, {"a": '"'}, {"a": "'"}], [{}, {"a": "e"}]),
    ("a not in {\"'\", '\"', \"c\"}", [{}, {"a": "e"}], [{"a": "c"}, {"a": '"'}, {"a": "'"}]),
    ("a == 'a'", [{"a": "a"}], [{"a": "b"}, {}]),
    ('a == "a"', [{"a": "a"}], []),
    ('a != "b"', [{"a": "a"}], []),
    ('a != "a"', [{}], [{"a": "a"}]),
    ("a != 'a'", [], [{"a": "a"}]),
    ('a contains "a"', [{"a": "a"}, {"a": "bab"}, {"a": "aaa", "b": "c"}], [{}, {"a": "b"}, {"b": "aaa"}]),
    ('a starts with "a"', [{"a": "a"}, {"a": "abb"}, {"a": "aaa", "b": "c"}],
     [{}, {"a": "b"}, {"a": "baa"}, {"b": "aaa"}]),
    ('a ends with "a"', [{"a": "a"}, {"a": "bba"}, {"a": "aaa", "b": "c"}],
     [{}, {"a": "b"}, {"a": "aab"}, {"b": "aaa"}]),
    ('a in {"a"}', [{"a": "a"}], [{"a": "b"}]),
    ('!a in {"a"}', [{"a": "b"}], []),
    ('a in {"a", "b"}', [{"a": "a"}, {"a": "b"}], [{"a": "c"}]),
    ('a not in {"d", "e"}', [{"a": "a"}], []),
    ('a not in {"a"}', [], [{"a": "a"}]),
    ("has(a)", [{"a": "b"}], []),
    ("!has(a)", [{"b": "b"}], [{"a": "b"}]),
    ("has(b)", [], [{"a": "b"}]),
    ("!!has(b)", [], [{"a": "b"}]),
    ("! has(a)", [], [{"a": "b"}]),
    ("!!! has(a)", [], [{"a": "b"}]),
    ("!!!has(a)", [], [{"a": "b"}]),
    ("!! ! has(a)", [], [{"a": "b"}]),
    ("! !!has(a)", [], [{"a": "b"}]),
    ("", [{}, {"a": "b"}], []),
    (" ", [{}], []),
    ("all()", [{}], []),
    (" all()", [{}, {"a": "b"}], []),
    ("global()", [{}], []),
    (" global()", [{}, {"a": "b"}], []),
    # Boolean expressions
    ("a == 'a1' && b == 'b1'", [{"a": "a1", "b": "b1"}], []),
    ("a == 'a1' && b != 'b1'", [], [{"a": "a1", "b": "b1"}]),
    ("a != 'a1' && b == 'b1'", [], [{"a": "a1", "b": "b1"}]),
    ("a != 'a1' && b != 'b1'", [], [{"a": "a1", "b": "b1"}]),
    ("a != 'a1' && !b == 'b1'", [], [{"a": "a1", "b": "b1"}]),
    ("!a == 'a1' && b == 'b1'", [], [{"a": "a1", "b": "b1"}]),
    ("has(a) && !has(b)", [{"a": "a"}], []),
    ("!has(b) && has(a)", [{"a": "a"}], []),
    ("!(!has(a) || has(b))", [{"a": "a"}], []),
    ("!(has(b) || !has(a))", [{"a": "a"}], []),
    ("a == 'a1' || b == 'b1'", [{"a": "a1", "b": "b1"}], []),
    ("a == 'a1' || b != 'b1'", [{"a": "a1", "b": "b1"}], []),
    ("a != 'a1' || b == 'b1'", [{"a": "a1", "b": "b1"}], []),
    ("a != 'a1' || b != 'b1'", [], [{"a": "a1", "b": "b1"}]),
    ("! a == 'a1' || ! b == 'b1'", [], [{"a": "a1", "b": "b1"}]),
]

# Selectors Calico refuses (what each one is, as the table notes it).
BAD = [
    "b == b",  # label == label
    "b contains b",  # label contains label
    "b starts with b",
    "b ends with b",
    "'b1' == b",  # literal on the left
    "b",  # bare label
    "a b",
    "!",
    'foo == "bar" &',
    'foo == "bar" |',
    "foo != ||",
    'foo in {"", ||',
    'foo in ""',  # a set literal is expected
    '"FOO',  # unterminated strings
    "\"FOO'",
    "'FOO",
    "(",  # unbalanced parentheses
    '(a == "foo"',
    ")",
    "()",
    "%",  # unexpected characters
    'a == "b" && %',
    'a == "b" || %',
    "a ",  # a label must be followed by an operator
    "has(foo) &&",
]

# (input, Calico's canonical form)
CANONICAL = [
    ("", "all()"),
    (" all() ", "all()"),
    (" (all() )", "all()"),
    ("! (has( b)||! has(a ))", "!(has(b) || !has(a))"),
    ('! (a == "b"&&! c != "d")', '!(a == "b" && !c != "d")'),
    ("a == \"'\"", "a == \"'\""),
    ("a == '\"'", "a == '\"'"),
    ("a contains '\"'", "a contains '\"'"),
    ("a contains \"'\"", "a contains \"'\""),
    ("a startswith '\"'", "a starts with '\"'"),
    ("a endswith \"'\"", "a ends with \"'\""),
    ("a!='\"'", "a != '\"'"),
    ('a in {"d"}', 'a in {"d"}'),
    ('a in {"a", "b"}', 'a in {"a", "b"}'),
    ('a in {"d", "a", "b"}', 'a in {"a", "b", "d"}'),
    ('a in {"z", "x", "y", "a"}', 'a in {"a", "x", "y", "z"}'),
    ('a in {"z", "z", "x", "y", "x", "a"}', 'a in {"a", "x", "y", "z"}'),
]


@pytest.mark.parametrize(("selector", "matching", "other"), CASES, ids=[c[0] or "<empty>" for c in CASES])
def test_calico_selector_table(selector: str, matching: list[dict[str, str]], other: list[dict[str, str]]) -> None:
    for node in (parse(selector), parse(parse(selector).canonical())):  # and after canonicalising, as Calico's
        assert [node.matches(labels) for labels in matching] == [True] * len(matching)
        assert [node.matches(labels) for labels in other] == [False] * len(other)


@pytest.mark.parametrize("selector", BAD)
def test_calico_refuses_bad_selectors(selector: str) -> None:
    with pytest.raises(SelectorError):
        parse(selector)


@pytest.mark.parametrize(("selector", "expected"), CANONICAL)
def test_canonical_form_round_trips(selector: str, expected: str) -> None:
    assert canonical(selector) == expected
    assert canonical(expected) == expected


def test_errors_name_the_field_and_the_column() -> None:
    with pytest.raises(SelectorError) as caught:
        parse_field("app == web", "spec.ingress[0].source.selector")
    assert str(caught.value) == ('spec.ingress[0].source.selector: Invalid value: "app == web": invalid selector: '
                                 "expected a quoted string after == (at column 8)")
    with pytest.raises(SelectorError, match=r"^spec\.selector: Invalid value: \"app == 'web\": invalid selector: "
                                            r"unterminated string \(at column 8\)$"):
        parse_field("app == 'web", "spec.selector")


def test_a_missing_selector_is_all() -> None:
    assert parse_field(None, "spec.selector").canonical() == "all()"


def test_labels_with_prefixes_and_the_operators_calico_docs_show() -> None:
    # projectcalico.org docs ("Selectors"): prefixed keys, && binding tighter than ||.
    node = parse("projectcalico.org/namespace == 'prod' && (role in {'db', 'cache'} || has(critical))")
    assert node.matches({"projectcalico.org/namespace": "prod", "critical": ""})
    assert not node.matches({"projectcalico.org/namespace": "dev", "role": "db"})
    assert node.labels_read() == {"projectcalico.org/namespace", "role", "critical"}
