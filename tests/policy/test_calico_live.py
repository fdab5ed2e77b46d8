"""Calico's policy kinds on ``knetsim up`` (``cni: calico``) with the real kubectl and busybox: served as
calico-apiserver serves them (`kubectl get globalnetworkpolicies`, `gnp`, `networkpolicies.projectcalico.org`),
enforced on `kubectl exec` traffic, and named by `knetsim policy check` and `knetsim doctor` read through the
cluster's kubeconfig.

The default deny is the one Calico's docs recommend writing as a GlobalNetworkPolicy (docs.tigera.io, "Enable
a default deny policy for Kubernetes pods"), with the DNS allow it needs; the Tier + Pass case is the docs' tiered
policy example ("Get started with policy tiers"): a tier whose policy passes the traffic it vouches for to the
next tier, and denies (end of tier) what its policy selects and no rule matches.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from tests.live import Cluster, knetsim_argv, running, wait_for

pytestmark = pytest.mark.live  # starts a cluster of its own

DEFAULT_DENY = """\
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: default-deny
spec:
  selector: all()
  types: [Ingress, Egress]
  ingress:
  - action: Allow
    protocol: UDP
    destination:
      selector: k8s-app == 'kube-dns'
      ports: [53]
  egress:
  - action: Allow
    protocol: UDP
    destination:
      selector: k8s-app == 'kube-dns'
      namespaceSelector: projectcalico.org/name == 'kube-system'
      ports: [53]
"""

TIERED = """\
apiVersion: projectcalico.org/v3
kind: Tier
metadata:
  name: security
spec:
  order: 100
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: security.web-gate
spec:
  tier: security
  order: 10
  selector: app == 'web'
  types: [Ingress]
  ingress:
  - action: Pass
    source:
      selector: run == 'client'
