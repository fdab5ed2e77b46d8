"""The Corefile parser lives in ``knetsim.model.corefile``: the offline build (``cluster/``, below
``dns/``) needs it too, to give the coredns pods the CrashLoopBackOff a Corefile that does not parse
gives them. This module keeps the ``knetsim.dns.corefile`` names working."""

from ..model.corefile import (
    DEFAULT_COREFILE,
    KNOWN_PLUGINS,
    PLUGIN_ORDER,
    Corefile,
    CorefileError,
    Directive,
    NameRewrite,
    ServerBlock,
    default_corefile,
    forward_targets,
    inline_hosts,
    name_rewrites,
    parse_corefile,
    startup_error,
)

__all__ = [
    "DEFAULT_COREFILE",
    "KNOWN_PLUGINS",
    "PLUGIN_ORDER",
    "Corefile",
    "CorefileError",
    "Directive",
    "NameRewrite",
    "ServerBlock",
    "default_corefile",
    "forward_targets",
    "inline_hosts",
    "name_rewrites",
    "parse_corefile",
    "startup_error",
]
