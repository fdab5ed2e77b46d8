"""What a reader of a cluster keeps out of a Secret: every value but a certificate's.

The analysis needs a Secret's type and its certificates (a listener's ``tls.crt``, a CA bundle's ``ca.crt``);
it never needs a private key (``tls.key``), a password or a token, and knetsim must never put one into an
output, a cache or a JSON answer. So a Secret read from a cluster keeps its metadata, its type and the names of
all its keys (``kubectl describe secret`` shows them too, with sizes), but only the certificate keys keep their
values; every other key is kept with an empty value and listed in the annotation ``WITHHELD_ANNOTATION``, so
that the Gateway analysis takes a withheld ``tls.key`` as present (the cluster has it; the API server checked
that a ``kubernetes.io/tls`` Secret has one) instead of reporting it missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Keys whose values are public: certificates and CA bundles (PEM, base64 in a Secret's data).
CERTIFICATE_KEYS = frozenset({"tls.crt", "ca.crt"})
# The keys whose values the reader withheld, comma-separated, sorted.
WITHHELD_ANNOTATION = "knetsim.io/withheld-data"


def withhold(secret: Mapping[str, Any]) -> dict[str, Any]:
    """``secret`` as the analysis may hold it: type, metadata (managedFields aside), the certificate keys' values;
    every other value emptied and named in ``WITHHELD_ANNOTATION``. ``stringData`` (never sent by a server) and
    anything else of the body is dropped."""
    meta = dict(secret.get("metadata") or {})
    meta.pop("managedFields", None)
    data = secret.get("data") if isinstance(secret.get("data"), Mapping) else {}
    kept = {str(k): (str(v) if k in CERTIFICATE_KEYS else "") for k, v in sorted(data.items())}
    withheld = sorted(k for k in kept if k not in CERTIFICATE_KEYS)
    out: dict[str, Any] = {"apiVersion": secret.get("apiVersion", "v1"), "kind": "Secret"}
    if withheld:
        # The reader's own note on the object; any annotation of the same name the cluster had is replaced.
        meta["annotations"] = {**(meta.get("annotations") or {}), WITHHELD_ANNOTATION: ",".join(withheld)}
    out["metadata"] = meta
    if secret.get("type"):
        out["type"] = secret["type"]
    if secret.get("immutable") is not None:
        out["immutable"] = secret["immutable"]
    if kept:
        out["data"] = kept
    return out


def withheld_keys(secret: Mapping[str, Any]) -> frozenset[str]:
    """The keys of ``secret`` whose values a cluster reader withheld (``withhold``); empty for a Secret read whole
    (from a manifest, or by the live cluster's own components)."""
    annotations = (secret.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(WITHHELD_ANNOTATION) if isinstance(annotations, Mapping) else None
    return frozenset(k for k in str(text).split(",") if k) if text else frozenset()
