"""Service accounts offline, as the live cluster has them: every namespace's `default` (the service account
controller), every pod's account (`default` when it names none; `serviceAccount`, the deprecated alias, beside it),
and a pod whose account is not in the input named, as a namespace is: the API server would refuse it."""

from __future__ import annotations

from tests.conftest import cluster_from

WEB = """\
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: web
      containers: [{name: c, image: nginx:1.27}]
---
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: shop}
spec:
  containers: [{name: c, image: busybox:1.36}]
"""

ACCOUNT = "---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: web, namespace: shop}\n"


def test_every_namespace_has_default_and_every_pod_an_account() -> None:
    state = cluster_from(WEB + ACCOUNT).state
    accounts = {o.key for o in state.objects_of("ServiceAccount")}
    assert {"shop/default", "shop/web", "default/default", "kube-system/default"} <= accounts
    plain = state.pods["shop/plain"].raw["spec"]
    assert (plain["serviceAccountName"], plain["serviceAccount"]) == ("default", "default")
    web = next(p for p in state.pods.values() if p.namespace == "shop" and p.labels.get("app") == "web")
    assert (web.raw["spec"]["serviceAccountName"], web.raw["spec"]["serviceAccount"]) == ("web", "web")


def test_an_account_the_input_lacks_is_named_with_what_the_api_server_would_say() -> None:
    cluster = cluster_from(WEB)
    said = [n for n in cluster.notices if n.code == "ServiceAccountAssumed"]
    assert len(said) == 1 and said[0].subject == "Deployment shop/web", said
    assert said[0].message.startswith("service account 'web' is not in the input; assumed to exist in namespace "
                                      "'shop' (its pods would not be created (FailedCreate: pods \"web-")
    assert said[0].message.endswith('is forbidden: error looking up service account shop/web: serviceaccount "web" '
                                    'not found))')
    assert not [n for n in cluster_from(WEB + ACCOUNT).notices if n.code == "ServiceAccountAssumed"]


def test_the_deprecated_alias_names_the_account_when_the_name_is_empty() -> None:
    """pkg/apis/core/v1/conversion.go: `serviceAccount` is read when `serviceAccountName` is empty."""
    state = cluster_from(WEB.replace("serviceAccountName: web", "serviceAccount: web") + ACCOUNT).state
    web = next(p for p in state.pods.values() if p.namespace == "shop" and p.labels.get("app") == "web")
    assert web.raw["spec"]["serviceAccountName"] == "web"
