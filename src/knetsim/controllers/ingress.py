"""ingress-nginx's status writer: an Ingress of a class it serves gets the address it publishes.

kind's ingress guide runs the controller with ``--publish-status-address=localhost`` and
``--watch-ingress-without-class=true``, so every Ingress of class ``nginx``, or of no class, shows
``ADDRESS localhost`` once the controller has seen it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..apiserver.store import Change, Key
from ..cluster.system import ingress_nginx_status
from .base import Controller
from .informer import key_of


class IngressStatus(Controller):
    name = "ingress-nginx-controller"
    field_manager = "nginx-ingress-controller"  # its binary, whose name client-go's User-Agent carries

    def handle(self, change: Change) -> Iterable[Key]:
        if change.kind == "Ingress":
            return [key_of("Ingress", change.obj)]
        if change.kind == "IngressClass":
            return self.informer.keys("Ingress")
        return []

    def resync(self) -> Iterable[Key]:
        return self.informer.keys("Ingress")

    def sync(self, key: Key) -> None:
        ingress = self.informer.get(key)
        if ingress is None:
            return
        classes = {str(body["metadata"]["name"]): str((body.get("spec") or {}).get("controller") or "")
                   for body in (self.informer.get(k) for k in self.informer.keys("IngressClass")) if body is not None}
        status = ingress_nginx_status(ingress, classes, self.config)
        if status is None:
            return
        batch = self.batch()
        batch.put_status(key, {**ingress, "status": status})
        batch.commit()
