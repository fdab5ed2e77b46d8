"""A faster reader for large YAML streams: rapidyaml parses, its JSON is read by ``json.loads``.

Why: libyaml through PyYAML's C binding makes a Python object and two marks for each of its events; 10,000 pods'
manifests (20,000 documents, 10 MB, 1.7 million events) take 2.0 s that way, and walking the events while doing
nothing with them takes as long. rapidyaml (PyPI ``rapidyaml``, module ``ryml``, C++) parses the same stream in
pieces, emits each as JSON and ``json.loads`` reads it: 0.55 s with the checks below and the sharing of equal strings
(loading the bench's input in process: 1.66 s -> 0.73 s; the whole run ~0.9 s less CPU, the same peak RSS).

The two readers do not read YAML alike: rapidyaml follows YAML 1.2 / JSON for plain scalars, knetsim follows
YAML 1.1 as PyYAML resolves it (``yes``/``on``, ``012`` octal, ``1_000``, ``1:20``, ``~``...), and rapidyaml accepts a
few streams libyaml refuses. So this path answers only when its reading is the reference one, and otherwise
answers None and the caller reads the stream with libyaml (every error message and position stay libyaml's):

* scalars, by construction: a plain scalar reads as something other than its own text, in either reader, only if
  it has no blank or flow character and starts with a character PyYAML's resolvers key on (a letter only in
  the words their bool and null resolvers read: yes/no/on/off/true/false/null) or, for rapidyaml, starts with a
  sign, digit or dot, or is one of its words true/false/null/inf/nan/infinity. Every such run of the text is
  read by both readers (in block and in flow context, batched in one document each) and any difference, type
  included, sends the stream to libyaml. Keys: a run ending in ``:`` is read as a one-key mapping, so ``12: x``
  (an int key in PyYAML, a string in JSON) differs and falls back.
* constructs JSON cannot carry or the readers disagree on are refused before parsing (``_no_node_indicators``,
  ``_lines_refused``, ``_deeper_after_node``): anchors, aliases, tags, ``<<`` merge keys, directives, explicit ``?``
  keys, empty or spaced keys, collections as keys, flow collections over several lines, flow-mapping entries without
  a colon, a flow character or reserved indicator starting a node, a leading ``...``, tabs, carriage returns, YAML
  1.1 line breaks and characters libyaml does not accept, escapes other than the common ones (and hex escapes
  spelling ASCII).
* rapidyaml's JSON rewrites its float words even quoted (``'.Inf'`` becomes ``".inf"``): one-word quoted scalars
  that look like numbers or words are read by both readers too.
* any rapidyaml or JSON error, or a document that is not a mapping (or empty), falls back.

``tests/model/test_fastyaml.py`` reads every YAML file of the repository, generated tricky streams and seeded fuzz
(random documents in every dump style, mutated files) both ways; each refusal above was found a difference there.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

_NOT_LOADED: Any = object()
ryml: Any = _NOT_LOADED  # the module once imported, None without the wheel (every stream then read by libyaml)


def _rapidyaml() -> Any:
    """rapidyaml, imported at the first large stream: its import (with ``deprecation`` and ``packaging``) takes
    24 ms warm, 100 ms cold, which every command reading only small manifests would pay at start."""
    global ryml
    if ryml is _NOT_LOADED:
        try:
            import ryml as module
        except ImportError:  # pragma: no cover - depends on the installation
            module = None
        ryml = module
    return ryml


# Below this a stream is read by libyaml: it takes < 15 ms there, and the fast path's fixed costs (and silencing
# stderr) are not worth it for the small manifests the live cluster and most commands read.
MIN_CHARS = 64 * 1024
# rapidyaml's tree costs ~19 bytes per byte of YAML (190 MB for 10 MB): the stream is parsed in pieces of about
# this size, cut before a ``---`` line. Measured on the 10k-pod bench (read, and RSS once read): 64 kB pieces
# 0.47 s / 104 MB, 256 kB 0.56 s / 112 MB, 1 MB 0.60 s / 125 MB (libyaml: 1.5 s / 108 MB).
CHUNK_CHARS = 1 << 16
# A piece can only be cut between documents: one document larger than this (a ``kind: List`` from ``kubectl get -o
# yaml``; 100,000 pods are 400 MB, a 7.6 GB tree) goes to libyaml, whose event reader holds only the objects.
MAX_PIECE_CHARS = 4 << 20

# Characters libyaml refuses (outside YAML 1.1's printable set), or reads as line breaks where rapidyaml does not
# (NEL, LS, PS), or that the two treat differently (tab, CR, BOM): any of them sends the stream to libyaml.
# Kept as text: compiled (4.6 ms, its ranges) only at the first non-ASCII stream, not at every command's start.
_REFUSED_CHARS = "[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
_PRINTABLE_ASCII = bytes([10, *range(0x20, 0x7F)])
# Double-quoted escapes both readers expand alike (``\\x``, ``\\u``, ``\\U`` checked apart: no surrogates).
_ESCAPE = re.compile(r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.|\n|$)")
# An escaped line break is not among them: followed by an empty line, the two readers fold it differently.
_SIMPLE_ESCAPES = frozenset("\\" + c for c in '0abtnvfre "/\\N_LP')
# sre finds these two literals in ~5 ms on 10 MB where ``in`` takes ~10 (a colon or blank at every few characters).
_SPACED_COLON = re.compile(" :")
_LINE_START_COLON = re.compile("\n:")
# A collection used as a key, or a key separated from its colon (``a : b``): refused.
_ODD_KEY = re.compile(r"[\]}][ ]*:(?:[ \n]|$)|[ \n\[{,]:|^:")
# On a line holding flow characters: one starting a node where libyaml refuses it and rapidyaml takes it as text
# (``k: ]x``, ``[a, , b]``).
_FLOW_MISPLACED = re.compile(r"(?:^|[:\-,])[ ]*[\]},]|[\[{][ ]*,")
# Where a node starts on its line: only indentation and ``- `` before it, or a ``:``, ``[``, ``{``, ``,``, ``-``,
# ``?`` (and blanks) just before it. An ``&``, ``*``, ``!``, ``@`` or backquote there is an anchor, alias, tag
# or reserved indicator; elsewhere (``a && b`` in a Calico selector) it is text.
_NODE_START = re.compile(r"(?:^|[:\[{,?-])[ ]*$|^[ ]*(?:-[ ]+)*$", re.MULTILINE)
_INDICATORS = "&*!@`?%"
# A block scalar's header: indentation and chomping indicators in either order, then only a comment.
_BLOCK_HEADER = re.compile(r"[|>](?:[1-9][+-]?|[+-][1-9]?)?(?:[ ]+#[^\n]*|[ ]*)(?:\n|$)")
_FLOW = re.compile(r"[\[\]{},]")
# rapidyaml's words (JSON literals, and its float specials, which it rewrites: ``inf`` -> ``.inf``), and YAML 1.1's
# bools and nulls, in any case.
_WORDS = frozenset(("true", "false", "null", "yes", "no", "on", "off", "inf", "nan", "infinity", "~"))
_NUMBER_START = "+-.0123456789"
# The regexes below are searched once per leading character (``_each_char_finditer``): a quote or closing bracket,
# then the tail.
_NODE_CLOSERS = "]}\"'"
_QUOTED_KEY_END_TAIL = "(?=:(?:[ \n]|$))"
_AFTER_NODE_TAIL = r"[ ]+(?=[^ #\n,\]}:])"
_NODE_END_LINE_TAIL = r"[ ]*\n"
_GLUED = re.compile("[\"']:")


def available() -> bool:
    return _rapidyaml() is not None


def read_documents(text: str, reference: Callable[[str], list[Any]], resolver_firsts: str = "",
                   distinct_strings: int = 65536, chunk_chars: int = CHUNK_CHARS) -> list[Any] | None:
    """The documents of ``text`` as ``reference`` (the libyaml reader) reads them, or None: read it with libyaml.

    ``reference`` reads a small stream (raising on an error); ``resolver_firsts`` holds the first characters the
    reference's implicit resolvers key on (its other plain scalars are strings). Equal strings are one object, as
    the reference gives them, up to ``distinct_strings`` distinct texts (``_share_strings``). A piece holding a
    scalar the two readers read differently (YAML 1.1's ``defaultMode: 0644``, ``yes``) is read by ``reference``."""
    if threading.current_thread() is not threading.main_thread() or _rapidyaml() is None:
        return None  # rapidyaml reports errors on fd 2, silenced below only on the main thread
    try:
        # The resolvers keyed on a letter (PyYAML's bool and null) match only texts that are ``_WORDS`` in some case,
        # and rapidyaml rewrites only its words: a run starting with a letter is checked when it is a word (the
        # 10k-pod bench's ~2,200 runs like ``ns-0``, ``'ns-0'``, ``name:``: its runs' check 0.034 -> 0.004 s).
        firsts = "".join(sorted(set(_NUMBER_START + resolver_firsts) - set(_INDICATORS)
                                - {first for first in resolver_firsts if first.isalpha()}))
        runs_of_word: dict[str, frozenset[str]] = {}
        piece_runs: list[set[str]] = []  # per piece, the runs its words hold (quoted ones marked, ``_runs``)
        # The stream's distinct lines, for the gate (``_GATE_LINES``); None once too many to be worth keeping.
        lines: set[str] | None = set()
        lines_chars = 0
        # Piece by piece: all the stream's words at once are a million objects (~50 MB) for ~1,200 distinct.
        for chunk in _chunks(text, chunk_chars):
            if len(chunk) > MAX_PIECE_CHARS:
                return None  # one large document (a ``kind: List``): its tree would not be bounded
            runs: set[str] = set()
            # The words of its distinct lines: the same set (a word never spans a line break), from ~60% fewer
            # strings, manifests repeating most lines (0.054 s -> 0.041 s on the 10k-pod bench).
            piece_lines = set(chunk.split("\n"))
            for word in set(" ".join(piece_lines).split()):
                found = runs_of_word.get(word)
                if found is None:
                    found = runs_of_word[word] = _runs(word, firsts)
                if found:
                    runs |= found
            piece_runs.append(runs)
            if lines is not None:
                new_lines = piece_lines - lines
                lines |= new_lines
                lines_chars += sum(map(len, new_lines))
                if len(lines) > _GATE_LINES or lines_chars > _GATE_CHARS:
                    lines = None  # a stream of mostly distinct lines: the gate reads the stream itself
        gated = text if lines is None else "\n".join(lines)
        if not _no_node_indicators(gated) or _lines_refused(gated) or _deeper_after_node(text):
            return None
        differing = _differing_runs(set().union(*piece_runs), reference)
        documents: list[Any] = []
        shared: dict[str, str] = {}
        buffer = _JsonBuffer(chunk_chars)
        with _quiet_stderr():
            for chunk, runs in zip(_chunks(text, chunk_chars), piece_runs, strict=True):
                read = reference(chunk) if runs & differing else _ryml_documents(chunk, buffer)
                if read is None:
                    return None
                _share_strings(read, shared, distinct_strings)
                documents.extend(read)
    except Exception:  # rapidyaml's errors, json's, libyaml's, nesting: libyaml reads the stream and reports it
        return None
    if not all(type(document) is dict or document is None for document in documents):
        return None  # a root scalar or list: rapidyaml takes some libyaml refuses (``--- >`` at column 0)
    return documents


# The gate's checks but one (``_deeper_after_node``) each test one line at a time (``_lines_refused``): any line
# failing refuses the stream. Manifests repeat their lines (the 10k-pod bench: 611,000 lines, 3,321 distinct, 81 kB
# of 10 MB), so those checks read the stream's distinct lines, already split for the words, joined: 0.07-0.1 s ->
# ~3 ms there. Up to this many distinct lines, of at most this many characters, are kept for it (~13 MB with their
# join at most); past that the checks read the stream itself.
_GATE_LINES = 65536
_GATE_CHARS = 4 << 20


def _lines_refused(text: str) -> bool:
    """A construct the two readers disagree on, or libyaml refuses, is on a line of ``text`` (with
    ``_deeper_after_node``, which compares a line with the next, the gate's refusals). Each check looks within a line
    (a regex never crosses a line break but to end at one, a search starts at its line's start), and a test of the
    stream's start (``text.startswith``) is, with the same test after a line break, a test of every line's start:
    so this is true of a stream exactly when it is true of the stream's distinct lines joined in any order."""
    if text.isascii():  # a deletion over the bytes: 10 ms on 10 MB where the regex takes 35
        if text.encode("ascii").translate(None, _PRINTABLE_ASCII):
            return True
    elif re.search(_REFUSED_CHARS, text):
        return True
    # Merge keys, directives, and document end markers (libyaml refuses one before any document, rapidyaml not).
    # A one-character ``in`` is a memchr (0.1 ms on 10 MB), a longer literal ~3 ms (``_has``): the rare character first.
    if (("<" in text and _has("<<", text)) or text.startswith(("%", "...")) or ("%" in text and _has("\n%", text))
            or _has("\n...", text)):
        return True
    if "\\" in text:
        for escape in set(_ESCAPE.findall(text)):
            if len(escape) > 2:
                code = int(escape[2:], 16)
                # A surrogate libyaml refuses; an ASCII character could spell a word the scalar check never saw.
                if code < 0x80 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
                    return True
            elif escape not in _SIMPLE_ESCAPES:
                return True  # libyaml refuses it in double quotes; a backslash elsewhere is text: both read it so
    # Checked only when a colon follows a blank or bracket at all (a regex over 10 MB costs ~0.05 s).
    odd_key_possible = (_SPACED_COLON.search(text) or _LINE_START_COLON.search(text) or text.startswith(":")
                        or any(True for _ in _each_char_finditer(r"[ ]*:", "[]{},", text)))
    if odd_key_possible and _ODD_KEY.search(text):
        return True
    if _long_key_possible(text):
        return True
    # The line checks below cost 0.03-0.05 s each on 10 MB; the ``in`` tests (a few ms) skip those that cannot match.
    # A two-character search costs ~3 ms on 10 MB (``_has``): first whether its rarer character is there at all
    # (0.1 ms).
    single, double = "'" in text, '"' in text
    return (_flow_lines_refused(text)
            or (((single and _has("':", text)) or (double and _has('":', text))) and _multiline_quoted_key(text))
            or (((single and _has("' ", text)) or (double and _has('" ', text)) or ("]" in text and _has("] ", text))
                 or ("}" in text and _has("} ", text))) and _content_after_node(text)))


def _has(literal: str, text: str) -> bool:
    """``literal in text``, 3x quicker for the short literals above: sre's scan for a literal prefix takes ~3 ms on
    10 MB where ``in`` takes 8-10 ms (the 10k-pod bench's ``"} "`` and ``"\\n..."``: 19 -> 6 ms). The compiled
    pattern comes from ``re``'s cache."""
    return re.search(re.escape(literal), text) is not None


# A line this long may hold a simple key longer than libyaml (and go-yaml) take: 1024 characters, where rapidyaml has
# no limit. A colon that could end a key that far into the line sends the stream to libyaml (conservatively: the
# line's indentation and a flow collection's opening are counted too; a compact JSON annotation has no such colon).
_KEY_END = re.compile(r":(?=[ ,\]}\n]|$)")


def _long_key_possible(text: str) -> bool:
    for line in _long_lines(text):
        end = _KEY_END.search(line, 1023)
        if end is not None:
            return True
    return False


def _long_lines(text: str, length: int = 1024) -> Iterator[str]:
    """The lines of at least ``length`` characters. Found by jumping from a line's start to just after the last line
    break within ``length`` characters (~1,000 characters a step): 3 ms on 10 MB, where ``^[^\n]{1024,}`` takes 60.
    A long line starting at s is never jumped over: every jump lands on a line start at or before s."""
    start = 0
    while len(text) - start >= length:
        last_break = text.rfind("\n", start, start + length)
        if last_break >= 0:
            start = last_break + 1
            continue
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        yield text[start:end]
        start = end + 1


def _each_char_finditer(tail: str, chars: str, text: str) -> Iterator[re.Match[str]]:
    """The matches of ``[chars]`` followed by ``tail``, found per character present with a regex led by that literal:
    sre finds a literal prefix with a fast scan, a class it tests at every position (3 ms against 40 on 10 MB).
    Grouped by character, not in text order; the same matches where one cannot overlap another (``tail`` does not
    match any of ``chars``)."""
    for char in chars:
        if char in text:
            yield from re.finditer(re.escape(char) + tail, text)


def _flow_lines_refused(text: str) -> bool:
    """A flow collection continued on the next line (rapidyaml takes multi-line keys there, libyaml refuses them),
    or a flow character out of place."""
    # An empty collection ending a ``key:`` line is always well placed: 10,000 ``{}`` in the 10k-pod bench need no
    # look (the line loop would cost 0.06 s for them).
    # Counted by sre's literal scan (4.4 ms on 10 MB, 10,000 hits) where ``str.count`` takes 7.3.
    empty_flows = sum(len(re.findall(re.escape(f": {opening}{closing}\n"), text))
                      for opening, closing in ("{}", "[]") if opening in text)
    if sum(text.count(char) for char in "[]{}," if char in text) == 2 * empty_flows:
        return False  # each flow character is in one of those (counting: 15 ms on 10 MB; replacing and looking: 50)
    text = text.replace(": {}\n", ":\n").replace(": []\n", ":\n")
    line_end = -1
    for match in _FLOW.finditer(text):
        if match.start() < line_end:
            continue
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.start())
        if line_end < 0:
            line_end = len(text)
        line = text[line_start:line_end]
        if line.count("[") + line.count("{") > line.count("]") + line.count("}") or _FLOW_MISPLACED.search(line):
            return True
        if " #" in line:  # a comment, or text, inside flow: the readers disagree (``{k:" 'a #b'}``)
            return True
        if "{" in line and not _keyed_flow_mappings(line):
            return True
    return False


