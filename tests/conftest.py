"""Shared test helpers.

Address plan (DESIGN.md defaults, a fresh kind cluster):
  nodes      control-plane 172.18.0.2 (tainted), worker 172.18.0.3, worker2 172.18.0.4
  pods       10.244.0.0/16, a /24 per node in node order, first pod .2
  services   10.96.0.0/12; kubernetes 10.96.0.1, kube-dns 10.96.0.10
  nodePorts  30000-32767; LoadBalancer pool 172.18.255.200-250
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from knetsim import Cluster

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def cluster_from(yaml_text: str, **kwargs) -> Cluster:
    return Cluster.from_yaml(textwrap.dedent(yaml_text), **kwargs)


@pytest.fixture(scope="session")
def shop() -> Cluster:
    return Cluster.from_paths([str(EXAMPLES / "shop")])
