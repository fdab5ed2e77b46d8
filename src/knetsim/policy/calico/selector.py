"""Calico's selector language, parsed by recursive descent and evaluated against label maps.

The grammar (Calico's ``libcalico-go/lib/selector`` tokenizer and parser, projectcalico/calico;
this is knetsim's own implementation of what they accept)::

    selector   := <empty> | or
    or         := and ( "||" and )*
    and        := operation ( "&&" operation )*
    operation  := "!"* ( "all()" | "global()" | "has(" LABEL ")" | "(" or ")"
                       | LABEL ( "==" | "!=" | "contains" | "starts with" | "ends with" ) STRING
                       | LABEL ( "in" | "not in" ) "{" [ STRING ( "," STRING )* ] "}" )
    LABEL      := [a-zA-Z0-9_./-]+
    STRING     := '"' any but '"' '"'  |  "'" any but "'" "'"

Facts that decide matches (the parser test table, ``parser_test.go``):

* leading ``!``s bind to the one operation that follows (``!a in {"a"}`` is ``!(a in {"a"})``) and
  pairs cancel; ``&&`` binds tighter than ``||``;
* a missing label satisfies ``!=`` and ``not in`` and nothing else;
* the empty selector (and one of whitespace only) is ``all()``; ``global()`` evaluates true for any
  label set (what it restricts, non-namespaced endpoints, is the caller's business);
* ``starts`` and ``with`` may be written together (``startswith``), as may ``ends``/``with``;
* strings have no escapes: a value holding a double quote is written in single quotes.

``canonical`` writes Calico's canonical form (``Selector.String()``): binary operators in
parentheses, ``in`` sets sorted and de-duplicated, double quotes unless the value holds one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache

Labels = Mapping[str, str]

_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-")
_SPACE = " \t"


class SelectorError(ValueError):
    """A selector Calico would refuse: ``field`` is where it was written, ``column`` where parsing stopped (1-based)."""

    def __init__(self, selector: str, reason: str, column: int, field: str = "") -> None:
        self.selector, self.reason, self.column, self.field = selector, reason, column, field
        super().__init__(self._text())

    def _text(self) -> str:
        where = f"{self.field}: " if self.field else ""
        quoted = '"' + self.selector.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return f"{where}Invalid value: {quoted}: invalid selector: {self.reason} (at column {self.column})"

    def at(self, field: str) -> SelectorError:
        """The same error, naming the field it was read from (``spec.ingress[0].source.selector``)."""
        return SelectorError(self.selector, self.reason, self.column, field)


# --- tokens -------------------------------------------------------------------------------------------------------

# Token kinds
LABEL, STRING, LBRACE, RBRACE, COMMA, EQ, NE, IN, NOT_IN, NOT, CONTAINS, STARTS, ENDS, ALL, GLOBAL, HAS, LPAREN, \
    RPAREN, AND, OR, EOF = ("label", "string", "{", "}", ",", "==", "!=", "in", "not in", "!", "contains",
                            "starts with", "ends with", "all()", "global()", "has()", "(", ")", "&&", "||", "end")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str
    value: str
    column: int  # 1-based, where it starts


def _identifier(text: str, at: int) -> int:
    """The end of the label name starting at ``at`` (``at`` itself: none)."""
    end = at
    while end < len(text) and text[end] in _LABEL_CHARS:
        end += 1
    return end


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in _SPACE:
        at += 1
    return at


def tokenize(text: str) -> list[Token]:
    out: list[Token] = []
    at = 0

    def fail(reason: str, where: int) -> SelectorError:
        return SelectorError(text, reason, where + 1)

    while True:
        at = _skip_space(text, at)
        if at >= len(text):
            out.append(Token(EOF, "", at + 1))
            return out
        start, char = at, text[at]
        after_label = bool(out) and out[-1].kind == LABEL
        if char in "(){},":
            out.append(Token({"(": LPAREN, ")": RPAREN, "{": LBRACE, "}": RBRACE, ",": COMMA}[char], char, at + 1))
            at += 1
        elif char in "\"'":
            end = text.find(char, at + 1)
            if end < 0:
                raise fail("unterminated string", start)
            out.append(Token(STRING, text[at + 1:end], at + 1))
            at = end + 1
        elif text.startswith("==", at):
            out.append(Token(EQ, "==", at + 1))
            at += 2
        elif char == "=":
            raise fail("expected ==", start)
        elif text.startswith("!=", at):
            out.append(Token(NE, "!=", at + 1))
            at += 2
        elif char == "!":
            out.append(Token(NOT, "!", at + 1))
            at += 1
        elif text.startswith("&&", at):
            out.append(Token(AND, "&&", at + 1))
            at += 2
        elif char == "&":
            raise fail("expected &&", start)
        elif text.startswith("||", at):
            out.append(Token(OR, "||", at + 1))
            at += 2
        elif char == "|":
            raise fail("expected ||", start)
        elif after_label:
            # After a label only an operator word may follow (a second label never does).
            at = _operator_word(text, at, out, fail)
        elif text.startswith(("has(", "all(", "global("), at):
            at = _function(text, at, out, fail)
        else:
            end = _identifier(text, at)
            if end == at:
                raise fail(f"unexpected character {char!r}", start)
            out.append(Token(LABEL, text[at:end], at + 1))
            at = end


def _operator_word(text: str, at: int, out: list[Token], fail: Callable[[str, int], SelectorError]) -> int:
    label = out[-1].value
    for word, kind in (("contains", CONTAINS), ("in", IN)):
        if text.startswith(word, at):
            out.append(Token(kind, word, at + 1))
            return at + len(word)
    for first, kind in (("starts", STARTS), ("ends", ENDS), ("not", NOT_IN)):
        if text.startswith(first, at):
            rest = _skip_space(text, at + len(first))
            second = "in" if kind == NOT_IN else "with"
            if text.startswith(second, rest):
                out.append(Token(kind, kind, at + 1))
                return rest + len(second)
    raise fail(f"unexpected characters after label {label!r}, was expecting an operator", at)


def _function(text: str, at: int, out: list[Token], fail: Callable[[str, int], SelectorError]) -> int:
    name = text[at:text.index("(", at)]
    inner = _skip_space(text, at + len(name) + 1)
    if name == "has":
        end = _identifier(text, inner)
        if end == inner:
            raise fail("no label name in has( expression", inner)
        close = _skip_space(text, end)
        if not text.startswith(")", close):
            raise fail("no closing ')' after has(", close)
        out.append(Token(HAS, text[inner:end], at + 1))
        return close + 1
    if not text.startswith(")", inner):
        raise fail(f"no closing ')' after {name}(", inner)
    out.append(Token(ALL if name == "all" else GLOBAL, f"{name}()", at + 1))
    return inner + 1


# --- the tree -----------------------------------------------------------------------------------------------------


def _quote(value: str) -> str:
    return f"'{value}'" if '"' in value else f'"{value}"'


@dataclass(frozen=True, slots=True)
class Node:
    """One node of a parsed selector: ``op`` names it, ``label``/``values``/``operands`` carry its parts."""

    op: str  # all() | global() | has() | == | != | contains | starts with | ends with | in | not in | ! | && | ||
    label: str = ""
    values: tuple[str, ...] = ()
    operands: tuple[Node, ...] = ()

    def matches(self, labels: Labels) -> bool:
        op = self.op
        if op == AND:
            return all(o.matches(labels) for o in self.operands)
        if op == OR:
            return any(o.matches(labels) for o in self.operands)
        if op == NOT:
            return not self.operands[0].matches(labels)
        if op in (ALL, GLOBAL):
            return True
        value = labels.get(self.label)
        if op == HAS:
            return value is not None
        if op == NE:
            return value != self.values[0]
        if op == NOT_IN:
            return value not in self.values
        if value is None:
            return False
        if op == EQ:
            return value == self.values[0]
        if op == IN:
            return value in self.values
        if op == CONTAINS:
            return self.values[0] in value
        if op == STARTS:
            return value.startswith(self.values[0])
        return value.endswith(self.values[0])  # ends with

    def canonical(self) -> str:
        op = self.op
        if op in (AND, OR):
            return "(" + f" {op} ".join(o.canonical() for o in self.operands) + ")"
        if op == NOT:
            return "!" + self.operands[0].canonical()
        if op in (ALL, GLOBAL):
            return op
        if op == HAS:
            return f"has({self.label})"
        if op in (IN, NOT_IN):
            return f"{self.label} {op} {{" + ", ".join(_quote(v) for v in self.values) + "}"
        return f"{self.label} {op} {_quote(self.values[0])}"

    def labels_read(self) -> frozenset[str]:
        """Every label name the selector looks at (a typo finder compares them with the labels in use)."""
        own = frozenset({self.label}) if self.label else frozenset()
        return own.union(*(o.labels_read() for o in self.operands))


_ALL = Node(ALL)
_COMPARE = frozenset({EQ, NE, CONTAINS, STARTS, ENDS})


class _Parser:
    def __init__(self, text: str, tokens: list[Token]) -> None:
        self.text, self.tokens, self.at = text, tokens, 0

    @property
    def token(self) -> Token:
        return self.tokens[self.at]

    def fail(self, reason: str, token: Token | None = None) -> SelectorError:
        return SelectorError(self.text, reason, (token or self.token).column)

    def or_expression(self) -> Node:
        operands = [self.and_expression()]
        while self.token.kind == OR:
            self.at += 1
            operands.append(self.and_expression())
        return operands[0] if len(operands) == 1 else Node(OR, operands=tuple(operands))

    def and_expression(self) -> Node:
        operands = [self.operation()]
        while self.token.kind == AND:
            self.at += 1
            operands.append(self.operation())
        return operands[0] if len(operands) == 1 else Node(AND, operands=tuple(operands))

    def operation(self) -> Node:
        negated = False
        while self.token.kind == NOT:
            negated = not negated
            self.at += 1
        node = self.term()
        return Node(NOT, operands=(node,)) if negated else node

    def term(self) -> Node:
        token = self.token
        if token.kind in (ALL, GLOBAL):
            self.at += 1
            return Node(token.kind)
        if token.kind == HAS:
            self.at += 1
            return Node(HAS, token.value)
        if token.kind == LPAREN:
            self.at += 1
            inner = self.or_expression()
            if self.token.kind != RPAREN:
                raise self.fail("expected )")
            self.at += 1
            return inner
        if token.kind != LABEL:
            raise self.fail("unexpected end of selector" if token.kind == EOF else f"unexpected {token.kind!r}")
        op = self.tokens[self.at + 1]
        self.at += 2
        if op.kind in _COMPARE:
            value = self.token
            if value.kind != STRING:
                raise self.fail(f"expected a quoted string after {op.kind}")
            self.at += 1
            return Node(op.kind, token.value, (value.value,))
        if op.kind in (IN, NOT_IN):
            if self.token.kind != LBRACE:
                raise self.fail(f"expected a set literal {{...}} after {op.kind}")
            self.at += 1
            values: list[str] = []
            while self.token.kind == STRING:
                values.append(self.token.value)
                self.at += 1
                if self.token.kind != COMMA:
                    break
                self.at += 1
            if self.token.kind != RBRACE:
                raise self.fail("expected }")
            self.at += 1
            return Node(op.kind, token.value, tuple(sorted(set(values))))
        raise self.fail(f"expected an operator after label {token.value!r}" if op.kind == EOF
                        else f"expected an operator after label {token.value!r}, not {op.kind!r}", op)


@lru_cache(maxsize=4096)
def parse(text: str) -> Node:
    """The selector's tree; SelectorError (without a field: ``.at(field)`` adds it) when Calico would refuse it."""
    tokens = tokenize(text)
    if tokens[0].kind == EOF:
        return _ALL
    parser = _Parser(text, tokens)
    node = parser.or_expression()
    if parser.token.kind != EOF:
        raise parser.fail(f"unexpected {parser.token.kind!r} at the end of the selector")
    return node


def parse_field(text: object, field: str) -> Node:
    """``parse`` of a value read from ``field``; a missing value is ``all()`` as Calico defaults it."""
    if text is None:
        return _ALL
    if not isinstance(text, str):
        raise SelectorError(str(text), f"expected a string, got {type(text).__name__}", 1, field)
    try:
        return parse(text)
    except SelectorError as exc:
        raise exc.at(field) from None


def canonical(text: str) -> str:
    return parse(text).canonical()


__all__ = ["Node", "SelectorError", "canonical", "parse", "parse_field", "tokenize"]
