"""The rapidyaml reader (model/fastyaml.py) gives what the libyaml reader gives, types included, or steps aside.

Every stream here is read both ways: libyaml's documents (or its error) against the fast path's answer, which must
be equal objects of equal types, or None (the stream went to libyaml). A stream libyaml refuses must never be
answered by the fast path, so that every error message and its position stay libyaml's."""

from __future__ import annotations

import itertools
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from knetsim.model import fastyaml, loader

pytest.importorskip("ryml")

ROOT = Path(__file__).resolve().parents[2]


def reference(text: str) -> list[Any] | Exception:
    try:
        return list(loader._libyaml_documents(text))
    except Exception as exc:  # the refusal itself is what is compared
        return exc


def fast(text: str, chunk_chars: int = fastyaml.CHUNK_CHARS) -> list[Any] | None:
    return fastyaml.read_documents(text, loader._reference_documents, loader._RESOLVER_FIRSTS,
                                   chunk_chars=chunk_chars)


def same_or_aside(text: str, chunk_chars: int = fastyaml.CHUNK_CHARS) -> bool:
    """True when the fast path answered (and equal); False when it stepped aside; fails on a difference."""
    expected = reference(text)
    got = fast(text, chunk_chars)
    if got is None:
        return False
    assert not isinstance(expected, Exception), f"libyaml refuses {text!r} ({expected}), the fast path read {got!r}"
    assert fastyaml._same(expected, got), f"{text!r}: libyaml {expected!r}, fast path {got!r}"
    return True


def repository_yaml_files() -> list[Path]:
    found = []
    for pattern in ("*.yaml", "*.yml"):
        found += [p for p in ROOT.rglob(pattern) if ".git" not in p.parts and ".venv" not in p.parts]
    return sorted(found)


def test_every_yaml_file_of_the_repository_reads_the_same() -> None:
    files = repository_yaml_files()
    assert len(files) > 100  # examples, docs, tests, the labs' catalog, packaged data
    answered = 0
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        answered += same_or_aside(text)
        answered += same_or_aside(text, chunk_chars=64)  # cut into pieces before every `---` it can
    # Most real manifests go the fast way; the gate is not a blanket refusal.
    assert answered > len(files)


# YAML 1.1 as PyYAML resolves it, and JSON/YAML 1.2 forms rapidyaml reads its own way.
SCALARS = [
    "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF", "y", "Y", "n", "N",
    "true", "True", "TRUE", "false", "False", "FALSE", "tRue", "null", "Null", "NULL", "~", "nUll",
    "0", "00", "012", "0o12", "0x1F", "0X1F", "0b101", "-0b1", "1_000", "+12", "-12", "+0", "-0", "1:20", "-1:20:30",
    "190:20:30.15", "1.5", "1.5e3", "1.5E+3", "1e3", "1e+3", "-1.5e-3", "1.", ".5", "-.5", "+.5", "1_0.5", "0.",
    ".inf", ".Inf", ".INF", "-.inf", "+.inf", ".nan", ".NaN", ".NAN", "inf", "nan", "infinity", "Infinity", "NaN",
    "-inf", "-nan", ".Nan", "1e", "0x", "12abc", "1.2.3", "10.0.0.0/8", "8000:8100", "2024-05-01",
    "2024-05-01T10:00:00Z", "=", "==", "!=", "<", "<=", ".", "..", "...", "---x", "-", "--", "-x", "+", "+x",
    "123456789012345678901234567890", "1e400", "-1e400", "0.1", "3.14159265358979323846", "0777", "09", "0_1",
    "a:b", "12:x", "1#2", "é", "日本", "\u00a0x",
]


