"""Text, list, JSON, YAML, CSV and DOT renderings of a ``Matrix``, and the text of a ``Verdict``.

The matrix writers stream: they take the answer one source row at a time (``Matrix.blocks``)
and write to a text stream, so the output of a million pod pairs never sits in memory. Each
line is built from strings prepared once per name and once per pattern, which is what keeps
the pod-level answer above a million pairs a second.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring
from typing import Any, TextIO

import numpy as np
import yaml

from .engine import DirectionVerdict, Verdict
from .matrix import Block, Matrix

FLUSH_CHARS = 1 << 20


class _Out:
    """Collects strings and writes them in large pieces (one write per line would dominate the time)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.parts: list[str] = []
        self.size = 0

    def write(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)
        if self.size >= FLUSH_CHARS:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            self.stream.write("".join(self.parts))
            self.parts, self.size = [], 0


def _partly_text(m: Matrix, block: Block, j: int) -> str:
    part = block.partly[j]
    return f" (and {part.allowed.describe()} for {part.pairs} of {part.of} pod pairs: {part.reason})"


# --- list and table ---------------------------------------------------------------------


def write_list(m: Matrix, stream: TextIO) -> int:
    """``src => dst : TCP 8080`` per allowed pair (as NCA's txt_no_fw_rules); returns the number of pairs."""
    out = _Out(stream)
    names = m.names
    described = [p.describe() for p in m.patterns]
    tails = [f" => {n} : " for n in names]
    count = 0
    for block in m.blocks():
        src = names[block.src]
        dst, pat = block.dst.tolist(), block.pattern.tolist()
        count += len(dst)
        if block.partly:
            for j, p in zip(dst, pat, strict=True):
                extra = _partly_text(m, block, j) if j in block.partly else ""
                out.write(f"{src}{tails[j]}{described[p]}{extra}\n")
            continue
        out.write("".join([src + tails[j] + described[p] + "\n" for j, p in zip(dst, pat, strict=True)]))
    out.flush()
    return count


def _stacked_header(count: int, indent: int) -> list[str]:
    width = len(str(count))
    labels = [str(i + 1).rjust(width) for i in range(count)]
    return [" " * indent + " ".join(label[row] for label in labels) for row in range(width)]


TIER_MARKS = {"Admin": "A", "Baseline": "B"}  # what a denied cell shows when a ClusterNetworkPolicy tier denied it


def _tiered(m: Matrix) -> bool:
    return any(t.name in TIER_MARKS for t in m.tiers)


def grid_rows(m: Matrix, protocol: str, port: int) -> Iterable[tuple[int, str]]:
    """Per row: its cells on ``protocol/port``: ``.`` allowed, ``X`` denied, ``~`` for some of the pod pairs
    only, ``-`` between two external ranges; with ClusterNetworkPolicies, ``A``/``B`` for a denial by the
    Admin/Baseline tier (the source's egress is looked at first)."""
    n = len(m.names)
    on = np.array([s.contains(protocol, port) for s in m.patterns], dtype=bool)
    external = np.array([k == "external" for k in m.rows.kinds], dtype=bool)
    codes = m.deciding_tiers(protocol, port) if _tiered(m) else None
    marks = ["X", *(TIER_MARKS.get(t.name, "X") for t in m.tiers)]
    blocks = iter(m.blocks())  # ascending by source row, rows with nothing allowed skipped
    pending = next(blocks, None)
    for i in range(n):
        cells = np.full(n, "X", dtype="<U1")
        if external[i]:
            cells[external] = "-"
        block = None
        if pending is not None and pending.src == i:
            block, pending = pending, next(blocks, None)
        if block is not None:
            cells[block.dst] = np.where(on[block.pattern], ".", "X")
            for j, part in block.partly.items():
                if cells[j] == "X" and part.allowed.contains(protocol, port):
                    cells[j] = "~"
        if codes is not None:
            a = int(m.rows.class_of[i])
            for j in np.nonzero(cells == "X")[0].tolist():
                b = int(m.rows.class_of[j])
                first = codes[0][a, b] if codes[0][a, b] < 0 else codes[1][b, a]
                if first < 0:
                    cells[j] = marks[-first]
        if external[i]:
            cells[i] = "-"
        elif len(m.rows.members[i]) == 1:
            cells[i] = "."  # a pod can always reach itself
        yield i, " ".join(cells.tolist())


