"""Manifest builders for the Ingress tests: minimal defaults, one-line table rows.

Conventions: namespace ``default``; every backend Service ``svc-X`` gets one Ready pod
labelled ``app: X`` listening on the Service's target ports, so a routed request has
ready endpoints unless a test says otherwise. The kind cluster's ingress-nginx controller
(class ``nginx``, pod in ``ingress-nginx``) is always there unless the config disables it.
"""

from __future__ import annotations

from typing import Any

import yaml

from knetsim import Cluster
from knetsim.cluster.config import ClusterConfig


def backend(service: str, port: int | str = 80) -> dict[str, Any]:
    key = "number" if isinstance(port, int) else "name"
    return {"service": {"name": service, "port": {key: port}}}


def path(p: str, path_type: str, service: str, port: int | str = 80) -> dict[str, Any]:
    return {"path": p, "pathType": path_type, "backend": backend(service, port)}


def rule(host: str | None, *paths: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"http": {"paths": list(paths)}}
    if host:
        out["host"] = host
    return out


def ingress(name: str, *rules: dict[str, Any], ns: str = "default", cls: str | None = "nginx",
            default: dict[str, Any] | None = None, tls: list[dict[str, Any]] | None = None,
            annotation: str | None = None, created: str | None = None,
            annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """``annotations`` are ingress-nginx's, named without their ``nginx.ingress.kubernetes.io/`` prefix."""
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if annotation is not None:
        meta["annotations"] = {"kubernetes.io/ingress.class": annotation}
    if annotations:
        prefixed = {f"nginx.ingress.kubernetes.io/{k}": v for k, v in annotations.items()}
        meta.setdefault("annotations", {}).update(prefixed)
    if created is not None:
        meta["creationTimestamp"] = created
    spec: dict[str, Any] = {}
    if cls is not None:
        spec["ingressClassName"] = cls
    if default is not None:
        spec["defaultBackend"] = default
    if rules:
        spec["rules"] = list(rules)
    if tls:
        spec["tls"] = tls
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta, "spec": spec}


def service(name: str, *ports: tuple[str, int], ns: str = "default", pod: bool = True,
            protocol: str = "TCP") -> list[dict[str, Any]]:
    """Service ``name`` with ``ports`` as (name, port); targetPort = port. Plus one Ready pod unless pod=False."""
    ports = ports or (("http", 80),)
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
           "spec": {"selector": {"app": name},
                    "ports": [{"name": n, "port": p, "protocol": protocol} if n else {"port": p, "protocol": protocol}
                              for n, p in ports]}}
    docs = [svc]
    if pod:
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{name}-pod", "namespace": ns,
                                                                       "labels": {"app": name}},
                     "spec": {"containers": [{"name": "app", "image": "nginx",
                                              "ports": [{"containerPort": p, "protocol": protocol}
                                                        for _, p in ports]}]}})
    return docs


def ingress_class(name: str, controller: str, default: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if default:
        meta["annotations"] = {"ingressclass.kubernetes.io/is-default-class": "true"}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": meta,
            "spec": {"controller": controller}}


def controller(name: str, controller_class: str, ingress_class: str, ns: str = "other-ingress",
               extra_args: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """A second Ingress controller deployment, recognised by its --controller-class flag."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
         "spec": {"containers": [{"name": "controller", "image": "example.com/controller:1",
                                  "args": [f"--controller-class={controller_class}",
                                           f"--ingress-class={ingress_class}", *extra_args],
                                  "ports": [{"containerPort": 80}]}]}},
    ]


def secret(name: str, ns: str = "default") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns},
            "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}


def flatten(*docs: dict[str, Any] | list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for d in docs:
        out.extend(d if isinstance(d, list) else [d])
    return out


def cluster(*docs: dict[str, Any] | list[dict[str, Any]], config: ClusterConfig | None = None) -> Cluster:
    return Cluster.from_yaml(yaml.safe_dump_all(flatten(*docs), sort_keys=False), config=config)


def controller_configmap(**data: str) -> dict[str, Any]:
    """The ingress-nginx controller's ConfigMap (kind's ``ingress-nginx/ingress-nginx-controller``); keys with
    ``_`` for ``-``."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "ingress-nginx-controller", "namespace": "ingress-nginx"},
            "data": {k.replace("_", "-"): v for k, v in data.items()}}


def httpbin(name: str = "httpbin", ns: str = "default", ready: bool = True) -> list[dict[str, Any]]:
    """An httpbin Service on port 80 (kennethreitz/httpbin: /status/CODE answers CODE)."""
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
           "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80}]}}
    if not ready:
        return [svc]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{name}-pod", "namespace": ns,
                                                          "labels": {"app": name}},
           "spec": {"containers": [{"name": "httpbin", "image": "kennethreitz/httpbin"}]}}
    return [svc, pod]


def opaque_secret(name: str, ns: str = "default", **string_data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns}, "type": "Opaque",
            "stringData": dict(string_data)}