def _multiline_quoted_key(text: str) -> bool:
    """A quoted scalar over several lines used as a key (``'a\n b': 1``): rapidyaml takes it, libyaml refuses
    implicit keys longer than a line. Seen where a quote and a colon end a key whose line holds no opening quote."""
    passed_until = {"'": -1, '"': -1}  # per quote: the end of the last line found fine (later keys on it are too)
    for match in _each_char_finditer(_QUOTED_KEY_END_TAIL, "'\"", text):  # per quote, in text order
        end = match.start()
        quote = text[end]
        if end < passed_until[quote]:
            continue
        line_start = text.rfind("\n", 0, end) + 1
        if text.count(quote, line_start, end + 1) < 2:
            return True
        line_end = text.find("\n", end)
        passed_until[quote] = line_end if line_end >= 0 else len(text)
    return False


def _content_after_node(text: str) -> bool:
    """More on a line after a quoted scalar or a flow collection that started a node (``- 'a' - b``, ``- {a: 1} b:``):
    libyaml refuses it, rapidyaml reads on. The closing quote or bracket is followed by text, and its line's first
    such quote or opening bracket starts a node (a quoted word inside a plain scalar, ``a == 'b' && c``, does not),
    or the line holds no opening one (the scalar began on a line above)."""
    for match in _each_char_finditer(_AFTER_NODE_TAIL, _NODE_CLOSERS, text):
        end = match.start()
        line_start = text.rfind("\n", 0, end) + 1
        closer = text[end]
        opener = {"]": "[", "}": "{"}.get(closer, closer)
        first = text.find(opener, line_start, end)
        if first < 0 or _NODE_START.search(text, line_start, first):
            return True
    return False


