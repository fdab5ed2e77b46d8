"""The rewrite family: rewrite-target (with captures), use-regex, x-forwarded-prefix, upstream-vhost.

Parsing: ``rewrite-target`` and ``use-regex`` are read by ingress-nginx's ``rewrite`` parser, which
keeps its default (no rewrite, no regex) for an invalid value; ``x-forwarded-prefix`` and
``upstream-vhost`` are returned as read, so a value their validator refuses refuses the Ingress.

Behaviour (``buildLocation``, ``buildProxyPass`` and the location block of the template):

* ``use-regex: "true"``, or a ``rewrite-target`` that differs from the path, turns **every**
  location of the host's server into ``location ~* "^<path>"`` (``enforceRegexModifier``);
* the location's ``rewrite-target`` is ``rewrite "(?i)<path>" <target> break;`` (``nginxregex``);
* ``x-forwarded-prefix`` sets ``X-Forwarded-Prefix`` on the request to the backend — only in the
  rewrite branch of ``buildProxyPass``, so without a rewrite-target it has no effect;
* ``upstream-vhost`` replaces the ``Host`` header sent to the backend (``$best_http_host`` else).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import DEFAULT, IGNORED, REJECTED, Context
from .values import INVALID, REGEX_PATH_WITH_CAPTURE, VALIDATION, matches, valid_server_name


@dataclass(frozen=True, slots=True)
class RewriteConfig:
    target: str = ""
    use_regex: bool = False
    x_forwarded_prefix: str = ""
    upstream_vhost: str = ""

    def needs_rewrite(self, path: str) -> bool:
        """``needsRewrite``: a target that differs from the location's path."""
        return bool(self.target) and self.target != path

    def enforces_regex(self, path: str) -> bool:
        return self.use_regex or self.needs_rewrite(path)


def parse(ctx: Context) -> RewriteConfig:
    r = ctx.reader
    target = r.string("rewrite-target", matches(REGEX_PATH_WITH_CAPTURE))
    if target.error == VALIDATION:
        ctx.reported(target, DEFAULT, "no rewrite (the controller defaults it to empty)")
    use_regex = r.boolean("use-regex")
    if use_regex.error == VALIDATION:
        ctx.reported(use_regex, DEFAULT, "defaulting to false")
    prefix = r.string("x-forwarded-prefix", matches(REGEX_PATH_WITH_CAPTURE, remove_space=True))
    vhost = r.string("upstream-vhost", valid_server_name)
    for read in (prefix, vhost):
        if read.error == VALIDATION:
            ctx.reported(read, REJECTED, "the Ingress is refused")
        elif read.error == INVALID:
            ctx.reported(read, IGNORED, "ignored")
    return RewriteConfig(target.value or "", bool(use_regex.value), prefix.value or "", vhost.value or "")
