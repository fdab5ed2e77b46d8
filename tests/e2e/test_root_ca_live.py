"""kube-root-ca.crt on `knetsim up` as on kind: every namespace has the ConfigMap (the root CA certificate
publisher), its ca.crt is the bundle the kubeconfig trusts and verifies the API server with the real openssl, it
comes back when deleted and its bundle when edited. Before, `kubectl get cm` in a fresh namespace answered "No
resources found", where every real cluster lists kube-root-ca.crt."""

from __future__ import annotations

import base64
import json
import subprocess
from urllib.parse import urlsplit

import pytest

from .conftest import Cluster, wait_for

pytestmark = pytest.mark.live

DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")


def bundle(k: Cluster, namespace: str) -> str | None:
    out = k.kubectl("-n", namespace, "get", "configmap", "kube-root-ca.crt", "-o", "json", check=False)
    return json.loads(out.stdout)["data"]["ca.crt"] if out.returncode == 0 else None


def test_every_namespace_has_the_bundle_the_kubeconfig_trusts(k: Cluster) -> None:
    listed = k.sh("kubectl get cm -A --no-headers -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name")
    rows = {tuple(line.split()) for line in listed.stdout.splitlines()}
    for namespace in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert (namespace, "kube-root-ca.crt") in rows, listed.stdout
    stored = json.loads(k.kubectl("-n", "default", "get", "cm", "kube-root-ca.crt", "-o", "json").stdout)
    assert stored["metadata"]["annotations"] == {"kubernetes.io/description": DESCRIPTION}
    assert list(stored["data"]) == ["ca.crt"]
    trusted = k.kubectl("config", "view", "--raw", "--minify", "-o",
                        "jsonpath={.clusters[0].cluster.certificate-authority-data}").stdout
    assert stored["data"]["ca.crt"] == base64.b64decode(trusted).decode()
    # What a pod would do with it: verify the API server's certificate (the real openssl, the server's own port).
    server = urlsplit(k.kubectl("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}").stdout)
    ca = k.write("ca.crt", stored["data"]["ca.crt"])
    hello = subprocess.run(["openssl", "s_client", "-connect", f"{server.hostname}:{server.port}", "-CAfile", str(ca),
                            "-verify_return_error", "-brief"], input="", capture_output=True, text=True, timeout=20)
    assert hello.returncode == 0 and "Verification: OK" in hello.stderr, hello.stderr


def test_a_new_namespace_gets_it_and_it_is_kept(k: Cluster) -> None:
    k.sh("kubectl create namespace vault")
    assert wait_for(lambda: bundle(k, "vault") is not None, 5)
    published = bundle(k, "vault")
    # A pod's service account volume mounts it: the file a client in the pod verifies the API server with.
    k.sh("kubectl -n vault run agent --image=busybox:1.36 -- sleep 3600")
    k.sh("kubectl -n vault wait --for=condition=Ready pod/agent --timeout=20s")
    mounted = k.sh("kubectl -n vault exec agent -- cat /var/run/secrets/kubernetes.io/serviceaccount/ca.crt")
    assert mounted.stdout == published
    # Deleted, it comes back.
    k.sh("kubectl -n vault delete cm kube-root-ca.crt")
    assert wait_for(lambda: bundle(k, "vault") == published, 5)
    # Edited, its bundle is put back; what else a user added stays.
    k.sh("kubectl -n vault label cm kube-root-ca.crt team=blue")
    k.sh("""kubectl -n vault patch cm kube-root-ca.crt --type merge -p '{"data":{"ca.crt":"forged","extra":"x"}}'""")
    assert wait_for(lambda: bundle(k, "vault") == published, 5)
    kept = json.loads(k.kubectl("-n", "vault", "get", "cm", "kube-root-ca.crt", "-o", "json").stdout)
    assert kept["metadata"]["labels"] == {"team": "blue"} and kept["data"] == {"ca.crt": published}
    # A namespace being deleted gets none: the namespace goes, and the ConfigMap with it.
    k.sh("kubectl delete namespace vault")
    assert k.kubectl("get", "namespace", "vault", check=False).returncode == 1
