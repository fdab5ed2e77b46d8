"""Label selectors: apimachinery semantics for maps, LabelSelector objects and the string form."""

from __future__ import annotations

import pytest

from knetsim.model.labels import Selector, SelectorSyntaxError, closest_labels, edit_distance

WEB = {"app": "web", "tier": "frontend", "env": "prod"}
DB = {"app": "db", "tier": "db"}
BARE: dict[str, str] = {}


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("app=web", [WEB]),
        ("app==web", [WEB]),
        ("app!=web", [DB, BARE]),  # != matches objects without the key
        ("tier!=db", [WEB, BARE]),
        ("env in (prod,staging)", [WEB]),
        ("env notin (prod)", [DB, BARE]),  # notin matches missing keys too
        ("app", [WEB, DB]),
        ("!env", [DB, BARE]),
        ("app=web,tier!=db,env in (a,prod)", [WEB]),
        ("", [WEB, DB, BARE]),
    ],
)
def test_string_selectors(text: str, matches: list[dict[str, str]]) -> None:
    selector = Selector.parse(text)
    assert [labels for labels in (WEB, DB, BARE) if selector.matches(labels)] == matches


@pytest.mark.parametrize("text", ["app in web", "=web", "app=web,,", "app in (a", "a b"])
def test_bad_string_selectors_are_rejected(text: str) -> None:
    with pytest.raises(SelectorSyntaxError):
        Selector.parse(text)


def test_label_selector_object_semantics() -> None:
    everything = Selector.from_label_selector({})
    nothing = Selector.from_label_selector(None)
    assert everything.matches(BARE) and everything.matches(WEB)
    assert not nothing.matches(WEB)
    expr = Selector.from_label_selector({
        "matchLabels": {"tier": "db"},
        "matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]},
                             {"key": "canary", "operator": "DoesNotExist"}],
    })
    assert expr.matches(DB) and not expr.matches(WEB)


def test_service_selector_map_and_formatting() -> None:
    assert Selector.from_map({"b": "2", "a": "1"}).formatted() == "a=1,b=2"
    assert Selector.from_label_selector({}).formatted() == "<none>"
    expression = {"key": "app", "operator": "In", "values": ["web", "api"]}
    sel = Selector.from_label_selector({"matchExpressions": [expression]})
    # metav1.FormatLabelSelector sorts the values of a set requirement.
    assert sel.formatted() == "app in (api,web)"


def test_closest_labels_names_a_one_character_typo() -> None:
    hints = closest_labels({"app": "wbe"}, [{"app": "web", "pod-template-hash": "x"}, {"app": "db"}])
    assert hints == [("app=wbe", "app=web", "value differs by 1 character(s)")]
    assert edit_distance("wbe", "web") == 1  # a transposition is one edit