def _deeper_after_node(text: str) -> bool:
    """A line indented deeper than the one before, when that one ends with a quote or a closing bracket (a finished
    node: ``- 'a'`` then ``   b: 1``): libyaml refuses it, rapidyaml attaches it somewhere. (Also refused, needlessly,
    when the quote opens a scalar continued below; rare in manifests.)"""
    for match in _each_char_finditer(_NODE_END_LINE_TAIL, _NODE_CLOSERS, text):
        line = text[text.rfind("\n", 0, match.start()) + 1:match.start()]
        next_start = match.end()
        while next_start < len(text):  # the next line holding more than blanks or a comment
            next_end = text.find("\n", next_start)
            next_line = text[next_start:next_end if next_end >= 0 else len(text)]
            next_text = next_line.lstrip(" ")
            if next_text and next_text[0] != "#":
                if len(next_line) - len(next_text) > len(line) - len(line.lstrip(" ")):
                    return True
                break
            if next_end < 0:
                break
            next_start = next_end + 1
    return False


def _keyed_flow_mappings(line: str) -> bool:
    """Every entry of the line's flow mappings has a colon: an entry without (``{a, 80}``) is a key with a null value,
    read as libyaml resolves it (the int 80) by PyYAML but always as a string in JSON."""
    if line.count("{") == line.count("{}"):
        return True  # only empty mappings (10,000 lines of the 10k-pod bench)
    levels: list[list[Any]] = []  # per open collection: its bracket, whether its entry has a colon, is empty
    quote = ""
    previous = " "
    escaped = False
    for char in line:
        if quote:
            if escaped:
                escaped = False
            elif quote == '"' and char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
            continue
        if char in "'\"" and previous in " [{,:":  # elsewhere (``it's``) a quote is text
            quote = char
            if levels:
                levels[-1][2] = False
        elif char in "[{":
            if levels:
                levels[-1][2] = False
            levels.append([char, False, True])
        elif char in "]},":
            if levels:
                bracket, colon, empty = levels[-1]
                if bracket == "{" and not colon and not empty:
                    return False
                if char == ",":
                    levels[-1][1:] = [False, True]
                else:
                    levels.pop()
        elif char == ":":
            if levels:
                levels[-1][1] = True
        elif char == "#" and previous == " ":
            break
        elif char != " " and levels:
            levels[-1][2] = False
        previous = char
    return True


