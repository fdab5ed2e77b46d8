"""End-to-end fixtures (tests/live.py): one `knetsim up` per test module, and the real kubectl, dig and curl against it.

Each module gets its own cluster started exactly as a user starts it (`knetsim up --port 0` with a
temporary `--state` dir, free DNS and ingress ports) and `HOME` pointing at a temporary directory, so
kubectl's discovery and OpenAPI caches never leak between runs. Between tests the `default` namespace
is emptied and every namespace a test created is deleted, so each test starts from a fresh cluster's
objects while paying the 0.5 s startup once per module.

Commands from the seeds (/work/shared/seeds/003_*: the "例" section and "接続できないときの確認手順")
are typed through ``Cluster.sh`` as the notes write them, with a shell, so a test reads like the note.

Address plan: DESIGN defaults (nodes 172.18.0.2-4, pods 10.244.0.0/16 a /24 per node, services
10.96.0.0/12, kube-dns 10.96.0.10, NodePorts 30000-32767).
"""

from __future__ import annotations

from tests.live import (
    CLEAN_KINDS,
    CURL,
    DIG,
    KUBECTL,
    SYSTEM_NAMESPACES,
    Cluster,
    cluster,
    controller_loops,
    dig,
    k,
    knetsim_argv,
    needs_curl,
    running,
    start,
    stop,
    wait_for,
)

__all__ = ["CLEAN_KINDS", "CURL", "DIG", "KUBECTL", "SYSTEM_NAMESPACES", "Cluster", "cluster", "controller_loops",
           "dig", "k", "knetsim_argv", "needs_curl", "running", "start", "stop", "wait_for"]
