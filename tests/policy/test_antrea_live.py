"""Antrea's policy kinds on ``knetsim up`` (``cni: antrea``) with the real kubectl and busybox: served with the
printer columns of Antrea's CRDs (`kubectl get acnp`), enforced on `kubectl exec` traffic, named by
`knetsim policy check` read through the cluster's kubeconfig.

The objects restate Antrea's docs (antrea-io/antrea docs/antrea-network-policy.md): a ClusterNetworkPolicy that
drops traffic in the SecurityOps tier, and a namespaced Antrea NetworkPolicy that rejects it in the default
Application tier (a Reject answers at once, where a Drop leaves the client to time out).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from tests.live import Cluster, knetsim_argv, running, wait_for

pytestmark = pytest.mark.live  # starts a cluster of its own

DROP_IN_SECURITYOPS = """\
apiVersion: crd.antrea.io/v1beta1
kind: ClusterNetworkPolicy
metadata:
  name: drop-client-to-web
spec:
  tier: securityops
  priority: 5
  appliedTo:
  - podSelector:
      matchLabels:
        app: web
  ingress:
  - action: Drop
    from:
    - podSelector:
        matchLabels:
          run: client
"""

REJECT_IN_NAMESPACE = """\
apiVersion: crd.antrea.io/v1beta1
kind: NetworkPolicy
metadata:
  name: reject-to-web
  namespace: default
spec:
  priority: 10
  appliedTo:
  - podSelector:
      matchLabels:
        app: web
  ingress:
  - action: Reject
    from:
    - podSelector: {}
"""


@pytest.fixture(scope="module")
def antrea(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(tmp_path_factory.mktemp("antrea"), "cni: antrea\n") as c:
        c.sh("kubectl run web --image=nginx:1.27 --labels=app=web --port=80 --expose")
        c.sh("kubectl run client --image=busybox:1.36 -- sleep 3600")
        wait_for(lambda: c.sh("kubectl get pod web client --no-headers").stdout.count("Running") == 2, 30)
        yield c


def wget(k: Cluster) -> subprocess.CompletedProcess[str]:
    return k.sh("kubectl exec client -- wget -T 2 -qO- http://web", check=False, timeout=30)


def policy_check(k: Cluster) -> subprocess.CompletedProcess[str]:
    return subprocess.run(knetsim_argv("policy", "check", "--from", "default/client", "--to", "default/web",
                                       "--port", "80", "--kubeconfig", k.kubeconfig),
                          capture_output=True, text=True, env=k.env(), timeout=120)


def test_a_cluster_network_policy_drops_in_the_securityops_tier(antrea: Cluster) -> None:
    k = antrea
    assert "nginx" in wget(k).stdout
    k.write("acnp.yaml", DROP_IN_SECURITYOPS)
    assert k.sh("kubectl apply -f acnp.yaml").stdout.strip() == \
        "clusternetworkpolicy.crd.antrea.io/drop-client-to-web created"
    try:
        table = k.sh("kubectl get acnp").stdout.split("\n")
        assert table[0].split() == ["NAME", "TIER", "PRIORITY", "DESIRED", "NODES", "CURRENT", "NODES", "AGE"]
        assert table[1].split()[:3] == ["drop-client-to-web", "securityops", "5"]
        denied = wget(k)
        assert denied.returncode != 0 and "timed out" in denied.stderr, denied
        check = policy_check(k)
        assert check.stdout.startswith("DENIED"), check.stdout + check.stderr
        assert "dropped by ClusterNetworkPolicy.crd.antrea.io `drop-client-to-web` ingress[0] (Drop; Antrea tier " \
               "`securityops`" in check.stdout
    finally:
        k.sh("kubectl delete -f acnp.yaml")
    assert wait_for(lambda: "nginx" in wget(k).stdout, 10)


def test_an_antrea_network_policy_rejects_in_its_namespace(antrea: Cluster) -> None:
    k = antrea
    k.write("anp.yaml", REJECT_IN_NAMESPACE)
    k.sh("kubectl apply -f anp.yaml")
    try:
        # Antrea's namespaced kind and Kubernetes' share a name: each list holds only its own.
        assert k.sh("kubectl get networkpolicies.crd.antrea.io -o name").stdout.split() == [
            "networkpolicy.crd.antrea.io/reject-to-web"]
        assert k.sh("kubectl get networkpolicies.networking.k8s.io").stderr.strip() == \
            "No resources found in default namespace."
        refused = wget(k)
        assert refused.returncode != 0 and "timed out" not in refused.stderr, refused
        check = policy_check(k)
        assert "rejected (the client is refused) by NetworkPolicy.crd.antrea.io `default/reject-to-web` ingress[0] " \
               "(Reject; Antrea tier `application`" in check.stdout, check.stdout
    finally:
        k.sh("kubectl delete -f anp.yaml")
    assert wait_for(lambda: "nginx" in wget(k).stdout, 10)


def test_the_cluster_runs_antreas_agents_not_kindnet(antrea: Cluster) -> None:
    """What `kubectl get pods -n kube-system` shows on an Antrea cluster: antrea-agent on each node, and kube-proxy."""
    pods = antrea.sh("kubectl get pods -n kube-system -l app=antrea,component=antrea-agent -o wide --no-headers"
                     ).stdout.splitlines()
    assert len(pods) == 3 and all(line.split()[2] == "Running" for line in pods), pods
    assert sorted(line.split()[6] for line in pods) == ["control-plane", "worker", "worker2"]
    daemonsets = antrea.sh("kubectl get daemonsets -n kube-system -o name").stdout.split()
    assert "daemonset.apps/antrea-agent" in daemonsets and "daemonset.apps/kindnet" not in daemonsets


def test_a_field_out_of_place_is_refused_and_explain_shows_the_fields(antrea: Cluster) -> None:
    """Antrea's CRD takes `fqdn` only in an egress peer: in an ingress peer the API server refuses it by name."""
    k = antrea
    peer = "    - podSelector:\n        matchLabels:\n          run: client"
    assert peer in DROP_IN_SECURITYOPS
    k.write("fqdn-in.yaml", DROP_IN_SECURITYOPS.replace(peer, "    - fqdn: example.com"))
    out = k.sh("kubectl apply -f fqdn-in.yaml", check=False)
    assert out.returncode == 1
    assert 'ClusterNetworkPolicy in version "v1beta1" cannot be handled as a ClusterNetworkPolicy: strict decoding ' \
           'error: unknown field "spec.ingress[0].from[0].fqdn"' in out.stderr, out.stderr
    explained = k.sh("kubectl explain acnp.spec.egress.to").stdout
    assert "fqdn\t<string>" in explained and "namespaces\t<Object>" in explained, explained


