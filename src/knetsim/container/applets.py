"""busybox 1.36's text and system applets for the simulated shell, with busybox's output and errors.

Options are parsed as busybox's getopt32 does (GNU permutation; glibc's messages, then the
applet's usage, exit 1). An option busybox has that knetsim does not imitate is refused by
name (``head: option -c is not simulated by knetsim``) rather than ignored. Each applet reads
its FILE arguments from the container's simulated filesystem (``podfs``) or stdin.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import codecs
import datetime as dt
import getopt
import posixpath
import re
from collections import deque
from collections.abc import AsyncIterator, Iterable

from .podfs import FsError
from .shell import BUSYBOX_BANNER, FIELD_COST, Ctx, Unsupported, register

USAGE = {
    "head": "[OPTIONS] [FILE]...", "tail": "[OPTIONS] [FILE]...", "grep": "[-HhnlLoqvsrRiwFE] [-m N] [-A|B|C N] "
    "{ PATTERN | -e PATTERN... | -f FILE... } [FILE]...", "wc": "[-cmlwL] [FILE]...", "cut": "[OPTIONS] [FILE]...",
    "sort": "[-nrugMcszbdfiokt] [-o FILE] [-k START[.OFS][OPTS][,END[.OFS][OPTS]] [-t CHAR] [FILE]...",
    "tr": "[-cds] STRING1 [STRING2]", "uniq": "[-cduiz] [-f,s,w N] [FILE [OUTFILE]]",
    "seq": "[-w] [-s SEP] [FIRST [INC]] LAST", "sleep": "[N]...", "tee": "[-ai] [FILE]...",
    "cat": "[-nbvteA] [FILE]...", "echo": "[-neE] [ARG]...", "printf": "FORMAT [ARG]...",
    "base64": "[-d] [-w COL] [FILE]", "date": "[OPTIONS] [+FMT] [[-s] TIME]", "ls": "[-1AaCxdLHRFplinshrSXvctu] "
    "[-w WIDTH] [FILE]...", "mkdir": "[-m MODE] [-p] DIRECTORY...", "rm": "[-irf] FILE...",
    "touch": "[-c] [-d DATE] [-t DATE] [-r FILE] FILE...", "basename": "FILE [SUFFIX]", "dirname": "FILENAME",
    "awk": "[OPTIONS] [AWK_PROGRAM] [FILE]...", "sed": "[-i[SFX]] [-nrE] [-f FILE]... [-e CMD]... [FILE]...",
    "xargs": "[OPTIONS] [PROG ARGS]", "timeout": "[-s SIG] [-k KILL_SECS] SECS PROG ARGS",
    "wget": "[-cqS] [--spider] [-O FILE] [-o LOGFILE] [--header STR]\n\t[--post-data STR | --post-file FILE] "
            "[-Y on/off]\n\t[--no-check-certificate] [-P DIR] [-U AGENT] [-T SEC] URL...",
    "nc": "[OPTIONS] HOST PORT  - connect\nnc [OPTIONS] -l -p PORT [HOST] [PORT]  - listen",
    "nslookup": "[-type=QUERY_TYPE] [-debug] HOST [DNS_SERVER]",
    "tar": "c|x|t [-zJjahmvokO] [-f TARFILE] [-C DIR] [-T FILE] [-X FILE] [--exclude PATTERN]... [FILE]...",
}


async def usage(ctx: Ctx, name: str) -> int:
    await ctx.err(f"{BUSYBOX_BANNER}\n\nUsage: {name} {USAGE.get(name, '')}\n")
    return 1


async def options(ctx: Ctx, name: str, args: list[str], spec: str, longs: Iterable[str] = (),
                  simulated: str | None = None) -> tuple[list[tuple[str, str]], list[str]] | int:
    """getopt32: ``(options, operands)``, or the exit code after busybox's complaint.

    ``simulated`` lists the option letters knetsim imitates; the others of ``spec`` are refused."""
    try:
        opts, rest = getopt.gnu_getopt(args, spec, list(longs))
    except getopt.GetoptError as exc:
        opt = exc.opt
        if "requires argument" in exc.msg:
            msg = f"option requires an argument -- '{opt}'" if len(opt) == 1 else f"option '--{opt}' requires an " \
                                                                                  "argument"
        elif len(opt) == 1:
            msg = f"invalid option -- '{opt}'"
        else:
            msg = f"unrecognized option '--{opt}'"
        await ctx.err(f"{name}: {msg}\n")
        return await usage(ctx, name)
    if simulated is not None:
        for o, _ in opts:
            if o.startswith("--"):
                continue
            if o[1] not in simulated:
                await ctx.err(f"{name}: option {o} is not simulated by knetsim\n")
                return 1
    return opts, rest


async def read_inputs(ctx: Ctx, name: str, files: list[str]) -> tuple[list[tuple[str, str]], int]:
    """(file name, text) of each operand (``-`` or none: stdin), with busybox's message for a missing file."""
    out: list[tuple[str, str]] = []
    code = 0
    assert ctx.fs is not None
    for f in files or ["-"]:
        if f == "-":
            text = await ctx.read_stdin()
        else:
            try:
                text = ctx.fs.read(ctx.path(f))
            except FsError as exc:
                await ctx.err(f"{name}: can't open '{f}': {exc.strerror_text}\n" if exc.errno_name == "ENOENT" else
                              f"{name}: read error: {exc.strerror_text}\n")
                code = 1
                continue
        # The applets work line by line: what the lines will cost is counted before they are made.
        ctx.building(len(text) + FIELD_COST * text.count("\n"))
        out.append((f, text))
    return out, code


TICK_LINES = 1024  # lines an applet handles between two ticks of its process


