"""What the two property-based API tests (test_fuzz.py, test_poison_proof.py) share: a valid body per kind, and
arbitrary JSON to put in its place.

A helper module, not a test module, so that neither test imports the other.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

# A valid object of each kind and the collection it is created in (namespace default).
TEMPLATES: dict[str, tuple[str, dict[str, Any]]] = {
    "Service": ("/api/v1/namespaces/default/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}),
    "Deployment": ("/apis/apps/v1/namespaces/default/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                                       "ports": [{"containerPort": 8080, "name": "http"}]}]}}}}),
    "ConfigMap": ("/api/v1/namespaces/default/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "1"}}),
    "NetworkPolicy": ("/apis/networking.k8s.io/v1/namespaces/default/networkpolicies", {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "np"},
        "spec": {"podSelector": {"matchLabels": {"app": "web"}},
                 "ingress": [{"from": [{"podSelector": {}}], "ports": [{"port": 8080}]}]}}),
    "Ingress": ("/apis/networking.k8s.io/v1/namespaces/default/ingresses", {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "ing"},
        "spec": {"rules": [{"host": "a.example.com", "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}),
    "Event": ("/api/v1/namespaces/default/events", {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "ev"}, "reason": "Test", "message": "m",
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}}),
    "Pod": ("/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}),
}

JSON = st.recursive(st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
                    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                max_size=3),
                    max_leaves=6)


def paths_in(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path (keys and indexes) into ``obj``, parents before children."""
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += paths_in(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += paths_in(v, (*prefix, i))
    return out