def _no_node_indicators(text: str) -> bool:
    """No anchor, alias, tag, explicit key or reserved indicator where a node starts (see ``_NODE_START``), and
    every block scalar header there well formed (rapidyaml takes ``|3.``, libyaml refuses it)."""
    # Each indicator character on its own (a memchr when absent): 1,600 in the 10k-pod bench (Calico's ``&&``),
    # 3 ms where one character class took 30.
    for match in _each_char_finditer("", _INDICATORS + "|>", text):
        start = match.start()
        well_formed_block = text[start] in "|>" and _BLOCK_HEADER.match(text, start)
        if not well_formed_block and _NODE_START.search(text, text.rfind("\n", 0, start) + 1, start):
            return False
    return True


_QUOTED = "\0"  # marks a quoted run among a word's runs (no stream read here holds a NUL: ``_lines_refused``)


def _runs(word: str, firsts: str) -> frozenset[str]:
    """The runs of a word that either reader might read as other than their own text (see the module's doc): plain
    ones, and marked with ``_QUOTED`` the texts of one-word quoted scalars (rapidyaml's JSON rewrites its float
    words even quoted: ``'.Inf'`` becomes ``".inf"``, a key too). ``firsts``: the characters such a run starts with.
    ``!``, ``&``, ``*`` (PyYAML's ``tag:yaml.org,2002:yaml`` resolver) are not among them: they start a node only as
    indicators, refused by ``_no_node_indicators``; elsewhere (``a && b``) they are inside a longer scalar."""
    found: set[str] = set()

    def quoted(run: str) -> None:  # a quoted scalar's start: the text up to its closing quote
        core = run[1:].split(run[0], 1)[0]
        if core and (core[0] in firsts or core.lower() in _WORDS):
            found.add(_QUOTED + core)

    for part in (_FLOW.split(word) if _FLOW.search(word) else (word,)):
        if not part or part == "-":
            continue  # a sequence's dash, not a scalar
        if part[0] in firsts or part.rstrip(":").lower() in _WORDS:
            found.add(part)
        if part[0] in "'\"":
            quoted(part)
        for glued in _GLUED.split(part)[1:]:  # JSON's ``"k":yes`` (in flow): a plain scalar after a quoted key
            run = glued.rstrip(":")
            if run and (run[0] in firsts or run.lower() in _WORDS):
                found.add(run)
            elif run and run[0] in "'\"":
                quoted(run)
    return frozenset(found)