async def stdin_text(ctx: Ctx) -> AsyncIterator[str]:
    """Standard input as text, chunk by chunk as it comes (a UTF-8 sequence cut between two chunks is
    decoded whole), for the applets that stream it as busybox's do: nothing more is held than one chunk."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while ctx.stdin is not None and (chunk := await ctx.stdin.chunk()):
        text = decoder.decode(chunk)
        if text:
            yield text
        await ctx.tick()
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


def _streams(files: list[str]) -> bool:
    return not files or files == ["-"]


def split_lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


@register("echo")
async def echo(ctx: Ctx, argv: list[str]) -> int:
    args = argv[1:]
    newline, escapes = True, False
    while args and re.fullmatch(r"-[neE]+", args[0]):
        flags = args.pop(0)[1:]
        newline = newline and "n" not in flags
        escapes = "e" in flags or (escapes and "E" not in flags)
    text = " ".join(args)
    if escapes:
        if "\\c" in text:
            text, newline = text.split("\\c", 1)[0], False
        text = _escapes(text)
    await ctx.out(text + ("\n" if newline else ""))
    return 0


def _escapes(text: str) -> str:
    table = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "e": "\x1b"}
    return re.sub(r"\\(0[0-7]{0,3}|x[0-9a-fA-F]{1,2}|.)", lambda m: (
        chr(int(m.group(1), 8)) if m.group(1).startswith("0") else chr(int(m.group(1)[1:], 16))
        if m.group(1).startswith("x") and len(m.group(1)) > 1 else table.get(m.group(1), "\\" + m.group(1))), text)


@register("printf")
async def printf(ctx: Ctx, argv: list[str]) -> int:
    if len(argv) < 2:
        return await usage(ctx, "printf")
    fmt, args = argv[1], argv[2:]
    out: list[str] = []
    spec = re.compile(r"%(%|[-+ #0]*\d*(?:\.\d+)?[sdiuxXoceEfgGb])")
    code = 0
    while True:
        used = 0
        pending = list(args)

        def one(m: re.Match[str], pending: list[str] = pending) -> str:
            nonlocal used, code
            conv = m.group(1)
            if conv == "%":
                return "%"
            arg = pending[used] if used < len(pending) else ""
            used += 1
            kind = conv[-1]
            # `%99999999999s` is a value that large: the process must be able to hold it first.
            ctx.building(sum(int(n) for n in re.findall(r"\d+", conv)) + len(arg))
            if kind in "sb":
                return ("%" + conv[:-1] + "s") % (_escapes(arg) if kind == "b" else arg)
            if kind == "c":
                return arg[:1]
            try:
                number: float = float(arg or 0) if kind in "eEfgG" else int(arg or 0, 0)
            except ValueError:
                code = 1
                number = 0
            return ("%" + conv.replace("u", "d")) % number
        out.append(_escapes(spec.sub(one, fmt)))
        args = args[used:]
        if not args or not used:
            break
    await ctx.out("".join(out))
    return code


@register("cat")
async def cat(ctx: Ctx, argv: list[str]) -> int:
    parsed = await options(ctx, "cat", argv[1:], "nbvteAu", simulated="nu")
    if isinstance(parsed, int):
        return parsed
    opts, files = parsed
    number = any(o == "-n" for o, _ in opts)
    if not files and not number and ctx.stdin is not None:
        while chunk := await ctx.stdin.chunk():  # streams: `cat` in a pipe passes data on as it comes
            await ctx.out(chunk.decode(errors="replace"))
        return 0
    inputs, code = await read_inputs(ctx, "cat", files)
    n = 0
    for _name, text in inputs:
        if number:
            lines = split_lines(text)
            text = "".join(f"{(n := n + 1):6d}\t{line}" for line in lines)
        await ctx.out(text)
    return code


def _count(value: str, name: str) -> int | None:
    m = re.fullmatch(r"([-+]?)(\d+)([bkm]?)", value)
    if m is None:
        return None
    mult = {"": 1, "b": 512, "k": 1024, "m": 1 << 20}[m.group(3)]
    return int(m.group(2)) * mult * (-1 if m.group(1) == "-" else 1)


def _legacy_count(args: list[str]) -> list[str]:
    # `head -1`, `tail -5`: the obsolete count form busybox still accepts as -n N.
    if args and re.fullmatch(r"-\d+", args[0]):
        return ["-n", args[0][1:], *args[1:]]
    return args


@register("head")
async def head(ctx: Ctx, argv: list[str]) -> int:
    parsed = await options(ctx, "head", _legacy_count(argv[1:]), "n:c:qv", simulated="ncqv")
    if isinstance(parsed, int):
        return parsed
    opts, files = parsed
    lines, chars = 10, None
    for o, v in opts:
        count = _count(v, "head") if o in ("-n", "-c") else 0
        if count is None:
            await ctx.err(f"head: invalid number '{v}'\n")
            return 1
        if o == "-n":
            lines = count
        elif o == "-c":
            chars = count
    headers = (len(files) > 1 and not any(o == "-q" for o, _ in opts)) or any(o == "-v" for o, _ in opts)
    if not files and ctx.stdin is not None and chars is None and lines >= 0:
        # Stop reading once enough lines came: the writer of a pipe then gets SIGPIPE, as with busybox.
        taken = 0
        while taken < lines:
            line = await ctx.stdin.line()
            if line is None:
                break
            await ctx.out(line.decode(errors="replace"))
            taken += 1
        return 0
    inputs, code = await read_inputs(ctx, "head", files)
    for i, (name, text) in enumerate(inputs):
        if headers:
            await ctx.out(f"{chr(10) if i else ''}==> {'standard input' if name == '-' else name} <==\n")
        if chars is not None:
            data = text.encode()
            await ctx.out(data[:chars].decode(errors="replace"))
            continue
        all_lines = split_lines(text)
        await ctx.out("".join(all_lines[:lines]))
    return code


@register("tail")
async def tail(ctx: Ctx, argv: list[str]) -> int:
    parsed = await options(ctx, "tail", _legacy_count(argv[1:]), "n:c:qvfFs:", simulated="ncqv")
    if isinstance(parsed, int):
        return parsed
    opts, files = parsed
    lines, chars, from_start = 10, None, False
    for o, v in opts:
        if o in ("-n", "-c"):
            count = _count(v, "tail")
            if count is None:
                await ctx.err(f"tail: invalid number '{v}'\n")
                return 1
            from_start = v.startswith("+")
            if o == "-n":
                lines = abs(count)
            else:
                chars = abs(count)
    headers = (len(files) > 1 and not any(o == "-q" for o, _ in opts)) or any(o == "-v" for o, _ in opts)
    if _streams(files) and chars is None and not from_start and not headers:
        # The last lines of a stream, kept as it goes: busybox's tail holds no more than them.
        kept: deque[str] = deque()
        size, partial = 0, ""
        async for text in stdin_text(ctx):
            pieces = (partial + text).split("\n")
            partial = pieces.pop()
            for piece in pieces[-(lines or 1):]:
                kept.append(piece + "\n")
                size += len(piece) + 1
                if len(kept) > (lines or 1):
                    size -= len(kept.popleft())
            ctx.building(size + len(partial))  # what it holds: the lines kept, the line not ended yet
        if partial:
            kept.append(partial)
            if len(kept) > (lines or 1):
                kept.popleft()
        await ctx.out("".join(kept) if lines else "")
        return 0
    inputs, code = await read_inputs(ctx, "tail", files)
    for i, (name, text) in enumerate(inputs):
        if headers:
            await ctx.out(f"{chr(10) if i else ''}==> {'standard input' if name == '-' else name} <==\n")
        if chars is not None:
            data = text.encode()
            chunk = data[chars - 1:] if from_start else (data[-chars:] if chars else b"")
            await ctx.out(chunk.decode(errors="replace"))
            continue
        all_lines = split_lines(text)
        if from_start:
            await ctx.out("".join(all_lines[max(lines - 1, 0):]))
        else:
            await ctx.out("".join(all_lines[-lines:] if lines else []))
    return code


@register("grep", "egrep", "fgrep")
async def grep(ctx: Ctx, argv: list[str]) -> int:
    name = argv[0].rsplit("/", 1)[-1]
    parsed = await options(ctx, name, argv[1:], "HhnlLoqvsriwxcFEe:f:m:A:B:C:z",
                           simulated="HhnlLoqvsiwxcFEem")
    if isinstance(parsed, int):
        return parsed
    opts, rest = parsed
    flags = {o for o, _ in opts}
    patterns = [v for o, v in opts if o == "-e"]
    if not patterns:
        if not rest:
            return await usage(ctx, "grep")
        patterns = [rest.pop(0)]
    fixed = "-F" in flags or name == "fgrep"
    extended = "-E" in flags or name == "egrep"
    regexes = []
    for p in patterns:
        try:
            source = re.escape(p) if fixed else _posix_regex(p, extended)
            if "-w" in flags:
                source = rf"(?<![\w]){source}(?![\w])"
            if "-x" in flags:
                source = rf"^(?:{source})$"
            regexes.append(re.compile(source, re.I if "-i" in flags else 0))
        except re.error:
            await ctx.err(f"{name}: bad regex '{p}'\n")
            return 2
    limit = int(dict(opts)["-m"]) if "-m" in flags and dict(opts)["-m"].isdigit() else None
    inputs, missing = await read_inputs(ctx, name, rest) if "-s" not in flags else (await _quiet_inputs(ctx, rest))
    show_names = ("-H" in flags or len(inputs) > 1) and "-h" not in flags
    found = False
    for fname, text in inputs:
        label = "(standard input)" if fname == "-" else fname
        count = 0
        for number, line in enumerate(text.splitlines(), 1):
            if number % TICK_LINES == 0:
                await ctx.tick()
            hits = [m for rx in regexes for m in rx.finditer(line)] if "-o" in flags else []
            matched = any(rx.search(line) for rx in regexes)
            if matched == ("-v" in flags):
                continue
            count += 1
            found = True
            if "-q" in flags:
                return 0
            if "-l" in flags or "-L" in flags or "-c" in flags:
                if limit is not None and count >= limit:
                    break
                continue
            prefix = (f"{label}:" if show_names else "") + (f"{number}:" if "-n" in flags else "")
            if "-o" in flags and "-v" not in flags:
                for m in sorted(hits, key=lambda m: m.start()):
                    if m.group(0):
                        await ctx.out(f"{prefix}{m.group(0)}\n")
            else:
                await ctx.out(f"{prefix}{line}\n")
            if limit is not None and count >= limit:
                break
        if "-c" in flags:
            await ctx.out(f"{label + ':' if show_names else ''}{count}\n")
        elif ("-l" in flags and count) or ("-L" in flags and not count):
            await ctx.out(f"{label}\n")
    if missing:
        return 2
    return 0 if found else 1


async def _quiet_inputs(ctx: Ctx, files: list[str]) -> tuple[list[tuple[str, str]], int]:
    async def drop(_text: str) -> None:
        return None
    return await read_inputs(ctx.with_io(err=drop), "grep", files)


def _posix_regex(pattern: str, extended: bool) -> str:
    """POSIX BRE/ERE → Python: in a BRE ``\\(`` ``\\)`` ``\\{`` ``\\}`` ``\\|`` are the operators."""
    classes = {"[:alpha:]": "a-zA-Z", "[:digit:]": "0-9", "[:alnum:]": "a-zA-Z0-9", "[:space:]": r"\s",
               "[:upper:]": "A-Z", "[:lower:]": "a-z", "[:punct:]": r"!-/:-@\[-`{-~", "[:xdigit:]": "0-9a-fA-F",
               "[:blank:]": r" \t"}
    for k, v in classes.items():
        pattern = pattern.replace(k, v)
    if extended:
        return pattern
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append(nxt if nxt in "(){}|+?" else "\\" + nxt)
            i += 2
            continue
        out.append("\\" + ch if ch in "(){}|+?" else ch)
        i += 1
    return "".join(out)


@register("wc")
async def wc(ctx: Ctx, argv: list[str]) -> int:
    parsed = await options(ctx, "wc", argv[1:], "lwmcL")
    if isinstance(parsed, int):
        return parsed
    opts, files = parsed
    kinds = [k for k in "lwmcL" if f"-{k}" in {o for o, _ in opts}] or ["l", "w", "c"]
    order = [k for k in "lwmcL" if k in kinds]
    if _streams(files):
        inputs, code = [("-", "")], 0
        counts = await _wc_stream(ctx)
    else:
        inputs, code = await read_inputs(ctx, "wc", files)
        counts = None
    single = len(order) == 1 and len(inputs) <= 1
    totals = dict.fromkeys(order, 0)
    for name, text in inputs:
        if counts is None or name != "-" or not _streams(files):
            counts = {"l": text.count("\n"), "w": len(text.split()), "m": len(text), "c": len(text.encode()),
                      "L": max((len(x) for x in text.split("\n")), default=0)}
        cells = [str(counts[k]) if single else f"{counts[k]:9d}" for k in order]
        line = " ".join(cells) if not single else cells[0]
        await ctx.out(line + ("\n" if name == "-" else f" {name}\n"))
        for k in order:
            totals[k] += counts[k]
    if len(inputs) > 1:
        await ctx.out(" ".join(f"{totals[k]:9d}" for k in order) + " total\n")
    return code


async def _wc_stream(ctx: Ctx) -> dict[str, int]:
    """wc's counts over standard input as it streams (``seq 1 100000000 | wc -l`` holds one chunk)."""
    counts = {"l": 0, "w": 0, "m": 0, "c": 0, "L": 0}
    in_word, line = False, 0
    async for text in stdin_text(ctx):
        counts["l"] += text.count("\n")
        words = len(text.split())
        if in_word and words and not text[0].isspace():
            words -= 1  # a word cut between two chunks is one word
        counts["w"] += words
        in_word = not text[-1].isspace()
        counts["m"] += len(text)
        counts["c"] += len(text.encode())
        parts = text.split("\n")
        line += len(parts[0])
        for part in parts[1:]:
            counts["L"] = max(counts["L"], line)
            line = len(part)
    counts["L"] = max(counts["L"], line)
    return counts


