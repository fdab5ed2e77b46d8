"""Manifest builders the tests share: the smallest object that says what the test needs, tweaks by keyword.

Conventions: namespace left unset (the reader's ``default``); a workload ``NAME`` labels its pods
``app: NAME``, and the Service ``NAME`` selects them. ``manifest(...)`` writes them as one YAML stream,
as a user's file holds them. The Ingress tests' own builders are tests/ingress/builders.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml


def deployment(name: str, replicas: int, image: str = "nginx:1.27", *, container: str = "c",
               port: int | None = 80) -> dict[str, Any]:
    """A Deployment of ``replicas`` pods labelled ``app: NAME``, one container serving ``port`` (None: none)."""
    spec: dict[str, Any] = {"name": container, "image": image}
    if port is not None:
        spec["ports"] = [{"containerPort": port}]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [spec]}}}}


def service(name: str, *, selector: dict[str, str] | None = None, port: int = 80,
            port_name: str | None = "http") -> dict[str, Any]:
    """A ClusterIP Service ``NAME`` on ``port``, selecting ``app: NAME`` unless ``selector`` says otherwise."""
    entry: dict[str, Any] = {"port": port}
    if port_name is not None:
        entry = {"name": port_name, **entry}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": selector if selector is not None else {"app": name}, "ports": [entry]}}


def scale(replicas: int) -> Callable[[dict[str, Any]], None]:
    """A change (for an in-process cluster's ``update``) that sets ``spec.replicas``."""
    def change(body: dict[str, Any]) -> None:
        body["spec"]["replicas"] = replicas
    return change


def manifest(*objects: dict[str, Any]) -> str:
    """The objects as one multi-document YAML stream."""
    return yaml.safe_dump_all(objects, sort_keys=False)
