"""The built-in Gateway controller (Envoy Gateway's semantics), live: its infrastructure and the status.

For the GatewayClasses it claims, it keeps what Envoy Gateway keeps in ``envoy-gateway-system``
(``cluster.gatewayinfra.infra_manifests``: the control plane, and per accepted Gateway a proxy
Deployment and LoadBalancer Service), written through the API as Envoy Gateway writes them
(admitted, the Service allocated an address from the pool), and removes a proxy whose Gateway is
gone. Then it writes the status of every Gateway API object from one translation of the cluster
(``knetsim.gateway.status_of``), keeping transition times, so a settled cluster is a fixed point.

Its decisions read the whole Gateway API picture (routes, their backends, grants, namespaces), so
there is one key for all of it, woken by a change of any Gateway API object (but a change of its status
only: its own write), Service or Namespace, or of a proxy pod; a cluster without GatewayClasses costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..apiserver.registry import Target, WriteOptions
from ..apiserver.resources import BY_KIND
from ..apiserver.store import Change, Key
from ..cluster.gatewayinfra import EG_NAMESPACE, infra_manifests, is_proxy_pod
from ..model.kinds import GATEWAY_API_KINDS
from ..model.labels import Selector
from .base import Controller, status_only

KEY: Key = ("GatewayAPI", "", "")
# ConfigMap: a GatewayClass's parametersRef may name one (Istio's kind), and BackendTLSPolicy CA bundles are ones.
WAKES = {*GATEWAY_API_KINDS, "Service", "Namespace", "ConfigMap"}
CONTROL_PLANE = Selector.from_map({"control-plane": "envoy-gateway"})
PROXIES = Selector.from_map({"app.kubernetes.io/managed-by": "envoy-gateway"})
AS_ENVOY_GATEWAY = WriteOptions(managed="controller", field_manager="envoy-gateway")


class GatewayController(Controller):
    name = "envoy-gateway"
    field_manager = "envoy-gateway"

    def handle(self, change: Change) -> Iterable[Key]:
        if change.kind in GATEWAY_API_KINDS:
            # Its own status writes ask nothing new of it (the translation reads specs, not statuses).
            return [] if status_only(change) else [KEY]
        # Backends, allowed namespaces, the proxy's address and its pods' readiness (Programmed).
        meta = change.obj.get("metadata") or {}
        proxy_pod = change.kind == "Pod" and (meta.get("namespace") == EG_NAMESPACE or is_proxy_pod(
            meta.get("namespace") or "", meta.get("labels") or {}))
        if (change.kind in WAKES or proxy_pod) and self.informer.keys("GatewayClass"):
            return [KEY]
        return []

    def resync(self) -> Iterable[Key]:
        return [KEY]

    def sync(self, key: Key) -> None:
        if not any(self.informer.keys(kind) for kind in GATEWAY_API_KINDS) and \
                not any(self.informer.names(kind, EG_NAMESPACE) for kind in ("Deployment", "Service")) and \
                not getattr(self, "_made", None):
            return  # nothing to translate, no infrastructure to keep or remove
        # Loaded with the first Gateway API object: a cluster without any never builds the Gateway model.
        from ..model import gatewayapi

        classes = [c for k in self.informer.keys("GatewayClass")
                   if isinstance(c := self.informer.typed(k), gatewayapi.GatewayClass)]
        gateways = [g for k in self.informer.keys("Gateway")
                    if isinstance(g := self.informer.typed(k), gatewayapi.Gateway)]
        listener_sets = [s for k in self.informer.keys("ListenerSet")
                         if isinstance(s := self.informer.typed(k), gatewayapi.ListenerSet)]
        labels = {k[2]: dict(((self.informer.get(k) or {}).get("metadata") or {}).get("labels") or {})
                  for k in self.informer.keys("Namespace")}
        # A class whose parametersRef does not resolve is not accepted: its Gateways get no proxy.
        self.keep_infrastructure(infra_manifests(classes, gateways, listener_sets, labels,
                                                 lambda kind, ns, name: self.informer.get((kind, ns, name))
                                                 is not None))
        if self.ctx.state is None or not any(self.informer.keys(kind) for kind in gatewayapi.KINDS):
            return
        from ..gateway import status_of, translate

        state = self.ctx.state()
        translation = translate(state)
        batch = self.batch()
        for kind in gatewayapi.KINDS:
            for k in self.informer.keys(kind):
                obj = self.informer.typed(k)
                body = self.informer.get(k)
                if obj is None or body is None:
                    continue
                status = status_of(state, obj, batch.now, translation=translation,
                                   previous=body.get("status") or {})
                if status is not None and status != body.get("status"):
                    batch.put_status(k, {**body, "status": status})
        batch.commit()

    def keep_infrastructure(self, desired: list[dict[str, Any]]) -> None:
        """Create or update what Envoy Gateway would have; delete the proxies (and control plane) it would not."""
        registry = self.ctx.registry
        if registry is None:
            return
        wanted: set[Key] = set()
        for body in desired:
            meta = body["metadata"]
            k: Key = (body["kind"], meta.get("namespace", ""), meta["name"])
            wanted.add(k)
            r = BY_KIND[body["kind"]]
            old = self.store.objects.get(k)
            if old is not None and body["kind"] == "DaemonSet":
                continue  # the node agent's own (Cilium's cilium-envoy, when Cilium is the CNI): not ours to edit
            if old is None:
                registry.create(Target(r, k[1], "", ""), body, AS_ENVOY_GATEWAY)
            elif body["kind"] != "Namespace":
                # The stored object with Envoy Gateway's spec and labels (what others added, such as the
                # Deployment's revision, stays); unchanged is no write: the registry compares.
                merged = {**old.body, "spec": body["spec"],
                          "metadata": {**old.body["metadata"], "labels": body["metadata"].get("labels") or {}}}
                registry.update(Target(r, k[1], k[2], ""), old, merged, AS_ENVOY_GATEWAY)
        stale = {(kind, EG_NAMESPACE, name) for kind in ("Deployment", "Service")
                 for selector in (CONTROL_PLANE, PROXIES) for name in self._named(kind, selector)} - wanted
        # The other implementations' proxies live in the Gateways' namespaces: those this process made and no
        # longer wants (a Gateway deleted, its class changed) go too.
        made: set[Key] = getattr(self, "_made", set())
        stale |= {k for k in made - wanted if k[0] in ("Deployment", "Service", "DaemonSet")}
        self._made = {k for k in wanted if k[1] != EG_NAMESPACE}
        if stale:
            batch = self.batch()
            for k in sorted(stale):
                batch.delete(k)
            batch.commit()

    def _named(self, kind: str, selector: Selector) -> list[str]:
        out = []
        for name in self.informer.names(kind, EG_NAMESPACE):
            body = self.informer.get((kind, EG_NAMESPACE, name)) or {}
            if selector.matches((body.get("metadata") or {}).get("labels") or {}):
                out.append(name)
        return out
