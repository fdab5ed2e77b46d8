"""The service account controller: every namespace has a ``default`` ServiceAccount.

kube-controller-manager's ``serviceaccount-controller`` (kubernetes pkg/controller/serviceaccount/
serviceaccounts_controller.go) makes the ServiceAccounts it manages — only ``default`` — in each namespace that
is not being deleted: when the namespace appears and whenever that ServiceAccount is deleted. Pods need it: the
ServiceAccount admission plugin gives a pod without one ``serviceAccountName: default`` and refuses a pod whose
account does not exist (apiserver/registry.py, ``PodStorage``).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..apiserver.store import Change, Key
from ..model.defaults import DEFAULT_ACCOUNT, default_service_account
from .base import Controller, being_deleted


class ServiceAccountsController(Controller):
    name = "serviceaccount-controller"

    def handle(self, change: Change) -> Iterable[Key]:
        meta = change.obj.get("metadata") or {}
        if change.kind == "Namespace" and change.type != "DELETED":
            return [("Namespace", "", str(meta.get("name") or ""))]
        if change.kind == "ServiceAccount" and change.type == "DELETED" and meta.get("name") == DEFAULT_ACCOUNT:
            return [("Namespace", "", str(meta.get("namespace") or ""))]
        return []

    def resync(self) -> Iterable[Key]:
        return self.informer.keys("Namespace")

    def sync(self, key: Key) -> None:
        namespace = key[2]
        body = self.informer.get(key)
        if body is None or being_deleted(body):
            return  # NamespaceLifecycle refuses new objects in a namespace being deleted
        account = ("ServiceAccount", namespace, DEFAULT_ACCOUNT)
        if self.store.objects.get(account) is not None:
            return
        batch = self.batch()
        body = default_service_account(namespace)
        body["metadata"].update(uid=batch.new_uid(*account), creationTimestamp=batch.now)
        batch.put(account, body)
        batch.commit()