def write_table(m: Matrix, stream: TextIO, protocol: str = "TCP", port: int = 80) -> None:
    out = _Out(stream)
    names = m.names
    width = len(str(len(names)))
    name_width = max((len(n) for n in names), default=0)
    indent = width + 2 + name_width + 2
    denied = "'X' denied" if not _tiered(m) else (
        "'X' denied by NetworkPolicy, 'A' by the Admin tier, 'B' by the Baseline tier")
    out.write(f"Connectivity on {protocol}/{port} ('.' allowed, {denied}, '~' for some pod pairs only, '-' between "
              "two external ranges; rows are sources, columns destinations)\n\n")
    for line in _stacked_header(len(names), indent):
        out.write(line + "\n")
    for i, cells in grid_rows(m, protocol, port):
        out.write(f"{str(i + 1).rjust(width)}  {names[i].ljust(name_width)}  {cells}\n")
    out.write("\nAllowed connections (a pod can always reach itself; not listed):\n")
    out.flush()
    if not write_list(m, stream):
        stream.write("(none)\n")
    for note in m.notes:
        stream.write(f"Note: {note}\n")


# --- JSON and YAML ------------------------------------------------------------------------


def write_json(m: Matrix, stream: TextIO) -> None:
    """The document of ``Matrix.to_dict`` (docs/policy.md), one connection per line."""
    out = _Out(stream)
    key = "pods" if m.level == "pod" else "workloads"
    # What json.dumps(name, ensure_ascii=False) returns for a string, without making a JSONEncoder per call (0.3
    # against 2.3 us; 9,000 rows at 10,000 pods).
    quoted = [encode_basestring(n) for n in m.names]
    members = [q for q, k in zip(quoted, m.rows.kinds, strict=True) if k != "external"]
    out.write("{\n" + f'  "{key}": ' + ("[\n    " + ",\n    ".join(members) + "\n  ]" if members else "[]"))
    out.write(',\n  "connections": [')
    allowed = [json.dumps(p.to_json()) for p in m.patterns]
    closed = [a + "}" for a in allowed]  # a cell's end, made per pattern: one concatenation less per cell
    tails = [f', "to": {q}, "allowed": ' for q in quoted]
    first = True
    for block in m.blocks():
        head = ("\n" if first else ",\n") + '    {"from": ' + quoted[block.src]
        first = False
        dst, pat = block.dst.tolist(), block.pattern.tolist()
        if block.partly:
            extra = {j: f', "partly": {json.dumps(part.to_dict())}' for j, part in block.partly.items()}
            items = [tails[j] + allowed[p] + extra.get(j, "") + "}" for j, p in zip(dst, pat, strict=True)]
        else:
            items = [tails[j] + closed[p] for j, p in zip(dst, pat, strict=True)]
        out.write(head + (",\n" + '    {"from": ' + quoted[block.src]).join(items))
    out.write("\n  ]" if not first else "]")
    notes = ",\n    ".join(json.dumps(n, ensure_ascii=False) for n in m.notes)
    out.write(',\n  "notes": ' + (f"[\n    {notes}\n  ]" if m.notes else "[]") + "\n}\n")
    out.flush()


_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9./\-_\[\]{}=,!]*$")


def _yaml_scalar(text: str) -> str:
    if _PLAIN.match(text):
        return text  # a plain scalar in block context: flow indicators inside are fine
    return yaml.safe_dump(text, default_style='"').rstrip("\n").removesuffix("\n...")


def _yaml_flow(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 30, sort_keys=False)
    return text.rstrip("\n").removesuffix("\n...")


