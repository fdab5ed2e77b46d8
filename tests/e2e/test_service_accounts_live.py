"""Service accounts on `knetsim up` as on kind: every namespace has `default` (the service account controller), a pod
that names no account runs as `default`, and one whose account does not exist is refused (the ServiceAccount
admission plugin); a Deployment whose account is missing records FailedCreate and makes its pods once the account
appears. Before, `kubectl get sa` answered "No resources found" and a pod of any account was admitted."""

from __future__ import annotations

import pytest

from .conftest import Cluster, wait_for

pytestmark = pytest.mark.live

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: robotic, namespace: robots}
spec:
  replicas: 2
  selector: {matchLabels: {app: robotic}}
  template:
    metadata: {labels: {app: robotic}}
    spec:
      serviceAccountName: robot
      containers: [{name: c, image: busybox:1.36, command: [sleep, "3600"]}]
"""


def test_every_namespace_has_its_default_account_and_pods_run_as_it(k: Cluster) -> None:
    listed = k.sh("kubectl get sa -A --no-headers -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name")
    rows = {tuple(line.split()) for line in listed.stdout.splitlines()}
    for namespace in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert (namespace, "default") in rows, listed.stdout
    k.sh("kubectl create namespace robots")
    assert wait_for(lambda: k.sh("kubectl -n robots get sa default", check=False).returncode == 0, 5)
    k.sh("kubectl -n robots run plain --image=busybox:1.36 -- sleep 3600")
    assert k.sh("kubectl -n robots get pod plain -o jsonpath={.spec.serviceAccountName}/{.spec.serviceAccount}"
                ).stdout == "default/default"
    # Deleted, `default` comes back (the controller keeps it).
    k.sh("kubectl -n robots delete sa default")
    assert wait_for(lambda: k.sh("kubectl -n robots get sa default", check=False).returncode == 0, 5)


def test_a_pod_whose_account_is_missing_is_refused(k: Cluster) -> None:
    k.sh("kubectl create namespace droids")
    out = k.sh("kubectl -n droids run r2 --image=busybox:1.36 --overrides='{\"spec\":{\"serviceAccountName\":"
               "\"astromech\"}}' -- sleep 3600", check=False)
    assert out.returncode == 1 and out.stderr.strip() == (
        'Error from server (Forbidden): pods "r2" is forbidden: error looking up service account droids/astromech: '
        'serviceaccount "astromech" not found'), out
    k.sh("kubectl -n droids create serviceaccount astromech")
    k.sh("kubectl -n droids run r2 --image=busybox:1.36 --overrides='{\"spec\":{\"serviceAccountName\":"
         "\"astromech\"}}' -- sleep 3600")


def test_a_deployment_waits_for_its_account(k: Cluster) -> None:
    k.sh("kubectl create namespace robots", check=False)
    k.write("robotic.yaml", DEPLOYMENT)
    k.sh("kubectl apply -f robotic.yaml")
    events = k.sh("kubectl -n robots get events --field-selector reason=FailedCreate -o "
                  "jsonpath={.items[*].message}").stdout
    assert 'Error creating: pods "robotic-' in events and ('is forbidden: error looking up service account '
                                                            'robots/robot: serviceaccount "robot" not found') in events
    assert k.sh("kubectl -n robots get pods -l app=robotic --no-headers", check=False).stdout == ""
    # The ReplicaSet's ReplicaFailure condition, which the Deployment carries too: `kubectl describe` shows it.
    refusal = ('is forbidden: error looking up service account robots/robot: serviceaccount "robot" not found')
    for kind in ("rs", "deployment"):
        [owner] = k.get_json("-n", "robots", kind, "-l" if kind == "rs" else "--field-selector",
                             "app=robotic" if kind == "rs" else "metadata.name=robotic")["items"]
        [failure] = [c for c in owner["status"]["conditions"] if c["type"] == "ReplicaFailure"]
        assert (failure["status"], failure["reason"]) == ("True", "FailedCreate") and \
            failure["message"].startswith('pods "robotic-') and failure["message"].endswith(refusal), failure
    described = k.sh("kubectl -n robots describe deployment robotic").stdout
    assert any(line.split() == ["ReplicaFailure", "True", "FailedCreate"] for line in described.splitlines()), \
        described
    k.sh("kubectl -n robots create serviceaccount robot")
    assert wait_for(lambda: k.sh("kubectl -n robots get pods -l app=robotic --no-headers").stdout.count("\n") == 2,
                    10)
    # Once the pods are made, the condition goes from both.
    assert wait_for(lambda: "ReplicaFailure" not in k.sh("kubectl -n robots get rs,deployment -o "
                                                         "jsonpath={..conditions[*].type}").stdout, 10)


def test_the_account_is_checked_as_the_plugin_checks_it(k: Cluster) -> None:
    """Before validation (a pod both invalid and of a missing account is a 403), naming a generated pod by its
    generateName as admission sees it, refusing a mirror pod that names an account; an update is given no account
    (found by review)."""
    k.sh("kubectl create namespace probes", check=False)
    k.write("gen.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {generateName: gen-, namespace: probes}\n"
                        "spec: {serviceAccountName: ghost, containers: [{name: c, image: busybox:1.36}]}\n")
    out = k.sh("kubectl create -f gen.yaml", check=False)
    assert out.returncode == 1 and out.stderr.strip() == (
        'Error from server (Forbidden): error when creating "gen.yaml": pods "gen-" is forbidden: error looking up '
        'service account probes/ghost: serviceaccount "ghost" not found'), out
    k.write("invalid.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: bad, namespace: probes}\n"
                            "spec: {serviceAccountName: ghost, containers: [{name: C, image: busybox:1.36}]}\n")
    out = k.sh("kubectl create -f invalid.yaml", check=False)
    assert "(Forbidden)" in out.stderr and "is invalid" not in out.stderr, out
    k.write("mirror.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: mirrored, namespace: probes, annotations: "
                           "{kubernetes.io/config.mirror: abc}}\nspec: {serviceAccountName: default, containers: "
                           "[{name: c, image: busybox:1.36}]}\n")
    out = k.sh("kubectl create -f mirror.yaml", check=False)
    assert out.returncode == 1 and out.stderr.strip().endswith(
        'pods "mirrored" is forbidden: a mirror pod may not reference service accounts'), out
