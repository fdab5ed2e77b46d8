"""The validation rules of knetsim's API definitions, compared with upstream's by behaviour.

Given the cases in tests/data/api-rules (upstream's CEL validation tests and invalid examples of
Gateway API v1.6.1 and network-policy-api, restated: an object, and the errors a cluster answers
with), then every case gets the same verdict and the same messages from knetsim's CRD and from the
upstream CRD, at every version of the kind; and at the case's own version the messages are the
ones the case states. The coverage check requires, for every x-kubernetes-validations rule of the
upstream CRDs (each place it sits, each version), at least one case where it holds and one where
it fails.

Each case runs as kube-apiserver admits a custom object (model.crd): prune (unknown fields are a
strict decoding error), default, then the OpenAPI keywords and, when none of those blocks, the rules.
"""

from __future__ import annotations

import copy
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from knetsim.model import cel
from knetsim.model import crd as crds
from knetsim.model.apis import catalog
from knetsim.model.apis.generate import custom_resource_definition
from knetsim.model.jsonvalue import merge_patch

from .. import upstream

CASES = Path(__file__).resolve().parent.parent / "data" / "api-rules"
BLOCKED = "<nil>: Invalid value: null: some validation rules were not checked"


@dataclass(frozen=True)
class Case:
    file: str
    kind: str
    desc: str
    body: dict[str, Any] = field(hash=False)
    old: dict[str, Any] | None = field(hash=False)
    errors: tuple[str, ...]
    channel: str = "standard"

    @property
    def id(self) -> str:
        return f"{self.file}:{self.desc}"


def load_cases() -> list[Case]:
    out = []
    for path in sorted(CASES.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        base = data["base"]
        for case in data["cases"]:
            body = merge_patch(base, case.get("patch") or {})
            old = merge_patch(base, case["old"]) if "old" in case else None
            out.append(Case(path.stem, base["kind"], case["desc"], body, old, tuple(case.get("errors") or ()),
                            data.get("channel", "standard")))
    return out


ALL_CASES = load_cases()


def _all_versions(crd: dict[str, Any], source: str) -> dict[str, crds.CRDVersion]:
    """Every version of a CRD, served or not (a retired version's schema is still part of the CRD)."""
    served = copy.deepcopy(crd)
    for version in served["spec"]["versions"]:
        version["served"] = True
    return {v.version: v for v in crds.versions_of(served, source)}


@cache
def definitions(kind: str, channel: str) -> tuple[dict[str, crds.CRDVersion], dict[str, crds.CRDVersion]]:
    """(knetsim's, upstream's) versions of a kind."""
    definition = next(d for d in catalog.DEFINITIONS if d.kind == kind)
    theirs = upstream.upstream_crds(*(upstream.STANDARD if channel == "standard" else upstream.EXPERIMENTAL))
    return (_all_versions(custom_resource_definition(definition, channel), "knetsim"),
            _all_versions(theirs[definition.name], "upstream"))


def admit(version: crds.CRDVersion, body: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
    """The errors kube-apiserver would answer with for this body (create, or update from ``old``)."""
    obj, strict = crds.prune(body, version)
    if strict:
        return [f"strict decoding error: {', '.join(strict)}"]
    crds.default(obj, version)
    previous = None
    if old is not None:
        previous, _ = crds.prune(old, version)
        crds.default(previous, version)
    return [str(e) for e in crds.validate_custom(obj, version, previous)]


# --- recording which rule held and which failed (against the upstream CRDs) -------------------------

RuleKey = tuple[str, str, str, str]  # (kind, version, schema path, rule)


def schema_path(instance_path: str) -> str:
    """``spec.rules[0].filters[1]`` → ``spec.rules[].filters[]`` (map keys too: ``[key]`` → ``[]``)."""
    return re.sub(r"\[[^\]]*\]", "[]", instance_path)


class Recorder:
    def __init__(self) -> None:
        self.seen: dict[RuleKey, set[bool]] = defaultdict(set)
        self.label: tuple[str, str] | None = None

    def wrap(self, original: Any) -> Any:
        def run(rule: dict[str, Any], value: Any, schema: dict[str, Any], path: str, old: Any, has_old: bool) -> Any:
            error = original(rule, value, schema, path, old, has_old)
            text = str(rule.get("rule") or "")
            skipped = cel.uses_old_self(text) and not has_old and not rule.get("optionalOldSelf")
            if self.label is not None and not skipped:
                self.seen[(*self.label, schema_path(path), text)].add(error is None)
            return error
        return run


@dataclass
class Outcome:
    ours: dict[str, list[str]]
    theirs: dict[str, list[str]]


@cache
def run_all() -> tuple[dict[str, Outcome], dict[RuleKey, set[bool]]]:
    """Every case at every version of its kind, against both CRDs; and which upstream rules held or failed."""
    recorder = Recorder()
    original = crds._run_rule
    crds._run_rule = recorder.wrap(original)  # type: ignore[assignment]
    try:
        outcomes = {}
        for case in ALL_CASES:
            ours, theirs = definitions(case.kind, case.channel)
            outcome = Outcome({}, {})
            for version in sorted(theirs):
                body = {**case.body, "apiVersion": f"{theirs[version].group}/{version}"}
                old = {**case.old, "apiVersion": body["apiVersion"]} if case.old is not None else None
                recorder.label = None
                outcome.ours[version] = admit(ours[version], body, old) if version in ours else ["(no such version)"]
                recorder.label = (case.kind, version) if case.channel == "standard" else None
                outcome.theirs[version] = admit(theirs[version], body, old)
            recorder.label = None
            outcomes[case.id] = outcome
    finally:
        crds._run_rule = original  # type: ignore[assignment]
    return outcomes, dict(recorder.seen)


def upstream_rules() -> Iterator[RuleKey]:
    """Every rule of every upstream (standard) CRD, at each place and version."""
    def walk(node: dict[str, Any], path: str, kind: str, version: str) -> Iterator[RuleKey]:
        for rule in node.get("x-kubernetes-validations") or []:
            yield (kind, version, path, rule["rule"])
        for name, sub in (node.get("properties") or {}).items():
            if not path and name == "metadata":
                continue
            yield from walk(sub, f"{path}.{name}" if path else name, kind, version)
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                yield from walk(node[key], f"{path}[]", kind, version)

    for crd in upstream.upstream_crds(*upstream.STANDARD).values():
        for version in crd["spec"]["versions"]:
            yield from walk(version["schema"]["openAPIV3Schema"], "", crd["spec"]["names"]["kind"], version["name"])


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in ALL_CASES])
def test_knetsim_and_upstream_give_the_same_verdict_and_words(case: Case) -> None:
    outcome = run_all()[0][case.id]
    assert outcome.ours == outcome.theirs
    own = case.body["apiVersion"].rpartition("/")[2]
    assert outcome.ours[own] == list(case.errors)


