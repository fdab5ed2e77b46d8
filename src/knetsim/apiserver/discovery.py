"""Which discovery document ``/api`` and ``/apis`` answer with: the Accept header negotiated as the API server
negotiates it, the aggregated formats those of the version in force (model/versions.py RELEASES).

A client asks for aggregated discovery by naming it in a media type's parameters
(``application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList``) and for the plain ``APIVersions`` /
``APIGroupList`` by a plain ``application/json`` (or ``*/*``). The clauses are tried best first, as
k8s.io/apiserver pkg/endpoints/handlers/negotiation/negotiate.go tries goautoneg.ParseAccept's order: higher
``q`` first, then a concrete type before a wildcard, then the order written; the first clause the server can
serve wins. ``q=0`` is "not acceptable" (RFC 9110): such a clause is never served, and a media type whose most
specific clause has ``q=0`` is not served through a wildcard either (``rejectedMediaTypes``). A clause naming an
aggregated version the
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
    # Best first; sorted() is stable, so equal ranks keep the order the client wrote them in.
    return sorted(out, key=lambda c: (-c.q, c.type.startswith("*/"), c.type.endswith("/*")))


def _specificity(clause_type: str, media_type: str) -> int:
    """How closely a clause names a media type: 2 exactly, 1 as type/*, 0 as */*, -1 not at all."""
    if clause_type == media_type:
        return 2
    if clause_type == media_type.split("/")[0] + "/*":
        return 1
    return 0 if clause_type == "*/*" else -1


def _rejected(clauses: list[_Clause]) -> set[str]:
    """The media types the client refuses: those whose most specific clause (the best-ranked one among equals)
    says ``q=0``."""
    out = set()
    for media_type in PLAIN_TYPES:
        best, refused = -1, False
        for clause in clauses:
            rank = _specificity(clause.type, media_type)
            if rank > best:
                best, refused = rank, clause.q <= 0
        if refused:
            out.add(media_type)
    return out


def _media_types(clause_type: str) -> list[str]:
    """What a clause can be served as, in the server's order of serializers (JSON before YAML)."""
    return [t for t in PLAIN_TYPES if _specificity(clause_type, t) >= 0]  # protobuf, CBOR, text/html: none here


def negotiate(accept: str) -> Choice:
    """The document an ``Accept`` header asks for at the version in force; 406 when no clause can be served."""
    if not accept.strip():
        return Choice(None, "application/json")
    served = versions.release().discovery
    clauses = _clauses(accept)
    rejected = _rejected(clauses)
    for clause in clauses:
        if clause.q <= 0:
            continue
        for media_type in _media_types(clause.type):
            if media_type in rejected:
                continue
            wanted_kind = clause.params.get("as")
            if wanted_kind is None:
                return Choice(None, media_type)
            # Aggregated discovery as JSON only here (kube-apiserver serves it as protobuf too).
            if (wanted_kind == AGGREGATED_KIND and clause.params.get("g") == AGGREGATED_GROUP
                    and clause.params.get("v") in served and media_type == "application/json"):
                return Choice(clause.params["v"], media_type)
    raise ApiError(406, "NotAcceptable", "only the following media types are accepted: " + ", ".join(
        [*PLAIN_TYPES, *(f"application/json;g={AGGREGATED_GROUP};v={v};as={AGGREGATED_KIND}" for v in served)]))