def write_yaml(m: Matrix, stream: TextIO) -> None:
    out = _Out(stream)
    key = "pods" if m.level == "pod" else "workloads"
    scalars = [_yaml_scalar(n) for n in m.names]
    members = [s for s, k in zip(scalars, m.rows.kinds, strict=True) if k != "external"]
    out.write(f"{key}:" + ("".join(f"\n- {s}" for s in members) if members else " []") + "\n")
    allowed = [_yaml_flow(p.to_json()) for p in m.patterns]
    out.write("connections:")
    empty = True
    for block in m.blocks():
        empty = False
        head = f"\n- from: {scalars[block.src]}\n  to: "
        parts = []
        for j, p in zip(block.dst.tolist(), block.pattern.tolist(), strict=True):
            item = head + scalars[j] + "\n  allowed: " + allowed[p]
            if j in block.partly:
                item += "\n  partly: " + _yaml_flow(block.partly[j].to_dict())
            parts.append(item)
        out.write("".join(parts))
    out.write(" []\n" if empty else "\n")
    out.write("notes:" + ("".join(f"\n- {_yaml_flow(n)}" for n in m.notes) if m.notes else " []") + "\n")
    out.flush()


# --- CSV and DOT --------------------------------------------------------------------------


def _csv_field(text: str) -> str:
    if any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def write_csv(m: Matrix, stream: TextIO) -> None:
    """Columns ``from,to,allowed`` (``all`` for every connection), as csv.writer would quote them."""
    out = _Out(stream)
    out.write("from,to,allowed\n")
    fields = [_csv_field(n) for n in m.names]
    allowed = [_csv_field("all" if p.is_all else p.describe()) for p in m.patterns]
    for block in m.blocks():
        head = fields[block.src] + ","
        out.write("".join([head + fields[j] + "," + allowed[p] + "\n"
                           for j, p in zip(block.dst.tolist(), block.pattern.tolist(), strict=True)]))
    out.flush()


