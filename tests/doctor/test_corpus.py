"""The doctor on a corpus of breaks no one here wrote (tests/doctor/corpus/, judged by bench/doctor_corpus.py):
the Kubernetes docs' "Debug Services", "Debugging DNS Resolution" and "Debug Running Pods" pages and the classic
CKA/CKAD breaks, restated as objects. For each scenario, offline: the expected finding (layer, code, object) on
``broken/``, its printed patch applied to a copy clears it, and ``repaired/`` gives no error; a scenario the doctor
misses stays in the corpus as ``expected: missed`` with why. docs/doctor.md shows the rate table this measures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bench.doctor_corpus import CORPUS, judge, load, table

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = load()
# The break classes of issue 29 that the corpus must cover, each at least once.
CLASSES = {"DNS as a component", "names that resolve to nothing", "pods that are not what they seem",
           "policy findings that name the policy", "Ingress TLS", "fixes that do not fix",
           "GatewayClasses of other implementations"}
PAGES = ("https://kubernetes.io/docs/tasks/debug/debug-application/debug-service/",
         "https://kubernetes.io/docs/tasks/administer-cluster/dns-debugging-resolution/",
         "https://kubernetes.io/docs/tasks/debug/debug-application/debug-running-pod/")


def test_the_corpus_covers_the_three_pages_and_every_break_class() -> None:
    assert len(SCENARIOS) >= 30
    sources = {s.expect["source"] for s in SCENARIOS}
    assert set(PAGES) <= sources
    assert {s.expect["class"] for s in SCENARIOS} >= CLASSES
    for scenario in SCENARIOS:
        assert {"source", "what", "layer", "code", "subject", "expected", "class"} <= set(scenario.expect), \
            scenario.name
        assert scenario.expect["expected"] in ("found", "missed")
        assert scenario.expect["expected"] == "found" or scenario.expect.get("why"), \
            f"{scenario.name}: a missed scenario says why"
        assert list((scenario.path / "broken").glob("*.yaml")) and list((scenario.path / "repaired").glob("*.yaml"))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_doctor_names_the_break_its_fix_clears_it_and_the_repair_is_clean(scenario) -> None:
    verdict = judge(scenario)
    if scenario.found_expected:
        assert verdict.named, verdict.why
        assert verdict.fix != "fails", verdict.why
        assert not verdict.repaired_errors, verdict.repaired_errors
    else:
        # An honest miss: when the doctor learns it, this fails and the scenario becomes `expected: found`.
        assert not verdict.found, f"{scenario.name} is found now: mark it expected: found"


def test_a_printed_patch_is_applied_and_checked_where_the_doctor_prints_one() -> None:
    # The selector and targetPort breaks and the Secret key carry a patch; each must have been applied above.
    patched = {v.scenario.name for v in map(judge, SCENARIOS) if v.fix == "patch"}
    assert {"ds-selector-typo", "ds-wrong-targetport", "selector-wrong-key-strategic-merge",
            "containerport-is-not-the-listener", "secret-key-missing"} <= patched


def test_docs_show_the_measured_rate() -> None:
    text = (ROOT / "docs" / "doctor.md").read_text()
    shown = re.search(r"<!-- corpus -->\n(.*?)\n<!-- end corpus -->", text, re.S)
    assert shown, "docs/doctor.md has no <!-- corpus --> table"
    assert shown.group(1).strip() == table([judge(s) for s in SCENARIOS]).strip(), \
        "docs/doctor.md's corpus table is stale: paste `python bench/doctor_corpus.py`'s table"


def test_the_corpus_is_where_the_bench_reads_it() -> None:
    assert CORPUS == ROOT / "tests" / "doctor" / "corpus"
