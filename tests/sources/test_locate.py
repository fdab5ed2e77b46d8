"""``sources/locate.py``: the line an object starts at in its file, found by scanning the file (never parsing all
of it), numbered as the loader numbers documents and List items, and given only when the document there is the
object."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from knetsim.model.loader import Source, load_text
from knetsim.sources.locate import describe

STREAMS = [
    "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n",
    "---\napiVersion: v1\nkind: Service\nmetadata: {name: a}\n",
    "# a comment first\n\napiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\n---\n"
    "apiVersion: v1\nkind: Service\nmetadata:\n  name: b\n",
    "--- {apiVersion: v1, kind: Service, metadata: {name: a}}\n...\n---\n# b\napiVersion: v1\nkind: Service\n"
    "metadata: {name: b}\n",
]


@pytest.mark.parametrize("text", STREAMS)
def test_every_document_is_found_where_the_loader_numbers_it(tmp_path: Path, text: str) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(text)
    loaded = load_text(text, str(path))
    assert loaded.documents
    lines = text.splitlines()
    for doc in loaded.documents:
        where = describe(doc.source, doc.kind, doc.name)
        assert where is not None and where.startswith(f"{path}:")
        line = int(where.rsplit(":", 1)[1])
        # The line holds the object's first key, and the text from there parses as the object.
        rest = yaml.safe_load_all("\n".join(lines[line - 1:]).replace("--- ", "", 1))
        assert next(iter(rest))["metadata"]["name"] == doc.name


def test_a_list_item_is_found_by_its_entry(tmp_path: Path) -> None:
    text = ("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata:\n    name: a\n"
            "- apiVersion: v1\n  kind: Service\n  metadata:\n    name: b\n  spec:\n    ports:\n    - port: 80\n"
            "metadata:\n  resourceVersion: \"\"\n")
    path = tmp_path / "snap.yaml"
    path.write_text(text)
    assert describe(Source(str(path), 1, 0), "Service", "a") == f"{path}:4"
    assert describe(Source(str(path), 1, 1), "Service", "b") == f"{path}:8"
    assert describe(Source(str(path), 1, 2), "Service", "c") == f"{path}, document 1, items[2]"


def test_no_line_for_another_object_a_template_or_a_file_that_is_gone(tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    assert describe(Source(str(path), 1), "Service", "a") == f"{path}, document 1"
    template = tmp_path / "svc.yaml"
    template.write_text("apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}-web\n")
    assert describe(Source(str(template), 1), "Service", "blue-web") == f"{template}, document 1"
    assert describe(Source(str(tmp_path / "gone.yaml"), 2), "Service", "a") == f"{tmp_path}/gone.yaml, document 2"


def test_objects_of_no_file_have_no_source() -> None:
    from knetsim.model.loader import BUILTIN, CONTROLLER

    assert describe(BUILTIN) is None and describe(CONTROLLER) is None and describe(None) is None
