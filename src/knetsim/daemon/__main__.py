"""``python -m knetsim.daemon --state DIR --port N``: the live cluster in the foreground."""

import argparse
from pathlib import Path

from .statedir import make_private
from .tlscert import begin

# A new state dir's serving certificate is made by a child process while the daemon's modules load.
_early = argparse.ArgumentParser(add_help=False)
_early.add_argument("--state")
_pending = None
if (_state := _early.parse_known_args()[0].state) is not None:
    make_private(Path(_state))
    _pending = begin(Path(_state))

from .daemon import main  # noqa: E402  (after the child has started)

main(pending_cert=_pending)
