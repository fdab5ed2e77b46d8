"""Ingress problems for the doctor: Ingresses no controller claims, backends that do not exist.

Each finding names the object and field, says what a real cluster does about it, and
carries a fix that can be pasted (a ``kubectl patch`` with the exact JSON pointer).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from ..cluster.state import ClusterState
from ..model.objects import INGRESS_CLASS_ANNOTATION, Ingress, IngressBackend
from .annotations import parse as parse_annotations
from .annotations.base import Cause
from .annotations.values import PREFIX, SNIPPET_SUFFIX
from .backends import closest_name, resolve_backend
from .config import controller_config
from .controllers import IngressController, resolve_class, running_controllers
from .router import nginx_order
from .servers import CATCH_ALL, Model, nginx_path_type
from .webhook import denial, invalid_paths, strict_path_validation

KIND_INGRESS_NGINX = "kubectl apply -f https://kind.sigs.k8s.io/examples/ingress/deploy-ingress-nginx.yaml"


@dataclass(frozen=True, slots=True)
class IngressFinding:
    code: str
    severity: str  # "error" | "warning" | "info"
    subject: str  # "Ingress shop/shop"
    field: str  # the field at fault, e.g. spec.rules[0].http.paths[1].backend.service.name
    message: str
    fix: str
    layer: str = "ingress"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _patch(ing: Ingress, ops: list[dict[str, Any]]) -> str:
    return (f"kubectl -n {ing.namespace} patch ingress {ing.name} --type json "
            f"-p '{json.dumps(ops, separators=(',', ':'))}'")


def _serving_classes(state: ClusterState, controllers: list[IngressController]) -> list[str]:
    serving = {c.controller for c in controllers if c.serving}
    return sorted(c.name for c in state.ingress_classes.values() if c.controller in serving)


def _class_fix(state: ClusterState, ing: Ingress, controllers: list[IngressController], wrong: str | None) -> str:
    classes = _serving_classes(state, controllers)
    if not classes:
        return f"no IngressClass has a running controller; install one (kind: {KIND_INGRESS_NGINX})"
    target = (closest_name(wrong, classes) if wrong else None) or classes[0]
    ops: list[dict[str, Any]] = [{"op": "add", "path": "/spec/ingressClassName", "value": target}]
    if ing.class_annotation is not None:
        ops.insert(0, {"op": "remove", "path": "/metadata/annotations/kubernetes.io~1ingress.class"})
    return _patch(ing, ops)


def _class_findings(state: ClusterState, ing: Ingress, controllers: list[IngressController]) -> list[IngressFinding]:
    res = resolve_class(state, ing, controllers)
    if not res.code:
        return []
    subject = f"Ingress {ing.key}"
    if res.code == "IngressNoClass":
        message = (f"{res.reason}. Marking an IngressClass default (ingressclass.kubernetes.io/is-default-class: "
                   "\"true\") only affects Ingresses created afterwards")
        return [IngressFinding(res.code, "error", subject, "spec.ingressClassName", message,
                               _class_fix(state, ing, controllers, None))]
    if res.code == "IngressClassNotFound":
        return [IngressFinding(res.code, "error", subject, "spec.ingressClassName", res.reason,
                               _class_fix(state, ing, controllers, res.class_name))]
    if res.code == "IngressClassNoController":
        fix = _class_fix(state, ing, controllers, None)
        return [IngressFinding(res.code, "error", subject, "spec.ingressClassName", res.reason,
                               f"deploy a controller for {res.controller}, or use a served class: {fix}")]
    if res.code == "IngressAnnotationNoController":
        return [IngressFinding(res.code, "error", subject, f"metadata.annotations[{INGRESS_CLASS_ANNOTATION}]",
                               res.reason, _class_fix(state, ing, controllers, res.class_name))]
    # IngressControllerNotReady
    pods = [p.pod for c in controllers if c.controller == res.controller for p in c.pods]
    fix = "; ".join(f"kubectl -n {ns} describe pod {name}" for ns, _, name in (p.partition("/") for p in pods))
    return [IngressFinding(res.code, "warning", subject, "spec.ingressClassName", res.reason,
                           f"find out why the controller pod is not Ready: {fix}")]


def _backend_findings(state: ClusterState, ing: Ingress, backend: IngressBackend, field: str,
                      pointer: str) -> list[IngressFinding]:
    target = resolve_backend(state, ing.namespace, backend)
    subject = f"Ingress {ing.key}"
    if target.resource is not None:
        return [IngressFinding("IngressResourceBackend", "info", subject, f"{field}.resource", target.problem or "",
                               "route to a Service backend if traffic should reach pods")]
    if target.problem is None:
        return []
    svc = state.services.get(target.service or "")
    if svc is None:
        names = sorted(s.name for s in state.services.values() if s.namespace == ing.namespace)
        near = closest_name(backend.service_name, names)
        if near:
            fix = _patch(ing, [{"op": "replace", "path": f"{pointer}/service/name", "value": near}])
        else:
            fix = (f"create Service {target.service}, or point the backend at an existing Service in "
                   f"{ing.namespace} ({', '.join(names) or 'none'})")
        return [IngressFinding("IngressBackendServiceMissing", "error", subject, f"{field}.service.name",
                               f"{target.problem} (ingress-nginx answers 503 for this backend)", fix)]
    value: dict[str, Any] | None = None
    if backend.port_number is not None:
        by_target = next((p for p in svc.ports if str(p.target_port) == str(backend.port_number)), None)
        chosen = by_target or (svc.ports[0] if len(svc.ports) == 1 else None)
        if chosen is not None:
            value = {"number": chosen.port}
    else:
        near = closest_name(backend.port_name, [p.name for p in svc.ports if p.name])
        if near:
            value = {"name": near}
        elif len(svc.ports) == 1:
            value = {"number": svc.ports[0].port}
    if value is not None:
        fix = _patch(ing, [{"op": "replace", "path": f"{pointer}/service/port", "value": value}])
    else:
        fix = f"use one of the Service's ports ({', '.join(str(p.port) for p in svc.ports) or 'none'})"
    code = "IngressBackendPortMissing" if not target.problem.endswith("over TCP") else "IngressBackendPortProtocol"
    return [IngressFinding(code, "error", subject, f"{field}.service.port",
                           f"{target.problem} (ingress-nginx answers 503 for this backend)", fix)]


def ingress_findings(state: ClusterState, namespace: str | None = None) -> list[IngressFinding]:
    """Problems of every Ingress (of ``namespace``, if given), sorted by subject and field."""
    controllers = running_controllers(state)
    out: list[IngressFinding] = []
    ingresses = [i for i in state.ingresses.values() if namespace is None or i.namespace == namespace]
    for ing in sorted(ingresses, key=lambda i: i.key):
        out.extend(_class_findings(state, ing, controllers))
        out.extend(_webhook_findings(state, ing, controllers))
        out.extend(_annotation_findings(state, ing, controllers))
        if ing.default_backend is not None:
            out.extend(_backend_findings(state, ing, ing.default_backend, "spec.defaultBackend",
                                         "/spec/defaultBackend"))
        for r, rule in enumerate(ing.rules):
            for i, p in enumerate(rule.paths):
                out.extend(_backend_findings(state, ing, p.backend, f"spec.rules[{r}].http.paths[{i}].backend",
                                             f"/spec/rules/{r}/http/paths/{i}/backend"))
    out.extend(_shadowed_paths(state, controllers, namespace))
    out.sort(key=lambda f: (f.subject, f.field, f.code))
    return out


def _webhook_findings(state: ClusterState, ing: Ingress, controllers: list[IngressController]) -> list[IngressFinding]:
    """Paths ingress-nginx's admission webhook refuses (strict-validate-path-type): the Ingress never exists."""
    res = resolve_class(state, ing, controllers)
    ctl = next((c for c in controllers if res.claimed and c.controller == res.controller), None)
    if ctl is None or not strict_path_validation(ctl) or \
            not controller_config(state, ctl).strict_validate_path_type:
        return []
    out = []
    for r, i, path, path_type in invalid_paths(ing.raw, ctl):
        out.append(IngressFinding(
            "IngressPathRejected", "error", f"Ingress {ing.key}", f"spec.rules[{r}].http.paths[{i}].pathType",
            f"{denial([(r, i, path, path_type)])}: {ctl.image or ctl.controller} refuses regex characters in "
            f"{'an' if path_type == 'Exact' else 'a'} {path_type} path (strict-validate-path-type, on by default "
            "since v1.12), so kubectl apply fails and this Ingress does not exist",
            f"in the manifest set spec.rules[{r}].http.paths[{i}].pathType: ImplementationSpecific (a regex path "
            "needs it), then kubectl apply it again"))
    return out


