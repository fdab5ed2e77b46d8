"""gateway.networking.k8s.io/v1alpha3: kept in the CRDs (not served) so objects stored at it stay readable.

The same types as v1.
"""

from __future__ import annotations

from . import gateway_v1 as v1


class TLSRoute(v1.TLSRoute):
    """TLS routing by server name (v1alpha3, no longer served; the same as v1)."""


class BackendTLSPolicy(v1.BackendTLSPolicy):
    """TLS from the Gateway to a backend (v1alpha3, no longer served; the same as v1)."""


__all__ = ["BackendTLSPolicy", "TLSRoute"]
