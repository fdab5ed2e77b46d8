"""``python -m knetsim.apiserver --state DIR --port N``: the live cluster in the foreground."""

from .daemon import main

main()
