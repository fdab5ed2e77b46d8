"""``python -m knetsim.daemon --state DIR --port N``: the live cluster in the foreground."""

import argparse
import sys
from pathlib import Path

from .statedir import make_private
from .tlscert import begin

# Ctrl-C while the daemon's modules load (seconds on a busy machine): stopped, in one line, without a traceback.
INTERRUPTED = "interrupted: the cluster was stopped during start-up"

try:
    # A new state dir's serving certificate is made by a child process while the daemon's modules load.
    _early = argparse.ArgumentParser(add_help=False)
    _early.add_argument("--state")
    _pending = None
    if (_state := _early.parse_known_args()[0].state) is not None:
        make_private(Path(_state))
        _pending = begin(Path(_state))

    from .daemon import EXIT_INTERRUPTED, main  # (after the child has started)
except KeyboardInterrupt:
    print(INTERRUPTED, file=sys.stderr, flush=True)
    raise SystemExit(130) from None

try:
    main(pending_cert=_pending)
except KeyboardInterrupt:  # between main's own handler and the exit
    print(INTERRUPTED, file=sys.stderr, flush=True)
    raise SystemExit(EXIT_INTERRUPTED) from None
