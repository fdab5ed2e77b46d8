"""kube-apiserver's node proxy, ``nodes/[scheme:]NAME[:PORT]/proxy/PATH``: the kubelet's and kube-proxy's own HTTP APIs.

Kubernetes' e2e framework reads a node's kubelet through the API server (``/api/v1/nodes/NAME/proxy/pods``,
``.../healthz``, ``.../configz``) and kube-proxy's health check through ``nodes/NAME:10256/proxy/healthz``
(test/e2e/network/kube_proxy.go, test/e2e/framework/kubelet). Upstream the API server resolves the target in
pkg/registry/core/node/strategy.go ResourceLocation: no port (or the kubelet's 10250) is the kubelet over HTTPS,
any other port is the node's InternalIP over HTTP. knetsim answers the kubelet's and kube-proxy's endpoints from
the API's own objects (the simulated kubelets keep no state of their own); any other port is dialled through the
simulated network, as the pod and service proxies are.

Reply formats, each from its upstream source:

* kubelet ``/healthz``: ``ok`` as text/plain (k8s.io/apiserver pkg/server/healthz, which the kubelet installs in
  pkg/kubelet/server/server.go InstallDefaultHandlers);
* kubelet ``/pods``: a v1 ``PodList`` of the pods bound to the node (pkg/kubelet/server/server.go getPods and
  encodePods);
* kubelet ``/configz``: ``{"kubeletconfig": {...}}``, the v1beta1 KubeletConfiguration's JSON field names
  (k8s.io/component-base/configz; cmd/kubelet/app/server.go initConfigz); knetsim fills the fields its cluster
  config decides and kind's kubeadm sets;
* kubelet ``/logs/``: the node's ``/var/log`` as Go's ``http.FileServer`` serves it (pkg/kubelet/server/server.go
  getLogs → ServeLogs; net/http fs.go dirList for a directory): ``pods/`` holds ``NS_POD_UID/CONTAINER/N.log``
  of the pods bound to the node, in the CRI log format the kubelet writes (the simulated kubelets keep them under
  the state directory), and ``containers/`` the kubelet's ``POD_NS_CONTAINER-ID.log`` names for the current
  runs; nothing else of a node's /var/log exists here;
* kubelet's other endpoints (``/metrics``, ``/stats``, ...): 503, not simulated (a 404 would claim the
  kubelet has no such endpoint); unknown paths: go-restful's ``404 page not found``;
* kube-proxy ``:10256/healthz`` and ``/livez``: ``{"lastUpdated": "...","currentTime": "...", "nodeEligible": true}``
  as Go's ``%q`` of a ``time.Time`` prints it (pkg/proxy/healthcheck/proxy_health.go healthzHandler); not eligible,
  and 503, while the node is being deleted or carries the ``ToBeDeletedByClusterAutoscaler`` taint (SyncNode);
  no kube-proxy runs on a Cilium kube-proxy-replacement cluster (``dataplane: ebpf``), so nothing listens there.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from aiohttp import web

from ..apiserver.errors import ApiError
from ..apiserver.server import ApiServer

KUBELET_PORT = 10250
# The kubelet's endpoints (pkg/kubelet/server/server.go) whose state the simulation does not keep.
_KUBELET_NOT_SIMULATED = ("/metrics", "/stats", "/spec", "/runningpods", "/checkpoint", "/containerLogs",
                          "/exec", "/run", "/attach", "/portForward", "/debug", "/cri")


def _text(status: int, body: str, content_type: str = "text/plain") -> web.Response:
    response = web.Response(status=status, text=body, content_type=content_type, charset="utf-8")
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def _kubelet(server: ApiServer, node: dict[str, Any], path: str) -> web.Response:
    name = node["metadata"]["name"]
    route = path.split("?", 1)[0].rstrip("/") or "/"
    if route == "/healthz":
        return _text(200, "ok")
    if route == "/pods":
        items = [s.body for s in server.store.list("Pod") if (s.body.get("spec") or {}).get("nodeName") == name]
        return _text(200, json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}),
                     "application/json")
    if route == "/configz":
        return _text(200, json.dumps({"kubeletconfig": _kubelet_config(server, name)}), "application/json")
    if route == "/logs" or route.startswith("/logs/"):
        return _logs(server, name, path.split("?", 1)[0][len("/logs"):])
    if any(route == p or route.startswith(p + "/") for p in _KUBELET_NOT_SIMULATED):
        raise ApiError(503, "ServiceUnavailable", f"knetsim does not simulate the kubelet's {route} endpoint")
    return _text(404, "404 page not found")


def _dir_listing(names: list[str]) -> web.Response:
    """A directory as Go's http.FileServer lists it (net/http fs.go dirList): sorted names, directories with a
    trailing slash, each a link, in a <pre>."""
    links = "".join(f'<a href="{quote(n)}">{html.escape(n, quote=False)}</a>\n' for n in sorted(names))
    return _text(200, f'<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n{links}</pre>\n',
                 "text/html")


def _logs(server: ApiServer, node: str, rest: str) -> web.Response:
    """The kubelet's ``/logs/`` for ``node``: the pods' log files the simulated kubelet keeps, and the
    ``containers/`` names that point at them."""
    parts = [p for p in rest.split("/") if p]
    on_node = [s.body for s in server.store.list("Pod") if (s.body.get("spec") or {}).get("nodeName") == node]
    pod_dirs = {f"{b['metadata']['namespace']}_{b['metadata']['name']}_{b['metadata'].get('uid', '')}": b
                for b in on_node}
    root = server.state_dir / "pods"
    if not parts:
        return _dir_listing(["containers/", "pods/"])
    if parts[0] == "containers":
        current = _container_links(on_node, root)
        if len(parts) == 1:
            return _dir_listing(sorted(current))
        target = current.get(parts[1]) if len(parts) == 2 else None
        return _log_file(target) if target is not None else _text(404, "404 page not found")
    if parts[0] != "pods" or (len(parts) > 1 and parts[1] not in pod_dirs) or ".." in parts:
        return _text(404, "404 page not found")
    place = root.joinpath(*parts[1:])
    if len(parts) == 1:
        return _dir_listing([d + "/" for d in pod_dirs if (root / d).is_dir()])
    if place.is_dir():
        return _dir_listing([c.name + ("/" if c.is_dir() else "") for c in place.iterdir()])
    return _log_file(place) if place.is_file() else _text(404, "404 page not found")


def _container_links(pods: list[dict[str, Any]], root: Path) -> dict[str, Path]:
    """/var/log/containers: ``POD_NS_CONTAINER-ID.log`` for each container's current run (the kubelet's symlink to
    its file under /var/log/pods, pkg/kubelet/kuberuntime legacy log symlink)."""
    links = {}
    for body in pods:
        meta = body["metadata"]
        directory = root / f"{meta['namespace']}_{meta['name']}_{meta.get('uid', '')}"
        for status in (body.get("status") or {}).get("containerStatuses") or ():
            container_id = str(status.get("containerID") or "").split("://", 1)[-1]
            log = directory / str(status.get("name")) / f"{int(status.get('restartCount') or 0)}.log"
            if container_id and log.is_file():
                links[f"{meta['name']}_{meta['namespace']}_{status.get('name')}-{container_id}.log"] = log
    return links


def _log_file(path: Path) -> web.Response:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return _text(404, "404 page not found")
    return _text(200, text)  # Go sniffs a .log file's content type: text/plain; charset=utf-8


def _kubelet_config(server: ApiServer, name: str) -> dict[str, Any]:
    config = server.config
    node = next((n for n in config.nodes if n.name == name), None)
    # v1beta1 KubeletConfiguration field names (k8s.io/kubelet/config/v1beta1/types.go); values as kind's kubeadm
    # writes them (/var/lib/kubelet/config.yaml), the cluster's DNS and the node's pod capacity.
    return {"enableServer": True, "staticPodPath": "/etc/kubernetes/manifests", "syncFrequency": "1m0s",
            "address": "0.0.0.0", "port": KUBELET_PORT, "healthzPort": 10248, "healthzBindAddress": "127.0.0.1",
            "clusterDomain": config.cluster_domain, "clusterDNS": [config.dns_service_ip],
            "maxPods": node.max_pods if node is not None else config.max_pods, "cgroupDriver": "systemd",
            "failSwapOn": False, "containerRuntimeEndpoint": "unix:///run/containerd/containerd.sock"}


def _kube_proxy(node: dict[str, Any], path: str) -> web.Response:
    # The reply is the one a pod on the node gets too (network/kubeproxy.py).
    from ..network import kubeproxy

    reply = kubeproxy.healthz_reply(node, path)
    response = web.Response(status=reply.status, body=reply.body.encode())
    for key, value in reply.headers.items():
        response.headers[key] = value
    return response


def node_target(server: ApiServer, name: str) -> dict[str, Any]:
    """The stored Node the request names, or the API server's 404."""
    stored = server.store.get(("Node", "", name))
    if stored is None:
        raise ApiError(404, "NotFound", f'nodes "{name}" not found', {"name": name, "kind": "nodes"})
    return stored.body


def answer(server: ApiServer, node: dict[str, Any], port: str, path: str) -> web.Response | None:
    """The kubelet's or kube-proxy's reply, or None when the port is neither's (dial the node's address)."""
    from ..network import kubeproxy  # here: the daemon starts without knetsim.network (test_observe_and_generate)

    if port in ("", str(KUBELET_PORT)):
        return _kubelet(server, node, path)
    if port == str(kubeproxy.HEALTHZ_PORT) and server.config.dataplane != "ebpf":
        return _kube_proxy(node, path)
    return None
