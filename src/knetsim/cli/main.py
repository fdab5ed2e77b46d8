"""Entry point: ``knetsim`` and the kubectl plugin ``kubectl-knetsim``.

Command modules register themselves: every module of this package with a ``COMMANDS``
list of click commands is added, in module-name order, so adding a command never means
editing this file. A module is imported only when one of its commands runs: the names and
one-line helps that ``knetsim --help`` lists are read from the modules' source
(``cli/lazy.py``), so a command pays only for the layers it uses.
"""

from __future__ import annotations

import gc
import sys

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


if __name__ == "__main__":
    main()
