"""Arithmetic ``$((...))`` and the numbers of ``${VAR:offset:length}``, as ash computes them: int64 that
wraps, C's division and shifts. A ``$x`` or ``$(...)`` inside is expanded by the caller's ``expand``
(expand.py, which calls this module and so cannot be imported by it)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from .ctx import Ctx, Node, ShellError, Unsupported
from .parse import text_of

# Expands one word to its text (expand.expand_word).
WordExpander = Callable[[Ctx, Node], Awaitable[str]]


def _int64(value: int) -> int:
    """ash computes in int64_t: results wrap around as two's complement does."""
    return ((value + 2**63) % 2**64) - 2**63


def _divide(x: int, y: int) -> int:
    """C's division: truncated toward zero, exactly (a float loses digits past 2**53)."""
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


def _power(x: int, y: int) -> int:
    if y < 0:
        raise ShellError("exponent less than 0", 2)
    return pow(x, y, 2**64)  # repeated int64 multiplication keeps exactly these bits


_ARITH_OPS: dict[str, Callable[[int, int], int]] = {
    "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
    "/": _divide, "%": lambda x, y: x - y * _divide(x, y), "**": _power,
    "<": lambda x, y: int(x < y), ">": lambda x, y: int(x > y), "<=": lambda x, y: int(x <= y),
    ">=": lambda x, y: int(x >= y), "==": lambda x, y: int(x == y), "!=": lambda x, y: int(x != y),
    "&&": lambda x, y: int(bool(x and y)), "||": lambda x, y: int(bool(x or y)),
    "&": lambda x, y: x & y, "|": lambda x, y: x | y, "^": lambda x, y: x ^ y,
    # x86-64 shifts by the count modulo 64 (a C shift by 64 or more is undefined)
    "<<": lambda x, y: x << (y & 63), ">>": lambda x, y: x >> (y & 63)}


async def arithmetic(ctx: Ctx, node: Node, expand: WordExpander) -> int:
    """The value of an arithmetic expression's tree."""
    return _int64(await _arith(ctx, node, expand))


async def _arith(ctx: Ctx, node: Node, expand: WordExpander) -> int:
    kind = node.type
    if kind == "number":
        text = text_of(node)
        try:
            return _int64(int(text, 0) if not re.fullmatch(r"0[0-7]+", text) else int(text, 8))
        except ValueError:
            raise ShellError(f"arithmetic syntax error: {text}", 2) from None
    if kind in ("variable_name", "word"):
        return arith_value(ctx, text_of(node))
    if kind in ("simple_expansion", "expansion", "command_substitution", "string"):
        return arith_value(ctx, await expand(ctx, node))
    if kind == "parenthesized_expression":
        return await arithmetic(ctx, node.named_children[0], expand)
    if kind == "unary_expression":
        op = next((c.type for c in node.children if not c.is_named), "")
        value = await arithmetic(ctx, node.named_children[0], expand)
        return _int64({"-": -value, "+": value, "!": int(not value), "~": ~value}.get(op, value))
    if kind == "binary_expression":
        left, right = node.named_children[0], node.named_children[-1]
        op = next((c.type for c in node.children if not c.is_named), "")
        if op == "=":
            value = await arithmetic(ctx, right, expand)
            ctx.set_var(text_of(left), str(value))
            return value
        a, b = await arithmetic(ctx, left, expand), await arithmetic(ctx, right, expand)
        if op in ("/", "%") and b == 0:
            raise ShellError("arithmetic syntax error: divide by zero", 2)
        if op not in _ARITH_OPS:
            raise Unsupported(f"the arithmetic operator `{op}`")
        return _int64(_ARITH_OPS[op](a, b))
    if kind == "ternary_expression":
        cond, yes, no = node.named_children[:3]
        return await arithmetic(ctx, yes if await arithmetic(ctx, cond, expand) else no, expand)
    raise Unsupported(f"the arithmetic `{text_of(node)}`")


def arith_value(ctx: Ctx, text: str, seen: frozenset[str] = frozenset()) -> int:
    text = text.strip()
    if not text:
        return 0
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        if text in seen:  # x=x: ash follows a variable's value only until it comes back to one
            raise ShellError("expression recursion loop detected", 2)
        return arith_value(ctx, ctx.env.get(text, "0"), seen | {text})
    try:
        return _int64(int(text))
    except ValueError:
        raise ShellError(f"arithmetic syntax error: {text}", 2) from None