@pytest.mark.parametrize("layout", [
    "k: {s}\n", "{s}: v\n", "- {s}\n", "k: [{s}]\n", "k: [{s}, {s}]\n", "k: {{{s}: v}}\n", "k: {{a: {s}}}\n",
    "k:\n  {s}\n", "k: {s} # comment\n", "k:\n- {s}\n- x\n", "- - {s}\n", "k: x {s}\n", "k: {s} x\n",
    "k: '{s}'\n", 'k: "{s}"\n', "'{s}': v\n", '"{s}": v\n', "k: |\n  {s}\n", "k: >-\n  {s}\n", "---\n{s}: v\n...\n",
    "k: {s}\n---\nk2: {s}\n", "[{s}]\n", "{s}\n",
])
def test_scalars_read_as_libyaml_resolves_them(layout: str) -> None:
    answered = 0
    for scalar in SCALARS:
        answered += same_or_aside(layout.format(s=scalar))
    # Any of them together: a stream of many forms reads as libyaml reads it, or goes there whole.
    together = "".join(f"k{i}: {s}\n" for i, s in enumerate(SCALARS))
    same_or_aside(together)


def test_plain_strings_and_numbers_take_the_fast_way() -> None:
    text = "".join(f"k{i}: {s}\n" for i, s in enumerate(["web", "10.0.0.0/8", "8080", "1.5", "a b c", "true",
                                                        "false", "null", "TCP", "'quoted: yes'", '"x\\ty"']))
    assert same_or_aside(text)


