"""Seed "NetworkPolicy: default deny + 必要なものだけ許可", checked with traffic.

Given pods db (role=db, postgres, 5432), backend (role=backend) and other (role=other) and a web
Deployment in `default`, then the notes' policies decide what busybox's nc / wget get: allowed
connections open, isolated ones time out after the tool's -w / -T (a drop, not a refusal), and a
default-deny egress without the DNS allowance makes names fail with `bad address`.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from .conftest import Cluster
from .seeds import ALLOW_DNS_EGRESS, AND_OR, DEFAULT_DENY_AND_DB, DEFAULT_DENY_EGRESS

RUN = "kubectl run tmp --rm -i --image=busybox:1.36 --restart=Never -- "


def pods(k: Cluster, ns: str = "default") -> None:
    n = f" -n {ns}"
    k.sh(f"kubectl run db --image=postgres:16 --labels=role=db --port=5432{n}")
    k.sh(f"kubectl expose pod db --port=5432{n}")
    k.sh(f"kubectl run backend --image=busybox:1.36 --labels=role=backend{n} -- sleep 3600")
    k.sh(f"kubectl run other --image=busybox:1.36 --labels=role=other{n} -- sleep 3600")
    k.sh(f"kubectl create deployment web --image=nginx:1.27 --port=80{n}")
    k.sh(f"kubectl expose deployment web --port=80{n}")


def timed(k: Cluster, command: str) -> tuple[int, str, float]:
    started = time.monotonic()
    out = k.sh(command, check=False)
    return out.returncode, out.stdout + out.stderr, time.monotonic() - started


def test_default_deny_ingress_and_db_allow_backend(k: Cluster) -> None:
    pods(k)
    # Non-isolated to start with: everything connects.
    code, out, _ = timed(k, "kubectl exec other -- nc -zv -w 1 db 5432")
    assert (code, out.split()[0]) == (0, "db")
    assert out.rstrip().endswith(":5432) open")

    k.write("deny.yaml", DEFAULT_DENY_AND_DB)
    assert k.sh("kubectl apply -f deny.yaml").stdout == (
        "networkpolicy.networking.k8s.io/default-deny-ingress created\n"
        "networkpolicy.networking.k8s.io/db-allow-backend created\n")

    # role=backend → role=db on TCP 5432: allowed by db-allow-backend.
    code, out, _ = timed(k, "kubectl exec backend -- nc -zv -w 1 db 5432")
    assert code == 0, out
    # Anyone else is dropped: nc waits its -w and says timeout (not "refused").
    code, out, elapsed = timed(k, "kubectl exec other -- nc -zv -w 1 db 5432")
    assert code == 1
    assert "nc: timeout" in out
    assert "command terminated with exit code 1" in out
    assert elapsed >= 1.0
    # Every pod of the namespace is ingress-isolated, web included, from a fresh pod too.
    code, out, elapsed = timed(k, RUN + "wget -qO- -T 1 http://web")
    assert code == 1
    assert "wget: download timed out" in out
    assert "pod default/tmp terminated (Error)" in out
    assert elapsed >= 1.0
    # Egress is not affected: the DNS lookup itself still works.
    assert "Address: " in k.sh("kubectl exec other -- nslookup web.default.svc.cluster.local").stdout

    table = k.sh("kubectl get networkpolicy -n default").stdout.splitlines()
    assert table[0].split() == ["NAME", "POD-SELECTOR", "AGE"]
    assert [line.split()[:2] for line in table[1:]] == [["db-allow-backend", "role=db"],
                                                       ["default-deny-ingress", "<none>"]]
    describe = k.sh("kubectl describe networkpolicy -n default").stdout
    assert "  PodSelector:     role=db\n  Allowing ingress traffic:\n    To Port: 5432/TCP\n    From:\n" \
           "      PodSelector: role=backend\n  Not affecting egress traffic\n" in describe
    assert "    <none> (Selected pods are isolated for ingress connectivity)" in describe


def test_default_deny_egress_breaks_dns_until_allow_dns_egress(k: Cluster) -> None:
    pods(k)
    k.write("deny-egress.yaml", DEFAULT_DENY_EGRESS)
    k.sh("kubectl apply -f deny-egress.yaml")
    # Both wait for the resolver's timeouts (5 s x 2 attempts): run them side by side.
    with ThreadPoolExecutor(2) as pool:
        wget = pool.submit(timed, k, "kubectl exec backend -- wget -qO- -T 1 http://web")
        lookup = pool.submit(timed, k, "kubectl exec backend -- nslookup web.default.svc.cluster.local")
        code, out, _ = wget.result()
        assert code == 1
        assert "wget: bad address 'web'" in out
        code, out, _ = lookup.result()
        assert code == 1
        assert ";; connection timed out; no servers could be reached" in out

    k.write("dns.yaml", ALLOW_DNS_EGRESS)
    assert k.sh("kubectl apply -f dns.yaml").stdout == "networkpolicy.networking.k8s.io/allow-dns-egress created\n"
    web_ip = k.sh("kubectl get svc web -o jsonpath='{.spec.clusterIP}'").stdout
    out = k.sh("kubectl exec backend -- nslookup web.default.svc.cluster.local").stdout
    assert f"Name:\tweb.default.svc.cluster.local\nAddress: {web_ip}\n" in out
    # DNS resolves now; the connection itself is still egress-denied: a timeout, not bad address.
    code, out, elapsed = timed(k, "kubectl exec backend -- wget -qO- -T 1 http://web")
    assert code == 1
    assert "wget: download timed out" in out
    assert elapsed >= 1.0
    describe = k.sh("kubectl describe networkpolicy allow-dns-egress").stdout
    assert "  Allowing egress traffic:\n    To Port: 53/UDP\n    To Port: 53/TCP\n    To:\n" \
           "      NamespaceSelector: kubernetes.io/metadata.name=kube-system\n" in describe


def test_and_versus_or_is_one_dash(k: Cluster) -> None:
    """(1) one item: namespace user=alice AND pod role=client; (2) two items: either."""
    for ns, policy in (("and-ns", "and"), ("or-ns", "or")):
        k.namespace(ns)
        k.sh(f"kubectl create deployment web --image=nginx:1.27 --port=80 -n {ns}")
        k.sh(f"kubectl expose deployment web --port=80 -n {ns}")
        docs = AND_OR.split("---\n")
        k.write(f"{policy}.yaml", docs[0] if policy == "and" else docs[1])
        k.sh(f"kubectl apply -f {policy}.yaml -n {ns}")
    k.namespace("alice")
    k.sh("kubectl label namespace alice user=alice")
    k.sh("kubectl run client --image=busybox:1.36 --labels=role=client -n alice -- sleep 3600")
    k.sh("kubectl run nobody --image=busybox:1.36 -n alice -- sleep 3600")
    k.sh("kubectl run client --image=busybox:1.36 --labels=role=client -n and-ns -- sleep 3600")
    k.sh("kubectl run client --image=busybox:1.36 --labels=role=client -n or-ns -- sleep 3600")
    cases = [
        ("alice", "client", "and-ns", 0), ("alice", "nobody", "and-ns", 1), ("and-ns", "client", "and-ns", 1),
        ("alice", "client", "or-ns", 0), ("alice", "nobody", "or-ns", 0), ("or-ns", "client", "or-ns", 0),
    ]
    with ThreadPoolExecutor(len(cases)) as pool:
        results = list(pool.map(lambda c: timed(k, f"kubectl exec -n {c[0]} {c[1]} -- "
                                                   f"wget -qO- -T 1 http://web.{c[2]}"), cases))
    for case, (code, out, _) in zip(cases, results, strict=True):
        assert code == case[3], (case, out)
        assert ("Welcome to nginx!" in out) == (case[3] == 0), (case, out)
    # describe shows how Kubernetes read the YAML: one peer with both selectors, or two peers.
    assert "    From:\n      NamespaceSelector: user=alice\n      PodSelector: role=client\n" in \
        k.sh("kubectl describe networkpolicy and -n and-ns").stdout
    assert "    From:\n      NamespaceSelector: user=alice\n    From:\n      PodSelector: role=client\n" in \
        k.sh("kubectl describe networkpolicy or -n or-ns").stdout