_EFFECT_FINDINGS = {
    "rejected": ("IngressAnnotationRejected", "error",
                 "the controller refuses this Ingress: its admission webhook denies kubectl apply, and an Ingress "
                 "that exists anyway is skipped"),
    "denied": ("IngressAnnotationDenied", "error", "every location of this Ingress answers 503"),
    "ignored": ("IngressAnnotationIgnored", "warning", "the annotation's family is dropped: as if absent"),
    "default": ("IngressAnnotationDefaulted", "warning", "the value is ignored and the default applies"),
}


def _annotation_findings(state: ClusterState, ing: Ingress,
                         controllers: list[IngressController]) -> list[IngressFinding]:
    """ingress-nginx's annotations as the claiming controller reads them: values it refuses, snippets, canaries
    that match nothing, annotations it does not know."""
    from .annotations import parse
    from .config import controller_config

    res = resolve_class(state, ing, controllers)
    ctl = next((c for c in controllers if res.claimed and c.controller == res.controller), None)
    if ctl is None or not any(a.startswith(PREFIX) for a in ing.meta.annotations):
        return []
    config = controller_config(state, ctl)
    parsed = parse(ing, config, state)
    subject = f"Ingress {ing.key}"
    out = []
    for problem in parsed.problems:
        code, severity, effect = _EFFECT_FINDINGS[problem.effect]
        fix = (f"kubectl -n {ing.namespace} annotate ingress {ing.name} {problem.annotation}- (or give it a value "
               "ingress-nginx accepts)")
        if problem.cause in (Cause.SNIPPETS_DISABLED, Cause.RISKY):
            snippet = problem.cause == Cause.SNIPPETS_DISABLED or problem.annotation.endswith(SNIPPET_SUFFIX)
            code = "IngressSnippetRefused" if snippet else code
            fix = ("snippets are arbitrary nginx configuration (CVE-2021-25742): express it with annotations, or, if "
                   "the cluster's administrator accepts the risk, set allow-snippet-annotations: \"true\" and "
                   "annotations-risk-level: Critical in the controller's ConfigMap")
        # A denied location's message already says that every location answers 503.
        message = problem.message if problem.cause == Cause.LOCATION_DENIED else f"{problem.message} — {effect}"
        out.append(IngressFinding(code, severity, subject, f"metadata.annotations[{problem.annotation}]", message,
                                  fix))
    for name, text in parsed.snippets.present():
        out.append(IngressFinding(
            "IngressSnippet", "warning", subject, f"metadata.annotations[{PREFIX}{name}]",
            f"{name} pastes arbitrary nginx configuration into the controller ({' '.join(text.split())[:80]!r}): "
            "knetsim does not run it, and no Gateway API object can carry it",
            "replace it with the annotation or Gateway API filter that does the same, where one exists"))
    for name in parsed.unknown:
        near = closest_name(name[len(PREFIX):], sorted(_catalog()))
        hint = f"; did you mean {PREFIX}{near}?" if near else ""
        out.append(IngressFinding("IngressAnnotationUnknown", "warning", subject, f"metadata.annotations[{name}]",
                                  f"{name} is not an annotation ingress-nginx reads: it has no effect{hint}",
                                  f"kubectl -n {ing.namespace} annotate ingress {ing.name} {name}-"
                                  + (f" {PREFIX}{near}={ing.meta.annotations[name]!r}" if near else "")))
    if parsed.canary.enabled and not parsed.rejected:
        from .servers import build

        claimed = [i for i in state.ingresses.values()
                   if resolve_class(state, i, controllers).controller == ctl.controller]
        model = build(state, claimed, config)
        for dropped_ing, why in model.canaries_dropped:
            if dropped_ing is ing:
                out.append(IngressFinding("IngressCanaryUnmatched", "warning", subject, "spec.rules",
                                          f"canary Ingress: {why}: no traffic reaches its backend",
                                          "give the canary the same host, path and pathType as the Ingress it "
                                          "shadows, with another backend Service"))
        out.extend(_canary_elsewhere(ing, model, subject))
    return out