TRICKY_STREAMS = [
    # quoting, escapes, folding, chomping
    'k: "a\\tb\\n\\\\ \\" \\/ \\x41 \\u00e9 \\U0001F600 \\0 \\a \\b \\v \\f \\r \\e \\N \\_ \\L \\P"\n',
    'k: "line\n  folded\n\n  kept"\n', "k: 'it''s\n  folded'\n", 'k: "esc\\\n  aped"\n', 'k: "\\ud800"\n',
    'k: "\\q"\n', 'k: "\\x4"\n', 'k: "\\\'"\n', "k: |\n  a\n   b\n\n", "k: |-\n  a\n\n", "k: |+\n  a\n\n\n",
    "k: >\n  a\n  b\n\n  c\n   d\n", "k: >+\n  a\n", "k: |2\n   indented\n", "k: >1-\n  x\n", "k: |\n", "k: >\n\n",
    "k: plain\n  continued\n\n  para\n", "- a\n  b\n- c\n",
    # comments, documents
    "# only a comment\n", "", "---\n", "--- \n...\n", "---\n---\n", "...\n", "a: 1\n...\n---\nb: 2\n",
    "---\n# c\n---\na: 1\n", "a: 1 # c\n#c2\nb: 2\n", "--- # c\na: 1\n", "---\n...\n---\nx: 1\n",
    # keys
    "a: 1\na: 2\n", "a: 1\nb: 2\na: 3\n", "? a\n: b\n", ": b\n", "a : b\n", "[a]: b\n", "{a: 1}: b\n",
    '"a":1\n', '{"a":1}\n', "{a:1}\n", "[a:b]\n", "{a: 1, a: 2}\n", "1: a\n", "~: a\n", "true: a\n", "null: a\n",
    "'1': a\n", "1.5: a\n", "k:\n  1: a\n  '2': b\n",
    # flow collections
    "k: []\n", "k: {}\n", "k: [a, [b, {c: d}], {}]\n", "k: [a,\n  b]\n", "k: {a: 1,\n  b: 2}\n", "k: [a, ]\n",
    "k: {a, b: c}\n", "k: [a: 1, b]\n", "k: [? a : b]\n", "k: [a, b]x\n", "k: {a: 1}}\n", "k: [&x a, *x]\n",
    # anchors, aliases, tags, merge keys, directives
    "a: &x 1\nb: *x\n", "a: &x {b: 1}\nc: *x\n", "a: !!str 1\n", "a: !custom x\n", "a: !!int '1'\n", "! a: b\n",
    "base: &b {x: 1}\nd:\n  <<: *b\n", "%YAML 1.1\n---\na: 1\n", "%TAG ! tag:x,2000:\n---\na: 1\n", "*x\n",
    "k: a && b\n", "k: a & b\n", "k: '*x'\n", "k: x *y\n", "k: @x\n", "k: `x\n", "k: x@y\n", "k: ?x\n",
    "k: ? x\n", "k: |x\n", "k: >x\n", "- &a\n  b: c\n",
    # indentation and structure libyaml refuses
    "key: a: b\n", "- a\nb: c\n", "a: b\n-c\n", 'a: "unterminated\n', "a: 'unterminated\n", "k: v\n k2: v\n",
    "a:\n  b\n c: d\n", 'k: "x" y\n', "k: a #x\n  b\n", "a: -\n", "- - a\n - b\n", "a:\n- b\n  c: d\n",
    "--- >\nfoo\n---\nb: 1\n", "--- |\n  x\n", "---\nplain\n", "- a\n- b\n", "a: [\n", "a: {\n", "]\n", "}\n",
    "a: b: c: d\n", "\u00e9t\u00e9: \u65e5\u672c\n", "k: x\u2028y\n", "k: x\x85y\n", "\ufeffa: 1\n", "k: a\x01b\n",
    "k: a\x7fb\n", "a:\tb\n", "a: 1\r\nb: 2\r\n", "k:\n\t- a\n", "k: \"\t\"\n",
    # found by fuzzing (each once read by rapidyaml where libyaml refuses it, or read differently)
    "...\n---\n", '"k": ]"Infinity"\n', "k: ]x\n", "k: }x\n", "k: ,x\n", "k: [a, , b]\n", "k: {:}\n",
    '{a: 1, :"x": y}\n', "--- {we\nb: c}\n", "k:\n- {from: a, to: b, 80}\n", "k:\n- {p: %TCP, q: 1}\n",
    "k: {a, 012: b}\n", "k: [x, %y]\n", "k: %TCP\n", "k: {a: %b}\n", 'k: {"a":yes}\n', 'k: {"a":012}\n',
    "s: |3.\n---\ns: {}\ne:\n", "k: | x\n  y\n", "k: |-2\n   y\n", "k: >+ # c\n  y\n", "k: |0\n y\n",
    "'':\n- '':\n  - ''\n   '':\n  '':\n", "k:\n- 'a'\n\n  # c\n   b: 1\n",
    "k: '\n  v'\n", "k:\n- 'x'\n- 'y'\n", "k: 'v'\n  # c\nb: 1\n",
    'k: "long\\\n\n  \\ line"\n', "k:\n- '' -\n",
    "s:\n- {t:3} t:\n", "k:\n- '''' f:\n", "k: 'a\n  b' c\n", "k: x 'y' z\n",
    "k: a == 'b' && c == 'd'\n", "--- {k:\" 'a #b'}\n", "k: [a, b] # c\n",
    "9\": '''\n ':\nx:\n", "k: 'a\n  b': 1\n", 'k: "a\n  b": 1\n',
    'k: ["a":yes]\n', "k: {'a':yes}\n", 'k: {"inf":1}\n', 'k: {"a":.inf}\n', "k:yes\n", "k: {a:yes}\n",
    # long lines and deep nesting
    "k: " + "x" * 100_000 + "\n", "k: " + "[" * 2000 + "]" * 2000 + "\n",
    "".join("  " * i + f"k{i}:\n" for i in range(300)) + "  " * 300 + "v\n",
]


@pytest.mark.parametrize("text", TRICKY_STREAMS)
def test_tricky_streams_read_the_same_or_go_to_libyaml(text: str) -> None:
    same_or_aside(text)
    same_or_aside(text, chunk_chars=4)


def test_pieces_are_cut_only_between_documents() -> None:
    documents = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"},
                  "data": {"text": "---\nnot a document\n", "n": str(i), "block": "a\n---\nb\n"}} for i in range(50)]
    text = yaml.safe_dump_all(documents, sort_keys=False)
    text += "---\nk: |\n  ---\n  still the block\n---\n--- |\n  root\n"  # `---` lines inside a block scalar
    for chunk_chars in (1, 100, 1000, 1 << 16):
        same_or_aside(text, chunk_chars)
    assert same_or_aside(yaml.safe_dump_all(documents, sort_keys=False), 100)


