"""busybox tar in the simulated shell: the command `kubectl cp` runs in a container.

Given a shell in a pod of examples/shop, an archive fed to `tar -xmf - -C DIR` lands as files whose
bytes are kept (a binary file included), `tar cf - PATH` writes a real archive of them back, and
what is not simulated is refused by name.
"""

from __future__ import annotations

import io
import tarfile
from typing import Any

import pytest
from tests.helpers import shop_web_shell

from knetsim import Cluster
from knetsim.container.podfs import PodFS, as_bytes


@pytest.fixture(scope="module")
def shop() -> Any:
    return Cluster.from_paths(["examples/shop"]).state


def run(state: Any, argv: list[str], fs: PodFS, stdin: bytes | None = None) -> tuple[int, bytes, str]:
    code, out, err = shop_web_shell(state, argv, stdin, fs=fs)
    return code, as_bytes(out), err


def archive(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_extract_then_create_round_trips_bytes(shop: Any) -> None:
    fs = PodFS()
    binary = bytes(range(256))
    code, _, err = run(shop, ["tar", "-xmf", "-", "-C", "/tmp"], fs,
                       archive({"notes.txt": b"hello\n", "d/blob.bin": binary}))
    assert (code, err) == (0, "")
    assert fs.read("/tmp/notes.txt") == "hello\n" and as_bytes(fs.read("/tmp/d/blob.bin")) == binary

    code, data, err = run(shop, ["tar", "cf", "-", "/tmp/d"], fs)
    assert code == 0 and err == "tar: removing leading '/' from member names\n"
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        assert t.getnames() == ["tmp/d", "tmp/d/blob.bin"]
        member = t.extractfile("tmp/d/blob.bin")
        assert member is not None and member.read() == binary

    code, data, _ = run(shop, ["tar", "tf", "-"], fs, archive({"a": b"1", "b/c": b"2"}))
    assert (code, data) == (0, b"a\nb/c\n")


def test_what_tar_refuses(shop: Any) -> None:
    fs = PodFS()
    code, _, err = run(shop, ["tar", "cf", "-", "/nope"], fs)
    assert code == 1 and "tar: /nope: No such file or directory\n" in err
    code, _, err = run(shop, ["tar", "-xjf", "-"], fs, b"")
    assert (code, err) == (1, "tar: option -j is not simulated by knetsim\n")
    code, _, err = run(shop, ["tar", "-xf", "-", "-C", "/tmp"], fs, b"not a tar archive at all" * 40)
    assert (code, err) == (1, "tar: invalid tar magic\n")
    code, _, err = run(shop, ["tar", "-xf", "-", "-C", "/tmp"], fs, archive({"../../etc/passwd": b"x"}))
    assert code == 0 and "unsafe path" in err and "/etc/passwd" not in fs.files