def test_a_policy_in_a_tier_that_does_not_exist_is_refused(antrea: Cluster) -> None:
    """Antrea's webhook refuses a policy whose tier does not exist (validateTierForPolicy); created first, the Tier
    lets the same policy in."""
    k = antrea
    k.write("tiered.yaml", DROP_IN_SECURITYOPS.replace("tier: securityops", "tier: web-tier"))
    out = k.sh("kubectl apply -f tiered.yaml", check=False)
    # The webhook's refusal as kubectl prints it: a 400 with no reason, so no "(BadRequest)".
    assert out.returncode == 1 and out.stderr.strip() == (
        'Error from server: error when creating "tiered.yaml": admission webhook "acnpvalidator.antrea.io" denied the '
        'request: tier web-tier does not exist'), out
    k.write("tier.yaml", "apiVersion: crd.antrea.io/v1beta1\nkind: Tier\nmetadata: {name: web-tier}\n"
                         "spec: {priority: 10}\n")
    k.sh("kubectl apply -f tier.yaml")
    try:
        k.sh("kubectl apply -f tiered.yaml")
        k.sh("kubectl delete -f tiered.yaml")
    finally:
        k.sh("kubectl delete -f tier.yaml")


def test_the_webhook_refuses_what_antrea_refuses_in_its_words(antrea: Cluster) -> None:
    """antrea-controller's webhook (validate.go) after the schema: appliedTo on the policy and on a rule, a Pass in the
    baseline tier, a Tier on a priority taken or reserved, a Tier's priority changed, a Tier still named by a policy
    or one of Antrea's own deleted. Nothing refused is stored."""
    k = antrea
    both = DROP_IN_SECURITYOPS.replace("    from:\n", "    appliedTo:\n    - podSelector: {}\n    from:\n")
    k.write("both.yaml", both)
    out = k.sh("kubectl apply -f both.yaml", check=False)
    assert out.returncode == 1 and out.stderr.strip() == (
        'Error from server: error when creating "both.yaml": admission webhook "acnpvalidator.antrea.io" denied the '
        'request: appliedTo should not be set in both spec and rules'), out
    k.write("pass.yaml", DROP_IN_SECURITYOPS.replace("securityops", "baseline").replace("Drop", "Pass"))
    out = k.sh("kubectl apply -f pass.yaml", check=False)
    assert out.returncode == 1 and out.stderr.strip().endswith(
        "denied the request: `Pass` action should not be set for Baseline Tier policy rules"), out
    assert k.sh("kubectl get acnp").stderr.strip() == "No resources found"

    for priority, reason in ((100, "tier ops priority 100 overlaps with existing Tier"),
                             (251, "tier ops priority 251 is reserved")):
        k.write("ops.yaml", f"apiVersion: crd.antrea.io/v1beta1\nkind: Tier\nmetadata: {{name: ops}}\n"
                            f"spec: {{priority: {priority}}}\n")
        out = k.sh("kubectl apply -f ops.yaml", check=False)
        assert out.returncode == 1 and out.stderr.strip() == (
            f'Error from server: error when creating "ops.yaml": admission webhook "tiervalidator.antrea.io" denied '
            f'the request: {reason}'), out
    k.write("ops.yaml", "apiVersion: crd.antrea.io/v1beta1\nkind: Tier\nmetadata: {name: ops}\nspec: {priority: 30}\n")
    k.sh("kubectl apply -f ops.yaml")
    k.write("in-ops.yaml", DROP_IN_SECURITYOPS.replace("tier: securityops", "tier: ops"))
    k.sh("kubectl apply -f in-ops.yaml")
    try:
        out = k.sh("kubectl patch tier ops --type=merge -p '{\"spec\":{\"priority\":40}}'", check=False)
        assert out.returncode == 1 and out.stderr.strip().endswith(
            'admission webhook "tiervalidator.antrea.io" denied the request: update to Tier priority is not '
            'allowed'), out
        out = k.sh("kubectl delete tier ops", check=False)
        assert out.returncode == 1 and out.stderr.strip() == (
            'Error from server: admission webhook "tiervalidator.antrea.io" denied the request: tier ops is '
            'referenced by 1 Antrea ClusterNetworkPolicies'), out
    finally:
        k.sh("kubectl delete -f in-ops.yaml")
    k.sh("kubectl delete tier ops")
    assert k.sh("kubectl get tiers").stderr.strip() == "No resources found"