def test_strings_are_shared_as_libyaml_shares_them() -> None:
    text = "".join(f"---\nkind: Pod\nmetadata:\n  name: p{i}\n  labels: {{app: web, tier: 'web'}}\n"
                   for i in range(100))
    documents = fast(text, chunk_chars=200)
    assert documents is not None
    apps = {id(d["metadata"]["labels"]["app"]) for d in documents}
    tiers = {id(d["metadata"]["labels"]["tier"]) for d in documents}
    assert len(apps) == 1 and len(tiers) == 1 and len({id(d["kind"]) for d in documents}) == 1


def bench_like_stream(pods: int) -> str:
    documents: list[dict[str, Any]] = []
    for i in range(pods):
        documents.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"p{i}", "namespace": f"ns-{i % 7}", "labels": {"app": f"app-{i % 9}", "role": "frontend"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "ports": [
                {"containerPort": 8000 + i % 9, "name": f"p-{i % 9}", "protocol": "TCP"}]}]}})
        documents.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                          "metadata": {"name": f"np{i}", "namespace": f"ns-{i % 7}"},
                          "spec": {"podSelector": {"matchLabels": {"app": f"app-{i % 9}"}},
                                   "policyTypes": ["Ingress"], "ingress": [{"from": [{"ipBlock": {
                                       "cidr": "192.168.0.0/16", "except": [f"192.168.{i % 8}.0/24"]}}]}]}})
    return yaml.safe_dump_all(documents, sort_keys=False)


def test_a_large_manifest_is_read_the_fast_way_through_load_text(monkeypatch: pytest.MonkeyPatch) -> None:
    text = bench_like_stream(300)
    assert len(text) > fastyaml.MIN_CHARS
    calls: list[bool] = []
    real = fastyaml.read_documents
    monkeypatch.setattr(fastyaml, "read_documents", lambda *a, **k: calls.append(True) or real(*a, **k))
    fast_result = loader.load_text(text, "big.yaml")
    assert calls and fast(text) is not None
    monkeypatch.setattr(fastyaml, "read_documents", lambda *a, **k: None)  # libyaml alone, as without the wheel
    slow_result = loader.load_text(text, "big.yaml")
    assert [(d.source, d.body) for d in fast_result.documents] == [(d.source, d.body) for d in slow_result.documents]
    assert len(fast_result.documents) == 600 and not fast_result.errors


@pytest.mark.parametrize("tail", ["bad: [\n", "k: a: b\n", "- x\ny: z\n", "yes: 1\n", "a: &x 1\nb: *x\n"])
def test_a_large_manifest_reads_as_libyaml_reads_it_errors_included(tail: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    text = bench_like_stream(300) + "---\n" + tail
    result = loader.load_text(text, "big.yaml")
    monkeypatch.setattr(fastyaml, "read_documents", lambda *a, **k: None)
    libyaml_result = loader.load_text(text, "big.yaml")
    assert [str(e) for e in result.errors] == [str(e) for e in libyaml_result.errors]
    assert [(d.source, d.body) for d in result.documents] == [(d.source, d.body) for d in libyaml_result.documents]
    expected = reference(text)
    if isinstance(expected, Exception):  # libyaml's own words and position
        mark = expected.problem_mark  # type: ignore[attr-defined]
        assert [str(e) for e in result.errors] == [
            f"big.yaml, document 601: error parsing YAML (line {mark.line + 1}, column {mark.column + 1}): "
            f"{expected.problem}"]  # type: ignore[attr-defined]


def test_without_the_wheel_libyaml_reads_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastyaml, "ryml", None)
    assert fast(bench_like_stream(10)) is None
    result = loader.load_text(bench_like_stream(300), "big.yaml")
    assert len(result.documents) == 600