def _ranges(spec: str) -> list[tuple[int, int]] | None:
    out = []
    for item in spec.split(","):
        m = re.fullmatch(r"(\d*)-?(\d*)", item)
        if m is None or not item or item == "-":
            return None
        lo = int(m.group(1)) if m.group(1) else 1
        hi = int(m.group(2)) if m.group(2) else (lo if "-" not in item else 1 << 30)
        if lo < 1:
            return None
        out.append((lo, hi))
    return out


@register("cut")
async def cut(ctx: Ctx, argv: list[str]) -> int:
    parsed = await options(ctx, "cut", argv[1:], "b:c:d:f:snO:DF:", simulated="bcdfsn")
    if isinstance(parsed, int):
        return parsed
    opts, files = parsed
    o = dict(opts)
    spec = o.get("-f") or o.get("-c") or o.get("-b")
    if spec is None:
        await ctx.err("cut: expected a list of bytes, characters, or fields\n")
        return 1
    ranges = _ranges(spec)
    if ranges is None:
        await ctx.err(f"cut: invalid range '{spec}'\n" if "-f" in o else "cut: invalid byte or character range\n")
        return 1
    delim = o.get("-d", "\t")
    if len(delim) != 1:
        await ctx.err("cut: the delimiter must be a single character\n")
        return 1
    inputs, code = await read_inputs(ctx, "cut", files)

    def pick(items: list[str]) -> list[str]:
        return [x for i, x in enumerate(items, 1) if any(lo <= i <= hi for lo, hi in ranges)]
    for _name, text in inputs:
        for number, line in enumerate(text.splitlines(), 1):
            if number % TICK_LINES == 0:
                await ctx.tick()
            if "-f" in o:
                if delim not in line:
                    if "-s" not in o:
                        await ctx.out(line + "\n")
                    continue
                await ctx.out(delim.join(pick(line.split(delim))) + "\n")
            else:
                await ctx.out("".join(pick(list(line))) + "\n")
    return code


