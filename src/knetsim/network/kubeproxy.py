"""kube-proxy's own HTTP servers on each node: the health check (10256) and the metrics server (10249).

A hostNetwork pod reaches them on its node (``curl localhost:10256/healthz``, the e2e framework's
"should check kube-proxy urls", test/e2e/network/networking.go), the API server through ``nodes/NAME:10256/proxy/``
(daemon/nodeproxy.py answers with ``healthz_reply``). Reply formats from kubernetes/kubernetes:

* ``:10256/healthz`` and ``/livez`` (pkg/proxy/healthcheck/proxy_health.go): ``{"lastUpdated": "...","currentTime":
  "...", "nodeEligible": true}`` (``/livez`` without nodeEligible), the times as Go's ``%q`` of a ``time.Time``;
  not eligible, and 503, while the node is being deleted or carries ``ToBeDeletedByClusterAutoscaler``;
* ``:10249`` (cmd/kube-proxy/app/server.go serveMetrics): ``/proxyMode`` the mode's name as text/plain,
  ``/healthz`` ``ok``; it binds 127.0.0.1 (kubeadm's, so kind's, metricsBindAddress), so only the node itself
  reaches it.

No kube-proxy runs on a Cilium kube-proxy-replacement cluster (``dataplane: ebpf``).

Which nodes run a kube-proxy pod (``kube_proxy_nodes``): the doctor names the nodes without one (the docs' "Is
the kube-proxy working?"), and a trace from a pod on such a node says that knetsim programs its Service rules
all the same.
"""

from __future__ import annotations

import ipaddress
import time
import weakref
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from .trace import Reply

HEALTHZ_PORT = 10256
METRICS_PORT = 10249
# pkg/proxy/healthcheck: the taint cluster-autoscaler puts on a node it is about to remove.
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
# Where Go's monotonic clock reading (m=+SECONDS) starts: this process's start.
_STARTED = time.monotonic()


KUBE_PROXY = "kube-system/kube-proxy"
_COVERED: weakref.WeakKeyDictionary[Any, frozenset[str] | None] = weakref.WeakKeyDictionary()


def kube_proxy_nodes(state: Any) -> frozenset[str] | None:
    """The nodes where a pod of the kube-proxy DaemonSet (kube-system/kube-proxy) runs; None where there is no
    kube-proxy to ask about: no such DaemonSet was read, or the data plane is Cilium's replacement. Kept per
    state (read-only once built): every trace asks it."""
    if state in _COVERED:
        return _COVERED[state]
    covered: frozenset[str] | None = None
    if state.config.dataplane != "ebpf" and ("DaemonSet", KUBE_PROXY) in state.workloads:
        covered = frozenset(p.node_name for p in state.pods.values() if _runs_kube_proxy(p))
    _COVERED[state] = covered
    return covered


def _runs_kube_proxy(pod: Any) -> bool:
    owner = pod.meta.owner
    return (pod.namespace == "kube-system" and owner is not None and owner.kind == "DaemonSet"
            and owner.name == "kube-proxy" and pod.phase == "Running")


def go_time(now: float | None = None) -> str:
    """A wall-clock ``time.Time`` from ``time.Now()`` as Go's String() writes it: fraction without trailing
    zeros, zone ``+0000 UTC``, and the monotonic clock reading ``m=+S.NNNNNNNNN``."""
    now = time.time() if now is None else now
    wall = datetime.fromtimestamp(now, UTC)
    nanos = round((now % 1) * 1e9) % 1_000_000_000
    fraction = f".{nanos:09d}".rstrip("0").rstrip(".")
    mono = time.monotonic() - _STARTED
    return (f"{wall:%Y-%m-%d %H:%M:%S}{fraction} +0000 UTC "
            f"m=+{int(mono)}.{int((mono % 1) * 1e9):09d}")


def _headers(content_type: str) -> dict[str, str]:
    return {"content-type": content_type, "x-content-type-options": "nosniff"}


def healthz_reply(node: Mapping[str, Any], path: str) -> Reply:
    """kube-proxy's health server on ``node`` (the stored Node) for ``path``."""
    route = path.split("?", 1)[0]
    if route not in ("/healthz", "/livez"):
        return Reply(404, "404 page not found\n", _headers("text/plain; charset=utf-8"))  # Go's http.ServeMux
    now = go_time()
    # The simulated proxier is always in sync, so lastUpdated is the current time, as a healthy kube-proxy says.
    if route == "/livez":
        return Reply(200, f'{{"lastUpdated": "{now}","currentTime": "{now}"}}', _headers("application/json"))
    meta = node.get("metadata") or {}
    eligible = not meta.get("deletionTimestamp") and not any(
        t.get("key") == TO_BE_DELETED_TAINT for t in (node.get("spec") or {}).get("taints") or ())
    return Reply(200 if eligible else 503,
                 f'{{"lastUpdated": "{now}","currentTime": "{now}", "nodeEligible": {str(eligible).lower()}}}',
                 _headers("application/json"))


def metrics_reply(mode: str, path: str) -> Reply:
    """kube-proxy's metrics server: ``/proxyMode``, ``/healthz``; its ``/metrics`` and ``/configz`` keep no state
    here (503, as the node proxy answers what is not simulated)."""
    route = path.split("?", 1)[0]
    if route == "/proxyMode":
        return Reply(200, mode, _headers("text/plain; charset=utf-8"))
    if route == "/healthz":
        return Reply(200, "ok", _headers("text/plain; charset=utf-8"))
    if route in ("/metrics", "/configz"):
        return Reply(503, f"knetsim does not simulate kube-proxy's {route}\n", _headers("text/plain; charset=utf-8"))
    return Reply(404, "404 page not found\n", _headers("text/plain; charset=utf-8"))


def listens(dataplane: str, address: str, port: int, protocol: str) -> bool:
    """Does the node's kube-proxy answer on ``address:port``? The health check on every address, the metrics
    server on loopback only; nothing on an ebpf cluster."""
    if dataplane == "ebpf" or protocol != "TCP":
        return False
    if port == HEALTHZ_PORT:
        return True
    return port == METRICS_PORT and ipaddress.ip_address(address).is_loopback


__all__ = ["HEALTHZ_PORT", "METRICS_PORT", "TO_BE_DELETED_TAINT", "go_time", "healthz_reply", "listens",
           "metrics_reply"]