def _dot_id(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_dot(m: Matrix, stream: TextIO) -> None:
    out = _Out(stream)
    out.write('digraph connectivity {\n  rankdir=LR;\n  node [shape=box, fontname="monospace"];\n')
    by_ns: dict[str, list[str]] = {}
    externals = []
    for name, ns, kind in zip(m.names, m.rows.namespaces, m.rows.kinds, strict=True):
        if kind == "external" or not ns:
            externals.append((name, kind))
        else:
            by_ns.setdefault(ns, []).append(name)
    for i, (ns, names) in enumerate(sorted(by_ns.items())):
        out.write(f"  subgraph cluster_{i} {{\n    label={_dot_id(ns)};\n")
        out.write("".join(f"    {_dot_id(n)} [label={_dot_id(n.split('/', 1)[1])}];\n" for n in names))
        out.write("  }\n")
    out.write("".join(f"  {_dot_id(n)} [shape={'ellipse' if k == 'external' else 'box'}];\n" for n, k in externals))
    ids = [_dot_id(n) for n in m.names]
    labels = [f" [label={_dot_id(p.describe())}];\n" for p in m.patterns]
    for block in m.blocks():
        head = f"  {ids[block.src]} -> "
        out.write("".join([head + ids[j] + labels[p]
                           for j, p in zip(block.dst.tolist(), block.pattern.tolist(), strict=True)]))
    out.write("}\n")
    out.flush()


WRITERS: dict[str, Callable[[Matrix, TextIO], Any]] = {
    "list": write_list, "json": write_json, "yaml": write_yaml, "csv": write_csv, "dot": write_dot,
}


# --- one verdict ------------------------------------------------------------------------


def _direction_text(d: DirectionVerdict) -> list[str]:
    lines = [f"{d.direction} of {d.endpoint}: {d.reason}"]
    tiered = bool(d.cluster_policies)
    for m in d.passed_by:
        lines.append(f"  {m.tier} tier: {m.kind} {m.policy} {m.location}: Pass")
    if d.decided_by is not None and d.decided_by.tier == "Admin":
        m = d.decided_by
        lines.append(f"  {m.tier} tier: {m.kind} {m.policy} {m.location}: {m.action}")
    if not d.enforced or not d.isolated:
        if d.decided_by is not None and d.decided_by.tier == "Baseline":
            m = d.decided_by
            lines.append(f"  {m.tier} tier: {m.kind} {m.policy} {m.location}: {m.action}")
        return lines
    indent = "  "
    if tiered:
        reached = d.tier == "NetworkPolicy"
        lines.append(f"  NetworkPolicy tier{'' if reached else ' (not reached: the Admin tier decided)'}:")
        indent = "    "
    if d.cilium is not None:  # its reason names the first allow rule; Cilium merges the others' L7 rules too
        return lines + [f"{indent}also allowed by {m.location}" for m in d.allowed_by[1:]]
    if d.allowed_by:
        lines += [f"{indent}allowed by {m.location}" for m in d.allowed_by]
    elif d.checked:
        lines.append(f"{indent}no {d.direction} rule allows it:")
        lines += [f"{indent}  {m.rule_location}: {m.reason}" for m in d.checked]
    return lines


def verdict_text(v: Verdict) -> str:
    head = "ALLOWED" if v.allowed else "DENIED"
    lines = [f"{head}  {v.src} ({v.src_ip or 'no IP'}) -> {v.dst} ({v.dst_ip or 'no IP'}) {v.protocol}/{v.port}", ""]
    lines += _direction_text(v.egress)
    lines += _direction_text(v.ingress)
    if v.allowed:
        lines.append(f"replies: {v.reply}")
    elif v.egress.rejected or (v.egress.allowed and v.ingress.rejected):
        # An Antrea Reject rule answers for the peer (a TCP RST): the client fails at once.
        lines.append("result: rejected: the client gets a refusal (a TCP RST), so it sees 'connection refused'")
    else:
        lines.append("result: the packet is dropped, so a client sees a timeout (not 'connection refused')")
    lines += [f"note: {n}" for n in v.notes]
    if v.caveats or (v.cni is not None and v.cni.name != "kindnet"):
        # Named whenever it is not kind's kindnet, or when a policy is left out: the answer is the CNI's.
        assert v.cni is not None
        lines.append(f"cni: {v.cni.text()}")
    lines += [f"caveat: {c.text()}" for c in v.caveats]
    lines += [f"staged: {p.text()}" for p in v.staged]
    return "\n".join(lines) + "\n"


# --- commented YAML (policy generate) ---------------------------------------------------------


class Commented:
    """A list item with comment lines written above it (what a generated rule admits, and why)."""

    def __init__(self, value: Any, comments: Iterable[str]) -> None:
        self.value = value
        self.comments = tuple(comments)


_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "~", "y", "n"}
_YAML_SAFE = re.compile(r"^[A-Za-z_/][A-Za-z0-9._/-]*$")


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if value is None:
        return "null"
    text = str(value)
    if _YAML_SAFE.match(text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def plain_value(value: Any) -> Any:
    """``value`` without its ``Commented`` wrappers: the object as the API server receives it."""
    if isinstance(value, Commented):
        return plain_value(value.value)
    if isinstance(value, dict):
        return {k: plain_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_value(v) for v in value]
    return value


def _leaf(value: Any) -> str:
    return "{}" if isinstance(value, dict) else "[]" if isinstance(value, list) else _scalar(value)


def _emit(value: Any, indent: int, lines: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, Commented):
                lines.extend(f"{pad}# {c}" if c else f"{pad}#" for c in item.comments)
                item = plain_value(item)
            if isinstance(item, dict | list) and item:
                lines.append(f"{pad}{_scalar(key)}:")
                _emit(item, indent + 2, lines)
            else:
                lines.append(f"{pad}{_scalar(key)}: {_leaf(item)}")
        return
    for item in value:
        if isinstance(item, Commented):
            lines.extend(f"{pad}# {c}" if c else f"{pad}#" for c in item.comments)
            item = item.value
        if isinstance(item, dict) and item:
            inner: list[str] = []
            _emit(item, indent + 2, inner)
            lines.append(f"{pad}- {inner[0].lstrip()}")
            lines.extend(inner[1:])
        elif isinstance(item, list) and item:
            lines.append(f"{pad}-")
            _emit(item, indent + 2, lines)
        else:
            lines.append(f"{pad}- {_leaf(item)}")


def commented_yaml(documents: Iterable[tuple[Iterable[str], dict[str, Any]]]) -> str:
    """YAML documents (``---`` between them), each after its comment lines; list items may be ``Commented``."""
    out = []
    for comments, body in documents:
        lines = [f"# {c}" if c else "#" for c in comments]
        _emit(body, 0, lines)
        out.append("\n".join(lines) + "\n")
    return "---\n".join(out)


__all__ = ["WRITERS", "Commented", "commented_yaml", "grid_rows", "plain_value", "verdict_text", "write_csv",
           "write_dot", "write_json", "write_list", "write_table", "write_yaml"]
