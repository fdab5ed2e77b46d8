"""Cilium's policy kinds on ``knetsim up`` with the real kubectl: a CiliumClusterwideNetworkPolicy is served
(`kubectl get ccnp`), and its deny rule, and a CiliumNetworkPolicy's egressDeny, decide `kubectl exec` traffic
(a drop: nc times out).

Cluster: Cilium without its kube-proxy replacement (``cni: cilium``). The objects restate cilium/cilium's
connectivity-test manifest ``client-egress-to-echo-deny.yaml`` and the docs' clusterwide deny example.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .conftest import Cluster, running, wait_for

pytestmark = pytest.mark.live  # starts a cluster of its own

POLICIES = """\
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata:
  name: deny-from-other
spec:
  endpointSelector:
    matchLabels:
      kind: echo
  ingressDeny:
  - fromEndpoints:
    - matchLabels:
        kind: other
  ingress:
  - fromEntities: [all]
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata:
  name: client-egress-to-echo-deny
  namespace: default
spec:
  endpointSelector:
    matchLabels:
      kind: client
  egressDeny:
  - toPorts:
    - ports:
      - port: "80"
        protocol: TCP
    toEndpoints:
    - matchLabels:
        kind: echo
  egress:
  - toEntities: [all]
"""


@pytest.fixture(scope="module")
def cilium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(tmp_path_factory.mktemp("cilium"), "cni: cilium\n") as c:
        yield c


def test_clusterwide_and_deny_rules_live(cilium: Cluster) -> None:
    k = cilium
    k.sh("kubectl run echo --image=nginx:1.27 --labels=kind=echo --port=80")
    k.sh("kubectl run web --image=nginx:1.27 --labels=kind=web --port=80")
    k.sh("kubectl run client --image=busybox:1.36 --labels=kind=client -- sleep 3600")
    k.sh("kubectl run other --image=busybox:1.36 --labels=kind=other -- sleep 3600")
    wait_for(lambda: k.sh("kubectl get pod echo web client other --no-headers").stdout.count("Running") == 4, 30)
    echo = k.sh("kubectl get pod echo -o jsonpath={.status.podIP}").stdout.strip()
    web = k.sh("kubectl get pod web -o jsonpath={.status.podIP}").stdout.strip()

    def nc(pod: str, ip: str) -> tuple[int, str]:
        out = k.sh(f"kubectl exec {pod} -- nc -zv -w 1 {ip} 80", check=False)
        return out.returncode, out.stderr

    assert nc("other", echo)[0] == 0 and nc("client", echo)[0] == 0

    k.write("policies.yaml", POLICIES)
    out = k.sh("kubectl apply -f policies.yaml").stdout
    assert "ciliumclusterwidenetworkpolicy.cilium.io/deny-from-other created" in out
    assert "ciliumnetworkpolicy.cilium.io/client-egress-to-echo-deny created" in out
    table = k.sh("kubectl get ccnp").stdout.splitlines()
    assert table[0].split()[0] == "NAME" and table[1].split()[0] == "deny-from-other"

    # The clusterwide deny drops other -> echo; the namespaced egressDeny client -> echo:80 despite its allow-all.
    assert wait_for(lambda: nc("other", echo)[0] == 1, 10)
    assert "timeout" in nc("other", echo)[1]
    code, err = nc("client", echo)
    assert code == 1 and "timeout" in err
    assert nc("client", web)[0] == 0 and nc("other", web)[0] == 0


def test_a_misspelt_field_is_refused_and_explain_shows_the_fields(cilium: Cluster) -> None:
    """The CRD's structural schema decodes strictly (kubectl asks fieldValidation=Strict): `egres` is refused.
    Stored as an ignored key, the policy would keep its egressDeny and lose its allow-all egress rule: every
    connection of the client would be dropped."""
    k = cilium
    k.write("misspelt.yaml", POLICIES.split("---\n")[1].replace("  egress:", "  egres:")
            .replace("name: client-egress-to-echo-deny", "name: misspelt"))
    out = k.sh("kubectl apply -f misspelt.yaml", check=False)
    assert out.returncode == 1
    assert out.stderr.strip() == 'Error from server (BadRequest): error when creating "misspelt.yaml": ' \
        'CiliumNetworkPolicy in version "v2" cannot be handled as a CiliumNetworkPolicy: strict decoding error: ' \
        'unknown field "spec.egres"', out.stderr
    assert "misspelt" not in k.sh("kubectl get cnp -o name").stdout
    explained = k.sh("kubectl explain cnp.spec.egress.toFQDNs").stdout
    assert "KIND:       CiliumNetworkPolicy" in explained, explained
    assert "matchName\t<string>" in explained and "matchPattern\t<string>" in explained, explained
    clusterwide = k.sh("kubectl explain ccnp.spec.ingressDeny.toPorts").stdout
    assert "ports\t<[]Object>" in clusterwide and "rules\t" not in clusterwide, clusterwide


def test_the_agents_enforcement_mode_live(cilium: Cluster) -> None:
    """kube-system/cilium-config holds the agent's enable-policy, as the chart installs it: set to always, a pod no
    policy selects is dropped both ways (intro.rst, "Policy Enforcement Modes"); back to default, it is not. A real
    agent reads the ConfigMap when it starts (restart it there); here the change holds at once."""
    k = cilium
    k.sh("kubectl create namespace modes")
    k.sh("kubectl -n modes run plain --image=nginx:1.27 --port=80")
    k.sh("kubectl -n modes run probe --image=busybox:1.36 -- sleep 3600")
    assert wait_for(lambda: k.sh("kubectl -n modes get pods --no-headers").stdout.count("Running") == 2, 30)
    plain = k.sh("kubectl -n modes get pod plain -o jsonpath={.status.podIP}").stdout.strip()
    assert k.sh("kubectl -n kube-system get cm cilium-config -o jsonpath={.data.enable-policy}").stdout == "default"

    def reaches() -> bool:
        return k.sh(f"kubectl -n modes exec probe -- nc -zv -w 1 {plain} 80", check=False).returncode == 0

    assert reaches()
    try:
        k.sh("""kubectl -n kube-system patch cm cilium-config --type merge -p '{"data":{"enable-policy":"always"}}'""")
        assert wait_for(lambda: not reaches(), 10)
    finally:
        k.sh("""kubectl -n kube-system patch cm cilium-config --type merge -p '{"data":{"enable-policy":"default"}}'""")
    assert wait_for(reaches, 10)
