"""A CiliumNetworkPolicy that selects by service account decides `kubectl exec` traffic on ``knetsim up``, as the
offline answers do (the live cluster enforces through the same engine).

The policy restates cilium/cilium Documentation/security/policy/kubernetes.rst, "ServiceAccounts" (its HTTP rule
left out: this test is about who the selectors pick): pods running under ``leia`` accept port 80 only from pods
running under ``luke``. Before Cilium's endpoint labels were modelled, the policy isolated nothing and allowed
nothing: every pod reached leia's.

Cluster: Cilium without its kube-proxy replacement (``cni: cilium``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .conftest import Cluster, running, wait_for

pytestmark = pytest.mark.live  # starts a cluster of its own

POLICY = """\
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata:
  name: k8s-svc-account
spec:
  endpointSelector:
    matchLabels:
      io.cilium.k8s.policy.serviceaccount: leia
  ingress:
  - fromEndpoints:
    - matchLabels:
        io.cilium.k8s.policy.serviceaccount: luke
    toPorts:
    - ports:
      - port: '80'
        protocol: TCP
"""


@pytest.fixture(scope="module")
def cilium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(tmp_path_factory.mktemp("cilium-accounts"), "cni: cilium\n") as c:
        yield c


def test_a_policy_by_service_account_decides_exec_traffic(cilium: Cluster) -> None:
    k = cilium
    k.sh("kubectl create serviceaccount leia")
    k.sh("kubectl create serviceaccount luke")
    # Every pod labelled alike: only the service account tells them apart.
    k.sh("kubectl run leia --image=nginx:1.27 --labels=app=starwars --port=80 "
         "--overrides='{\"spec\": {\"serviceAccountName\": \"leia\"}}'")
    k.sh("kubectl run luke --image=busybox:1.36 --labels=app=starwars "
         "--overrides='{\"spec\": {\"serviceAccountName\": \"luke\"}}' -- sleep 3600")
    k.sh("kubectl run vader --image=busybox:1.36 --labels=app=starwars -- sleep 3600")  # the `default` account
    wait_for(lambda: k.sh("kubectl get pod leia luke vader --no-headers").stdout.count("Running") == 3, 30)
    assert k.sh("kubectl get pod luke -o jsonpath={.spec.serviceAccountName}").stdout.strip() == "luke"
    leia = k.sh("kubectl get pod leia -o jsonpath={.status.podIP}").stdout.strip()

    def nc(pod: str) -> tuple[int, str]:
        out = k.sh(f"kubectl exec {pod} -- nc -zv -w 1 {leia} 80", check=False)
        return out.returncode, out.stderr

    assert nc("vader")[0] == 0 and nc("luke")[0] == 0

    k.write("policy.yaml", POLICY)
    assert "ciliumnetworkpolicy.cilium.io/k8s-svc-account created" in k.sh("kubectl apply -f policy.yaml").stdout
    # vader runs under `default`: leia's ingress is isolated and only luke's account is allowed.
    assert wait_for(lambda: nc("vader")[0] == 1, 10)
    assert "timeout" in nc("vader")[1]
    assert nc("luke")[0] == 0
