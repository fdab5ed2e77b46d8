"""A diff for people (text), for a pull-request comment (Markdown); ``Diff.to_dict`` is the JSON."""

from __future__ import annotations

from .model import CHANGED, FIXED, GAINED, INTRODUCED, LOST, UNCHANGED, Diff, Item, Layer

MARKS = {LOST: "-", GAINED: "+", CHANGED: "~", INTRODUCED: "!", FIXED: "✓", UNCHANGED: "="}
WORDS = {LOST: "lost", GAINED: "gained", CHANGED: "changed", INTRODUCED: "introduced", FIXED: "fixed",
         UNCHANGED: "unchanged"}
ORDER = (LOST, GAINED, CHANGED, INTRODUCED, FIXED, UNCHANGED)
FOLD = 12  # Markdown: a layer with more items than this is folded (<details>)


def summary(layer: Layer) -> str:
    counts = layer.counts()
    if not layer.changes:
        return "no change" + (f" ({counts[UNCHANGED]} finding(s) unchanged)" if counts.get(UNCHANGED) else "")
    return ", ".join(f"{counts[e]} {WORDS[e]}" for e in ORDER if counts.get(e))


def _shown(layer: Layer) -> list[Item]:
    return [i for i in layer.items if i.effect != UNCHANGED]


def text(diff: Diff) -> str:
    width = max((len(lay.name) for lay in diff.layers), default=0)
    lines = [f"BEFORE  {diff.before}", f"AFTER   {diff.after}", ""]
    lines += [f"{lay.name.ljust(width)}  {summary(lay)}" for lay in diff.layers]
    for lay in diff.layers:
        shown = _shown(lay)
        if not shown:
            continue
        lines += ["", lay.title]
        for item in shown:
            lines.append(f"  {MARKS[item.effect]} {item.subject}: {item.text}")
            if item.why:
                why = item.why.rstrip("\n").replace("\n", "\n      ")
                lines.append(f"      {why}")
        unchanged = lay.count(UNCHANGED)
        if unchanged:
            lines.append(f"  = {unchanged} unchanged (-o json lists them)")
    return "\n".join(lines) + "\n"


def _code(value: str) -> str:
    return "`" + value.replace("`", "'") + "`"


def _md(value: str) -> str:
    """Text in a Markdown list item: nothing in it starts a link, an emphasis, a tag or a table cell."""
    for ch in "\\`*_[]<>|":
        value = value.replace(ch, "\\" + ch)
    return value


def markdown(diff: Diff) -> str:
    lines = ["### knetsim diff", "", f"**BEFORE** {_code(diff.before)} → **AFTER** {_code(diff.after)}", "",
             "| layer | lost | gained | changed | findings introduced | findings fixed |",
             "|---|---:|---:|---:|---:|---:|"]
    for lay in diff.layers:
        c = lay.counts()
        cells = [str(c.get(e, "")) if c.get(e) else "" for e in (LOST, GAINED, CHANGED, INTRODUCED, FIXED)]
        lines.append(f"| {lay.name} | " + " | ".join(cells) + " |")
    for lay in diff.layers:
        shown = _shown(lay)
        if not shown:
            continue
        lines.append("")
        fold = len(shown) > FOLD
        if fold:
            lines += ["<details>", f"<summary><b>{lay.name}</b>: {summary(lay)}</summary>", ""]
        else:
            lines += [f"#### {lay.name}: {summary(lay)}", ""]
        for item in shown:
            lines.append(f"- **{WORDS[item.effect]}** {_code(item.subject)}: {_md(item.text)}")
            if item.why:
                first, *rest = item.why.rstrip("\n").split("\n")
                lines.append(f"  - {_md(first)}")
                if rest:
                    lines += ["    ```", *(f"    {r}" for r in rest), "    ```"]
        if fold:
            lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


__all__ = ["markdown", "summary", "text"]
