"""Status conditions of the Gateway API objects: the types and reasons as named constants, and a condition set.

The words are the API's (apis/v1 ``*ConditionType`` and ``*ConditionReason`` of v1.6.1: gateway_types.go,
shared_types.go, listenerset_types.go, policy_types.go, backendtlspolicy_types.go), plus the few Envoy
Gateway adds (``PartiallyInvalidCertificateRef``, ``PortNotFound``...). Code sets and reads conditions
through these names only, so a misspelt reason is a NameError, not a silent string.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


class Type:
    """Condition types (Gateway, listener, ListenerSet, route parent, policy ancestor)."""

    ACCEPTED: Final = "Accepted"
    PROGRAMMED: Final = "Programmed"
    RESOLVED_REFS: Final = "ResolvedRefs"
    CONFLICTED: Final = "Conflicted"
    PARTIALLY_INVALID: Final = "PartiallyInvalid"
    OVERLAPPING_TLS_CONFIG: Final = "OverlappingTLSConfig"
    INSECURE_FRONTEND_VALIDATION_MODE: Final = "InsecureFrontendValidationMode"


class Reason:
    """Condition reasons; the object kinds that use each are noted where it is not obvious."""

    # shared
    ACCEPTED: Final = "Accepted"
    PROGRAMMED: Final = "Programmed"
    RESOLVED_REFS: Final = "ResolvedRefs"
    INVALID: Final = "Invalid"
    PENDING: Final = "Pending"
    REF_NOT_PERMITTED: Final = "RefNotPermitted"
    UNSUPPORTED_VALUE: Final = "UnsupportedValue"
    # GatewayClass (Envoy Gateway's status/gatewayclass.go)
    OLDER_GATEWAY_CLASS_EXISTS: Final = "OlderGatewayClassExists"
    # Gateway
    LISTENERS_NOT_VALID: Final = "ListenersNotValid"
    ADDRESS_NOT_ASSIGNED: Final = "AddressNotAssigned"
    NO_RESOURCES: Final = "NoResources"
    CONFIGURATION_CHANGED: Final = "ConfigurationChanged"
    INVALID_CLIENT_CERTIFICATE_REF: Final = "InvalidClientCertificateRef"
    # listener (Gateway and ListenerSet entries)
    HOSTNAME_CONFLICT: Final = "HostnameConflict"
    PROTOCOL_CONFLICT: Final = "ProtocolConflict"
    LISTENER_CONFLICT: Final = "ListenerConflict"
    NO_CONFLICTS: Final = "NoConflicts"
    UNSUPPORTED_PROTOCOL: Final = "UnsupportedProtocol"
    INVALID_CERTIFICATE_REF: Final = "InvalidCertificateRef"
    PARTIALLY_INVALID_CERTIFICATE_REF: Final = "PartiallyInvalidCertificateRef"  # Envoy Gateway's own
    INVALID_ROUTE_KINDS: Final = "InvalidRouteKinds"
    INVALID_CA_CERTIFICATE_REF: Final = "InvalidCACertificateRef"
    INVALID_CA_CERTIFICATE_KIND: Final = "InvalidCACertificateKind"
    NO_VALID_CA_CERTIFICATE: Final = "NoValidCACertificate"
    OVERLAPPING_HOSTNAMES: Final = "OverlappingHostnames"
    OVERLAPPING_CERTIFICATES: Final = "OverlappingCertificates"
    # ListenerSet
    NOT_ALLOWED: Final = "NotAllowed"
    PARENT_NOT_ACCEPTED: Final = "ParentNotAccepted"
    # route parent
    NOT_ALLOWED_BY_LISTENERS: Final = "NotAllowedByListeners"
    NO_MATCHING_LISTENER_HOSTNAME: Final = "NoMatchingListenerHostname"
    NO_MATCHING_PARENT: Final = "NoMatchingParent"
    INCOMPATIBLE_FILTERS: Final = "IncompatibleFilters"
    INVALID_KIND: Final = "InvalidKind"
    BACKEND_NOT_FOUND: Final = "BackendNotFound"
    UNSUPPORTED_PROTOCOL_ROUTE: Final = "UnsupportedProtocol"
    PORT_NOT_SPECIFIED: Final = "PortNotSpecified"  # Envoy Gateway's own
    PORT_NOT_FOUND: Final = "PortNotFound"  # Envoy Gateway's own
    # policy ancestor (BackendTLSPolicy)
    CONFLICTED: Final = "Conflicted"
    TARGET_NOT_FOUND: Final = "TargetNotFound"


class Status:
    TRUE: Final = "True"
    FALSE: Final = "False"
    UNKNOWN: Final = "Unknown"


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str  # Status.TRUE | FALSE | UNKNOWN
    reason: str
    message: str

    @property
    def ok(self) -> bool:
        return self.status == Status.TRUE


class Conditions(dict[str, Condition]):
    """Conditions by type, in the order first set (as MergeConditions keeps them)."""

    def set(self, type_: str, ok: bool, reason: str, message: str) -> None:
        self[type_] = Condition(type_, Status.TRUE if ok else Status.FALSE, reason, message)

    def is_false(self, type_: str) -> bool:
        c = self.get(type_)
        return c is not None and c.status == Status.FALSE

    def is_true(self, type_: str) -> bool:
        c = self.get(type_)
        return c is not None and c.status == Status.TRUE
