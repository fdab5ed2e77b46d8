"""``python -m knetsim.daemon --state DIR --port N``: the live cluster in the foreground."""

from .daemon import main

main()