@register("sort")
async def sort(ctx: Ctx, argv: list[str]) -> int:
    parsed = await options(ctx, "sort", argv[1:], "nrufbk:t:o:cgMsdzVhi", simulated="nrufbkt")
    if isinstance(parsed, int):
        return parsed
    opts, files = parsed
    flags = {o for o, _ in opts}
    o = dict(opts)
    inputs, code = await read_inputs(ctx, "sort", files)
    lines = [line for _n, text in inputs for line in text.splitlines()]
    sep = o.get("-t")
    key_spec = o.get("-k")

    def key_text(line: str) -> str:
        if not key_spec:
            return line
        m = re.fullmatch(r"(\d+)(?:,(\d+))?[a-z]*", key_spec)
        if m is None:
            return line
        fields = line.split(sep) if sep else line.split()
        start = int(m.group(1)) - 1
        end = int(m.group(2)) if m.group(2) else len(fields)
        return (sep or " ").join(fields[start:end])

    def key(line: str) -> tuple[object, ...]:
        text = key_text(line)
        if "-b" in flags:
            text = text.lstrip()
        if "-n" in flags:
            m = re.match(r"\s*(-?\d+(?:\.\d+)?)", text)
            return (float(m.group(1)) if m else 0.0, line)
        return ((text.lower() if "-f" in flags else text), line)
    lines.sort(key=key, reverse="-r" in flags)
    if "-u" in flags:
        seen: set[object] = set()
        unique = []
        for line in lines:
            k = key(line)[0]
            if k not in seen:
                seen.add(k)
                unique.append(line)
        lines = unique
    await ctx.out("".join(line + "\n" for line in lines))
    return code