def _canary_elsewhere(ing: Ingress, model: Model, subject: str) -> list[IngressFinding]:
    """ingress-nginx hangs a canary on the primary's upstream (``mergeAlternativeBackends``) and its balancer picks
    by upstream, so every location proxying to that Service port — other hosts and paths included — gets it."""
    own = {(_server_key(rule.host), spec.path or "/") for rule in ing.rules for spec in rule.paths}
    out = []
    for primary, canary in sorted(model.canaries.items()):
        if canary.ingress is not ing:
            continue
        elsewhere = sorted({f"{loc.host or '*'}{loc.ingress_path} (Ingress {loc.ingress.key})"
                            for server in model.servers.values() for loc in server.locations
                            if loc.upstream == primary and loc.ingress is not None
                            and (server.name, loc.ingress_path) not in own})
        if not elsewhere:
            continue
        shown = ", ".join(elsewhere[:4]) + (f" and {len(elsewhere) - 4} more" if len(elsewhere) > 4 else "")
        out.append(IngressFinding(
            "IngressCanaryShared", "warning", subject, f"metadata.annotations[{PREFIX}canary]",
            f"the canary is attached to upstream {primary}, not to a host: ingress-nginx's balancer also sends "
            f"{shown} to {canary.backend.describe()} by the same header, cookie and weight",
            "route those paths to a Service of their own (another Service selecting the same pods, or another port), "
            "so that only the path the canary repeats uses this upstream"))
    return out


