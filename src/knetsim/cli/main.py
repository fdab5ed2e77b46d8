"""Entry point: ``knetsim`` and the kubectl plugin ``kubectl-knetsim``.

Command modules register themselves: every module of this package with a ``COMMANDS``
list of click commands is added, in module-name order, so adding a command never means
editing this file.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import click

from .. import __version__
from . import __path__ as _cli_path


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="knetsim")
def cli() -> None:
    """Kubernetes service networking, simulated: which layer said no, and what fixes it.

    Subcommand first, flags after, as kubectl does:

        knetsim get pods -f examples/shop -A -o wide
    """


def _register() -> None:
    for info in sorted(pkgutil.iter_modules(_cli_path), key=lambda m: m.name):
        if info.name in ("main", "common") or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__package__}.{info.name}")
        for command in getattr(module, "COMMANDS", ()):
            cli.add_command(command)


_register()


def main() -> None:
    try:
        cli.main(prog_name="knetsim", standalone_mode=True)
    except BrokenPipeError:  # `knetsim ... | head`
        sys.stderr.close()
        sys.exit(0)


if __name__ == "__main__":
    main()
