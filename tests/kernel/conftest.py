"""Kernel tests: real network namespaces, rules and sockets (Linux, root, iproute2, nftables, iptables).

Address plan: the DESIGN.md defaults (nodes 172.18.0.2-4, pods 10.244.<node>.0/24, services
10.96.0.0/12), the Docker host/Internet namespace at 172.18.0.1 with the external client
203.0.113.10. Every topology is torn down by the test that built it; ``no_leftovers``
checks that nothing with the knetsim prefix survives a test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from knetsim.kernel import missing_requirements
from knetsim.kernel.netns import PREFIX, list_netns

MISSING = missing_requirements()
needs_kernel = pytest.mark.skipif(bool(MISSING), reason="kernel mode unavailable here: " + "; ".join(MISSING)
                                  + " (CI runs as root with iproute2, nftables and iptables installed by .ci/run)")


@pytest.fixture
def no_leftovers():
    # Names carry the building process's pid: only this process's count (another run may be building its own).
    mine = f"{PREFIX}{os.getpid()}."
    before = {n for n in list_netns() if n.startswith(mine)}
    yield
    after = {n for n in list_netns() if n.startswith(mine)}
    assert after <= before, f"namespaces left behind: {sorted(after - before)}"


# docs/kernel.md, whose agreement table the kernel tests check their figures against.
KERNEL_DOC = Path(__file__).resolve().parents[2] / "docs" / "kernel.md"


def doc_figures() -> dict[tuple[str, str], tuple[int, int, int]]:
    """The agreement table of docs/kernel.md: (input, dataplane) -> (flows, agree, disagree)."""
    out = {}
    for line in KERNEL_DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5 and cells[2].isdigit():
            out[(cells[0], cells[1])] = (int(cells[2]), int(cells[3]), int(cells[4]))
    return out
