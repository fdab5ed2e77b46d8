"""What the node sees of the control plane, and what the control plane asks of the node.

A real kubelet talks to kube-apiserver through a client and informers; kube-apiserver reaches the
kubelet for a pod's streams (exec, attach, port-forward, logs) through the node's address. In one
process the two are object references, so each direction is a narrow, typed interface instead of
the whole server:

- ``NodeView`` — what node-side code (the kubelet, exec and port-forward sessions, kernel mode, the
  front door) reads: the stored objects, the cluster as the controllers last published it, the
  config, where to be told of a new state, and the consistency wait before a read. The API server
  satisfies it; tests hand a fake.
- ``Node`` (in ``streams``) implements the API server's ``NodeConnection`` with this node's kubelet.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..apiserver.store import Store
    from ..cluster.config import ClusterConfig


class NodeView(Protocol):
    state_dir: Path
    store: Store
    config: ClusterConfig
    # Called with each new ClusterState the controllers publish.
    state_listeners: list[Callable[[Any], None]]
    # Set when the daemon shuts down: long-running node loops end.
    closing: bool

    @property
    def state(self) -> Any:
        """The cluster as a ClusterState (None before the controllers first built it)."""

    async def settle(self) -> None:
        """Wait until the controllers have seen every write acknowledged so far."""