def test_a_service_account_peer_takes_the_pods_running_as_it(antrea: Cluster) -> None:
    """A peer by service account (docs/antrea-network-policy.md, "ServiceAccount based selection"): the client runs as
    `default`, so a Drop from `default/default` drops it and a Drop from another account does not."""
    k = antrea
    policy = DROP_IN_SECURITYOPS.replace("    - podSelector:\n        matchLabels:\n          run: client\n",
                                         "    - serviceAccount:\n        name: default\n        namespace: default\n")
    assert "serviceAccount" in policy
    k.write("by-account.yaml", policy)
    k.sh("kubectl apply -f by-account.yaml")
    try:
        denied = wget(k)
        assert denied.returncode != 0 and "timed out" in denied.stderr, denied
        assert policy_check(k).stdout.startswith("DENIED")
        k.write("by-account.yaml", policy.replace("name: default\n        namespace", "name: robot\n        namespace"))
        k.sh("kubectl apply -f by-account.yaml")
        assert wait_for(lambda: "nginx" in wget(k).stdout, 10)
        assert policy_check(k).stdout.startswith("ALLOWED")
    finally:
        k.sh("kubectl delete -f by-account.yaml")


def test_to_services_drops_the_cluster_ip_and_not_the_pod(antrea: Cluster) -> None:
    """docs/antrea-network-policy.md, "toServices egress rules": a Drop to Service default/web stops `wget
    http://web` (the cluster IP) and leaves the pod's own address reachable ("direct access to the Endpoints of this
    Service is not affected")."""
    k = antrea
    k.write("to-services.yaml", """\
apiVersion: crd.antrea.io/v1beta1
kind: ClusterNetworkPolicy
metadata:
  name: acnp-drop-to-services
spec:
  priority: 5
  tier: securityops
  appliedTo:
  - podSelector:
      matchLabels:
        run: client
  egress:
  - action: Drop
    name: DropToServices
    toServices:
    - name: web
      namespace: default
""")
    k.sh("kubectl apply -f to-services.yaml")
    try:
        denied = wget(k)
        assert denied.returncode != 0 and "timed out" in denied.stderr, denied
        pod_ip = k.sh("kubectl get pod web -o jsonpath={.status.podIP}").stdout.strip()
        direct = k.sh(f"kubectl exec client -- wget -T 2 -qO- http://{pod_ip}", check=False, timeout=30)
        assert "nginx" in direct.stdout, direct
    finally:
        k.sh("kubectl delete -f to-services.yaml")
    assert wait_for(lambda: "nginx" in wget(k).stdout, 10)
