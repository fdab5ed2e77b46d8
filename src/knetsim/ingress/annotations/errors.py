"""Error pages: ``custom-http-errors``, ``default-backend``, ``disable-proxy-intercept-errors``.

* ``default-backend: <service>`` (a Service of the Ingress's namespace; its first port) replaces
  the controller's default backend for the Ingress's locations: when the location's Service has no
  ready endpoint the request goes there instead (with ``X-Code: 503`` and the ``X-Namespace`` /
  ``X-Ingress-Name`` / ``X-Service-Name`` headers), and it serves the custom errors below. A Service
  that does not exist makes the parser fail: the annotation is ignored.
* ``custom-http-errors: "404,503"`` (codes 4xx/5xx; a value outside that refuses the Ingress;
  default: the ConfigMap's list) is ``proxy_intercept_errors on`` plus ``error_page <code> =
  @custom_…``: an answer with one of those codes — the backend's, or the controller's own (403,
  401, 413, 503...) — is replaced by what the default backend answers for ``/`` with ``X-Code``,
  ``X-Format``, ``X-Original-URI`` headers; with ``=``, the client gets the default backend's status.
  The controller's own default backend (kind runs none: ingress-nginx's internal one) answers 404.
* ``disable-proxy-intercept-errors: "true"`` keeps the backend's own error answers (nginx's own
  errors are still replaced).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .base import DEFAULT, IGNORED, REJECTED, Context
from .values import VALIDATION, matches, parse_int, valid_service_name

_CODES = re.compile(r"^(?:[4,5]\d{2},?)*$")


@dataclass(frozen=True, slots=True)
class ErrorsConfig:
    codes: tuple[int, ...] = ()
    codes_from: str = ""  # the annotation, or "ConfigMap"
    default_backend: str = ""  # namespace/name of the Service, "" for the controller's
    intercept_backend_errors: bool = True


def parse(ctx: Context) -> ErrorsConfig:
    r = ctx.reader
    codes: tuple[int, ...] = tuple(ctx.config.custom_http_errors)
    source = "ConfigMap" if codes else ""
    raw = r.string("custom-http-errors", matches(_CODES, remove_space=True))
    if raw.error == VALIDATION:
        ctx.reported(raw, REJECTED, "the Ingress is refused")
    elif raw.ok and raw.value is not None:
        parsed = [parse_int(c) for c in raw.value.split(",")]
        if any(p is None for p in parsed):
            ctx.report(raw.name, IGNORED, f"strconv.Atoi: {raw.value!r} is not a list of codes: ignored")
        else:
            codes, source = tuple(p for p in parsed if p is not None), raw.name
    backend = ""
    service = r.string("default-backend", valid_service_name)
    if service.error == VALIDATION:
        ctx.reported(service, REJECTED, "the Ingress is refused")
    elif service.ok and service.value:
        key = f"{ctx.ingress.namespace}/{service.value}"
        if key in ctx.state.services:
            backend = key
        else:
            ctx.report(service.name, IGNORED, f"unexpected error reading service {key}: not found: the annotation "
                                              "is ignored")
    disable = r.boolean("disable-proxy-intercept-errors")
    if disable.error == VALIDATION:
        ctx.reported(disable, DEFAULT, "false")
    return ErrorsConfig(codes, source, backend, not (disable.ok and disable.value))