def test_fast_path_parse_errors_print_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    assert fast("key: a: b\n" + "x: y\n" * 10) is None
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""


@pytest.mark.parametrize("combo", list(itertools.product(["yes", "012", "~", "0x1F", "web"], repeat=2)))
def test_key_and_value_forms_together(combo: tuple[str, str]) -> None:
    key, value = combo
    same_or_aside(f"{key}: {value}\nlist:\n- {key}\n- {value}\nflow: {{{key}: [{value}]}}\n")


# Seeded fuzzing (deterministic): random data dumped in every PyYAML style, and the repository's files mutated.
LEAVES = [*SCALARS, "a b", "x: y", "a #b", "http://x:80/y", "a,b", "a]b", "x\ty", "\u3000", " lead", "trail ",
          "multi\nline", "multi\n\nline\n", "", "'", '"', "\\", "- x", "? y", ": z", "&a", "*a", "!t", "%x", "@x",
          "`x", "|", ">", "#", "{", "}", "[", "]", ",", "a: b: c", "\x85", "\u2028", "long " * 30, 12, 1.5, True,
          None, -3, 0, 1e20, float("inf")]
MUTATIONS = [" ", "\n", ":", "- ", "#", "'", '"', "  ", "\n  ", "yes", "012", "]", ",", "[", "{", "}", "? ", ": ",
             "-", "|", ">", "&a ", "*a", "!x ", "...", "---", "\n---\n", "~", "@", "%", "\\", '"\\', "1e3", ".inf"]


def random_data(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        return rng.choice(LEAVES)
    if roll < 0.7:
        return {str(rng.choice(LEAVES)) if rng.random() < 0.8 else rng.choice(LEAVES): random_data(rng, depth + 1)
                for _ in range(rng.randint(0, 4))}
    return [random_data(rng, depth + 1) for _ in range(rng.randint(0, 4))]


def mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(text) + 1)
        if rng.random() < 0.3 and text:
            text = text[:at] + text[at + rng.randint(1, 5):]
        else:
            text = text[:at] + rng.choice(MUTATIONS) + text[at:]
    return text


def test_random_documents_in_every_style_read_the_same() -> None:
    rng = random.Random(30)
    answered = 0
    for _ in range(400):
        documents = [random_data(rng) for _ in range(rng.randint(1, 4))]
        documents = [d if isinstance(d, dict) else {"k": d} for d in documents]
        text = yaml.safe_dump_all(documents, default_flow_style=rng.choice([False, True, None]),
                                  default_style=rng.choice([None, None, "'", '"', "|"]), width=rng.choice([20, 1000]),
                                  allow_unicode=rng.random() < 0.5, explicit_start=rng.random() < 0.5,
                                  explicit_end=rng.random() < 0.2, sort_keys=False)
        if rng.random() < 0.3:
            text = mutate(rng, text)
        answered += same_or_aside(text, chunk_chars=rng.choice([1, 100, 1 << 16]))
    assert answered > 50


def test_mutated_repository_files_read_the_same_or_go_to_libyaml() -> None:
    rng = random.Random(30)
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in repository_yaml_files()]
    texts = [text for text in texts if len(text) < 20_000]
    for _ in range(400):
        same_or_aside(mutate(rng, rng.choice(texts)), chunk_chars=rng.choice([1, 100, 1 << 16]))


def test_one_document_too_large_to_cut_goes_to_libyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"n{i}"}} for i in range(50)]
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})
    assert fast(text) is not None
    monkeypatch.setattr(fastyaml, "MAX_PIECE_CHARS", len(text) - 1)  # its rapidyaml tree would be ~19x its size
    assert fast(text) is None
    assert len(loader.load_text(text, "list.yaml").documents) == 50


