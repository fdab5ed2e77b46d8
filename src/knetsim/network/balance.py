"""Which backend each live connection gets, as the node's data plane picks it over time.

kube-proxy chooses anew for every connection (iptables' `statistic --mode random`, nftables'
`numgen random`, Cilium's `prandom()`), so a client calling a Service of three pods reaches all
three. With ``sessionAffinity: ClientIP`` the data plane remembers the client's backend (iptables'
`recent` list, nftables' affinity set, Cilium's affinity map) and sends it there again until
``timeoutSeconds`` pass without a connection; each connection refreshes the entry.

An offline trace is one connection and picks deterministically from the client and the address
(``trace.choose``). A live cluster is many: a ``Balancer`` counts the client's connections to each
frontend and hashes the count in, so successive connections spread over the backends as the random
pick does, and the same sequence of connections gives the same backends on every run.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from .trace import choose

# Clients × frontends remembered at most (the oldest forgotten first): a cluster's conntrack table is bounded
# too, and nothing a pod does may grow the server without limit.
MAX_ENTRIES = 65536


class Balancer:
    def __init__(self, clock: Callable[[], float] = time.monotonic, max_entries: int = MAX_ENTRIES) -> None:
        self._clock = clock
        self._max = max_entries
        self._count: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._pinned: OrderedDict[tuple[str, str], tuple[str, float]] = OrderedDict()  # → (backend, last use)

    def pick(self, targets: Sequence[Any], client: str, frontend: str, affinity_timeout: int | None = None) -> int:
        """The index in ``targets`` (each with ``ip`` and ``port``) of this connection's backend. ``affinity_timeout``:
        the Service's ClientIP affinity timeout in seconds, None without affinity."""
        key = (client, frontend)
        now = self._clock()
        names = [f"{t.ip}:{t.port}" for t in targets]
        if affinity_timeout is not None:
            held = self._pinned.pop(key, None)
            if held is not None and now - held[1] <= affinity_timeout and held[0] in names:
                self._remember(self._pinned, key, (held[0], now))
                return names.index(held[0])
        count = self._count.pop(key, 0)
        self._remember(self._count, key, count + 1)
        index = choose(list(targets), f"{client}->{frontend}#{count}")
        if affinity_timeout is not None:
            self._remember(self._pinned, key, (names[index], now))
        return index

    def _remember(self, table: OrderedDict[tuple[str, str], Any], key: tuple[str, str], value: Any) -> None:
        table[key] = value
        while len(table) > self._max:
            table.popitem(last=False)


__all__ = ["MAX_ENTRIES", "Balancer"]