@register("uniq")
async def uniq(ctx: Ctx, argv: list[str]) -> int:
    parsed = await options(ctx, "uniq", argv[1:], "cduizf:s:w:", simulated="cdui")
    if isinstance(parsed, int):
        return parsed
    opts, files = parsed
    flags = {o for o, _ in opts}
    inputs, code = await read_inputs(ctx, "uniq", files[:1])
    groups: list[list[str]] = []
    for _n, text in inputs:
        for number, line in enumerate(text.splitlines(), 1):
            if number % TICK_LINES == 0:
                await ctx.tick()
            same = groups and (groups[-1][0].lower() == line.lower() if "-i" in flags else groups[-1][0] == line)
            if same:
                groups[-1].append(line)
            else:
                groups.append([line])
    for g in groups:
        if ("-d" in flags and len(g) < 2) or ("-u" in flags and len(g) > 1):
            continue
        await ctx.out((f"{len(g):7d} " if "-c" in flags else "") + g[0] + "\n")
    return code


def _tr_set(spec: str) -> str | None:
    spec = _escapes(spec)
    classes = {"[:alpha:]": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "[:digit:]": "0123456789",
               "[:upper:]": "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "[:lower:]": "abcdefghijklmnopqrstuvwxyz",
               "[:space:]": " \t\n\r\f\v", "[:blank:]": " \t",
               "[:alnum:]": "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"}
    out = []
    i = 0
    while i < len(spec):
        for k, v in classes.items():
            if spec.startswith(k, i):
                out.append(v)
                i += len(k)
                break
        else:
            if i + 2 < len(spec) and spec[i + 1] == "-":
                lo, hi = spec[i], spec[i + 2]
                if ord(hi) < ord(lo):
                    return None
                out.append("".join(chr(c) for c in range(ord(lo), ord(hi) + 1)))
                i += 3
            else:
                out.append(spec[i])
                i += 1
    return "".join(out)


@register("tr")
async def tr(ctx: Ctx, argv: list[str]) -> int:
    parsed = await options(ctx, "tr", argv[1:], "cCds")
    if isinstance(parsed, int):
        return parsed
    opts, sets = parsed
    flags = {o for o, _ in opts}
    if not sets or ("-d" not in flags and "-s" not in flags and len(sets) < 2):
        return await usage(ctx, "tr")
    if "-c" in flags or "-C" in flags:
        raise Unsupported("`tr -c`")
    first = _tr_set(sets[0])
    second = _tr_set(sets[1]) if len(sets) > 1 else ""
    if first is None or second is None:
        await ctx.err("tr: range-endpoints are in reverse collating sequence order\n")
        return 1
    text = await ctx.read_stdin()
    if "-d" in flags:
        text = text.translate({ord(c): None for c in first})
        squeeze = second
    else:
        if second:
            second = second + second[-1] * max(0, len(first) - len(second))
            text = text.translate({ord(a): b for a, b in zip(first, second, strict=False)})
        squeeze = second or first
    if "-s" in flags and squeeze:
        text = re.sub("([" + re.escape(squeeze) + r"])\1+", r"\1", text)
    await ctx.out(text)
    return 0


SEQ_CHUNK = 2048  # numbers per write: a pipe's reader and the CPU quota pace a long sequence


@register("seq")
async def seq(ctx: Ctx, argv: list[str]) -> int:
    args = argv[1:]
    sep, width = "\n", False
    while args and args[0] in ("-w", "-s") and not re.fullmatch(r"-\d.*", args[0]):
        flag = args.pop(0)
        if flag == "-w":
            width = True
        elif args:
            sep = args.pop(0)
    try:
        nums = [int(a) for a in args]
    except ValueError:
        bad = next(a for a in args if not re.fullmatch(r"-?\d+", a))
        await ctx.err(f"seq: invalid number '{bad}'\n")
        return 1
    if not 1 <= len(nums) <= 3:
        return await usage(ctx, "seq")
    first, inc, last = (1, 1, nums[0]) if len(nums) == 1 else (nums[0], 1, nums[1]) if len(nums) == 2 else nums
    if inc == 0:
        return 1
    values = range(first, last + (1 if inc > 0 else -1), inc)  # lazily: `seq 1 100000000` streams
    if not values:
        return 0
    pad = max(len(str(values[0])), len(str(values[-1]))) if width else 0
    for start in range(0, len(values), SEQ_CHUNK):
        chunk = values[start:start + SEQ_CHUNK]
        end = "\n" if start + SEQ_CHUNK >= len(values) else sep
        await ctx.out(sep.join(str(v).zfill(pad) for v in chunk) + end)
        await ctx.tick()
    return 0


@register("hostname")
async def hostname(ctx: Ctx, argv: list[str]) -> int:
    if "-i" in argv:
        await ctx.out(f"{ctx.pod.pod_ip}\n")
    else:
        spec = ctx.pod.raw.get("spec", {})
        # A hostNetwork pod shares the node's UTS namespace (kubectl debug node/NAME: the node's name).
        node = ctx.pod.node_name if spec.get("hostNetwork") else None
        await ctx.out(f"{node or spec.get('hostname') or ctx.pod.name}\n")
    return 0


@register("env", "printenv")
async def env(ctx: Ctx, argv: list[str]) -> int:
    from .shell import run_argv

    args = argv[1:]
    if argv[0] == "printenv" and args:
        values = [ctx.env[a] for a in args if a in ctx.env]
        await ctx.out("".join(v + "\n" for v in values))
        return 0 if len(values) == len(args) else 1
    extra = {}
    while args and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", args[0]):
        k, v = args.pop(0).split("=", 1)
        extra[k] = v
    if args and args[0].startswith("-"):
        raise Unsupported(f"`env {args[0]}`")
    if args:
        return await run_argv(ctx.with_io(env={**ctx.env, **extra}), args)
    await ctx.out("".join(f"{k}={v}\n" for k, v in sorted({**ctx.exported_env, **extra}.items())))
    return 0