"""


@pytest.fixture(scope="module")
def calico(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(tmp_path_factory.mktemp("calico"), "cni: calico\n") as c:
        c.sh("kubectl run web --image=nginx:1.27 --labels=app=web --port=80 --expose")
        c.sh("kubectl run client --image=busybox:1.36 -- sleep 3600")
        c.sh("kubectl run other --image=busybox:1.36 -- sleep 3600")
        wait_for(lambda: c.sh("kubectl get pod web client other --no-headers").stdout.count("Running") == 3, 30)
        yield c


def wget(k: Cluster, pod: str) -> subprocess.CompletedProcess[str]:
    return k.sh(f"kubectl exec {pod} -- wget -T 2 -qO- http://web", check=False, timeout=30)


def knetsim(k: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(knetsim_argv(*args, "--kubeconfig", k.kubeconfig), capture_output=True, text=True,
                          env=k.env(), timeout=120)


def test_a_global_default_deny_stops_exec_traffic_and_deleting_it_lets_it_through(calico: Cluster) -> None:
    k = calico
    assert "nginx" in wget(k, "client").stdout
    k.write("deny.yaml", DEFAULT_DENY)
    assert k.sh("kubectl apply -f deny.yaml").stdout.strip() == \
        "globalnetworkpolicy.projectcalico.org/default-deny created"
    try:
        listed = k.sh("kubectl get globalnetworkpolicies").stdout.split("\n")
        assert listed[0].split() == ["NAME", "AGE"] and listed[1].split()[0] == "default-deny"
        assert "default-deny" in k.sh("kubectl get gnp -o name").stdout
        # Calico's namespaced NetworkPolicy is not the Kubernetes one: neither list holds the other's objects.
        assert k.sh("kubectl get networkpolicies.projectcalico.org -A").stderr.strip() == "No resources found"
        denied = wget(k, "client")
        assert denied.returncode != 0 and "timed out" in denied.stderr, denied
        check = knetsim(k, "policy", "check", "--from", "default/client", "--to", "default/web", "--port", "80")
        assert check.returncode == 1 and check.stdout.startswith("DENIED"), check.stdout + check.stderr
        assert "denied at the end of tier `default`: GlobalNetworkPolicy default-deny selects default/web for " \
               "ingress" in check.stdout
        assert "cni: CNI Calico (cluster config)" in check.stdout
    finally:
        k.sh("kubectl delete -f deny.yaml")
    assert wait_for(lambda: "nginx" in wget(k, "client").stdout, 10)


def test_a_tier_passes_what_its_policy_vouches_for_and_denies_the_rest_at_its_end(calico: Cluster) -> None:
    k = calico
    k.write("tiered.yaml", TIERED)
    k.sh("kubectl apply -f tiered.yaml")
    try:
        assert k.sh("kubectl get tiers.projectcalico.org -o name").stdout.split() == ["tier.projectcalico.org/security"]
        assert "nginx" in wget(k, "client").stdout  # passed on; no later tier selects web: its profile allows
        denied = wget(k, "other")
        assert denied.returncode != 0 and "timed out" in denied.stderr, denied
        check = knetsim(k, "policy", "check", "--from", "default/client", "--to", "default/web", "--port", "80")
        assert "passed by GlobalNetworkPolicy `security.web-gate` ingress[0] (Pass; tier `security`, order 10)" \
            in check.stdout, check.stdout
        doctor = knetsim(k, "doctor")
        assert "GlobalNetworkPolicy security.web-gate: CalicoPassToProfile" in doctor.stdout, doctor.stdout
    finally:
        k.sh("kubectl delete -f tiered.yaml")


def test_what_calico_refuses_is_refused_by_kubectl_apply(calico: Cluster) -> None:
    k = calico
    k.write("typo.yaml", DEFAULT_DENY.replace("selector: all()", "selector: app = = 'web'"))
    out = k.sh("kubectl apply -f typo.yaml", check=False)
    assert out.returncode != 0
    assert 'The GlobalNetworkPolicy "default-deny" is invalid: spec.selector: Invalid value: ' in out.stderr, out.stderr


def test_the_cluster_runs_calicos_agents_not_kindnet(calico: Cluster) -> None:
    """What `kubectl get pods -n kube-system` shows on a Calico cluster: calico-node on each node beside kube-proxy."""
    pods = calico.sh("kubectl get pods -n kube-system -l k8s-app=calico-node -o wide --no-headers").stdout.splitlines()
    assert len(pods) == 3 and all(line.split()[2] == "Running" for line in pods), pods
    assert sorted(line.split()[6] for line in pods) == ["control-plane", "worker", "worker2"]
    daemonsets = calico.sh("kubectl get daemonsets -n kube-system -o name").stdout.split()
    assert "daemonset.apps/calico-node" in daemonsets and "daemonset.apps/kindnet" not in daemonsets


def test_a_misspelt_field_is_refused_and_explain_shows_the_fields(calico: Cluster) -> None:
    """calico-apiserver decodes strictly (kubectl asks fieldValidation=Strict): `selectr` is refused, not stored as
    an ignored key of a policy that would then select every endpoint; --validate=false drops it, as a server does."""
    k = calico
    k.write("misspelt.yaml", DEFAULT_DENY.replace("selector: all()", "selectr: all()"))
    out = k.sh("kubectl apply -f misspelt.yaml", check=False)
    assert out.returncode == 1
    assert out.stderr.strip() == 'Error from server (BadRequest): error when creating "misspelt.yaml": ' \
        'GlobalNetworkPolicy in version "v3" cannot be handled as a GlobalNetworkPolicy: strict decoding error: ' \
        'unknown field "spec.selectr"', out.stderr
    assert k.sh("kubectl get gnp -o name").stdout == ""
    explained = k.sh("kubectl explain globalnetworkpolicy.spec.ingress.destination").stdout
    assert "KIND:       GlobalNetworkPolicy" in explained and "notNets\t<[]string>" in explained, explained
