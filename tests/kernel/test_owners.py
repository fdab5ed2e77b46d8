"""Namespace ownership across processes: two knetsim processes (a CI job and a developer's run, or two
`verify kernel`) sweep each other's leftovers, and must never take a live owner's namespaces.

The lock file says an owner is alive. A sweeper that finds an owner dead removes its lock file while holding
that lock; an owner that opened its lock file just before such a removal locks a fresh one (else it would hold
a lock on an unlinked file, and the next sweep would find it dead and delete its pods' namespaces mid-run).
"""

from __future__ import annotations

import fcntl
import os

import pytest

from knetsim.kernel import netns

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="/run/knetsim is root's")


def test_an_owner_whose_lock_file_is_swept_while_it_starts_locks_a_fresh_one(monkeypatch):
    real_flock = fcntl.flock
    swept = []

    def flock_after_a_sweep(fd, operation):
        if not swept and operation == fcntl.LOCK_EX:
            # Another process's sweep runs between our open and our flock: the owner looks dead to it.
            path = os.readlink(f"/proc/self/fd/{fd}")
            swept.append(path)
            owner_id = os.path.basename(path).removesuffix(".lock")
            assert netns._held(owner_id) is False
            assert not os.path.exists(path)
        return real_flock(fd, operation)

    monkeypatch.setattr(netns.fcntl, "flock", flock_after_a_sweep)
    owner = netns.Owner()
    monkeypatch.setattr(netns.fcntl, "flock", real_flock)
    try:
        assert swept == [str(owner.path)]
        assert owner.path.exists()
        assert netns._held(owner.id) is True
        assert owner.path.exists()
    finally:
        owner.release()
    assert netns._held(owner.id) is False


def test_a_dead_owners_lock_file_goes_with_it():
    path = netns.LOCK_DIR / "999999999.1.lock"
    netns.LOCK_DIR.mkdir(parents=True, exist_ok=True)
    path.touch()
    assert netns._held("999999999.1") is False
    assert not path.exists()