@register("pwd")
async def pwd(ctx: Ctx, argv: list[str]) -> int:
    await ctx.out(ctx.cwd + "\n")
    return 0


@register("sleep")
async def sleep(ctx: Ctx, argv: list[str]) -> int:
    if len(argv) < 2:
        return await usage(ctx, "sleep")
    total = 0.0
    for arg in argv[1:]:
        if arg in ("inf", "infinity"):
            await asyncio.Event().wait()  # never set: sleeps until the pod (or the session) goes away
        m = re.fullmatch(r"(\d+(?:\.\d+)?|\.\d+)([smhd]?)", arg)
        if not m:
            await ctx.err(f"sleep: invalid number '{arg}'\n")
            return 1
        total += float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    await asyncio.sleep(total)
    return 0


@register("test", "[", "[[")
async def test(ctx: Ctx, argv: list[str]) -> int:
    args = argv[1:]
    if argv[0] in ("[", "[["):
        closer = "]" if argv[0] == "[" else "]]"
        if not args or args[-1] != closer:
            await ctx.err(f"sh: missing {closer}\n")
            return 2
        args = args[:-1]
    try:
        return 0 if _test(ctx, args) else 1
    except ValueError as exc:
        await ctx.err(f"sh: {exc}\n")
        return 2


def _number(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"{text}: bad number") from None


def _test(ctx: Ctx, args: list[str]) -> bool:
    assert ctx.fs is not None
    if not args:
        return False
    if args[0] == "!" and len(args) > 1:
        return not _test(ctx, args[1:])
    for joiner in ("-o", "||"):
        if joiner in args[1:-1]:
            i = args.index(joiner, 1)
            return _test(ctx, args[:i]) or _test(ctx, args[i + 1:])
    for joiner in ("-a", "&&"):
        if joiner in args[1:-1]:
            i = args.index(joiner, 1)
            return _test(ctx, args[:i]) and _test(ctx, args[i + 1:])
    if args[0] == "(" and args[-1] == ")":
        return _test(ctx, args[1:-1])
    if len(args) == 1:
        return args[0] != ""
    if len(args) == 2:
        op, value = args
        path = ctx.path(value)
        unary = {"-n": lambda: value != "", "-z": lambda: value == "", "-e": lambda: ctx.fs.exists(path),
                 "-f": lambda: ctx.fs.exists(path) and not ctx.fs.is_dir(path), "-d": lambda: ctx.fs.is_dir(path),
                 "-s": lambda: bool(ctx.fs.exists(path) and not ctx.fs.is_dir(path) and _size(ctx, path)),
                 "-r": lambda: ctx.fs.exists(path), "-w": lambda: ctx.fs.exists(path),
                 "-x": lambda: ctx.fs.is_dir(path) or posixpath.basename(path) in ("sh",)}
        if op in unary:
            return bool(unary[op]())  # type: ignore[no-untyped-call]
        raise ValueError(f"{op}: unknown operand")
    if len(args) == 3:
        a, op, b = args
        strings = {"=": a == b, "==": a == b, "!=": a != b, "<": a < b, ">": a > b}
        if op in strings:
            return strings[op]
        numeric = {"-eq": int.__eq__, "-ne": int.__ne__, "-lt": int.__lt__, "-le": int.__le__, "-gt": int.__gt__,
                   "-ge": int.__ge__}
        if op in numeric:
            return bool(numeric[op](_number(a), _number(b)))
        raise ValueError(f"{op}: unknown operand")
    raise ValueError(f"{args[0]}: unknown operand")


def _size(ctx: Ctx, path: str) -> int:
    assert ctx.fs is not None
    try:
        return len(ctx.fs.read(path))
    except FsError:
        return 0


@register("tee")
async def tee(ctx: Ctx, argv: list[str]) -> int:
    parsed = await options(ctx, "tee", argv[1:], "ai")
    if isinstance(parsed, int):
        return parsed
    opts, files = parsed
    assert ctx.fs is not None
    append = any(o == "-a" for o, _ in opts)
    code = 0
    targets = []
    for f in files:
        try:
            ctx.fs.write(ctx.path(f), "", append=append)
            targets.append(ctx.path(f))
        except FsError as exc:
            await ctx.err(f"tee: {f}: {exc.strerror_text}\n")
            code = 1
    while ctx.stdin is not None and (chunk := await ctx.stdin.chunk()):
        text = chunk.decode(errors="replace")
        for t in targets:
            ctx.fs.write(t, text, append=True)
        await ctx.out(text)
    return code


@register("basename")
async def basename(ctx: Ctx, argv: list[str]) -> int:
    if len(argv) < 2:
        return await usage(ctx, "basename")
    base = posixpath.basename(argv[1].rstrip("/")) or "/"
    if len(argv) > 2 and base.endswith(argv[2]) and base != argv[2]:
        base = base[: -len(argv[2])]
    await ctx.out(base + "\n")
    return 0


@register("dirname")
async def dirname(ctx: Ctx, argv: list[str]) -> int:
    if len(argv) < 2:
        return await usage(ctx, "dirname")
    await ctx.out((posixpath.dirname(argv[1].rstrip("/")) or ".") + "\n")
    return 0


@register("id")
async def id_(ctx: Ctx, argv: list[str]) -> int:
    if len(argv) > 1 and argv[1] in ("-u", "-g"):
        await ctx.out("0\n")
    elif len(argv) > 1 and argv[1] == "-un":
        await ctx.out("root\n")
    else:
        await ctx.out("uid=0(root) gid=0(root) groups=0(root),10(wheel)\n")
    return 0


@register("whoami", "logname")
async def whoami(ctx: Ctx, argv: list[str]) -> int:
    await ctx.out("root\n")
    return 0


