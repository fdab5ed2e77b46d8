"""Regenerate src/knetsim/data/registry/docker-library-tags.txt.xz from docker-library/official-images.

Usage: python tools/docker_library_tags.py PATH-TO-official-images-CLONE

Every tag ever listed for an official image (``Tags:``/``SharedTags:`` lines of library/NAME, and
the ``TAG: git://...`` lines of the format before 2016), over the whole history of the
repository: Docker Hub keeps a tag once pushed, so a tag the library dropped still pulls.
Output: one repository name per line, followed by its tags sorted, front-coded (``N suffix``:
the tag shares its first N characters with the one before), compressed with xz.
"""

from __future__ import annotations

import lzma
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src/knetsim/data/registry/docker-library-tags.txt.xz"
TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def collect(repo: str) -> dict[str, set[str]]:
    log = subprocess.run(["git", "-C", repo, "log", "-p", "--format=", "--", "library/"], capture_output=True,
                         text=True, check=True, errors="replace").stdout
    tags: dict[str, set[str]] = defaultdict(set)
    current = None
    for line in log.splitlines():
        if line.startswith("+++ b/library/"):
            current = line[len("+++ b/library/"):]
            continue
        if current is None or not line.startswith("+"):
            continue
        m = re.match(r"^\+(?:Tags|SharedTags):\s*(.*)$", line)
        if m:
            tags[current].update(t.strip() for t in m.group(1).split(",") if TAG.fullmatch(t.strip()))
            continue
        m = re.match(r"^\+([A-Za-z0-9_.-]+):\s*(?:git://|https://)", line)
        if m and m.group(1) not in ("GitRepo", "GitFetch") and TAG.fullmatch(m.group(1)):
            tags[current].add(m.group(1))
    return tags


def encode(tags: dict[str, set[str]]) -> str:
    out = []
    for repo in sorted(tags):
        out.append(repo)
        prev = ""
        for tag in sorted(tags[repo]):
            n = 0
            while n < min(len(prev), len(tag)) and prev[n] == tag[n]:
                n += 1
            out.append(f"{n} {tag[n:]}")
            prev = tag
    return "\n".join(out) + "\n"


def main() -> None:
    repo = sys.argv[1]
    head = subprocess.run(["git", "-C", repo, "log", "-1", "--format=%H %cs"], capture_output=True, text=True,
                          check=True).stdout.split()
    text = f"# docker-library/official-images {head[0]} {head[1]}\n" + encode(collect(repo))
    OUT.write_bytes(lzma.compress(text.encode(), preset=9 | lzma.PRESET_EXTREME))
    print(f"{OUT}: {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
