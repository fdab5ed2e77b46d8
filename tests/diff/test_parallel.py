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

from .test_change_sets import copy_example

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
