"""The API server's connection to the node for a pod's streams (its ``NodeConnection``).

kube-apiserver proxies exec, attach, port-forward and logs to the kubelet of the pod's node; here
the daemon hands the server this object, which passes each request to the node's handlers with the
kubelet they need.
"""

from __future__ import annotations

from aiohttp import web

from ..apiserver.registry import Target
from . import podlogs
from .kubelet import Kubelet
from .node import NodeView


class NodeStreams:
    def __init__(self, kubelet: Kubelet) -> None:
        self.kubelet = kubelet

    # The streams' modules load with their first use (the container's userland behind them is large).

    async def exec(self, server: NodeView, request: web.Request, target: Target) -> web.StreamResponse:
        from . import wsexec

        return await wsexec.handle(server, self.kubelet, request, target)

    async def port_forward(self, server: NodeView, request: web.Request, target: Target) -> web.StreamResponse:
        from . import portforward

        return await portforward.handle(server, request, target, self.kubelet.served, self.kubelet.flows.observe)

    async def log(self, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
        return await podlogs.handle(self.kubelet.server, self.kubelet.logs, request, namespace, name)
