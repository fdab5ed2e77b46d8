"""ingress-nginx's validating admission webhook, for the checks that decide whether an Ingress exists.

kind's ingress-nginx manifest installs ``validate.nginx.ingress.kubernetes.io`` for CREATE and
UPDATE of Ingresses. Since controller v1.12 its ``strict-validate-path-type`` is on by default:
an Exact or Prefix path may hold only letters, digits, ``/``, ``_`` and ``-`` (regex paths need
``pathType: ImplementationSpecific``), and anything else is refused, so ``kubectl apply`` fails
and the Ingress is never stored. kind's own guide met it (kubernetes-sigs/kind#3764). Only the
Ingresses the controller would serve are checked (``CheckIngress`` skips the others).

Messages are the webhook's: ``admission webhook "validate.nginx.ingress.kubernetes.io" denied the
request: ingress contains invalid paths: path /foo(/|$)(.*) cannot be used with pathType Prefix``
(several paths joined by newlines, as Go's errors.Join prints them), plus one Warning per path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..model.objects import INGRESS_CLASS_ANNOTATION
from .controllers import IngressController

WEBHOOK = "validate.nginx.ingress.kubernetes.io"
# inspector.validPathType: "^/[[:alnum:]\\_\\-\\/]*$", case-insensitive; [[:alnum:]] is ASCII in RE2.
_VALID_PATH = re.compile(r"^/[A-Za-z0-9_\-/]*$")
# Since v1.14.0 (kubernetes/ingress-nginx#13798, internal/ingress/inspector/rules.go) "." is allowed too:
# `(?i)^/[[:alnum:]._\-/]*$` — /.well-known/acme-challenge is a valid Prefix path again.
_VALID_PATH_WITH_DOT = re.compile(r"^/[A-Za-z0-9._\-/]*$")
_VERSION = re.compile(r":v?(\d+)\.(\d+)")


def _version(controller: IngressController) -> tuple[int, int] | None:
    found = _VERSION.search(controller.image.split("@", 1)[0])
    return (int(found.group(1)), int(found.group(2))) if found is not None else None


def strict_path_validation(controller: IngressController) -> bool:
    """Whether this controller's webhook refuses regex characters in Exact/Prefix paths: ingress-nginx
    v1.12 or newer (an image without a readable version counts as current)."""
    image = controller.image
    if "ingress-nginx/controller" not in image and not image.rsplit("/", 1)[-1].startswith("controller"):
        return False
    found = _VERSION.search(image.split("@", 1)[0])
    return found is None or (int(found.group(1)), int(found.group(2))) >= (1, 12)


def invalid_paths(ingress: Mapping[str, Any], controller: IngressController | None = None
                  ) -> list[tuple[int, int, str, str]]:
    """(rule, path index, path, pathType) of every Exact/Prefix path the webhook refuses: ``controller``'s
    webhook when given (a dot is allowed from v1.14 on, and by an image without a readable version), else
    v1.12/v1.13's."""
    version = _version(controller) if controller is not None else (1, 13)
    valid = _VALID_PATH_WITH_DOT if version is None or version >= (1, 14) else _VALID_PATH
    out = []
    rules = ((ingress.get("spec") or {}).get("rules")) or []
    for r, rule in enumerate(rules if isinstance(rules, list) else []):
        paths = ((rule or {}).get("http") or {}).get("paths") or [] if isinstance(rule, dict) else []
        for i, p in enumerate(paths if isinstance(paths, list) else []):
            if not isinstance(p, dict):
                continue
            path, path_type = str(p.get("path") or ""), str(p.get("pathType") or "")
            if path_type in ("Exact", "Prefix") and not valid.match(path):
                out.append((r, i, path, path_type))
    return out


def path_message(path: str, path_type: str) -> str:
    return f"path {path} cannot be used with pathType {path_type}"


def denial(paths: list[tuple[int, int, str, str]]) -> str:
    joined = "\n".join(path_message(p, t) for _r, _i, p, t in paths)
    return f'admission webhook "{WEBHOOK}" denied the request: ingress contains invalid paths: {joined}'


def claiming_controller(ingress: Mapping[str, Any], class_controllers: Mapping[str, str],
                        controllers: list[IngressController]) -> IngressController | None:
    """The controller that would serve ``ingress`` (whose webhook therefore checks it), by the rules of
    ``controllers.resolve_class``: its IngressClass's controller, else the annotation's --ingress-class,
    else a controller watching Ingresses without class."""
    spec = ingress.get("spec") or {}
    annotations = (ingress.get("metadata") or {}).get("annotations") or {}
    class_name = spec.get("ingressClassName") if isinstance(spec, dict) else None
    if class_name:
        wanted = class_controllers.get(str(class_name))
        return next((c for c in controllers if wanted is not None and c.controller == wanted), None)
    annotation = annotations.get(INGRESS_CLASS_ANNOTATION) if isinstance(annotations, dict) else None
    if annotation:
        return next((c for c in controllers if c.ingress_class == annotation), None)
    return next((c for c in controllers if c.watch_without_class), None)


def annotated(ingress: Mapping[str, Any]) -> bool:
    """Whether the webhook has annotations of the Ingress to check (``annotations.values.annotated``)."""
    from .annotations.values import annotated as carries_nginx_annotations

    return carries_nginx_annotations(ingress)


def annotation_errors(ingress: Mapping[str, Any], configmap: Mapping[str, str] | None) -> list[str]:
    """What the webhook says about the Ingress's annotations (``CheckIngress``): snippets while the
    administrator disallows them, annotations over ``annotations-risk-level``, values their validator
    refuses — each in the controller's words; empty when it lets the Ingress through."""
    from ..cluster.config import ClusterConfig
    from ..cluster.state import ClusterState
    from ..model.objects import Ingress
    from .annotations import parse
    from .annotations.base import Cause, Effect
    from .config import DEFAULT, read

    if not annotated(ingress):
        return []
    config = read(configmap) if configmap is not None else DEFAULT
    parsed = parse(Ingress.parse(dict(ingress)), config, ClusterState(ClusterConfig()))
    out = []
    for problem in parsed.problems:
        if problem.effect != Effect.REJECTED:
            continue
        if problem.cause == Cause.SNIPPETS_DISABLED:
            out.append(problem.message)
        elif problem.cause == Cause.RISKY:
            out.append(problem.message.split(" (", 1)[0])  # the webhook's words end where knetsim's detail starts
        else:
            out.append(f"annotation {problem.annotation} contains invalid value")
    return out


def annotation_denial(errors: list[str]) -> str:
    return f'admission webhook "{WEBHOOK}" denied the request: {errors[0]}'