def _server_key(host: str) -> str:
    return host.lower() if host else CATCH_ALL


def _catalog() -> list[str]:
    from .annotations.catalog import CATALOG

    return list(CATALOG)


def _shadowed_paths(state: ClusterState, controllers: list[IngressController],
                    namespace: str | None) -> list[IngressFinding]:
    """The same host, path and type in two Ingresses of one controller: ingress-nginx silently keeps the first."""
    claimed: dict[str, list[Ingress]] = {}
    for ing in state.ingresses.values():
        res = resolve_class(state, ing, controllers)
        if res.claimed and res.controller:
            claimed.setdefault(res.controller, []).append(ing)
    out = []
    for controller in sorted(claimed):
        seen: dict[tuple[str, str, str], Ingress] = {}
        ctl = next(c for c in controllers if c.controller == controller)
        config = controller_config(state, ctl)
        for ing in nginx_order(claimed[controller]):
            if parse_annotations(ing, config, state).canary.enabled:
                continue  # a canary adds no location: it is the alternative backend of the path it repeats
            for r, rule in enumerate(ing.rules):
                for i, p in enumerate(rule.paths):
                    key = (rule.host.lower(), p.path or "/", nginx_path_type(p.path_type))
                    first = seen.setdefault(key, ing)
                    if first is ing or (namespace is not None and ing.namespace != namespace):
                        continue
                    out.append(IngressFinding(
                        "IngressPathShadowed", "warning", f"Ingress {ing.key}", f"spec.rules[{r}].http.paths[{i}]",
                        f"host {rule.host or '*'} path {p.path or '/'} ({p.path_type}) is also defined by Ingress "
                        f"{first.key}, which ingress-nginx merges first (older, or same age and later by "
                        "namespace/name): this path never receives traffic",
                        "remove one of the two paths, or give them different hosts or paths"))
    return out
