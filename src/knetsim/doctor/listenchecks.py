"""Caveats on listeners knetsim assumes: a Service port that an unknown image's pods do not declare.

knetsim knows where a known program or image listens (``model/listeners.py``, docs/images.md); for any
other image it assumes the declared containerPorts. When a finding says nothing listens on a targetPort of
such a pod, that is the assumption speaking: this note says so, and how to tell knetsim otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..cluster.endpointslices import find_port
from ..cluster.state import ClusterState
from ..model.listeners import LISTEN_ANNOTATION, container_listeners, pod_listens
from .checks import SYSTEM_NAMESPACES, Finding


def listener_caveats(state: ClusterState, namespaces: Iterable[str] | None = None) -> list[Finding]:
    wanted = set(namespaces) if namespaces else None
    out = []
    for svc in state.services.values():
        if svc.namespace in SYSTEM_NAMESPACES or (wanted and svc.namespace not in wanted) or not svc.selector:
            continue
        pods = state.select_pods(svc.namespace, svc.selector_view)
        for sp in svc.ports:
            for pod in pods:
                if LISTEN_ANNOTATION in pod.meta.annotations:
                    continue
                number = find_port(pod, sp)
                if number is None or (number, sp.protocol) in pod_listens(pod):
                    continue
                unknown = [c for c in pod.containers if not container_listeners(c).known]
                if not unknown:
                    continue
                images = ", ".join(sorted({c.image for c in unknown}))
                out.append(Finding(
                    "ListenerAssumed", "info", "listener", f"Service {svc.key}",
                    f"{pod.key} runs {images}, an image knetsim does not know: that nothing listens on "
                    f"{number}/{sp.protocol} there is an assumption (its declared containerPorts), not knowledge",
                    f"if the process does listen on {number}, declare containerPort {number} or annotate the pods "
                    f"{LISTEN_ANNOTATION}: \"{number}\"; else fix the targetPort", (f"image {images}",)))
                break
    return out


__all__ = ["listener_caveats"]