@register("uname")
async def uname(ctx: Ctx, argv: list[str]) -> int:
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-"))
    if not flags or flags == "s":
        await ctx.out("Linux\n")
        return 0
    if flags in ("n",):
        await ctx.out(f"{ctx.pod.name}\n")
        return 0
    raise Unsupported(f"`uname -{flags}` (the node's kernel is not simulated)")


@register("date")
async def date(ctx: Ctx, argv: list[str]) -> int:
    args = argv[1:]
    utc = "-u" in args
    args = [a for a in args if a != "-u"]
    now = dt.datetime.now(dt.UTC)
    if not args:
        await ctx.out(now.strftime("%a %b %e %H:%M:%S UTC %Y") + "\n")
        return 0
    if len(args) == 1 and args[0].startswith("+"):
        await ctx.out(now.strftime(args[0][1:]) + "\n")
        return 0
    del utc
    raise Unsupported(f"`date {' '.join(args)}`")


@register("ls")
async def ls(ctx: Ctx, argv: list[str]) -> int:
    parsed = await options(ctx, "ls", argv[1:], "1AaCxdLHRFplinshrSXvctuw:", simulated="1aAdF")
    if isinstance(parsed, int):
        return parsed
    opts, paths = parsed
    flags = {o for o, _ in opts}
    assert ctx.fs is not None
    code = 0
    entries: list[str] = []
    dirs: list[str] = []
    for p in paths or ["."]:
        full = ctx.path(p)
        if not ctx.fs.exists(full):
            await ctx.err(f"ls: {p}: No such file or directory\n")
            code = 1
        elif ctx.fs.is_dir(full) and "-d" not in flags:
            dirs.append(p)
        else:
            entries.append(p)
    out = [e + "\n" for e in sorted(entries)]
    for i, d in enumerate(dirs):
        names = ctx.fs.listdir(ctx.path(d))
        if "-a" in flags:
            names = [".", "..", *names]
        if len(dirs) + len(entries) > 1:
            out.append(f"{chr(10) if out else ''}{d}:\n")
        for n in names:
            mark = "/" if "-F" in flags and ctx.fs.is_dir(ctx.path(posixpath.join(d, n))) else ""
            out.append(f"{n}{mark}\n")
        del i
    await ctx.out("".join(out))
    return code


@register("mkdir")
async def mkdir(ctx: Ctx, argv: list[str]) -> int:
    parsed = await options(ctx, "mkdir", argv[1:], "pm:v", simulated="p")
    if isinstance(parsed, int):
        return parsed
    opts, dirs = parsed
    assert ctx.fs is not None
    code = 0
    for d in dirs:
        try:
            ctx.fs.mkdir(ctx.path(d), parents=any(o == "-p" for o, _ in opts))
        except FsError as exc:
            await ctx.err(f"mkdir: can't create directory '{d}': {exc.strerror_text}\n")
            code = 1
    return code


@register("rm")
async def rm(ctx: Ctx, argv: list[str]) -> int:
    parsed = await options(ctx, "rm", argv[1:], "irfR", simulated="f")
    if isinstance(parsed, int):
        return parsed
    opts, files = parsed
    force = any(o == "-f" for o, _ in opts)
    assert ctx.fs is not None
    code = 0
    for f in files:
        try:
            ctx.fs.remove(ctx.path(f))
        except FsError as exc:
            if exc.errno_name == "ENOENT" and force:
                continue
            await ctx.err(f"rm: can't remove '{f}': {exc.strerror_text}\n")
            code = 1
    return code


@register("touch")
async def touch(ctx: Ctx, argv: list[str]) -> int:
    parsed = await options(ctx, "touch", argv[1:], "cd:t:r:h", simulated="c")
    if isinstance(parsed, int):
        return parsed
    _opts, files = parsed
    assert ctx.fs is not None
    code = 0
    for f in files:
        path = ctx.path(f)
        if ctx.fs.exists(path):
            continue
        try:
            ctx.fs.write(path, "")
        except FsError as exc:
            await ctx.err(f"touch: {f}: {exc.strerror_text}\n")
            code = 1
    return code


@register("base64")
async def base64_(ctx: Ctx, argv: list[str]) -> int:
    parsed = await options(ctx, "base64", argv[1:], "dw:", simulated="dw")
    if isinstance(parsed, int):
        return parsed
    opts, files = parsed
    inputs, code = await read_inputs(ctx, "base64", files[:1])
    data = inputs[0][1] if inputs else ""
    if any(o == "-d" for o, _ in opts):
        try:
            await ctx.out(base64.b64decode("".join(data.split())).decode(errors="replace"))
        except (binascii.Error, ValueError):
            await ctx.err("base64: invalid input\n")
            return 1
        return code
    encoded = base64.b64encode(data.encode()).decode()
    width_text = dict(opts).get("-w", "76") or "76"
    if not width_text.isdigit():
        await ctx.err(f"base64: invalid number '{width_text}'\n")
        return 1
    width = int(width_text)
    lines = [encoded[i:i + width] for i in range(0, len(encoded), width)] if width else [encoded]
    await ctx.out("".join(line + "\n" for line in lines))
    return code


@register("yes")
async def yes(ctx: Ctx, argv: list[str]) -> int:
    line = (" ".join(argv[1:]) or "y") + "\n"
    while True:  # ends when the reader of the pipe goes away (BrokenPipe) or the session does
        await ctx.out(line * 64)
        await ctx.tick()


@register("nproc")
async def nproc(ctx: Ctx, argv: list[str]) -> int:
    await ctx.out("8\n")
    return 0


