"""Entry point: ``knetsim`` and the kubectl plugin ``kubectl-knetsim``.

Command modules register themselves: every module of this package with a ``COMMANDS``
list of click commands is added, in module-name order, so adding a command never means
editing this file. A module is imported only when one of its commands runs: the names and
one-line helps that ``knetsim --help`` lists are read from the modules' source
(``cli/lazy.py``), so a command pays only for the layers it uses.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading

import click

from .. import __version__
from .lazy import LazyGroup


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="knetsim")
def cli() -> None:
    """Kubernetes service networking, simulated: which layer said no, and what fixes it.

    Subcommand first, flags after, as kubectl does:

        knetsim get pods -f examples/shop -A -o wide
    """


def main() -> None:
    # One command, one short-lived process: what it builds (manifests, typed views, the matrix) is
    # acyclic data freed by reference counting, and the cyclic collector's passes over a heap of
    # 100,000 pods cost a third of the run (21.7 s -> 13.0 s). The live server runs in its own
    # process (`python -m knetsim.daemon`), with the collector on.
    gc.disable()
    try:
        cli.main(prog_name="knetsim", standalone_mode=True)
    except BrokenPipeError:  # `knetsim ... | head`
        sys.stderr.close()
        sys.exit(0)
    except SystemExit as done:  # click's standalone mode always ends here
        leave(done.code)


def leave(code: object) -> None:
    """Exit as ``sys.exit(code)`` does, without freeing the heap one object at a time: after a diff of two
    10,000-pod inputs that takes 0.4 s of 4, for nothing the user sees (mypy's ``hard_exit`` does the same).
    The exit handlers still run and the output is flushed; a process with other threads exits normally,
    as those threads are owed their join."""
    if threading.active_count() > 1:
        sys.exit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: the descriptor was closed (`knetsim ... >&-`)
                stream.flush()
    except BrokenPipeError:  # the reader left (`knetsim ... | head`): not a failure, and no other code changes
        pass
    atexit._run_exitfuncs()
    os._exit(status)


if __name__ == "__main__":
    main()
