"""Given Services already allocated by a live cluster (``live``) and a new one asking for the same
nodePort or clusterIP, then the new one is rejected whatever the names' order: what a cluster
handed out stays reserved (the registry checks a create against the allocated bitmap).

Address plan: DESIGN defaults (services 10.96.0.0/12, NodePorts 30000-32767).
"""

from __future__ import annotations

from typing import Any

import pytest

from knetsim.cluster.config import ClusterConfig
from knetsim.cluster.services import allocate_services
from knetsim.model.loader import Source

SRC = Source("<test>", 1)


def svc(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
            "spec": {"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP"}], **spec}}


@pytest.mark.parametrize(("existing", "new"), [("web", "other"), ("other", "web")])
def test_a_live_node_port_is_kept_and_the_new_request_rejected(existing: str, new: str) -> None:
    held = svc(existing, clusterIP="10.96.100.1", ports=[{"port": 80, "protocol": "TCP", "nodePort": 30080}])
    wanted = svc(new, ports=[{"port": 81, "protocol": "TCP", "nodePort": 30080}])
    errors = allocate_services([(held, SRC), (wanted, SRC)], ClusterConfig(), live=lambda b: b is held)
    assert [(e.subject, str(e.error)) for e in errors] == [
        (f"Service default/{new}", "spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated")]


@pytest.mark.parametrize(("existing", "new"), [("web", "other"), ("other", "web")])
def test_a_live_cluster_ip_is_kept_and_the_new_request_rejected(existing: str, new: str) -> None:
    held = svc(existing, type="ClusterIP", clusterIP="10.96.100.1")
    wanted = svc(new, type="ClusterIP", clusterIP="10.96.100.1")
    errors = allocate_services([(held, SRC), (wanted, SRC)], ClusterConfig(), live=lambda b: b is held)
    assert [e.subject for e in errors] == [f"Service default/{new}"]
    assert "provided IP is already allocated" in str(errors[0].error)
