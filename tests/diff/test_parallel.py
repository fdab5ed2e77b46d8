"""A diff's doctor runs in a forked child while the other side is built: that changes when the work is
done, never what the diff says.

Given the shop example and a change to it, then ``knetsim diff`` as a user runs it (a whole process,
which forks where it can) prints the same bytes as the same diff computed in one process, and exits as
it does; and when the child cannot give its answer, the parent computes it itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import EXAMPLES

from knetsim.cli.main import cli
from knetsim.diff import parallel

from .semantics import copy_example

KNETSIM = str(Path(sys.executable).with_name("knetsim"))


def test_the_forked_diff_prints_what_one_process_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    after = copy_example(tmp_path, "broken/selector-typo", {"app.yaml": ("selector:\n    app: wbe",
                                                                         "selector:\n    app: web")})
    args = ["diff", "--before", str(EXAMPLES / "broken/selector-typo"), "--after", str(after), "-o", "json",
            "--fail-on", "gained"]
    whole = subprocess.run([KNETSIM, *args], capture_output=True, text=True, timeout=120, check=False)
    monkeypatch.setattr(parallel, "can_fork", lambda: False)
    single = CliRunner().invoke(cli, args)
    assert whole.returncode == single.exit_code == 1, whole.stderr
    assert whole.stdout == single.stdout
    assert '"introduced"' in whole.stdout or '"fixed"' in whole.stdout  # the doctor's layer is in it


# Run as its own process: the test runner may hold threads, and a process with threads never forks.
_CHILD = textwrap.dedent("""
    import os, sys
    from knetsim.diff import parallel
    parent = os.getpid()
    where = parallel.start(os.getpid)
    # A child that fails (here: any process but the parent) leaves the work to the parent.
    fussy = parallel.start(lambda: os.getpid() if os.getpid() == parent else 1 / 0)
    print(parallel.can_fork(), where.result() != parent, fussy.result() == parent)
""")


@pytest.mark.skipif(sys.platform != "linux" or len(os.sched_getaffinity(0)) < 2, reason="forks on Linux, 2+ CPUs")
def test_a_child_answers_and_a_failed_child_leaves_the_work_to_the_parent() -> None:
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["True", "True", "True"]


# A process that ignores SIGCHLD has its children reaped by the kernel: the answer is read all the same.
_IGNORED_SIGCHLD = textwrap.dedent("""
    import os, signal
    from knetsim.diff import parallel
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    print(parallel.start(lambda: 6 * 7).result())
""")

# A child whose answer is not wanted is stopped and reaped, not left running as an orphan.
_CANCELLED = textwrap.dedent("""
    import os, time
    from knetsim.diff import parallel
    pending = parallel.start(lambda: time.sleep(60))
    pid = pending._pid
    pending.cancel()
    try:
        os.kill(pid, 0)
        print("alive")
    except ProcessLookupError:
        print("gone")
""")


@pytest.mark.skipif(sys.platform != "linux" or len(os.sched_getaffinity(0)) < 2, reason="forks on Linux, 2+ CPUs")
@pytest.mark.parametrize(("script", "expected"), [(_IGNORED_SIGCHLD, "42"), (_CANCELLED, "gone")])
def test_a_child_is_reaped_whatever_the_parent_does(script: str, expected: str) -> None:
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == expected, out.stderr


def test_a_closed_stdout_is_no_traceback(tmp_path: Path) -> None:
    proc = subprocess.run(f"{KNETSIM} get pods -n shop -f {EXAMPLES / 'shop'} >&-", shell=True, capture_output=True,
                          text=True, timeout=60, check=False)
    assert (proc.returncode, proc.stderr) == (0, "")