# Rules no object can fail through admission: a check that runs first refuses every value that would fail them
# (the API server runs the rules only when no blocking error was found). Each is shown failing on its own.
UNREACHABLE = {
    "self.type in ['Exact','PathPrefix'] || self.type == 'RegularExpression'":
        ({"type": "Regex", "value": "/"}, "the enum of type refuses any other value before the rules run"),
}


def test_every_upstream_rule_holds_in_one_case_and_fails_in_another() -> None:
    seen = run_all()[1]
    missing = []
    for key in sorted(set(upstream_rules())):
        verdicts = seen.get(key, set())
        if key[3] in UNREACHABLE and verdicts == {True}:
            value, _ = UNREACHABLE[key[3]]
            assert not cel.evaluate(key[3], value), key
            continue
        if verdicts != {True, False}:
            wanted = "a refused case" if True in verdicts else "an accepted case" if False in verdicts else "any case"
            missing.append(f"{key[0]} {key[1]} {key[2] or '<root>'}: {wanted} for {key[3][:110]}")
    assert missing == [], f"{len(missing)} rule placements lack a case:\n" + "\n".join(missing)


def test_the_cases_are_not_all_refusals_nor_all_acceptances() -> None:
    """The data is meaningful: every file has cases that are accepted and cases that are refused."""
    by_file: dict[str, set[bool]] = defaultdict(set)
    for case in ALL_CASES:
        by_file[case.file].add(not case.errors)
    assert all(v == {True, False} for v in by_file.values()), by_file


def test_merge_patch_is_rfc_7386() -> None:
    assert merge_patch({"a": {"b": 1, "c": [1]}, "d": 2}, {"a": {"b": None, "c": [2]}, "e": 3}) == \
        {"a": {"c": [2]}, "d": 2, "e": 3}
    assert json.dumps(merge_patch({"a": 1}, {"a": {"b": None}})) == '{"a": {}}'
