"""Same input, same output: shuffling documents changes nothing, byte for byte."""

from __future__ import annotations

import json
import random

from tests.conftest import EXAMPLES

from knetsim import Cluster
from knetsim.model.loader import load_paths


def fingerprint(cluster: Cluster) -> str:
    state = cluster.state
    data = {
        "pods": {k: (p.node_name, p.pod_ip, p.ready) for k, p in state.pods.items()},
        "services": {k: (s.cluster_ip, [p.node_port for p in s.ports], s.load_balancer_ips)
                     for k, s in state.services.items()},
        "slices": {k: s.raw for k, s in state.endpoint_slices.items()},
        "workloads": sorted(f"{k[0]}/{k[1]}" for k in state.workloads),
    }
    return json.dumps(data, sort_keys=True)


def test_shuffled_input_gives_byte_identical_state() -> None:
    docs = load_paths([str(EXAMPLES / "shop")]).documents
    reference = fingerprint(Cluster.from_documents(docs))
    rng = random.Random(7)
    for _ in range(5):
        shuffled = list(docs)
        rng.shuffle(shuffled)
        assert fingerprint(Cluster.from_documents(shuffled)) == reference
