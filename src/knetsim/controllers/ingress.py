"""ingress-nginx's status writer: an Ingress of a class it serves gets the address it publishes.

kind's ingress guide runs the controller with ``--publish-status-address=localhost`` and
``--watch-ingress-without-class=true``, so every Ingress of class ``nginx``, or of no class, shows
``ADDRESS localhost`` once the controller has seen it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..apiserver.store import Change, Key
from ..cluster.system import INGRESS_NGINX_CONTROLLER
from .base import Controller
from .informer import key_of

CLASS_ANNOTATION = "kubernetes.io/ingress.class"
PUBLISHED = {"loadBalancer": {"ingress": [{"hostname": "localhost"}]}}


class IngressStatus(Controller):
    name = "ingress-nginx-controller"

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
        if ingress is None or not self.config.ingress_controller:
            return
        if ((ingress.get("status") or {}).get("loadBalancer") or {}).get("ingress"):
            return
        meta = ingress.get("metadata") or {}
        class_name = (ingress.get("spec") or {}).get("ingressClassName") or \
            (meta.get("annotations") or {}).get(CLASS_ANNOTATION)
        if class_name:
            klass = self.informer.get(("IngressClass", "", str(class_name)))
            if klass is None or (klass.get("spec") or {}).get("controller") != INGRESS_NGINX_CONTROLLER:
                return
        # Without a class: kind's controller runs with --watch-ingress-without-class=true and serves it too.
        batch = self.batch()
        batch.put(key, {**ingress, "metadata": dict(meta), "status": PUBLISHED})
        batch.commit()
