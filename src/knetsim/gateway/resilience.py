"""Retries and timeouts of a rule's backend requests: the HTTPRoute rule's ``retry`` (experimental channel,
GEP-1731) and ``timeouts``, and Envoy Gateway's BackendTrafficPolicy ``retry`` and ``timeout``.

Which one is in force (Envoy Gateway's docs, tasks/traffic/retry: the HTTPRoute's own retry takes precedence
over a BackendTrafficPolicy's): the rule's ``retry`` where the implementation's report claims
``HTTPRouteRetry`` (an implementation without it serves the route without retries; the doctor says so), else
the BackendTrafficPolicy's on an implementation that reads Envoy Gateway's kinds.

What knetsim can decide with it: a backend request that fails to connect — the only upstream failure a
simulated endpoint has, a TLS handshake the proxy's BackendTLSPolicy refuses — is retried on another ready
endpoint (Envoy Gateway's retry policy skips the hosts already tried: ``previous_hosts``), up to the retries
allowed, when the policy retries connection failures (the rule's ``retry`` on an implementation that claims
``HTTPRouteRetryConnectionError``; the BackendTrafficPolicy's ``connect-failure``, ``reset``, ``5xx`` or
``gateway-error`` triggers). A retry on status codes and every timeout is named on the answer: the backends
knetsim runs answer at once and the same from every endpoint, so neither changes an answer it computes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..cluster.gatewayimplementations import Implementation
from ..cluster.state import ClusterState
from . import envoypolicies

# Envoy's retry_on values that retry a request whose connection failed (Envoy's router filter docs: 5xx and
# gateway-error include connect failures and resets).
_CONNECT_TRIGGERS = frozenset({"connect-failure", "reset", "reset-before-request", "5xx", "gateway-error"})
_GATEWAY_ERRORS = (502, 503, 504)
ENVOY_DEFAULT_RETRIES = 2  # BackendTrafficPolicy retry.numRetries' default (api/v1alpha1/retry_types.go)


@dataclass(frozen=True, slots=True)
class RetryPlan:
    source: str  # "HTTPRoute ns/name rule 0 retry" | "BackendTrafficPolicy ns/name retry"
    retries: int  # how many times a failed backend request is sent again
    on_connect_failure: bool
    codes: tuple[int, ...]

    def describe(self) -> str:
        on = []
        if self.on_connect_failure:
            on.append("connection failures")
        if self.codes:
            on.append("status " + ", ".join(map(str, self.codes)))
        return f"{self.source}: up to {self.retries} retries on {' and '.join(on) or 'nothing'}"


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def rule_retry(raw_rule: Mapping[str, Any], route: str, index: int, impl: Implementation) -> RetryPlan | None:
    """The HTTPRoute rule's own ``retry``, as ``impl`` runs it (None: no retry field, or not claimed)."""
    retry = raw_rule.get("retry")
    if not isinstance(retry, dict) or not impl.supports("HTTPRouteRetry"):
        return None
    codes = tuple(sorted(c for c in retry.get("codes") or () if isinstance(c, int) and not isinstance(c, bool)))
    # attempts unset: the number is the implementation's; Envoy Gateway's translator uses its default (2).
    return RetryPlan(f"HTTPRoute {route} rule {index} retry", _int(retry.get("attempts"), ENVOY_DEFAULT_RETRIES),
                     impl.supports("HTTPRouteRetryConnectionError"), codes)


def policy_retry(policy: envoypolicies.Policy | None) -> RetryPlan | None:
    """A BackendTrafficPolicy's ``retry`` (None: it has none)."""
    if policy is None or not isinstance(policy.spec.get("retry"), dict):
        return None
    retry = policy.spec["retry"]
    on = _map(retry.get("retryOn"))
    triggers = {t for t in on.get("triggers") or () if isinstance(t, str)}
    codes: set[int] = set()
    if "retriable-status-codes" in triggers:
        codes.update(c for c in on.get("httpStatusCodes") or () if isinstance(c, int) and not isinstance(c, bool))
    if "gateway-error" in triggers:
        codes.update(_GATEWAY_ERRORS)
    if "5xx" in triggers:
        codes.update(range(500, 600))
    # No retryOn: Envoy Gateway retries on connect-failure, refused-stream, unavailable, cancelled and
    # retriable-status-codes 503 (its translator's default retry_on).
    connect = bool(triggers & _CONNECT_TRIGGERS) if "retryOn" in retry else True
    if "retryOn" not in retry:
        codes.add(503)
    return RetryPlan(f"{policy.label} retry", _int(retry.get("numRetries"), ENVOY_DEFAULT_RETRIES), connect,
                     tuple(sorted(codes)) if len(codes) < 100 else (500, 599))


def plan(state: ClusterState, impl: Implementation, gateway: str, listener: str | None, route_kind: str,
         route: str, rule: int, rule_name: str | None, raw_rule: Mapping[str, Any]) -> RetryPlan | None:
    """The retry in force for a request the rule took."""
    own = rule_retry(raw_rule, route, rule, impl)
    if own is not None:
        return own
    if not reads_envoy_policies(impl):
        return None
    return policy_retry(envoypolicies.attached(state, gateway, listener, route_kind, route, rule_name).traffic)


_TIMEOUT_FEATURES = {"request": "HTTPRouteRequestTimeout", "backendRequest": "HTTPRouteBackendTimeout"}


def timeouts(raw_rule: Mapping[str, Any], traffic: envoypolicies.Policy | None,
             impl: Implementation | None = None) -> list[str]:
    """The timeouts a request the rule took is subject to, each named (none changes an answer knetsim computes:
    its endpoints accept and answer at once); the rule's own only where ``impl``'s report claims them."""
    out = []
    rule = _map(raw_rule.get("timeouts"))
    for name, feature in _TIMEOUT_FEATURES.items():
        if isinstance(rule.get(name), str) and (impl is None or impl.supports(feature)):
            out.append(f"timeouts.{name} {rule[name]}")
    spec = _map(traffic.spec.get("timeout")) if traffic is not None else {}
    for proto, fields in (("tcp", ("connectTimeout",)), ("http", ("requestTimeout", "connectionIdleTimeout",
                                                                   "maxConnectionDuration"))):
        for name in fields:
            value = _map(spec.get(proto)).get(name)
            if isinstance(value, str):
                out.append(f"{traffic.label if traffic else ''} timeout.{proto}.{name} {value}")
    return out


def reads_envoy_policies(impl: Implementation) -> bool:
    """Whether the implementation reads Envoy Gateway's policy kinds (it is Envoy Gateway)."""
    return any(k.startswith(f"{envoypolicies.EG_GROUP}/") for k in impl.extension_kinds)
