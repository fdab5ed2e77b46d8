"""busybox ``tar`` for the simulated shell: what ``kubectl cp`` runs in the container.

``kubectl cp FILE pod:/dir/`` streams a tar archive into ``tar -xmf - -C /dir``; ``kubectl cp
pod:/dir/f .`` reads ``tar cf - /dir/f`` from the container's stdout. The archives are real
(Python's ``tarfile``, ustar), so kubectl's own tar reader and writer are on the other side.
Files keep their bytes (``podfs.as_text``); modes, owners and times are not simulated (a created
archive has mode 0644 files and 0755 directories, owned by root, dated at the epoch so that the
same files give the same archive). Options: c, x, t, f, C, m, v, O, z, and the old bundled form
(``tar cf - x``); others are refused by name.
"""

from __future__ import annotations

import io
import posixpath
import tarfile

from .applets import options, usage
from .podfs import MAX_TOTAL, FsError, as_bytes, as_text
from .shell import Ctx, register

SIMULATED = "cxtfCmvOz"
MAX_MEMBERS = 10_000


@register("tar")
async def tar(ctx: Ctx, argv: list[str]) -> int:
    args = argv[1:]
    if args and not args[0].startswith("-"):
        args = ["-" + args[0], *args[1:]]  # the old form: `tar cf - dir` is `tar -cf - dir`
    parsed = await options(ctx, "tar", args, "cxtf:C:mvOzjJahkoT:X:", ["exclude="], simulated=SIMULATED)
    if isinstance(parsed, int):
        return parsed
    opts, operands = parsed
    flags = {o[1] for o, _ in opts if not o.startswith("--")}
    values = {o[1]: v for o, v in opts if not o.startswith("--")}
    modes = flags & set("cxt")
    if len(modes) != 1:
        await ctx.err("tar: need exactly one of 'c', 'x' or 't'\n")
        return await usage(ctx, "tar")
    archive = values.get("f", "-")
    if archive != "-":
        await ctx.err("tar: an archive file other than '-' (stdin/stdout) is not simulated by knetsim\n")
        return 1
    directory = ctx.path(values.get("C", "."))
    compression = "gz" if "z" in flags else ""
    if "c" in modes:
        return await _create(ctx, directory, operands, compression, "v" in flags)
    return await _read(ctx, directory, operands, compression, extract="x" in modes, verbose="v" in flags,
                       to_stdout="O" in flags)


async def _create(ctx: Ctx, directory: str, names: list[str], compression: str, verbose: bool) -> int:
    assert ctx.fs is not None
    if not names:
        await ctx.err("tar: empty archive\n")
        return 1
    buf = io.BytesIO()
    code = 0
    if any(n.startswith("/") for n in names):
        await ctx.err("tar: removing leading '/' from member names\n")
    with tarfile.open(fileobj=buf, mode=f"w:{compression}", format=tarfile.USTAR_FORMAT) as out:
        for name in names:
            path = ctx.fs.resolve(name, directory)
            if not ctx.fs.exists(path):
                await ctx.err(f"tar: {name}: No such file or directory\n")
                code = 1
                continue
            for member_path, arcname in _walk(ctx, path, name.lstrip("/") or "."):
                if verbose:
                    await ctx.err(arcname + ("/" if ctx.fs.is_dir(member_path) else "") + "\n")
                info = tarfile.TarInfo(arcname)
                info.mtime = 0
                if ctx.fs.is_dir(member_path):
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    out.addfile(info)
                else:
                    data = as_bytes(ctx.fs.read(member_path))
                    info.size, info.mode = len(data), 0o644
                    out.addfile(info, io.BytesIO(data))
    await ctx.out(as_text(buf.getvalue()))
    return code


def _open(data: bytes, compression: str) -> tarfile.TarFile:
    return tarfile.open(fileobj=io.BytesIO(data), mode=f"r:{compression}" if compression else "r:*")


def _walk(ctx: Ctx, path: str, arcname: str) -> list[tuple[str, str]]:
    assert ctx.fs is not None
    found = [(path, arcname)]
    if ctx.fs.is_dir(path):
        for child in ctx.fs.listdir(path):
            found.extend(_walk(ctx, posixpath.join(path, child), posixpath.join(arcname, child)))
    return found


async def _read(ctx: Ctx, directory: str, wanted: list[str], compression: str, *, extract: bool, verbose: bool,
                to_stdout: bool) -> int:
    assert ctx.fs is not None
    data = bytearray()
    while ctx.stdin is not None and (chunk := await ctx.stdin.chunk()):
        data += chunk
        if len(data) > MAX_TOTAL:  # nothing larger could be stored: refuse before holding it all
            await ctx.err("tar: write error: No space left on device\n")
            return 1
    try:
        archive = _open(bytes(data), compression)
    except (tarfile.TarError, EOFError, OSError):
        await ctx.err("tar: invalid tar magic\n" if data else "tar: short read\n")
        return 1
    code = 0
    with archive:
        try:
            members = archive.getmembers()[:MAX_MEMBERS]
        except (tarfile.TarError, EOFError, OSError):
            await ctx.err("tar: short read\n")
            return 1
        for member in members:
            name = posixpath.normpath(member.name.lstrip("/"))
            if wanted and not any(name == w.rstrip("/") or name.startswith(w.rstrip("/") + "/") for w in wanted):
                continue
            if name.startswith("../") or name == "..":
                await ctx.err(f"tar: skipping unsafe path {member.name}\n")  # busybox refuses '..' components
                continue
            if verbose or not extract:
                await (ctx.err if extract and not to_stdout else ctx.out)(name + ("/" if member.isdir() else "")
                                                                        + "\n")
            if not extract:
                continue
            target = ctx.fs.resolve(name, directory)
            try:
                if member.isdir():
                    ctx.fs.mkdir(target, parents=True)
                elif member.isfile():
                    content = archive.extractfile(member)
                    text = as_text(content.read() if content is not None else b"")
                    if to_stdout:
                        await ctx.out(text)
                        continue
                    ctx.fs.mkdir(posixpath.dirname(target), parents=True)
                    ctx.fs.write(target, text)
                else:
                    await ctx.err(f"tar: {name}: links and special files are not simulated by knetsim\n")
                    code = 1
            except FsError as exc:
                await ctx.err(f"tar: can't open '{name}': {exc.strerror_text}\n")
                code = 1
    return code
