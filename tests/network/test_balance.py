"""A live cluster's backend choice over time (network/balance.py): anew for every connection, pinned under
ClientIP affinity until timeoutSeconds pass without a connection, and bounded in memory.

Given three backends and a clock the test moves, then successive connections of one client spread over
them; with affinity they stay on one until the client is silent longer than the timeout; each connection
refreshes the entry (iptables' `recent --rcheck --seconds T` sets it again on every hit); and the
remembered clients never exceed the bound, the oldest forgotten first.
"""

from __future__ import annotations

from dataclasses import dataclass

from knetsim.network.balance import Balancer


@dataclass(frozen=True)
class Backend:
    ip: str
    port: int = 8080


BACKENDS = [Backend("10.244.1.2"), Backend("10.244.1.3"), Backend("10.244.2.2")]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_without_affinity_each_connection_is_balanced_anew() -> None:
    balancer = Balancer(Clock())
    picks = [balancer.pick(BACKENDS, "10.244.1.9", "10.96.0.20:80") for _ in range(30)]
    assert set(picks) == {0, 1, 2}
    again = Balancer(Clock())
    assert [again.pick(BACKENDS, "10.244.1.9", "10.96.0.20:80") for _ in range(30)] == picks  # reproducible


def test_client_ip_affinity_holds_while_the_client_keeps_calling_and_ends_after_the_timeout() -> None:
    clock = Clock()
    balancer = Balancer(clock)
    first = balancer.pick(BACKENDS, "10.244.1.9", "10.96.0.20:80", affinity_timeout=10)
    for _ in range(20):
        clock.now += 9  # within the timeout of the previous connection: the entry is refreshed each time
        assert balancer.pick(BACKENDS, "10.244.1.9", "10.96.0.20:80", affinity_timeout=10) == first
    after = set()
    for _ in range(20):
        clock.now += 11  # silent longer than the timeout: balanced again
        after.add(balancer.pick(BACKENDS, "10.244.1.9", "10.96.0.20:80", affinity_timeout=10))
    assert len(after) > 1
    # A backend that is gone is not kept: the client is balanced over what is left.
    pinned = balancer.pick(BACKENDS, "10.244.1.9", "10.96.0.20:80", affinity_timeout=10)
    rest = [b for i, b in enumerate(BACKENDS) if i != pinned]
    assert rest[balancer.pick(rest, "10.244.1.9", "10.96.0.20:80", affinity_timeout=10)] in rest


def test_the_remembered_clients_are_bounded() -> None:
    balancer = Balancer(Clock(), max_entries=100)
    for n in range(1000):
        balancer.pick(BACKENDS, f"10.244.{n // 250}.{n % 250}", "10.96.0.20:80", affinity_timeout=10)
    assert len(balancer._count) == len(balancer._pinned) == 100
