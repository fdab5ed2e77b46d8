"""gateway.networking.k8s.io/v1beta1: the four kinds that were beta before v1, still served.

The same types as v1 (upstream's v1beta1 Go types are v1's under another name), so an object written
at v1beta1 is admitted exactly as at v1; the API server stores it at the storage version.
"""

from __future__ import annotations

from . import gateway_v1 as v1


class GatewayClass(v1.GatewayClass):
    """A class of Gateways and the controller that implements them (v1beta1; the same as v1)."""


class Gateway(v1.Gateway):
    """A load balancer's front: listeners to which routes attach (v1beta1; the same as v1)."""


class HTTPRoute(v1.HTTPRoute):
    """HTTP routing from Gateway listeners to backends (v1beta1; the same as v1)."""


class ReferenceGrant(v1.ReferenceGrant):
    """Permission for objects of another namespace to refer to objects of this one (v1beta1, the stored
    version; the same as v1)."""


__all__ = ["Gateway", "GatewayClass", "HTTPRoute", "ReferenceGrant"]
