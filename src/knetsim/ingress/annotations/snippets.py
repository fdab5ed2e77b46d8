"""Snippets — ``configuration-snippet``, ``server-snippet``, ``auth-snippet``, ``stream-snippet``,
``modsecurity-snippet``: arbitrary nginx configuration pasted into the controller's file.

Since v1.9 the ConfigMap's ``allow-snippet-annotations`` is ``false``: the admission webhook
refuses any Ingress with a ``*-snippet`` annotation ("Snippet directives are disabled by the Ingress
administrator"), and a controller that meets one anyway drops the snippet. Since v1.12 the
snippets are ``Critical`` and ``annotations-risk-level`` is ``High``: even with snippets allowed the
Ingress is refused ("annotation group ConfigurationSnippet contains risky annotation based on
ingress configuration") unless the level is raised to ``Critical``. Then the text is written into
the location (``server-snippet``: the server, once per host, the first Ingress's) — any directive,
which knetsim reports and does not run.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import Context
from .catalog import SNIPPETS
from .values import PREFIX, SNIPPET_SUFFIX


@dataclass(frozen=True, slots=True)
class SnippetsConfig:
    configuration: str = ""
    server: str = ""
    auth: str = ""
    stream: str = ""
    modsecurity: str = ""

    def present(self) -> tuple[tuple[str, str], ...]:
        return tuple((name, text) for name, text in (
            ("configuration-snippet", self.configuration), ("server-snippet", self.server),
            ("auth-snippet", self.auth), ("stream-snippet", self.stream),
            ("modsecurity-snippet", self.modsecurity)) if text)


def parse(ctx: Context) -> SnippetsConfig:
    values = {}
    for name in SNIPPETS:
        read = ctx.reader.string(name)
        values[name.split("-")[0]] = read.value or "" if read.ok else ""
    return SnippetsConfig(**values)


def webhook_denial(annotations: dict[str, str] | object, allow: bool) -> str | None:
    """The webhook's refusal for snippet annotations when the administrator disabled them."""
    if allow or not isinstance(annotations, dict):
        return None
    keys = sorted(k for k in annotations if k.endswith(SNIPPET_SUFFIX))
    if not keys:
        return None
    return f"{keys[0]} annotation cannot be used. Snippet directives are disabled by the Ingress administrator"


def snippet_names(annotations: dict[str, str]) -> list[str]:
    return sorted(k[len(PREFIX):] for k in annotations if k.startswith(PREFIX) and k[len(PREFIX):] in SNIPPETS)