@register("xargs")
async def xargs(ctx: Ctx, argv: list[str]) -> int:
    from .shell import run_argv

    args = argv[1:]
    per = None
    replace = None
    while args and args[0].startswith("-"):
        flag = args.pop(0)
        if flag == "-n" and args:
            count = args.pop(0)
            if not count.isdigit():
                await ctx.err(f"xargs: invalid number '{count}'\n")
                return 1
            per = int(count)
        elif flag.startswith("-n") and flag[2:].isdigit():
            per = int(flag[2:])
        elif flag == "-I" and args:
            replace = args.pop(0)
        elif flag == "-r":
            continue
        else:
            raise Unsupported(f"`xargs {flag}`")
    command = args or ["echo"]
    items = (await ctx.read_stdin()).split()
    if not items:
        return 0
    code = 0
    if replace is not None:
        for item in items:
            code = await run_argv(ctx, [a.replace(replace, item) for a in command]) or code
        return code
    step = per or len(items)
    for i in range(0, len(items), step):
        code = await run_argv(ctx, command + items[i:i + step]) or code
    return 123 if code else 0


@register("timeout")
async def timeout(ctx: Ctx, argv: list[str]) -> int:
    from .shell import run_argv

    args = argv[1:]
    if args and args[0].startswith("-"):
        raise Unsupported(f"`timeout {args[0]}`")
    if len(args) < 2 or not re.fullmatch(r"\d+(\.\d+)?", args[0]):
        return await usage(ctx, "timeout")
    try:
        return await asyncio.wait_for(run_argv(ctx, args[1:]), float(args[0]))
    except TimeoutError:
        return 143  # SIGTERM


_AWK_PRINT = re.compile(r"\s*(?:/(?P<re>(?:[^/\\]|\\.)*)/\s*)?\{\s*print(?:\s+(?P<items>[^};]*))?\s*;?\s*\}\s*")


@register("awk")
async def awk(ctx: Ctx, argv: list[str]) -> int:
    """Only the ``[/re/] { print $1, $NF, "text" }`` programs of one-liners; anything else says so."""
    args = argv[1:]
    sep: str | None = None
    while args and args[0].startswith("-F"):
        flag = args.pop(0)
        sep = flag[2:] if len(flag) > 2 else (args.pop(0) if args else " ")
    if args and args[0].startswith("-"):
        raise Unsupported(f"`awk {args[0]}`")
    if not args:
        return await usage(ctx, "awk")
    program, files = args[0], args[1:]
    m = _AWK_PRINT.fullmatch(program)
    if m is None:
        raise Unsupported("this awk program (knetsim runs only `[/re/] {print FIELDS}`)")
    regex = re.compile(_posix_regex(m.group("re"), True)) if m.group("re") is not None else None
    items = [i.strip() for i in re.split(r",", m.group("items") or "$0") if i.strip()]
    inputs, code = await read_inputs(ctx, "awk", files)
    for _n, text in inputs:
        for number, line in enumerate(text.splitlines(), 1):
            if number % TICK_LINES == 0:
                await ctx.tick()
            if regex is not None and not regex.search(line):
                continue
            fields = (re.split(re.escape(sep), line) if sep and sep != " " else line.split())
            out = []
            for item in items:
                if item.startswith('"') and item.endswith('"'):
                    out.append(item[1:-1])
                elif item == "$0":
                    out.append(line)
                elif item == "$NF":
                    out.append(fields[-1] if fields else "")
                elif item == "NR":
                    out.append(str(number))
                elif item == "NF":
                    out.append(str(len(fields)))
                elif re.fullmatch(r"\$\d+", item):
                    i = int(item[1:])
                    out.append(fields[i - 1] if 0 < i <= len(fields) else "")
                else:
                    raise Unsupported(f"the awk expression `{item}`")
            await ctx.out(" ".join(out) + "\n")
    return code


@register("sed")
async def sed(ctx: Ctx, argv: list[str]) -> int:
    """``s/a/b/[g]``, ``Np``, ``N,Mp``, ``Nd``, ``/re/p``, ``/re/d`` with ``-n``/``-e``/``-E``; the rest says so."""
    args = argv[1:]
    quiet, extended, scripts = False, False, []
    while args and args[0].startswith("-") and args[0] != "-":
        flag = args.pop(0)
        if flag == "-n":
            quiet = True
        elif flag in ("-E", "-r"):
            extended = True
        elif flag == "-e" and args:
            scripts.append(args.pop(0))
        else:
            raise Unsupported(f"`sed {flag}`")
    if not scripts:
        if not args:
            return await usage(ctx, "sed")
        scripts.append(args.pop(0))
    commands = [c.strip() for s in scripts for c in s.split(";") if c.strip()]
    inputs, code = await read_inputs(ctx, "sed", args)
    out: list[str] = []
    for _n, text in inputs:
        for number, line in enumerate(text.splitlines(), 1):
            if number % TICK_LINES == 0:
                await ctx.tick()
            deleted = False
            for command in commands:
                line, printed, deleted = _sed_one(command, number, line, extended)
                if printed:
                    out.append(line + "\n")
                if deleted:
                    break
            if not quiet and not deleted:
                out.append(line + "\n")
    await ctx.out("".join(out))
    return code


def _sed_one(command: str, number: int, line: str, extended: bool) -> tuple[str, bool, bool]:
    m = re.fullmatch(r"s(.)(.*?)\1(.*?)\1(g?)", command)
    if m:
        regex = _posix_regex(m.group(2), extended)
        repl = re.sub(r"\\(\d)", r"\\\1", m.group(3)).replace("&", r"\g<0>")
        return re.sub(regex, repl, line, count=0 if m.group(4) else 1), False, False
    m = re.fullmatch(r"(?:(\d+)(?:,(\d+|\$))?|/((?:[^/\\]|\\.)*)/)([pd])", command)
    if m:
        if m.group(3) is not None:
            hit = re.search(_posix_regex(m.group(3), extended), line) is not None
        else:
            lo = int(m.group(1))
            hi = lo if m.group(2) is None else (1 << 30 if m.group(2) == "$" else int(m.group(2)))
            hit = lo <= number <= hi
        if not hit:
            return line, False, False
        return line, m.group(4) == "p", m.group(4) == "d"
    raise Unsupported(f"the sed command `{command}`")
