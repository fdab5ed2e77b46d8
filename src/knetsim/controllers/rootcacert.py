"""The root CA certificate publisher: every namespace has a ``kube-root-ca.crt`` ConfigMap.

kube-controller-manager's ``root-ca-certificate-publisher-controller`` (kubernetes
pkg/controller/certificates/rootcacertpublisher/publisher.go) keeps, in each namespace, a ConfigMap of that name
whose ``ca.crt`` is the bundle that verifies the API server (what a pod's projected service account volume
mounts). It is made when the namespace appears, made again when deleted, and its ``ca.crt`` and its
``kubernetes.io/description`` annotation are put back when edited; anything else a user adds to it stays. A
namespace being deleted gets none (the API server's NamespaceLifecycle would refuse it).

knetsim's API server signs nothing: the bundle is its self-signed serving certificate, the one the kubeconfig
carries as ``certificate-authority-data``. A new state dir's certificate is made while the cluster comes up
(daemon/tlscert.py), so until it exists (``Context.root_ca`` answers None) there is nothing to publish; the
daemon queues every namespace again once it is installed.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..apiserver.store import Change, Key
from .base import Controller, being_deleted

CONFIG_MAP = "kube-root-ca.crt"
CA_KEY = "ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
# The annotation's text, as upstream's publisher writes it (publisher.go, Description).
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")


class RootCACertPublisher(Controller):
    name = "root-ca-certificate-publisher-controller"

    def handle(self, change: Change) -> Iterable[Key]:
        meta = change.obj.get("metadata") or {}
        if change.kind == "Namespace" and change.type != "DELETED":
            return [("Namespace", "", str(meta.get("name") or ""))]
        if change.kind == "ConfigMap" and change.type != "ADDED" and meta.get("name") == CONFIG_MAP:
            return [("Namespace", "", str(meta.get("namespace") or ""))]
        return []

    def resync(self) -> Iterable[Key]:
        return self.informer.keys("Namespace")

    def sync(self, key: Key) -> None:
        bundle = self.ctx.root_ca()
        namespace = self.informer.get(key)
        if bundle is None or namespace is None or being_deleted(namespace):
            return
        target = ("ConfigMap", key[2], CONFIG_MAP)
        stored = self.store.objects.get(target)
        data = {CA_KEY: bundle}
        batch = self.batch()
        if stored is None:
            batch.put(target, {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": CONFIG_MAP, "namespace": key[2], "uid": batch.new_uid(*target),
                             "creationTimestamp": batch.now, "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                "data": data,
            })
        else:
            meta = stored.body.get("metadata") or {}
            annotations = meta.get("annotations") or {}
            if stored.body.get("data") == data and annotations.get(DESCRIPTION_ANNOTATION):
                return
            # A user's labels, other annotations and binaryData stay: upstream updates only these two.
            batch.put(target, {**stored.body, "metadata": {**meta, "annotations": {
                **annotations, DESCRIPTION_ANNOTATION: DESCRIPTION}}, "data": data})
        batch.commit()
