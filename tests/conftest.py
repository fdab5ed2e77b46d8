"""Shared test helpers.

Address plan (DESIGN.md defaults, a fresh kind cluster):
  nodes      control-plane 172.18.0.2 (tainted), worker 172.18.0.3, worker2 172.18.0.4
  pods       10.244.0.0/16, a /24 per node in node order, first pod .2
  services   10.96.0.0/12; kubernetes 10.96.0.1, kube-dns 10.96.0.10
  nodePorts  30000-32767; LoadBalancer pool 172.18.255.200-250
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from tests.live import cluster, k, live, no_controller_loop

from knetsim import Cluster

# The live cluster's fixtures, for every folder: ``live`` (a daemon per module), ``cluster`` (`knetsim up` per
# module) and ``k`` (it, emptied after the test), and the loop guard every live test runs under; tests/labs
# has its own ``live``.
__all__ = ["EXAMPLES", "ROOT", "cluster", "cluster_from", "k", "live", "no_controller_loop"]

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

# The property tests draw the same examples on every run and machine (a red CI names a case that fails again
# locally, and a green one does not turn red by luck); KNETSIM_HYPOTHESIS=explore draws new ones, to hunt.
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("KNETSIM_HYPOTHESIS", "ci"))


def cluster_from(yaml_text: str, **kwargs) -> Cluster:
    return Cluster.from_yaml(textwrap.dedent(yaml_text), **kwargs)


@pytest.fixture(scope="session")
def shop() -> Cluster:
    return Cluster.from_paths([str(EXAMPLES / "shop")])


@pytest.fixture(scope="session", autouse=True)
def no_running_knetsim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Commands given no -f read the running `knetsim up` of $KNETSIM_STATE: in tests, a state dir where
    none runs unless a test starts one there, never the developer's own ~/.knetsim."""
    state = tmp_path_factory.mktemp("no-knetsim")
    before = os.environ.get("KNETSIM_STATE")
    os.environ["KNETSIM_STATE"] = str(state)
    try:
        yield state
    finally:
        if before is None:
            os.environ.pop("KNETSIM_STATE", None)
        else:
            os.environ["KNETSIM_STATE"] = before


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks ``live`` every test that uses a fixture starting a cluster (tests/live.py ``live_fixture``), so
    ``pytest -m "not live"`` runs the in-process suite alone. A module that starts one itself says so with
    ``pytestmark = pytest.mark.live``."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        # The last definition of a name is the one the test gets (a module's own ``live`` overrides the root's).
        if any(getattr(defs[-1].func, "starts_a_cluster", False) for defs in info.name2fixturedefs.values() if defs):
            item.add_marker(pytest.mark.live)