# How a run is checked: alone in a block and a flow sequence (the blank: ``[key: ]`` is a pair in both readers),
# and a quoted word as a value and as a key, in both quoting styles.
_PLAIN_LAYOUTS = ("- {}\n", "- [{} ]\n")
_QUOTED_LAYOUTS = ("- '{}'\n", "- '{}': v\n", '- "{}"\n', '- "{}": v\n')


def _differing_runs(runs: set[str], reference: Callable[[str], list[Any]]) -> set[str]:
    """The runs (``_runs``) the two readers read differently, types included, in any of their layouts."""
    plain = sorted(run for run in runs if run[0] != _QUOTED)
    quoted = sorted(run[1:] for run in runs if run[0] == _QUOTED)
    differing = set()
    for layout in _PLAIN_LAYOUTS:
        differing |= _differing_in(layout, plain, reference)
    for layout in _QUOTED_LAYOUTS:
        differing |= {_QUOTED + run for run in _differing_in(layout, [r for r in quoted if layout[2] not in r],
                                                              reference)}
    return differing


def _differing_in(layout: str, runs: list[str], reference: Callable[[str], list[Any]]) -> set[str]:
    if not runs:
        return set()
    batch = "".join(layout.format(run) for run in runs)  # one document: a list of one item per run
    try:
        expected = reference(batch)
    except Exception:
        expected = None
    if expected is not None and len(expected) == 1 and type(expected[0]) is list and len(expected[0]) == len(runs):
        with _quiet_stderr():
            try:
                got = _ryml_documents(batch)
            except Exception:
                got = None
        if got is not None and len(got) == 1 and type(got[0]) is list and len(got[0]) == len(runs):
            return {run for run, a, b in zip(runs, expected[0], got[0], strict=True) if not _same(a, b)}
    # A run one reader refuses (``=``, ``1:2:x`` in flow...): each alone; both must refuse it, or agree.
    differing = set()
    for run in runs:
        text = layout.format(run)
        try:
            expected = reference(text)
        except Exception:
            expected = None
        with _quiet_stderr():
            try:
                got = _ryml_documents(text)
            except Exception:
                got = None
        if (expected is None) != (got is None) or (expected is not None and not _same(expected, got)):
            differing.add(run)
    return differing