def mutate_lines(rng: random.Random, text: str) -> str:
    """Indentation changed, lines joined, split, repeated or swapped: the structural mistakes people make."""
    lines = text.split("\n")
    for _ in range(rng.randint(1, 2)):
        at = rng.randrange(len(lines))
        roll = rng.random()
        if roll < 0.4:
            shift = rng.choice([-4, -2, -1, 1, 2, 4])
            indent = len(lines[at]) - len(lines[at].lstrip(" "))
            lines[at] = " " * shift + lines[at] if shift > 0 else lines[at][min(-shift, indent):]
        elif roll < 0.55 and at + 1 < len(lines):
            lines[at] += " " + lines.pop(at + 1).lstrip()
        elif roll < 0.7:
            cut = rng.randrange(len(lines[at]) + 1)
            lines[at:at + 1] = [lines[at][:cut], " " * rng.randint(0, 6) + lines[at][cut:]]
        elif roll < 0.85:
            lines.insert(at, lines[rng.randrange(len(lines))])
        else:
            other = rng.randrange(len(lines))
            lines[at], lines[other] = lines[other], lines[at]
    return "\n".join(lines)


def test_lines_mutated_read_the_same_or_go_to_libyaml() -> None:
    rng = random.Random(1)  # without the structural refusals, 4 of these 1,500 streams are read where libyaml refuses
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in repository_yaml_files()]
    texts = [text for text in texts if len(text) < 8_000]
    for _ in range(1500):
        if rng.random() < 0.5:
            text = rng.choice(texts)
        else:
            documents = [random_data(rng) for _ in range(rng.randint(1, 3))]
            text = yaml.safe_dump_all([d if isinstance(d, dict) else {"k": d} for d in documents],
                                      default_flow_style=rng.choice([False, None]),
                                      default_style=rng.choice([None, None, "'", '"', "|"]), sort_keys=False)
        same_or_aside(mutate_lines(rng, text), chunk_chars=rng.choice([1, 100, 1 << 16]))


def test_a_piece_with_yaml11_forms_is_read_by_libyaml_the_rest_the_fast_way(monkeypatch: pytest.MonkeyPatch) -> None:
    # `defaultMode: 0644` is the int 420 in YAML 1.1 (as sigs.k8s.io/yaml reads it), "0644" in JSON's reading.
    odd = ("---\napiVersion: v1\nkind: Pod\nmetadata: {name: odd}\nspec:\n  volumes:\n  - name: v\n"
           "    configMap: {name: c, defaultMode: 0644, optional: yes}\n")
    text = bench_like_stream(100) + odd + "---\n" + bench_like_stream(100).replace("name: p", "name: q")
    pieces: list[str] = []
    real = loader._reference_documents
    documents = fastyaml.read_documents(text, lambda t: pieces.append(t) or real(t), loader._RESOLVER_FIRSTS,
                                        chunk_chars=2000)
    assert documents is not None and fastyaml._same(documents, reference(text))
    odd_pod = next(d for d in documents if d["metadata"]["name"] == "odd")
    assert odd_pod["spec"]["volumes"][0]["configMap"] == {"name": "c", "defaultMode": 420, "optional": True}
    read_by_libyaml = [p for p in pieces if "kind: Pod" in p]
    assert len(read_by_libyaml) == 1 and "0644" in read_by_libyaml[0] and len(read_by_libyaml[0]) < 4000


@pytest.mark.parametrize("key", ["k" * 1100 + ": v\n", "'" + "k" * 1100 + "': v\n", "a:\n  " + "k" * 1100 + ": v\n",
                                 "a: {" + "k" * 1100 + ": v}\n", "- " + "k" * 1100 + ": v\n"])
def test_a_key_longer_than_libyaml_takes_goes_to_libyaml(key: str) -> None:
    """libyaml (and go-yaml) take a simple key of at most 1024 characters, rapidyaml any: such a stream is libyaml's to
    refuse (found by review: the fast path read it as a mapping)."""
    text = key + bench_like_stream(200)
    assert isinstance(reference(text), Exception)
    assert fast(text) is None
    long_value = "a: " + "v" * 1100 + "\n" + bench_like_stream(200)  # a long value is no long key
    assert fast(long_value) is not None and same_or_aside(long_value)


