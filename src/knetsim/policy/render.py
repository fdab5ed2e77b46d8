"""Text, CSV, DOT and HTML renderings of a ``Matrix`` and of a ``Verdict`` (pure: strings in, strings out)."""

from __future__ import annotations

import csv
import html
import io

from .engine import DirectionVerdict, Verdict
from .matrix import Matrix


def _stacked_header(count: int, indent: int) -> list[str]:
    width = len(str(count))
    labels = [str(i + 1).rjust(width) for i in range(count)]
    return [" " * indent + " ".join(label[row] for label in labels) for row in range(width)]


def grid_text(m: Matrix, protocol: str = "TCP", port: int = 80) -> str:
    names = m.names
    g = m.grid(protocol, port)
    width = len(str(len(names)))
    name_width = max((len(n) for n in names), default=0)
    indent = width + 2 + name_width + 2
    external = [e.kind == "external" for e in m.endpoints]
    lines = [f"Connectivity on {protocol}/{port} ('.' allowed, 'X' denied, '-' between two external ranges; "
             "rows are sources, columns destinations)", ""]
    lines += _stacked_header(len(names), indent)
    for i, name in enumerate(names):
        cells = " ".join("-" if external[i] and external[j] and i != j else ("." if g[i, j] else "X")
                         for j in range(len(names)))
        lines.append(f"{str(i + 1).rjust(width)}  {name.ljust(name_width)}  {cells}")
    return "\n".join(lines) + "\n"


def connections_text(m: Matrix) -> str:
    lines = [f"{a} => {b} : {s.describe()}" for a, b, s in m.connections()]
    return "\n".join(lines) + ("\n" if lines else "")


def table(m: Matrix, protocol: str = "TCP", port: int = 80) -> str:
    out = grid_text(m, protocol, port) + "\nAllowed connections (a pod can always reach itself; not listed):\n"
    out += connections_text(m) or "(none)\n"
    for note in m.notes:
        out += f"Note: {note}\n"
    return out


def to_csv(m: Matrix) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["from", "to", "allowed"])
    for a, b, s in m.connections():
        writer.writerow([a, b, "all" if s.is_all else s.describe()])
    return buf.getvalue()


def _dot_id(name: str) -> str:
    return '"' + name.replace('"', '\\"') + '"'


def to_dot(m: Matrix) -> str:
    lines = ["digraph connectivity {", "  rankdir=LR;", '  node [shape=box, fontname="monospace"];']
    by_ns: dict[str, list[str]] = {}
    externals = []
    for e in m.endpoints:
        if e.pod is not None:
            by_ns.setdefault(e.pod.namespace, []).append(e.name)
        else:
            externals.append(e.name)
    for i, (ns, names) in enumerate(sorted(by_ns.items())):
        lines.append(f"  subgraph cluster_{i} {{")
        lines.append(f"    label={_dot_id(ns)};")
        lines += [f"    {_dot_id(n)} [label={_dot_id(n.split('/', 1)[1])}];" for n in names]
        lines.append("  }")
    lines += [f"  {_dot_id(n)} [shape=ellipse];" for n in externals]
    for a, b, s in m.connections():
        lines.append(f"  {_dot_id(a)} -> {_dot_id(b)} [label={_dot_id(s.describe())}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
table.grid { border-collapse: collapse; font-family: monospace; font-size: 12px; }
table.grid td, table.grid th { border: 1px solid #ccc; padding: 2px 4px; text-align: center; }
table.grid th.row { text-align: left; white-space: nowrap; }
table.grid th.col { writing-mode: vertical-rl; transform: rotate(180deg); white-space: nowrap; }
td.ok { background: #c8efc8; } td.no { background: #f4c7c7; } td.self { background: #e6e6e6; }
ul.conn { font-family: monospace; font-size: 12px; }
"""


def to_html(m: Matrix, protocol: str = "TCP", port: int = 80) -> str:
    names = m.names
    g = m.grid(protocol, port)
    esc = html.escape
    rows = ['<tr><th></th>' + "".join(f'<th class="col">{esc(n)}</th>' for n in names) + "</tr>"]
    external = [e.kind == "external" for e in m.endpoints]
    for i, a in enumerate(names):
        cells = []
        for j, b in enumerate(names):
            if external[i] and external[j] and i != j:
                cells.append('<td class="self">-</td>')
                continue
            cls = "self" if i == j else ("ok" if g[i, j] else "no")
            mark = "." if g[i, j] else "X"
            title = f"{a} -> {b}: {'allowed' if g[i, j] else 'denied'} on {protocol}/{port}"
            cells.append(f'<td class="{cls}" title="{esc(title)}">{mark}</td>')
        rows.append(f'<tr><th class="row">{esc(a)}</th>' + "".join(cells) + "</tr>")
    items = "".join(f"<li>{esc(a)} =&gt; {esc(b)} : {esc(s.describe())}</li>" for a, b, s in m.connections())
    notes = "".join(f"<p>Note: {esc(n)}</p>" for n in m.notes)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>knetsim connectivity matrix ({esc(protocol)}/{port})</title><style>{_CSS}</style></head><body>\n"
        f"<h1>Connectivity on {esc(protocol)}/{port}</h1>\n"
        "<p>Rows are sources, columns destinations: <b>.</b> allowed, <b>X</b> denied by NetworkPolicy.</p>\n"
        f"<table class=\"grid\">{''.join(rows)}</table>\n"
        f"<h2>Allowed connections</h2><ul class=\"conn\">{items}</ul>{notes}\n</body></html>\n"
    )


def _direction_text(d: DirectionVerdict) -> list[str]:
    lines = [f"{d.direction} of {d.endpoint}: {d.reason}"]
    if not d.enforced or not d.isolated:
        return lines
    if d.allowed_by:
        lines += [f"  allowed by {m.location}" for m in d.allowed_by]
    elif d.checked:
        lines.append(f"  no {d.direction} rule allows it:")
        lines += [f"    {m.rule_location}: {m.reason}" for m in d.checked]
    return lines


def verdict_text(v: Verdict) -> str:
    head = "ALLOWED" if v.allowed else "DENIED"
    lines = [f"{head}  {v.src} ({v.src_ip or 'no IP'}) -> {v.dst} ({v.dst_ip or 'no IP'}) {v.protocol}/{v.port}", ""]
    lines += _direction_text(v.egress)
    lines += _direction_text(v.ingress)
    if v.allowed:
        lines.append(f"replies: {v.reply}")
    else:
        lines.append("result: the packet is dropped, so a client sees a timeout (not 'connection refused')")
    lines += [f"note: {n}" for n in v.notes]
    return "\n".join(lines) + "\n"
