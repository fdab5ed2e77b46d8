"""A container's cgroup, unit by unit: what counts as held, who is killed, how the CPU is shared.

Given shells (the simulated busybox) in cgroups with small limits, then the commands that grow them:
the container is OOM-killed as a whole; a sibling process dies with it; CPU-bound work yields.
"""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Any

import pytest

from knetsim.container import proc, shell
from knetsim.container.cgroup import NODE, NODE_MEMORY, SLICE, Cgroup, Held, Killed
from knetsim.model.objects import Pod

POD = Pod.parse({"metadata": {"name": "p", "namespace": "default"},
                 "spec": {"containers": [{"name": "c", "image": "busybox"}]}})


async def _run(cgroup: Cgroup, script: str, timeout: float = 20) -> tuple[int, str]:
    out: list[str] = []

    async def collect(text: str) -> None:
        out.append(text)
    ctx = shell.Ctx(None, POD, "c", collect, collect, process=cgroup.process("c"))
    code = await asyncio.wait_for(proc.Proc(ctx, False, False).run(["sh", "-c", script]), timeout)
    return code, "".join(out)


@pytest.mark.parametrize(("script", "expected"), [
    ("x=$(seq 1 100000); echo ${#x}", (0, "588894\n")),  # 575 KiB: within 1 MiB
    ("x=$(seq 1 200000); echo ${#x}", (137, "")),  # 1.2 MiB held by $x
    ("x=a; while true; do x=$x$x; done", (137, "")),
    ("printf '%2000000s' x | wc -c", (137, "")),  # the value counted before it is made
    ("cat <<EOF\n$(seq 1 300000)\nEOF", (137, "")),  # the here-document's text
    ("x=$(seq 1 300000 | tail -1); echo $x", (0, "300000\n")),  # tail keeps only its last lines
    ("seq 1 300000 | wc -l", (0, "300000\n")),  # wc counts as it streams
    ("x=$(seq 1 300000 | sort | tail -1); echo $x", (137, "")),  # sort holds its whole input
    ("echo $((2**64)) $((1<<64)) $((9223372036854775807+1))", (0, "0 1 -9223372036854775808\n")),
])
def test_what_a_shell_holds_counts_against_the_limit(script: str, expected: tuple[int, str]) -> None:
    cgroup = Cgroup(1 << 20, None, "small")
    assert asyncio.run(_run(cgroup, script, 120)) == expected


def test_a_pipe_holds_only_what_is_unread() -> None:
    """349 KB through a pipe into a shell loop, in 256 KiB: the writer waits while the pipe is full (64 KiB, as
    Linux's), so only what the loop has not read yet is held; the same output collected by ``$(...)`` is not."""
    script = "seq 1 60000 | while read l; do :; done; echo done"
    assert asyncio.run(_run(Cgroup(256 << 10, None, "small"), script, 120)) == (0, "done\n")
    assert asyncio.run(_run(Cgroup(256 << 10, None, "small"), "x=$(seq 1 60000); echo ${#x}", 120)) == (137, "")


def test_the_oom_killer_takes_the_whole_container() -> None:
    async def scenario() -> tuple[int, int, list[str]]:
        told: list[str] = []
        cgroup = Cgroup(1 << 20, None, "group", lambda g: told.append(g.name))
        sleeper = asyncio.ensure_future(_run(cgroup, "sleep 30"))
        await asyncio.sleep(0.05)
        hog = await _run(cgroup, "x=a; while true; do x=$x$x; done")
        return (await sleeper)[0], hog[0], told
    sibling, hog, told = asyncio.run(scenario())
    assert (sibling, hog, told) == (137, 137, ["group"])


def test_a_busy_loop_yields_the_event_loop() -> None:
    async def scenario() -> float:
        cgroup = Cgroup(1 << 20, None, "busy")
        task = asyncio.ensure_future(_run(cgroup, "while true; do i=$((i+1)); done", 60))
        worst = 0.0
        for _ in range(100):
            started = time.perf_counter()
            await asyncio.sleep(0)
            worst = max(worst, time.perf_counter() - started)
        task.cancel()
        return worst
    assert asyncio.run(scenario()) < 40 * SLICE  # a slice per turn, never the whole loop


def test_a_cpu_limit_throttles() -> None:
    async def scenario(limit: float | None) -> int:
        cgroup = Cgroup(1 << 20, limit, f"cpu-{limit}")
        process = cgroup.process()

        async def count() -> int:
            n, end = 0, time.perf_counter() + 0.6
            while time.perf_counter() < end:
                n += 1
                await process.tick()
            return n
        return int(await process.spawn(count()))
    free, throttled = asyncio.run(scenario(None)), asyncio.run(scenario(0.05))
    assert throttled < free / 3


def test_a_cgroup_gone_no_longer_counts_for_the_node() -> None:
    class Buffer(Held):
        def held(self) -> int:
            return 8 << 20

    gone = Cgroup.for_container({}, "gone")
    process: Any = gone.process()
    buffer = Buffer()
    process.hold(buffer)
    gone.usage()
    del gone, process, buffer
    gc.collect()
    alive = Cgroup.for_container({}, "alive").process()
    NODE._grown = NODE_MEMORY  # the estimate says full: a count is made
    alive.grew(1)
    assert NODE.measured < (8 << 20)


def test_killed_is_no_exception_a_tool_could_swallow() -> None:
    assert not issubclass(Killed, Exception)
