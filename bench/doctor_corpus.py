"""The doctor measured on a corpus of breaks no one here wrote: per break class, how many it names right.

    python bench/doctor_corpus.py [--markdown]

The corpus is tests/doctor/corpus/<scenario>/: the objects of a break restated from the Kubernetes docs' "Debug
Services", "Debugging DNS Resolution" and "Debug Running Pods" pages (and the pages they lead to) or from the
classic CKA/CKAD troubleshooting breaks, in ``broken/`` and ``repaired/``, and ``expect.yaml``: the source, the
break class, the finding the doctor should give (layer, code, object; optionally words its message or fix must
hold, ``message_contains``/``fix_contains``, or ``no_patch`` where no patch can fix) and ``expected: found`` or
``missed`` (with ``why``). A scenario counts as found when, offline:

1. the doctor gives the expected finding on ``broken/`` (code, layer, object and severity);
2. its fix works: a printed ``kubectl patch`` is applied to a copy of the broken objects (as the API server would
   store it) and the doctor run again no longer gives that finding; a fix that is not a patch (a Service to
   create, a policy as YAML) is what ``repaired/`` holds;
3. the doctor gives no error on ``repaired/``.

tests/doctor/test_corpus.py asserts each scenario's verdict and that docs/doctor.md shows this script's table.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "doctor" / "corpus"


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    path: Path
    expect: dict[str, Any]

    @property
    def found_expected(self) -> bool:
        return self.expect.get("expected", "found") == "found"

    @property
    def live(self) -> bool:
        """Also run on `knetsim up` (tests/doctor/test_corpus_live*.py): named through --kubeconfig, or refused by
        the API server in the words the offline finding quotes (``live: refused``)."""
        return self.expect.get("live") in (True, "refused")

    def documents(self, state: str) -> list[dict[str, Any]]:
        docs: list[dict[str, Any]] = []
        for file in sorted((self.path / state).glob("*.yaml")):
            docs += [d for d in yaml.safe_load_all(file.read_text()) if d]
        return docs

    def text(self, state: str) -> str:
        return "\n---\n".join(f.read_text() for f in sorted((self.path / state).glob("*.yaml")))


@dataclass(frozen=True, slots=True)
class Verdict:
    scenario: Scenario
    named: bool  # the expected finding (layer, code, object, severity) on the broken objects
    fix: str  # "patch" (a printed patch, applied, clears it), "repaired" (the fix is what repaired/ holds), "fails"
    repaired_errors: tuple[str, ...]  # the errors the doctor still gives on repaired/
    why: str  # what went wrong, when something did

    @property
    def found(self) -> bool:
        return self.named and self.fix != "fails" and not self.repaired_errors


def load(corpus: Path = CORPUS) -> list[Scenario]:
    return [Scenario(d.name, d, yaml.safe_load((d / "expect.yaml").read_text()))
            for d in sorted(corpus.iterdir()) if (d / "expect.yaml").is_file()]


def _findings(text: str) -> list[Any]:
    from knetsim import Cluster

    return list(Cluster.from_yaml(text, strict=False).doctor().findings)


def _matches(finding: Any, expect: dict[str, Any]) -> bool:
    return (finding.code, finding.layer, finding.subject, finding.severity) == (
        expect["code"], expect["layer"], expect["subject"], expect.get("severity", "error"))


def _patched(docs: list[dict[str, Any]], patch: Any) -> str | None:
    """The documents with ``patch`` applied to the object it names (None when no document is that object)."""
    out, hit = [], False
    for doc in docs:
        meta = doc.get("metadata") or {}
        if doc.get("kind") == patch.kind and meta.get("name") == patch.name and \
                (meta.get("namespace") or "default") == patch.namespace:
            doc, hit = patch.apply(doc), True
        out.append(doc)
    return yaml.safe_dump_all(out, sort_keys=False) if hit else None


def judge(scenario: Scenario) -> Verdict:
    expect = scenario.expect
    broken = _findings(scenario.text("broken"))
    match = next((f for f in broken if _matches(f, expect)), None)
    repaired_errors = tuple(f"{f.code} {f.subject}" for f in _findings(scenario.text("repaired"))
                            if f.severity == "error")
    if match is None:
        seen = sorted({f"{f.code} ({f.layer}, {f.subject}, {f.severity})" for f in broken if f.severity != "info"})
        return Verdict(scenario, False, "fails", repaired_errors, "not named; the doctor gave: " +
                       ("; ".join(seen) or "no error or warning"))
    wanted = str(expect.get("fix_contains") or "")
    if wanted and wanted not in match.fix:
        return Verdict(scenario, True, "fails", repaired_errors, f"the fix does not say {wanted!r}: {match.fix}")
    said = str(expect.get("message_contains") or "")
    if said and said not in match.message:
        return Verdict(scenario, False, "fails", repaired_errors, f"the finding does not say {said!r}: {match.message}")
    if expect.get("no_patch") and match.patch is not None:
        # A patch that cannot fix (pods listening on different ports) must not be offered.
        return Verdict(scenario, True, "fails", repaired_errors, f"a patch is offered: {match.fix}")
    if match.patch is None:
        return Verdict(scenario, True, "repaired", repaired_errors,
                       "repaired/ still has errors" if repaired_errors else "")
    patched = _patched(scenario.documents("broken"), match.patch)
    left = [f for f in _findings(patched) if f.code == match.code and f.subject == match.subject] \
        if patched is not None else ["the patch names no object of broken/"]
    if left:
        return Verdict(scenario, True, "fails", repaired_errors, f"the printed patch leaves it: {match.fix}")
    return Verdict(scenario, True, "patch", repaired_errors, "repaired/ still has errors" if repaired_errors else "")


def table(verdicts: list[Verdict]) -> str:
    """Markdown: per break class, found/total, how many also run live and the scenarios missed; then the overall
    rate."""
    by_class: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        by_class[str(v.scenario.expect["class"])].append(v)
    lines = ["| break class | scenarios | found | live | missed |", "|---|---|---|---|---|"]
    for cls in sorted(by_class):
        group = by_class[cls]
        missed = [v.scenario.name for v in group if not v.found]
        lines.append(f"| {cls} | {len(group)} | {sum(v.found for v in group)} | "
                     f"{sum(v.scenario.live for v in group)} | {', '.join(missed) if missed else '—'} |")
    found = sum(v.found for v in verdicts)
    clean = sum(not v.repaired_errors for v in verdicts)
    live = [v for v in verdicts if v.scenario.live]
    lines.append(f"| **all** | {len(verdicts)} | {found} ({100 * found // max(len(verdicts), 1)}%) | "
                 f"{len(live)} | {len(verdicts) - found} |")
    lines.append("")
    lines.append(f"Fixes verified by applying the printed patch: {sum(v.fix == 'patch' for v in verdicts)}; "
                 f"repaired states without an error: {clean} of {len(verdicts)}. Run live on `knetsim up` too: "
                 f"{len(live)} ({sum(v.scenario.expect.get('live') == 'refused' for v in live)} of them refused "
                 "by the API server, as `kubectl apply` is told).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--verbose", action="store_true", help="one line per scenario")
    args = parser.parse_args(argv)
    verdicts = [judge(s) for s in load()]
    if args.verbose:
        for v in verdicts:
            print(f"{'found ' if v.found else 'MISSED'} {v.scenario.name}: {v.fix} {v.why}")
        print()
    print(table(verdicts))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    sys.exit(main())
