"""Loading manifests: files, directories, stdin, multi-document YAML, kind: List and JSON."""

from __future__ import annotations

import io
import json

from knetsim.model.loader import load_paths, load_text


def test_multi_document_yaml_counts_documents_from_one() -> None:
    result = load_text("a: 1\n---\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n", "f.yaml")
    # The first document has no kind: an error that names document 1; the empty one is skipped.
    assert [str(e) for e in result.errors] == ["f.yaml, document 1: Object 'Kind' is missing in '{\"a\":1}'"]
    assert [(d.kind, d.source.document) for d in result.documents] == [("Namespace", 3)]


def test_kind_list_as_kubectl_prints_it() -> None:
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}},
    ]})
    result = load_text(text, "snap.json")
    assert [(d.name, str(d.source)) for d in result.documents] == [
        ("a", "snap.json, document 1, items[0]"), ("b", "snap.json, document 1, items[1]")]


def test_typed_list_items_get_their_kind() -> None:
    result = load_text("apiVersion: v1\nkind: ServiceList\nitems:\n- metadata: {name: s}\n", "s.yaml")
    assert [(d.kind, d.name) for d in result.documents] == [("Service", "s")]


def test_directories_are_walked_recursively_in_sorted_order(tmp_path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.yml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: second}\n")
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: first}\n")
    (tmp_path / "notes.txt").write_text("not a manifest")
    result = load_paths([str(tmp_path)])
    assert [d.name for d in result.documents] == ["first", "second"]


def test_stdin_and_missing_path() -> None:
    result = load_paths(["-", "/nonexistent/x.yaml"],
                        stdin=io.StringIO("apiVersion: v1\nkind: Namespace\nmetadata: {name: s}\n"))
    assert [d.name for d in result.documents] == ["s"]
    assert [str(e) for e in result.errors] == ['input: the path "/nonexistent/x.yaml" does not exist']


def test_yaml_syntax_error_names_line() -> None:
    result = load_text("kind: Service\nmetadata:\n  name: [oops\n", "bad.yaml")
    assert len(result.errors) == 1
    assert str(result.errors[0]).startswith("bad.yaml, document 1: error parsing YAML (line")


def test_unquoted_timestamps_stay_strings_as_sigs_yaml_keeps_them() -> None:
    text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a, creationTimestamp: 2024-05-01T10:00:00Z}\n"
    result = load_text(text, "ts.yaml")
    assert result.documents[0].body["metadata"]["creationTimestamp"] == "2024-05-01T10:00:00Z"


def test_a_syntax_error_names_the_document_it_is_in() -> None:
    text = "".join(f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: n{i}}}\n---\n" for i in range(4))
    result = load_text(text + "kind: [oops\n", "multi.yaml")
    assert [str(e).split(":")[0] for e in result.errors] == ["multi.yaml, document 5"]
    assert len(result.documents) == 4


def test_list_items_need_a_kind() -> None:
    result = load_text("apiVersion: v1\nkind: List\nitems:\n- metadata: {name: x}\n", "l.yaml")
    assert [str(e) for e in result.errors] == [
        "l.yaml, document 1, items[0]: Object 'Kind' is missing in '{\"metadata\":{\"name\":\"x\"}}'"]


def _laughs_after_a_small_document(levels: int) -> str:
    """A harmless first document with a few aliases, then a document whose aliases nest ``levels`` deep."""
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\nsel: &s {team: a}\ncopies: [*s, *s]\n---\n"
    text += "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  a: &a [lol, lol, lol, lol, lol]\n"
    prev = "a"
    for name in "bcdefghij"[:levels]:
        text += f"  {name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
        prev = name
    return text


def test_aliases_the_loader_clears_are_not_walked_and_the_others_still_are() -> None:
    # The loader counts what each alias brings back; a document it clears is not walked again, so the
    # refusal must still come for the nested aliases, and for an anchor that contains itself.
    refused = load_text(_laughs_after_a_small_document(9), "laughs.yaml")
    assert [str(e) for e in refused.errors] == [
        "laughs.yaml, document 1: error converting YAML to JSON: yaml: document contains excessive aliasing"]
    small = load_text(_laughs_after_a_small_document(2), "small.yaml")
    assert small.errors == []
    assert small.documents[0].body["copies"] == [{"team": "a"}, {"team": "a"}]
    cycle = load_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: &d\n  self: *d\n", "c.yaml")
    assert [str(e) for e in cycle.errors] == [
        "c.yaml, document 1: error converting YAML to JSON: yaml: anchor contains itself"]


def test_a_text_repeated_across_documents_is_held_once_and_still_typed_as_written() -> None:
    # 10,000 pods' manifests repeat a few thousand texts 870,000 times: one object each keeps them small.
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {plain: shared, quoted: 'shared', n: '1'}\n"
    result = load_text(doc % "a" + "---\n" + doc % "b" + "---\nkind: X\napiVersion: v1\nn: 1\nflag: yes\n", "f.yaml")
    first, second, other = (d.body for d in result.documents)
    assert first["data"] == second["data"] == {"plain": "shared", "quoted": "shared", "n": "1"}
    assert first["data"]["plain"] is second["data"]["plain"]
    assert first["data"]["quoted"] is second["data"]["quoted"]
    assert first["kind"] is second["kind"]
    assert other["n"] == 1 and other["flag"] is True  # a plain 1 is a number, yes a bool, as before