@pytest.mark.parametrize("length", [1021, 1022, 1023, 1024, 1025, 1100, 2500])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_long_key_anywhere_in_a_large_stream_reads_as_libyaml_reads_it(length: int, where: str) -> None:
    """Long lines are found by jumping through the text (``_long_lines``): a key line of any length around libyaml's
    limit, in any document of the stream, is read as libyaml reads it or left to libyaml; one well over it is left."""
    documents = bench_like_stream(150).split("\n---\n")
    position = {"first": 0, "middle": len(documents) // 2, "last": len(documents)}[where]
    for layout in ("k" * length + ": v", "a: 1\nb:\n  " + "k" * length + ": v", "a: x\nlong: " + "v" * length):
        text = "\n---\n".join([*documents[:position], layout, *documents[position:]]) + "\n"
        same_or_aside(text)
        if length > 1100 and "k" in layout:
            assert fast(text) is None


@pytest.mark.parametrize("snippet", [
    "a: {}\n  b: 1\n", "a: []\n  b: 1\n", "a: 'x'\n  b: 1\n", "a: \"x\"\n  b: 1\n", "a: [x]\n  b: 1\n",
    "a: {}\nb: []\nc: 'x'\n", "a: [1, 2] b\n", "a: {k: v} :\n", "- 'a' - b\n", "'a\n b': 1\n", "\"a\n b\": 1\n",
    "a: {} :\n", "a: [] :\n", "a: x, y\n", "a: {k: v}\n", "a: {k, 80}\n", "a: [b, {k: v}]\nc: 1\n",
])
def test_quotes_and_brackets_late_in_a_large_stream_read_as_libyaml_reads_them(snippet: str) -> None:
    """The checks on quotes and brackets look for each character on its own (``_each_char_finditer``) and skip the
    flow-line check when every bracket is in an empty ``{}``/``[]`` value: each case, placed after many documents
    holding only empty collections, is read as libyaml reads it, or left to libyaml."""
    filler = "".join(f"---\nkind: Pod\nmetadata:\n  name: p{i}\n  labels: {{}}\nspec:\n  volumes: []\n"
                     for i in range(2000))
    text = filler + "---\n" + snippet
    assert len(text) >= fastyaml.MIN_CHARS
    if same_or_aside(text):
        assert not isinstance(reference(text), Exception)
    assert same_or_aside(filler)


def test_the_fast_searches_find_what_the_plain_regexes_find() -> None:
    """``_long_lines`` and ``_each_char_finditer`` replace regexes that were 10-20x slower on 10 MB; on seeded random
    texts (lines around 1024 characters, every character the checks key on) they find the same spans."""
    rng = random.Random(30)
    alphabet = "ab :\n{}[]'\",&*!@`?%|>#-"
    layouts = [(r"[\]}\"'][ ]*\n", r"[ ]*\n", "]}\"'"), (r"[\]}\"'][ ]+(?=[^ #\n,\]}:])", r"[ ]+(?=[^ #\n,\]}:])",
                                                         "]}\"'"),
               ("[\"'](?=:(?:[ \\n]|$))", "(?=:(?:[ \\n]|$))", "'\""), (r"[\[\]{},][ ]*:", r"[ ]*:", "[]{},"),
               ("[&*!@`?%|>]", "", "&*!@`?%|>")]
    for _ in range(400):
        if rng.random() < 0.5:
            lines = ["x" * rng.choice([0, 1, 1022, 1023, 1024, 1025, 2100]) for _ in range(rng.randint(0, 6))]
            text = "\n".join(lines) + rng.choice(["", "\n"])
        else:
            text = "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 5, 200, 3000])))
        assert list(fastyaml._long_lines(text)) == re.findall(r"^[^\n]{1024,}", text, re.MULTILINE)
        for pattern, tail, chars in layouts:
            assert (sorted(m.span() for m in fastyaml._each_char_finditer(tail, chars, text))
                    == [m.span() for m in re.finditer(pattern, text)])


def test_the_gate_refuses_a_stream_as_it_refuses_its_distinct_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate reads a stream's distinct lines, joined in any order, when they are few: it must refuse exactly the
    streams it refuses reading the stream itself (``_GATE_LINES`` below zero)."""
    rng = random.Random(7)
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in repository_yaml_files()]
    streams = TRICKY_STREAMS + [mutate_lines(rng, rng.choice([t for t in texts if len(t) < 8_000]))
                                for _ in range(300)]
    for text in streams:
        for repeated in (text, (text.rstrip("\n") + "\n---\n") * 3):
            monkeypatch.setattr(fastyaml, "_GATE_LINES", 65536)
            by_distinct_lines = fast(repeated) is None
            monkeypatch.setattr(fastyaml, "_GATE_LINES", -1)
            assert (fast(repeated) is None) == by_distinct_lines, repeated


def test_pieces_of_every_size_between_large_documents_read_the_same() -> None:
    """Ordinary pieces are parsed into one reused tree, a large document into a tree of its own: every piece
    reads as libyaml reads it, whatever came before it (a stream, a single document, a larger or smaller tree)."""
    large = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}, "data": {"k": [i, "v", {"x": i}]}}
        for i in range(40)]})
    small = ["k: v\n", "a: [1, {b: c}]\n", "b: {c: [d, 'e']}\n", "{}\n", "n: 0644\n"]  # 0644: a libyaml piece
    rng = random.Random(4)
    answered = 0
    for _ in range(30):
        text = "".join("---\n" + rng.choice([large, *small]) for _ in range(rng.randint(2, 8)))
        for chunk_chars in (1, 50, 1000):
            answered += same_or_aside(text, chunk_chars)
    assert answered == 90


def test_the_resolvers_keyed_on_a_letter_read_only_words() -> None:
    """The fast path checks a run starting with a letter only when it is one of its words (``fastyaml._WORDS``):
    it may, because the loader's resolvers keyed on a letter are PyYAML's bool and null, and every text those read
    (in any of their cases) is a word. A resolver added there (the timestamp one, ``2024-05-01``, starts with a
    digit) must keep it so."""
    tags = {tag for first, resolvers in loader._YamlLoader.yaml_implicit_resolvers.items() if first and first.isalpha()
            for tag, _ in resolvers}
    assert tags == {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"}
    for first, resolvers in loader._YamlLoader.yaml_implicit_resolvers.items():
        for _, regexp in resolvers if first and first.isalpha() else ():
            for text in [*SCALARS, "ns-0", "name", "nO", "oN", "NuLL", "Off", "noise", "t", "f", "y", "n"]:
                if text.startswith(first) and regexp.match(text):
                    assert text.lower() in fastyaml._WORDS, text


def deeper_after_node_walked(text: str) -> bool:
    """``fastyaml._deeper_after_node`` as a plain walk of the lines: a line ending with a quote or closing bracket
    (trailing blanks allowed), and the next line holding more than blanks or a comment indented deeper."""
    lines = text.split("\n")
    for at, line in enumerate(lines[:-1]):
        if line.rstrip(" ")[-1:] in ("]", "}", '"', "'") and line.rstrip(" "):
            for below in lines[at + 1:]:
                content = below.lstrip(" ")
                if content and content[0] != "#":
                    if len(below) - len(content) > len(line) - len(line.lstrip(" ")):
                        return True
                    break
    return False


def test_a_line_deeper_after_a_finished_node_is_found_as_a_line_walk_finds_it() -> None:
    rng = random.Random(8)
    pieces = ["a", "'", '"', "]", "}", " ", "  ", "#", "\n", "\n", "- ", ": "]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        assert fastyaml._deeper_after_node(text) == deeper_after_node_walked(text), repr(text)
