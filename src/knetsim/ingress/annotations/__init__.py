"""ingress-nginx's annotations, one family per module: parsed with the controller's validation and
defaults, then applied by ``ingress.phases`` as nginx runs the location.

``parse(ingress, config, state)`` is the controller's ``Extract`` for one Ingress:

1. annotations riskier than the ConfigMap's ``annotations-risk-level`` refuse the Ingress;
2. every family parses its annotations (``values.Reader``); each problem is reported with its
   effect (``base``): refused, location denied (503), family dropped, or default kept;
3. what knetsim recognises but does not simulate (timeouts, buffers, logging, mTLS, mirroring,
   ...) and what ingress-nginx does not know at all are listed, so no annotation passes silently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from ...cluster.state import ClusterState
from ...model.objects import Ingress
from ..config import ControllerConfig
from . import access, affinity, backend, basicauth, canary, cors, errors, extauth, limits, redirect, rewrite, snippets
from .access import AccessConfig
from .affinity import AffinityConfig
from .backend import BackendConfig
from .base import DENIED, REJECTED, Cause, Context, FamilyDropped, Problem
from .basicauth import BasicAuthConfig
from .canary import CanaryConfig
from .catalog import CATALOG, risk_name
from .cors import CorsConfig
from .errors import ErrorsConfig
from .extauth import ExtAuthConfig
from .limits import LimitsConfig
from .redirect import RedirectConfig
from .rewrite import RewriteConfig
from .snippets import SnippetsConfig
from .values import PREFIX, Reader, options, valid_server_names

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class IngressAnnotations:
    ingress: str
    redirect: RedirectConfig = field(default_factory=RedirectConfig)
    rewrite: RewriteConfig = field(default_factory=RewriteConfig)
    canary: CanaryConfig = field(default_factory=CanaryConfig)
    access: AccessConfig = field(default_factory=AccessConfig)
    basic_auth: BasicAuthConfig | None = None
    ext_auth: ExtAuthConfig | None = None
    satisfy: str = "all"
    cors: CorsConfig = field(default_factory=CorsConfig)
    backend: BackendConfig = field(default_factory=BackendConfig)
    affinity: AffinityConfig = field(default_factory=AffinityConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    errors: ErrorsConfig = field(default_factory=ErrorsConfig)
    snippets: SnippetsConfig = field(default_factory=SnippetsConfig)
    aliases: tuple[str, ...] = ()
    problems: tuple[Problem, ...] = ()
    unsimulated: tuple[str, ...] = ()  # full names of annotations recognised but not simulated
    unknown: tuple[str, ...] = ()  # nginx.ingress.kubernetes.io/* names ingress-nginx does not read

    @property
    def rejected(self) -> tuple[str, ...]:
        """Why the controller refuses this Ingress (its webhook's messages); empty when it does not."""
        return tuple(p.message for p in self.problems if p.effect == REJECTED)

    @property
    def denied(self) -> str | None:
        """The first location-denied reason: every location of the Ingress answers 503."""
        return next((p.message for p in self.problems if p.effect == DENIED), None)

    def to_dict(self) -> dict[str, Any]:
        return {"ingress": self.ingress, "problems": [p.to_dict() for p in self.problems],
                "unsimulated": list(self.unsimulated), "unknown": list(self.unknown)}


def _family(ctx: Context, parser: Callable[[Context], T], default: T) -> T:
    try:
        return parser(ctx)
    except FamilyDropped:
        return default


def _risky(ctx: Context) -> bool:
    """Annotations riskier than the configured level: the whole Ingress is refused (``Validate``)."""
    level = ctx.config.annotations_risk_level
    groups = sorted({CATALOG[n[len(PREFIX):]].group for n in ctx.ingress.meta.annotations
                     if n.startswith(PREFIX) and n[len(PREFIX):] in CATALOG
                     and CATALOG[n[len(PREFIX):]].risk > level})
    for group in groups:
        names = sorted(n for n in ctx.ingress.meta.annotations if n.startswith(PREFIX)
                       and CATALOG.get(n[len(PREFIX):]) is not None and CATALOG[n[len(PREFIX):]].group == group
                       and CATALOG[n[len(PREFIX):]].risk > level)
        ctx.report(names[0], REJECTED, f"annotation group {group} contains risky annotation based on ingress "
                                       f"configuration ({', '.join(names)}: risk "
                                       f"{risk_name(CATALOG[names[0][len(PREFIX):]].risk)} is above "
                                       f"annotations-risk-level {risk_name(level)})", Cause.RISKY)
    return bool(groups)


def _aliases(ctx: Context) -> tuple[str, ...]:
    read = ctx.reader.string("server-alias", valid_server_names)
    if read.error == "validation":
        ctx.reported(read, REJECTED, "the Ingress is refused")
        return ()
    if not read.ok or not read.value:
        return ()
    return tuple(sorted({a.strip() for a in read.value.split(",") if a.strip()}))


def _satisfy(ctx: Context) -> str:
    read = ctx.reader.string("satisfy", options(("any", "all")))
    return read.value.strip().lower() if read.ok and read.value and read.value.strip().lower() == "any" else "all"


def parse(ingress: Ingress, config: ControllerConfig, state: ClusterState) -> IngressAnnotations:
    ctx = Context(ingress, config, state, Reader(ingress.meta.annotations))
    present = sorted(n for n in ingress.meta.annotations if n.startswith(PREFIX))
    unknown = tuple(n for n in present if n[len(PREFIX):] not in CATALOG)
    unsimulated = tuple(n for n in present if n[len(PREFIX):] in CATALOG and not CATALOG[n[len(PREFIX):]].simulated)
    denial = snippets.webhook_denial(dict(ingress.meta.annotations), config.allow_snippet_annotations)
    if denial is not None:
        # CheckIngress refuses snippets before it parses anything else.
        ctx.report(denial.split(" ", 1)[0], REJECTED, denial, Cause.SNIPPETS_DISABLED)
        return IngressAnnotations(ingress.key, problems=tuple(ctx.problems), unsimulated=unsimulated, unknown=unknown)
    if _risky(ctx):
        return IngressAnnotations(ingress.key, problems=tuple(ctx.problems), unsimulated=unsimulated, unknown=unknown)
    result = IngressAnnotations(
        ingress.key,
        redirect=_family(ctx, redirect.parse, RedirectConfig()),
        rewrite=_family(ctx, rewrite.parse, RewriteConfig()),
        canary=_family(ctx, canary.parse, CanaryConfig()),
        access=_family(ctx, access.parse, AccessConfig()),
        basic_auth=_family(ctx, basicauth.parse, None),
        ext_auth=_family(ctx, extauth.parse, None),
        satisfy=_satisfy(ctx),
        cors=_family(ctx, cors.parse, CorsConfig()),
        backend=_family(ctx, backend.parse, BackendConfig()),
        affinity=_family(ctx, affinity.parse, AffinityConfig()),
        limits=_family(ctx, limits.parse, LimitsConfig(config.proxy_body_size)),
        errors=_family(ctx, errors.parse, ErrorsConfig()),
        snippets=_family(ctx, snippets.parse, SnippetsConfig()),
        aliases=_aliases(ctx),
    )
    return replace(result, problems=tuple(ctx.problems), unsimulated=unsimulated, unknown=unknown)


__all__ = [
    "AccessConfig", "AffinityConfig", "BackendConfig", "BasicAuthConfig", "CanaryConfig", "CorsConfig",
    "ErrorsConfig", "ExtAuthConfig", "IngressAnnotations", "LimitsConfig", "Problem", "RedirectConfig",
    "RewriteConfig", "SnippetsConfig", "parse",
]
