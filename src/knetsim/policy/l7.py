"""HTTP-level policy: what standard NetworkPolicy cannot express.

NetworkPolicy stops at L3/L4, so "GET 200 but POST 403 on the same IP and port" is
impossible with it (and with iptables/nftables). Cilium's ``toPorts[].rules.http`` does it:
its proxy answers ``403`` with the body ``Access denied`` for a request no rule allows.
Cilium merges the L7 rules of every rule allowing a flow; when one of those rules allows
the port without HTTP rules, every request passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..cluster.state import ClusterState
from ..model.objects import Pod
from .cilium import http_rule_matches
from .engine import endpoint, evaluate, policy_index
from .rules import INGRESS, Endpoint, HTTPRule

ACCESS_DENIED = "Access denied"


@dataclass(frozen=True, slots=True)
class HTTPVerdict:
    """One HTTP request's fate: allowed or not, why, and which side's Cilium proxy read it (``ingress`` or
    ``egress``: the side whose HTTP rules decided; "" when no proxy read it, as no HTTP rule applied)."""

    allowed: bool
    reason: str
    proxy: str = ""


def http_allowed(state: ClusterState, src: str | Pod | Endpoint, dst: str | Pod | Endpoint, port: int | str,
                 method: str, path: str, headers: Mapping[str, str] | None = None, *, host: str = "",
                 namespace: str = "default") -> tuple[bool, str]:
    """(allowed, reason) for one HTTP request; a denial by HTTP rules reads ``403 Access denied: ...``."""
    v = http_verdict(state, src, dst, port, method, path, headers, host=host, namespace=namespace)
    return v.allowed, v.reason


def http_verdict(state: ClusterState, src: str | Pod | Endpoint, dst: str | Pod | Endpoint, port: int | str,
                 method: str, path: str, headers: Mapping[str, str] | None = None, *, host: str = "",
                 namespace: str = "default") -> HTTPVerdict:
    """``http_allowed``, with the side whose proxy read the request."""
    headers = headers or {}
    verdict = evaluate(state, src, dst, port, "TCP", namespace=namespace)
    if not verdict.allowed:
        side = verdict.egress if not verdict.egress.allowed else verdict.ingress
        return HTTPVerdict(False, f"dropped at L3/L4 before any HTTP is exchanged (a timeout): {side.reason}")
    index = policy_index(state)
    if not index.cilium_enforced:
        if index.unenforced:
            return HTTPVerdict(True, f"{', '.join(index.unenforced)} not enforced: the data plane is "
                               f"{state.config.dataplane}, which has no Cilium; NetworkPolicy stops at L3/L4, so "
                               "every request on an allowed connection passes")
        return HTTPVerdict(True, "no HTTP policy: NetworkPolicy stops at L3/L4")
    dst_ep = endpoint(state, dst, namespace)
    src_ep = endpoint(state, src, namespace)
    policies = {(p.kind, p.key): p for p in index.policies}
    if index.cilium is not None:  # Cilium's walk: its allow rules, the clusterwide kind's (keyed by name) too
        policies.update({(c.policy.kind, c.name): c.policy for c in index.cilium.policies})
    proxy = ""  # the last side whose HTTP rules read the request
    for side in (verdict.egress, verdict.ingress):
        if not side.isolated or not side.allowed_by:
            continue
        rules: list[tuple[str, HTTPRule]] = []
        unrestricted = False
        for match in side.allowed_by:
            policy = policies[(match.kind, match.policy)]
            rule = (policy.rules(side.direction) or ())[match.rule]
            if rule.ports is None:
                unrestricted = True
                break
            target = dst_ep
            for p in rule.ports:
                if not p.matches("TCP", verdict.port, target):
                    continue
                if p.http is None:
                    unrestricted = True
                    break
                rules.extend((match.location, h) for h in p.http)
            if unrestricted:
                break
        if unrestricted:
            continue
        proxy = side.direction
        hit = next(((loc, r) for loc, r in rules if http_rule_matches(r, method, path, headers, host)), None)
        who = dst_ep.name if side.direction == INGRESS else src_ep.name
        if hit is None:
            allowed = "; ".join(sorted({r.describe() for _, r in rules})) or "nothing"
            return HTTPVerdict(False, f"403 {ACCESS_DENIED}: {method} {path} matches no HTTP rule for "
                               f"{side.direction} of {who} (allowed: {allowed})", proxy)
    if proxy:
        return HTTPVerdict(True, f"allowed by the proxy: {method} {path} passes every HTTP rule on the way", proxy)
    return HTTPVerdict(True, "allowed: a rule allows the port without HTTP rules, so no proxy reads the request")