def _same(a: Any, b: Any) -> bool:
    """Equal, types included (``True`` is not ``1``, ``1.0`` is not ``1``), keys in the same order."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return len(a) == len(b) and all(_same(ka, kb) and _same(va, vb)
                                        for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True))
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is float:
        return repr(a) == repr(b)
    return bool(a == b)


def _share_strings(documents: list[Any], shared: dict[str, str], limit: int) -> None:
    """One string object per distinct text (``shared``: text -> its object), as the libyaml reader makes them: json
    shares only the keys of one call. 10,000 pods' manifests hold 870,000 strings of 3,000 texts, 46 MB apart; the
    walk costs ~0.1 s. Done chunk by chunk, so that the next chunk's strings reuse the memory of the copies freed."""

    get = shared.get

    # A dict's values by key, a list's by index (json already shares keys); one walk for each, each told its
    # node's type by its caller: 7% fewer instructions than one walk asking each node's type (0.12 s of reading
    # the 10k-pod bench, 352,000 dicts and 116,000 lists).
    def walk_dict(node: dict[str, Any]) -> None:
        for slot, value in node.items():
            kind = type(value)
            if kind is str:
                known = get(value)
                if known is None:
                    if len(shared) < limit:
                        shared[value] = value
                else:
                    node[slot] = known
            elif kind is dict:
                walk_dict(value)
            elif kind is list:
                walk_list(value)

    def walk_list(node: list[Any]) -> None:
        for slot, value in enumerate(node):
            kind = type(value)
            if kind is dict:
                walk_dict(value)
            elif kind is str:
                known = get(value)
                if known is None:
                    if len(shared) < limit:
                        shared[value] = value
                else:
                    node[slot] = known
            elif kind is list:
                walk_list(value)

    walk_list(documents)


