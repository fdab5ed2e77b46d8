"""Which discovery document ``/api`` and ``/apis`` answer with: the Accept header negotiated as the API server
negotiates it, the aggregated formats those of the version in force (model/versions.py RELEASES).

A client asks for aggregated discovery by naming it in a media type's parameters
(``application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList``) and for the plain ``APIVersions`` /
``APIGroupList`` by a plain ``application/json`` (or ``*/*``). The clauses are tried best first: by ``q``
(``q=0`` is "not acceptable"), ties in the order written (k8s.io/apiserver pkg/endpoints/handlers/negotiation:
goautoneg.ParseAccept, then the first clause the server can serve). A clause naming an aggregated version the
server does not serve (v2beta1 on 1.38, kubernetes/kubernetes CHANGELOG-1.38 #141208), or protobuf (knetsim
serves discovery as JSON only), is passed over; parameters the server does not know (``drop=...``, a 1.38 client's
``drop=metadata.managedFields``, #139561) are ignored, never a 406.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import versions
from .errors import ApiError

AGGREGATED_GROUP = "apidiscovery.k8s.io"
AGGREGATED_KIND = "APIGroupDiscoveryList"
# What a legacy (plain) discovery document can be served as.
PLAIN_TYPES = ("application/json", "application/yaml")


@dataclass(frozen=True, slots=True)
class Choice:
    """What to serve: the aggregated list at ``aggregated`` (v2, v2beta1), or the plain document (None), as
    ``media_type`` (application/json or application/yaml)."""

    aggregated: str | None
    media_type: str

    @property
    def content_type(self) -> str:
        if self.aggregated is None:
            return self.media_type
        return f"{self.media_type};g={AGGREGATED_GROUP};v={self.aggregated};as={AGGREGATED_KIND}"


@dataclass(frozen=True, slots=True)
class _Clause:
    type: str
    params: dict[str, str]
    q: float


def _clauses(accept: str) -> list[_Clause]:
    out = []
    for raw in accept.split(","):
        pieces = [p.strip() for p in raw.split(";")]
        if not pieces[0]:
            continue
        params: dict[str, str] = {}
        for piece in pieces[1:]:
            name, _, value = piece.partition("=")
            params[name.strip().lower()] = value.strip().strip('"')
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 0.0  # an unreadable weight: goautoneg reads it as 0
        out.append(_Clause(pieces[0].lower(), params, q))
    # Best first; sorted() is stable, so equal weights keep the order the client wrote them in.
    return sorted((c for c in out if c.q > 0), key=lambda c: -c.q)


def _media_type(clause_type: str) -> str | None:
    if clause_type in ("*/*", "application/*", "application/json"):
        return "application/json"
    if clause_type == "application/yaml":
        return "application/yaml"
    return None  # protobuf, CBOR, text/html ...: not served for discovery here


def negotiate(accept: str) -> Choice:
    """The document an ``Accept`` header asks for at the version in force; 406 when no clause can be served."""
    if not accept.strip():
        return Choice(None, "application/json")
    served = versions.release().discovery
    for clause in _clauses(accept):
        media_type = _media_type(clause.type)
        if media_type is None:
            continue
        wanted_kind = clause.params.get("as")
        if wanted_kind is None:
            return Choice(None, media_type)
        # Aggregated discovery is JSON only (the API server's aggregated handler serves JSON and protobuf).
        if (wanted_kind == AGGREGATED_KIND and clause.params.get("g") == AGGREGATED_GROUP
                and clause.params.get("v") in served and media_type == "application/json"):
            return Choice(clause.params["v"], media_type)
    raise ApiError(406, "NotAcceptable", "only the following media types are accepted: " + ", ".join(
        [*PLAIN_TYPES, *(f"application/json;g={AGGREGATED_GROUP};v={v};as={AGGREGATED_KIND}" for v in served)]))
