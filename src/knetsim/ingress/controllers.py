"""Which Ingress controller serves an Ingress, the way ingress-nginx decides it.

A controller is a running pod, found by its command line as a real cluster would be
inspected: ingress-nginx's ``--controller-class`` (default ``k8s.io/ingress-nginx``), its
``--ingress-class`` (default ``nginx``, the value of the deprecated annotation it accepts)
and ``--watch-ingress-without-class`` (default false). Any other pod passing
``--controller-class=`` counts too, with ingress-nginx's semantics.

An Ingress is claimed (ingress-nginx ``store.GetIngressClass``):

1. ``spec.ingressClassName`` set: the IngressClass must exist and its ``spec.controller``
   must be a running controller's ``--controller-class``; the annotation is then ignored.
   (An Ingress created without class already got the default class's name from the
   admission plugin — ``cluster/build.py`` does that.)
2. else the annotation ``kubernetes.io/ingress.class`` must equal a controller's
   ``--ingress-class``;
3. else only a controller started with ``--watch-ingress-without-class`` takes it.

Otherwise "this Ingress has no effect: no controller claims it".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..cluster.state import ClusterState
from ..model.objects import INGRESS_CLASS_ANNOTATION, Container, Ingress, IngressClass, Pod

NGINX_CONTROLLER_CLASS = "k8s.io/ingress-nginx"
NGINX_INGRESS_CLASS = "nginx"


@dataclass(frozen=True, slots=True)
class ControllerPod:
    pod: str  # namespace/name
    ip: str
    node: str
    ready: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class IngressController:
    """One controller deployment: every pod started with the same class flags."""

    controller: str  # --controller-class: matched against IngressClass spec.controller
    ingress_class: str  # --ingress-class: the annotation value it accepts
    watch_without_class: bool
    pods: tuple[ControllerPod, ...]
    image: str = ""  # the controller container's image (its version decides the admission webhook's checks)
    # The first pod's command-line flags (--configmap, --enable-ssl-passthrough, ...), name → value.
    flags: tuple[tuple[str, str], ...] = ()

    def flag(self, name: str, default: str = "") -> str:
        return next((v for n, v in self.flags if n == name), default)

    @property
    def ready_pods(self) -> tuple[ControllerPod, ...]:
        return tuple(p for p in self.pods if p.ready)

    @property
    def serving(self) -> bool:
        return bool(self.ready_pods)

    @property
    def pod(self) -> ControllerPod | None:
        """The pod a request is described as reaching: the first ready one by name."""
        ready = self.ready_pods
        return ready[0] if ready else None


@dataclass(frozen=True, slots=True)
class ClassResolution:
    """How an Ingress is (or is not) claimed by a controller."""

    ingress: str
    class_name: str | None  # the IngressClass name, or the annotation value
    source: str  # "spec.ingressClassName" | "annotation" | "without-class" | "none"
    controller: str | None  # the controller name the class asks for
    claimed: bool
    serving: bool
    code: str  # "" when claimed and serving; else the finding code
    reason: str

    @property
    def effective(self) -> bool:
        return self.claimed and self.serving


def _flags(container: Container) -> dict[str, str]:
    flags: dict[str, str] = {}
    tokens = [*container.command, *container.args]
    for i, token in enumerate(tokens):
        if not token.startswith("--"):
            continue
        name, eq, value = token[2:].partition("=")
        if not eq:
            nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
            value = nxt if nxt and not nxt.startswith("-") else "true"
        flags[name] = value
    return flags


def _is_controller(container: Container, flags: dict[str, str]) -> bool:
    if "controller-class" in flags:
        return True
    words = [container.image, *container.command, *container.args]
    return any("ingress-nginx/controller" in w or w.endswith("nginx-ingress-controller") for w in words)


def running_controllers(state: ClusterState) -> list[IngressController]:
    """Ingress controllers found among the pods, sorted by (controller, ingress class)."""
    return controllers_among(state.pods[key] for key in sorted(state.pods))


def controllers_among(pods: Iterable[Pod]) -> list[IngressController]:
    """The Ingress controllers these pods run, grouped by their class flags."""
    groups: dict[tuple[str, str, bool], list[ControllerPod]] = {}
    images: dict[tuple[str, str, bool], str] = {}
    all_flags: dict[tuple[str, str, bool], tuple[tuple[str, str], ...]] = {}
    for pod in pods:
        if pod.terminating or pod.phase in ("Succeeded", "Failed"):
            continue
        for container in pod.containers:
            flags = _flags(container)
            if not _is_controller(container, flags):
                continue
            ident = (
                flags.get("controller-class", NGINX_CONTROLLER_CLASS),
                flags.get("ingress-class", NGINX_INGRESS_CLASS),
                flags.get("watch-ingress-without-class", "false").lower() == "true",
            )
            groups.setdefault(ident, []).append(
                ControllerPod(pod.key, pod.pod_ip, pod.node_name, pod.ready and pod.phase == "Running",
                              "" if pod.ready else pod.not_ready_reason or pod.phase))
            images.setdefault(ident, container.image)
            all_flags.setdefault(ident, tuple(sorted(flags.items())))
            break
    return [IngressController(c, ic, w, tuple(members), images[(c, ic, w)], all_flags[(c, ic, w)])
            for (c, ic, w), members in sorted(groups.items())]


def default_classes(state: ClusterState) -> list[IngressClass]:
    """IngressClasses marked default, the one the admission plugin would pick first."""
    classes = [c for c in state.ingress_classes.values() if c.is_default]
    # Newest first, then by name, as the DefaultIngressClass admission plugin (v1.28+).
    classes.sort(key=lambda c: c.name)
    classes.sort(key=lambda c: c.meta.creation_timestamp or "", reverse=True)
    return classes


def resolve_class(state: ClusterState, ingress: Ingress,
                  controllers: list[IngressController] | None = None) -> ClassResolution:
    """Which controller claims ``ingress``, and why (not)."""
    if controllers is None:
        controllers = running_controllers(state)
    key = ingress.key
    if ingress.class_name is not None:
        name = ingress.class_name
        ic = state.ingress_classes.get(name)
        if ic is None:
            known = ", ".join(sorted(state.ingress_classes)) or "none"
            return ClassResolution(key, name, "spec.ingressClassName", None, False, False, "IngressClassNotFound",
                                   f"IngressClass {name!r} does not exist (IngressClasses: {known}): no controller "
                                   "claims this Ingress, so it has no effect")
        matching = [c for c in controllers if c.controller == ic.controller]
        if not matching:
            return ClassResolution(key, name, "spec.ingressClassName", ic.controller, False, False,
                                   "IngressClassNoController",
                                   f"IngressClass {name!r} names controller {ic.controller!r}, which no running "
                                   "controller implements: this Ingress has no effect")
        return _claimed(key, name, "spec.ingressClassName", matching[0],
                        f"spec.ingressClassName {name!r} → controller {ic.controller}")
    if ingress.class_annotation is not None:
        value = ingress.class_annotation
        matching = [c for c in controllers if c.ingress_class == value]
        if not matching:
            flags = ", ".join(f"--ingress-class={c.ingress_class}" for c in controllers) or "no controller runs"
            return ClassResolution(key, value, "annotation", None, False, False, "IngressAnnotationNoController",
                                   f"annotation {INGRESS_CLASS_ANNOTATION}={value!r} matches no running controller's "
                                   f"--ingress-class ({flags}): this Ingress has no effect")
        return _claimed(key, value, "annotation", matching[0],
                        f"deprecated annotation {INGRESS_CLASS_ANNOTATION}={value!r} → controller "
                        f"{matching[0].controller}")
    watchers = [c for c in controllers if c.watch_without_class]
    if watchers:
        return _claimed(key, None, "without-class", watchers[0],
                        f"no class, but controller {watchers[0].controller} runs with --watch-ingress-without-class")
    return ClassResolution(key, None, "none", None, False, False, "IngressNoClass",
                           "this Ingress has no effect: no controller claims it (no spec.ingressClassName, no "
                           f"{INGRESS_CLASS_ANNOTATION} annotation, and no default IngressClass when it was created)")


def _claimed(key: str, class_name: str | None, source: str, controller: IngressController,
             how: str) -> ClassResolution:
    if controller.serving:
        return ClassResolution(key, class_name, source, controller.controller, True, True, "", how)
    why = "; ".join(f"{p.pod}: {p.reason}" for p in controller.pods) or "no pods"
    return ClassResolution(key, class_name, source, controller.controller, True, False, "IngressControllerNotReady",
                           f"{how}, but no controller pod is ready ({why})")