def _chunks(text: str, size: int) -> Iterator[str]:
    start = 0
    while len(text) - start > size:
        cut = text.find("\n---", start + size)
        while cut >= 0 and text[cut + 4:cut + 5] not in ("", " ", "\n"):
            cut = text.find("\n---", cut + 4)
        if cut < 0:
            break
        yield text[start:cut + 1]
        start = cut + 1
    yield text[start:]


class _JsonBuffer:
    """Where rapidyaml writes a piece's JSON, reused piece after piece: ``ryml.emit_json`` leaks the text it
    returns (0.15.2: 200 emits of 165 kB grow the process by 33 MB), emitting into a buffer of ours does not.

    The tree each piece is parsed into is reused too: a new tree grows to a piece's ~4,700 nodes by doubling,
    copying and clearing its node array at each step (a tenth of the reading's instructions on the 10k-pod bench,
    ~20 ms); a cleared tree keeps its capacity. Only for pieces of ordinary size: the tree of a piece over four
    times that (one large document, up to ``MAX_PIECE_CHARS``) is not kept for the pieces after it."""

    def __init__(self, piece_chars: int = CHUNK_CHARS) -> None:
        self.data = bytearray(1 << 18)
        self.tree: Any = None
        self.largest_kept = 4 * piece_chars  # a piece is cut at the first document end after piece_chars

    def parsed(self, text: str) -> Any:
        """``text`` parsed, in the reused tree when ``text`` is of a piece's ordinary size."""
        if len(text) > self.largest_kept:
            return ryml.parse_in_arena(text.encode())
        if self.tree is None:
            self.tree = ryml.Tree()
        else:
            self.tree.clear()  # rapidyaml parses into a tree's existing root: emptied first, capacity kept
            self.tree.clear_arena()
        return ryml.parse_in_arena(text.encode(), tree=self.tree)


def _ryml_documents(text: str, buffer: _JsonBuffer | None = None) -> list[Any] | None:
    buffer = buffer or _JsonBuffer()
    tree = buffer.parsed(text)
    root = tree.root_id()
    failed, size = ryml.emit_json_to_substr(tree, root, buffer.data)
    if failed:
        buffer.data = bytearray(size + (size >> 2))
        failed, size = ryml.emit_json_to_substr(tree, root, buffer.data)
        if failed:  # pragma: no cover - rapidyaml asked for more than it then wrote
            return None
    stream = tree.is_stream(root)
    # A piece's own tree is the large part (~19 bytes per byte of YAML): freed before its JSON is read.
    del tree
    data = json.loads(buffer.data[:size])
    if stream:
        return data if type(data) is list else None
    return [data]


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """rapidyaml prints its parse errors on fd 2 before raising; the fallback reports libyaml's instead."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
