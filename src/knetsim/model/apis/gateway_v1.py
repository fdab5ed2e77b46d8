"""gateway.networking.k8s.io/v1: every kind of Gateway API v1.6.1's standard channel, and the types they share.

Limits, patterns, defaults and rule messages are the API's (the same object is refused here and by
a cluster with the v1.6.1 CRDs, with the same words); the descriptions are knetsim's. Fields of the
experimental channel are left out of the standard CRDs (the ones served), as upstream's are: a manifest that
uses one (``spec.rules[0].retry``) is refused with ``unknown field``, as ``kubectl apply`` on such a cluster is,
unless the input brings the experimental CRD. Of them only HTTPRoute's ``retry`` is declared here
(``channel="experimental"``), the one a conformance report's features need (HTTPRouteRetry*).
Other versions of these kinds (``gateway_v1beta1``, ``gateway_v1alpha2``, ``gateway_v1alpha3``)
reuse these types, as upstream's Go does.
"""

from __future__ import annotations

from .markers import Boolean, Field, Int32, Integer, ListOf, MapOf, Rule, String, Struct
from .meta import Condition, LabelSelector, Object, conditions

# --- names and scalars ------------------------------------------------------------------------

_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"

Hostname = String(
    "A DNS name as RFC 1123 writes it (lower case, dots between labels), optionally with '*.' as its first "
    "label to stand for any one or more labels. IP addresses are not hostnames.",
    min_length=1, max_length=253, pattern=rf"^(\*\.)?{_DNS_SUBDOMAIN}$")
PreciseHostname = String(
    "A fully qualified DNS name (RFC 1123), without a wildcard.",
    min_length=1, max_length=253, pattern=rf"^{_DNS_SUBDOMAIN}$")
AbsoluteURI = String(
    "An absolute URI (RFC 3986): a scheme, '//', and the rest, such as spiffe://cluster.local/ns/a/sa/b.",
    min_length=1, max_length=253, pattern=r"^(([^:/?#]+):)(//([^/?#]*))([^?#]*)(\?([^#]*))?(#(.*))?")
CORSOrigin = String(
    "An origin a browser may send: '*', or http(s)://host[:port] where the host may start with '*.'.",
    min_length=1, max_length=253,
    pattern=r"(^\*$)|(^(http(s)?):\/\/(((\*\.)?([a-zA-Z0-9\-]+\.)*[a-zA-Z0-9-]+|\*)(:([0-9]{1,5}))?)$)")
Group = String(
    "An API group: empty for the core group (Service, Secret), otherwise a DNS subdomain such as "
    "gateway.networking.k8s.io.",
    max_length=253, pattern=rf"^$|^{_DNS_SUBDOMAIN}$")
Kind = String("A kind of Kubernetes object, in CamelCase: Service, Gateway, HTTPRoute.",
              min_length=1, max_length=63, pattern=r"^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$")
ObjectName = String("The name of a Kubernetes object.", min_length=1, max_length=253)
Namespace = String("A namespace name (an RFC 1123 label).", min_length=1, max_length=63,
                   pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
SectionName = String(
    "The name of a part of an object: a Gateway's listener, a route's rule, a Service's port.",
    min_length=1, max_length=253, pattern=rf"^{_DNS_SUBDOMAIN}$")
GatewayController = String(
    "The name of a Gateway API controller: a domain, a slash and a path, such as "
    "gateway.envoyproxy.io/gatewayclass-controller.",
    min_length=1, max_length=253, pattern=rf"^{_DNS_SUBDOMAIN}\/[A-Za-z0-9\/\-._~%!$&'()*+,;=:]+$")
AnnotationValue = String("An annotation value.", min_length=0, max_length=4096)
LabelValue = String("A label value: up to 63 characters, alphanumerics at both ends, '-', '_' and '.' between.",
                    min_length=0, max_length=63, pattern=r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
AddressType = String(
    "How an address is written: IPAddress, Hostname, or a domain-prefixed type an implementation defines "
    "(NamedAddress is deprecated).",
    min_length=1, max_length=253,
    pattern=rf"^Hostname|IPAddress|NamedAddress|{_DNS_SUBDOMAIN}\/[A-Za-z0-9\/\-._~%!$&'()*+,;=:]+$")
HeaderName = String("The name of an HTTP header or query parameter (an RFC 7230 token); matched without case.",
                    min_length=1, max_length=256, pattern=r"^[A-Za-z0-9!#$%&'*+\-.^_\x60|~]+$")
Duration = String(
    "A duration as GEP-2257 writes it: one to four number-and-unit parts, units h, m, s or ms (1h30m, 500ms).",
    pattern=r"^([0-9]{1,5}(h|m|s|ms)){1,4}$")
PortNumber = Int32("A TCP or UDP port number.")
_PORT = {"minimum": 1, "maximum": 65535}
ProtocolType = String(
    "The protocol a listener accepts: HTTP, HTTPS, TLS, TCP, UDP, or a domain-prefixed protocol an "
    "implementation defines.",
    min_length=1, max_length=255,
    pattern=rf"^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$|{_DNS_SUBDOMAIN}\/[A-Za-z0-9]+$")

_KEY_PATTERN = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$"  # noqa: E501
_HOSTNAME_IN_RULES = r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


# --- references -------------------------------------------------------------------------------


class LocalObjectReference(Struct):
    """An object in the referrer's own namespace, named by group, kind and name."""

    group = Field(Group, "The referent's API group; empty for the core group.", required=True)
    kind = Field(Kind, "The referent's kind.", required=True)
    name = Field(ObjectName, "The referent's name.", required=True)


class ObjectReference(LocalObjectReference):
    """An object named by group, kind and name, in the referrer's namespace unless another is given (which a
    ReferenceGrant there must allow)."""

    namespace = Field(Namespace, "The referent's namespace; the referrer's own when unset. Another namespace "
                                 "needs a ReferenceGrant in it.")


class SecretObjectReference(Struct):
    """A Secret (or another kind holding a certificate), in the referrer's namespace unless another is given."""

    group = Field(Group, "The referent's API group; empty (the core group) by default.", default="")
    kind = Field(Kind, "The referent's kind; Secret by default.", default="Secret")
    name = Field(ObjectName, "The referent's name.", required=True)
    namespace = Field(Namespace, "The referent's namespace; the referrer's own when unset. Another namespace "
                                 "needs a ReferenceGrant in it.")


class BackendObjectReference(Struct, rules=[
        Rule("(size(self.group) == 0 && self.kind == 'Service') ? has(self.port) : true",
             "Must have port for Service reference")]):
    """The object traffic is sent to: by default a Service, which then needs a port."""

    group = Field(Group, "The backend's API group; empty (the core group) by default.", default="")
    kind = Field(Kind, "The backend's kind; Service by default.", default="Service")
    name = Field(ObjectName, "The backend's name.", required=True)
    namespace = Field(Namespace, "The backend's namespace; the route's own when unset. Another namespace needs "
                                 "a ReferenceGrant in it.")
    port = Field(PortNumber, "The port of the backend to send to; required for a Service (its port, not the "
                             "pods' targetPort).", **_PORT)


class BackendRef(BackendObjectReference):
    """A backend with a weight: requests (or connections) are shared among a rule's backends in proportion to
    their weights."""

    weight = Field(Int32(minimum=0, maximum=1000000),
                   "This backend's share of the traffic, relative to the other backends of the rule; 0 sends it "
                   "nothing. The default is 1.", default=1)


class ParentReference(Struct):
    """The object a route attaches to: a Gateway (or one of its listeners) unless kind says otherwise."""

    group = Field(Group, "The parent's API group; gateway.networking.k8s.io by default. Set \"\" for a core "
                         "kind such as Service.", default="gateway.networking.k8s.io")
    kind = Field(Kind, "The parent's kind; Gateway by default (Service for mesh routing).", default="Gateway")
    namespace = Field(Namespace, "The parent's namespace; the route's own when unset. The parent must allow "
                                 "routes from this namespace.")
    name = Field(ObjectName, "The parent's name.", required=True)
    section_name = Field(SectionName, "A part of the parent: a Gateway listener's name. Unset, the route "
                                      "attaches to every listener that admits it.")
    port = Field(PortNumber, "Attach only to the parent's listeners on this port; with sectionName, the listener "
                             "must match both.", **_PORT)


class ParentGatewayReference(Struct):
    """The Gateway a ListenerSet adds its listeners to."""

    group = Field(Group, "The parent's API group.", default="gateway.networking.k8s.io")
    kind = Field(Kind, "The parent's kind.", default="Gateway")
    name = Field(ObjectName, "The parent's name.", required=True)
    namespace = Field(Namespace, "The parent's namespace; the ListenerSet's own when unset.")


# The two rules that keep a route's parentRefs distinct: when one parent is named twice, both entries
# name a section (sectionName), and different ones.
_SAME_PARENT = ("p1.group == p2.group && p1.kind == p2.kind && p1.name == p2.name && "
                "(((!has(p1.__namespace__) || p1.__namespace__ == '') && (!has(p2.__namespace__) || "
                "p2.__namespace__ == '')) || (has(p1.__namespace__) && has(p2.__namespace__) && "
                "p1.__namespace__ == p2.__namespace__ ))")
PARENT_REFS_RULES = (
    Rule(f"self.all(p1, self.all(p2, {_SAME_PARENT} ? ((!has(p1.sectionName) || p1.sectionName == '') == "
         "(!has(p2.sectionName) || p2.sectionName == '')) : true))",
         "sectionName must be specified when parentRefs includes 2 or more references to the same parent"),
    Rule(f"self.all(p1, self.exists_one(p2, {_SAME_PARENT} && (((!has(p1.sectionName) || p1.sectionName == '') "
         "&& (!has(p2.sectionName) || p2.sectionName == '')) || (has(p1.sectionName) && has(p2.sectionName) && "
         "p1.sectionName == p2.sectionName))))",
         "sectionName must be unique when parentRefs includes 2 or more references to the same parent"),
)


class CommonRouteSpec(Struct):
    """What every route kind has: the parents it attaches to."""

    parent_refs = Field(ListOf(ParentReference, max_items=32, list_type="atomic", rules=PARENT_REFS_RULES),
                        "The Gateways (or listeners, or Services) this route attaches to. A parent must allow "
                        "the attachment: a Gateway listener admits routes by kind, namespace and hostname. One "
                        "parent may be named twice only with different sectionNames.")


class RouteParentStatus(Struct):
    """How one parent (and its controller) sees the route."""

    parent_ref = Field(ParentReference, "The parentRef of the spec this status is about.", required=True)
    controller_name = Field(GatewayController, "The controller that wrote this entry (the GatewayClass's "
                                               "controllerName).", required=True)
    conditions = Field(conditions("Accepted (the parent took the route), ResolvedRefs (every backend "
                                  "resolved), PartiallyInvalid.", min_items=1, max_items=8), required=True)


class RouteStatus(Struct):
    """A route's status: one entry per parent that has judged it."""

    parents = Field(ListOf(RouteParentStatus, max_items=32, list_type="atomic"),
                    "One entry per parentRef a controller handles; a parent that ignores the route has none.",
                    required=True)


# --- GatewayClass ------------------------------------------------------------------------------


class ParametersReference(Struct):
    """An implementation-specific object with the class's configuration."""

    group = Field(Group, "The referent's API group.", required=True)
    kind = Field(Kind, "The referent's kind.", required=True)
    name = Field(String(min_length=1, max_length=253), "The referent's name.", required=True)
    namespace = Field(Namespace, "The referent's namespace; unset for a cluster-scoped referent.")


class GatewayClassSpec(Struct):
    """Which controller implements Gateways of this class, and with what configuration."""

    controller_name = Field(GatewayController, "The controller that manages Gateways of this class. It cannot "
                                               "change once set.",
                            required=True, rules=[Rule("self == oldSelf", "Value is immutable")])
    parameters_ref = Field(ParametersReference, "Configuration for the controller, in an object of a kind it "
                                                "defines. The controller reports in Accepted whether it is valid.")
    description = Field(String(max_length=64), "A short human-readable description of the class.")


class SupportedFeature(Struct):
    """A Gateway API feature the class's implementation supports."""

    name = Field(String(), "The feature's name.", required=True)


_PENDING = {"lastTransitionTime": "1970-01-01T00:00:00Z", "message": "Waiting for controller", "reason": "Pending",
            "status": "Unknown"}
ACCEPTED_PENDING = [{**_PENDING, "type": "Accepted"}]
ACCEPTED_PROGRAMMED_PENDING = [{**_PENDING, "type": "Accepted"}, {**_PENDING, "type": "Programmed"}]


class GatewayClassStatus(Struct):
    """What the controller says about the class."""

    conditions = Field(conditions("Accepted: whether the named controller took the class (Unknown until one "
                                  "does).", max_items=8), default=ACCEPTED_PENDING)
    supported_features = Field(ListOf(SupportedFeature, max_items=64, list_type="map", map_keys=("name",)),
                               "The features the implementation supports, for conformance tests and users.")


class GatewayClass(Object):
    """A class of Gateways, and the controller that implements them (as IngressClass is for Ingress). A Gateway
    names its class; the class's controller then programs it. Cluster-scoped."""

    spec = Field(GatewayClassSpec, "The class's controller and configuration.", required=True)
    status = Field(GatewayClassStatus, "What the controller observed.", default={"conditions": ACCEPTED_PENDING})


# --- Gateway -------------------------------------------------------------------------------------


class RouteGroupKind(Struct):
    """A route kind, by group and kind."""

    group = Field(Group, "The route's API group.", default="gateway.networking.k8s.io")
    kind = Field(Kind, "The route's kind: HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute.", required=True)


class RouteNamespaces(Struct):
    """Which namespaces may attach routes to a listener."""

    from_ = Field(String(enum=("All", "Selector", "Same")),
                  "All namespaces, those the selector picks, or only the Gateway's own (Same, the default).",
                  default="Same")
    selector = Field(LabelSelector, "With from: Selector, the namespaces whose labels match.")


class AllowedRoutes(Struct):
    """Which routes may attach to a listener: by namespace and by kind."""

    namespaces = Field(RouteNamespaces, "The namespaces routes may come from; the Gateway's own by default.",
                       default={"from": "Same"})
    kinds = Field(ListOf(RouteGroupKind, max_items=8, list_type="atomic"),
                  "The route kinds that may attach; unset, the kinds the listener's protocol carries.")


class ListenerTLSConfig(Struct, rules=[
        Rule("self.mode == 'Terminate' ? size(self.certificateRefs) > 0 || size(self.options) > 0 : true",
             "certificateRefs or options must be specified when mode is Terminate")]):
    """TLS on a listener: where the connection is decrypted, and with which certificates."""

    mode = Field(String(enum=("Terminate", "Passthrough")),
                 "Terminate: the Gateway ends TLS with the listener's certificate (the default). Passthrough: the "
                 "encrypted stream goes to the backend, routed by SNI (TLSRoute only).", default="Terminate")
    certificate_refs = Field(ListOf(SecretObjectReference, max_items=64, list_type="atomic"),
                             "The certificates (kubernetes.io/tls Secrets) the listener serves, chosen by SNI. A "
                             "Secret in another namespace needs a ReferenceGrant there.")
    options = Field(MapOf(AnnotationValue, max_properties=16),
                    "Implementation-specific TLS settings, keyed by domain-prefixed names.")


class Listener(Struct):
    """One logical endpoint of a Gateway: a port, a protocol, optionally a hostname and TLS."""

    name = Field(SectionName, "The listener's name, unique within the Gateway; routes name it as sectionName.",
                 required=True)
    hostname = Field(Hostname, "Only requests for this host (HTTP Host, TLS SNI) reach the listener; a leading "
                               "'*.' matches any subdomain. Unset, every host. Not allowed for TCP and UDP.")
    port = Field(PortNumber, "The port the listener accepts on.", required=True, **_PORT)
    protocol = Field(ProtocolType, "HTTP, HTTPS, TLS, TCP or UDP (or an implementation's own).", required=True)
    tls = Field(ListenerTLSConfig, "TLS settings: required for HTTPS and TLS, not allowed for HTTP, TCP and "
                                   "UDP.")
    allowed_routes = Field(AllowedRoutes, "Which routes may attach: routes of the Gateway's namespace, of the "
                                          "kinds the protocol carries, by default.",
                           default={"namespaces": {"from": "Same"}})


_VALIDATE_IP_ADDRESS = [
    {"properties": {"type": {"enum": ["IPAddress"]}, "value": {"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]}}},
    {"properties": {"type": {"not": {"enum": ["IPAddress"]}}}},
]


class GatewaySpecAddress(Struct, one_of=_VALIDATE_IP_ADDRESS, rules=[
        Rule(f"self.type == 'Hostname' ? (!has(self.value) || self.value.matches(r\"\"\"{_HOSTNAME_IN_RULES}\"\"\"))"
             ": true",
             "Hostname value must be empty or contain only valid characters (matching "
             r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$)")]):
    """An address the Gateway is asked to take."""

    type = Field(AddressType, "How value is written; IPAddress by default.", default="IPAddress")
    value = Field(String(max_length=253), "The address; empty asks the implementation to pick one of this type.")


class GatewayStatusAddress(Struct, one_of=_VALIDATE_IP_ADDRESS, rules=[
        Rule(f"self.type == 'Hostname' ? self.value.matches(r\"\"\"{_HOSTNAME_IN_RULES}\"\"\"): true",
             "Hostname value must only contain valid characters (matching "
             r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$)")]):
    """An address the Gateway was given."""

    type = Field(AddressType, "How value is written; IPAddress by default.", default="IPAddress")
    value = Field(String(min_length=1, max_length=253), "The address.", required=True)


_KEY_RULES = "self.all(key, key.matches(r\"\"\"" + _KEY_PATTERN + "\"\"\"))"
_PREFIX_RULE = 'self.all(key, key.split("/")[0].size() < 253)'


class LocalParametersReference(Struct):
    """An implementation-specific object in the Gateway's namespace with configuration for it."""

    group = Field(Group, "The referent's API group.", required=True)
    kind = Field(Kind, "The referent's kind.", required=True)
    name = Field(String(min_length=1, max_length=253), "The referent's name.", required=True)


class GatewayInfrastructure(Struct):
    """What the resources an implementation creates for the Gateway (its proxy's Service, Deployment...) carry."""

    labels = Field(MapOf(LabelValue, max_properties=8, rules=[
        Rule(_KEY_RULES, "Label keys must be in the form of an optional DNS subdomain prefix followed by a "
                         "required name segment of up to 63 characters."),
        Rule(_PREFIX_RULE, "If specified, the label key's prefix must be a DNS subdomain not longer than 253 "
                           "characters in total.")]),
                   "Labels to set on the resources created for the Gateway.")
    annotations = Field(MapOf(AnnotationValue, max_properties=16, rules=[
        Rule(_KEY_RULES, "Annotation keys must be in the form of an optional DNS subdomain prefix followed by a "
                         "required name segment of up to 63 characters."),
        Rule(_PREFIX_RULE, "If specified, the annotation key's prefix must be a DNS subdomain not longer than "
                           "253 characters in total.")]),
                        "Annotations to set on the resources created for the Gateway.")
    parameters_ref = Field(LocalParametersReference, "Implementation-specific configuration for this Gateway, "
                                                     "beside the class's parametersRef.")


class ListenerNamespaces(Struct):
    """Which namespaces may add listeners to the Gateway through a ListenerSet."""

    from_ = Field(String(enum=("All", "Selector", "Same", "None")),
                  "All namespaces, those the selector picks, only the Gateway's own, or None (the default).",
                  default="None")
    selector = Field(LabelSelector, "With from: Selector, the namespaces whose labels match.")


class AllowedListeners(Struct):
    """Which ListenerSets may add listeners to this Gateway."""

    namespaces = Field(ListenerNamespaces, "The namespaces ListenerSets may come from; none by default.",
                       default={"from": "None"})


class GatewayBackendTLS(Struct):
    """TLS the Gateway uses toward its backends."""

    client_certificate_ref = Field(SecretObjectReference, "The certificate the Gateway presents when a backend "
                                                          "asks for one (mutual TLS).")


class FrontendTLSValidation(Struct):
    """How the Gateway checks client certificates."""

    ca_certificate_refs = Field(ListOf(ObjectReference, min_items=1, max_items=16, list_type="atomic"),
                                "The CA certificates (ConfigMaps with ca.crt) a client certificate must chain to.",
                                required=True)
    mode = Field(String(enum=("AllowValidOnly", "AllowInsecureFallback")),
                 "AllowValidOnly (the default) refuses a connection without a valid client certificate; "
                 "AllowInsecureFallback lets it through.", default="AllowValidOnly")


class TLSConfig(Struct):
    """Client-facing TLS settings."""

    validation = Field(FrontendTLSValidation, "Client certificate validation (mutual TLS).")


class TLSPortConfig(Struct):
    """Client-facing TLS settings for the listeners on one port."""

    port = Field(PortNumber, "The port these settings apply to.", required=True, **_PORT)
    tls = Field(TLSConfig, "The settings.", required=True)


class FrontendTLSConfig(Struct):
    """Client-facing TLS settings: a default, and per-port exceptions."""

    default = Field(TLSConfig, "Settings for every TLS listener without a per-port entry.", required=True)
    per_port = Field(ListOf(TLSPortConfig, max_items=64, list_type="map", map_keys=("port",), rules=[
        Rule("self.all(t1, self.exists_one(t2, t1.port == t2.port))",
             "Port for TLS configuration must be unique within the Gateway")]),
                     "Settings for the listeners of one port, replacing the default there.")


class GatewayTLSConfig(Struct):
    """TLS settings that apply to the whole Gateway."""

    backend = Field(GatewayBackendTLS, "TLS toward backends.")
    frontend = Field(FrontendTLSConfig, "TLS toward clients.")


LISTENERS_RULES = (
    Rule("self.all(l, l.protocol in ['HTTP', 'TCP', 'UDP'] ? !has(l.tls) : true)",
         "tls must not be specified for protocols ['HTTP', 'TCP', 'UDP']"),
    Rule("self.all(l, (l.protocol == 'HTTPS' && has(l.tls)) ? (l.tls.mode == '' || l.tls.mode == 'Terminate') "
         ": true)", "tls mode must be Terminate for protocol HTTPS"),
    Rule("self.all(l, (l.protocol == 'TLS' ? has(l.tls) && has(l.tls.mode) && l.tls.mode != '' : true))",
         "tls mode must be set for protocol TLS"),
    Rule("self.all(l, l.protocol in ['TCP', 'UDP']  ? (!has(l.hostname) || l.hostname == '') : true)",
         "hostname must not be specified for protocols ['TCP', 'UDP']"),
    Rule("self.all(l1, self.exists_one(l2, l1.name == l2.name))", "Listener name must be unique within the Gateway"),
)
_UNIQUE_LISTENER = ("l1.protocol == l2.protocol && (has(l1.hostname) && has(l2.hostname) ? "
                    "l1.hostname == l2.hostname : !has(l1.hostname) && !has(l2.hostname))")
_UNIQUE_LISTENER_MESSAGE = "Combination of port, protocol and hostname must be unique for each listener"


class GatewaySpec(Struct):
    """What the Gateway should be: its class, listeners and addresses."""

    gateway_class_name = Field(ObjectName, "The GatewayClass this Gateway belongs to; its controller programs "
                                           "it.", required=True)
    listeners = Field(ListOf(Listener, min_items=1, max_items=64, list_type="map", map_keys=("name",), rules=[
        *LISTENERS_RULES,
        Rule(f"self.all(l1, self.exists_one(l2, l1.port == l2.port && {_UNIQUE_LISTENER}))",
             _UNIQUE_LISTENER_MESSAGE)]),
                      "The listeners: at least one. Names are unique, and so is each port, protocol and hostname "
                      "combination; listeners on one port must be compatible (HTTP and HTTPS do not share a port "
                      "in most implementations).", required=True)
    addresses = Field(ListOf(GatewaySpecAddress, max_items=16, list_type="atomic", rules=[
        Rule("self.all(a1, a1.type == 'IPAddress' && has(a1.value) ? self.exists_one(a2, a2.type == a1.type && "
             "has(a2.value) && a2.value == a1.value) : true )", "IPAddress values must be unique"),
        Rule("self.all(a1, a1.type == 'Hostname'  && has(a1.value) ? self.exists_one(a2, a2.type == a1.type && "
             "has(a2.value) && a2.value == a1.value) : true )", "Hostname values must be unique")]),
                      "Addresses requested for the Gateway; unset, the implementation assigns them (here: from "
                      "the LoadBalancer pool, through the proxy's Service).")
    infrastructure = Field(GatewayInfrastructure, "Labels, annotations and parameters for the resources the "
                                                  "implementation creates for this Gateway.")
    allowed_listeners = Field(AllowedListeners, "Which ListenerSets may add listeners to this Gateway; none "
                                                "unless set.")
    tls = Field(GatewayTLSConfig, "TLS settings for the whole Gateway: client certificate validation, the "
                                  "certificate shown to backends.")


class ListenerStatus(Struct):
    """The state of one listener."""

    name = Field(SectionName, "The listener's name.", required=True)
    supported_kinds = Field(ListOf(RouteGroupKind, max_items=8, list_type="atomic"),
                            "The route kinds this listener accepts (what allowedRoutes.kinds asked for, less what "
                            "the implementation cannot serve on this protocol).")
    attached_routes = Field(Int32(), "How many routes are attached to this listener.", required=True)
    conditions = Field(conditions("Accepted, Programmed, ResolvedRefs, Conflicted.", max_items=8), required=True)


class GatewayStatus(Struct):
    """What the controller made of the Gateway."""

    addresses = Field(ListOf(GatewayStatusAddress, max_items=16, list_type="atomic"),
                      "The addresses the Gateway is reachable at.")
    conditions = Field(conditions("Accepted (the spec is valid and the class's controller took it) and "
                                  "Programmed (the data plane is ready).", max_items=8),
                       default=ACCEPTED_PROGRAMMED_PENDING)
    listeners = Field(ListOf(ListenerStatus, max_items=64, list_type="map", map_keys=("name",)),
                      "One entry per listener.")
    attached_listener_sets = Field(Int32(), "How many ListenerSets are attached to this Gateway.")


class Gateway(Object):
    """A load balancer's front: listeners on ports and protocols, to which routes attach. Its GatewayClass's
    controller (here Envoy Gateway's) programs a proxy for it."""

    spec = Field(GatewaySpec, "What the Gateway should be.", required=True)
    status = Field(GatewayStatus, "What the controller observed.",
                   default={"conditions": ACCEPTED_PROGRAMMED_PENDING})


# --- HTTPRoute -------------------------------------------------------------------------------------

PathMatchType = String(enum=("Exact", "PathPrefix", "RegularExpression"))


class HTTPPathMatch(Struct, rules=[
        Rule("(self.type in ['Exact','PathPrefix']) ? self.value.startsWith('/') : true",
             "value must be an absolute path and start with '/' when type one of ['Exact', 'PathPrefix']"),
        Rule("(self.type in ['Exact','PathPrefix']) ? !self.value.contains('//') : true",
             "must not contain '//' when type one of ['Exact', 'PathPrefix']"),
        Rule("(self.type in ['Exact','PathPrefix']) ? !self.value.contains('/./') : true",
             "must not contain '/./' when type one of ['Exact', 'PathPrefix']"),
        Rule("(self.type in ['Exact','PathPrefix']) ? !self.value.contains('/../') : true",
             "must not contain '/../' when type one of ['Exact', 'PathPrefix']"),
        Rule("(self.type in ['Exact','PathPrefix']) ? !self.value.contains('%2f') : true",
             "must not contain '%2f' when type one of ['Exact', 'PathPrefix']"),
        Rule("(self.type in ['Exact','PathPrefix']) ? !self.value.contains('%2F') : true",
             "must not contain '%2F' when type one of ['Exact', 'PathPrefix']"),
        Rule("(self.type in ['Exact','PathPrefix']) ? !self.value.contains('#') : true",
             "must not contain '#' when type one of ['Exact', 'PathPrefix']"),
        Rule("(self.type in ['Exact','PathPrefix']) ? !self.value.endsWith('/..') : true",
             "must not end with '/..' when type one of ['Exact', 'PathPrefix']"),
        Rule("(self.type in ['Exact','PathPrefix']) ? !self.value.endsWith('/.') : true",
             "must not end with '/.' when type one of ['Exact', 'PathPrefix']"),
        Rule("self.type in ['Exact','PathPrefix'] || self.type == 'RegularExpression'",
             "type must be one of ['Exact', 'PathPrefix', 'RegularExpression']"),
        Rule("(self.type in ['Exact','PathPrefix']) ? "
             "self.value.matches(r\"\"\"^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$\"\"\") : true",
             "must only contain valid characters (matching ^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$) "
             "for types ['Exact', 'PathPrefix']")]):
    """How a request's path is matched."""

    type = Field(PathMatchType, "Exact: the whole path. PathPrefix (the default): the path starts with value, "
                                "element by element ('/abc' matches '/abc/d', not '/abcd'). RegularExpression: "
                                "the implementation's regex dialect.", default="PathPrefix")
    value = Field(String(max_length=1024), "The path (or pattern) to match; '/' by default.", default="/")


class HTTPHeaderMatch(Struct):
    """A header the request must carry."""

    type = Field(String(enum=("Exact", "RegularExpression")), "Exact (the default) or RegularExpression.",
                 default="Exact")
    name = Field(HeaderName, "The header's name, compared without case. One match per name.", required=True)
    value = Field(String(min_length=1, max_length=4096), "The value to match.", required=True)


class HTTPQueryParamMatch(Struct):
    """A query parameter the request must carry."""

    type = Field(String(enum=("Exact", "RegularExpression")), "Exact (the default) or RegularExpression.",
                 default="Exact")
    name = Field(HeaderName, "The parameter's name, compared exactly. One match per name.", required=True)
    value = Field(String(min_length=1, max_length=1024), "The value to match.", required=True)


HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH")


class HTTPRouteMatch(Struct):
    """A request predicate: every part given must hold (path, headers, query parameters, method)."""

    path = Field(HTTPPathMatch, "The path to match; a '/' prefix (everything) by default.",
                 default={"type": "PathPrefix", "value": "/"})
    headers = Field(ListOf(HTTPHeaderMatch, max_items=16, list_type="map", map_keys=("name",)),
                    "Headers that must all be present and match.")
    query_params = Field(ListOf(HTTPQueryParamMatch, max_items=16, list_type="map", map_keys=("name",)),
                         "Query parameters that must all be present and match.")
    method = Field(String(enum=HTTP_METHODS), "The request method to match.")


class HTTPHeader(Struct):
    """A header name and value."""

    name = Field(HeaderName, "The header's name, compared without case.", required=True)
    value = Field(String(min_length=1, max_length=4096), "The header's value.", required=True)


class HTTPHeaderFilter(Struct):
    """Changes to a message's headers: set replaces, add appends, remove deletes."""

    set = Field(ListOf(HTTPHeader, max_items=16, list_type="map", map_keys=("name",)),
                "Headers to set, replacing any value already there.")
    add = Field(ListOf(HTTPHeader, max_items=16, list_type="map", map_keys=("name",)),
                "Headers to add, after any value already there.")
    remove = Field(ListOf(String(), max_items=16, list_type="set"), "Names of headers to remove.")


class HTTPPathModifier(Struct, rules=[
        Rule("self.type == 'ReplaceFullPath' ? has(self.replaceFullPath) : true",
             "replaceFullPath must be specified when type is set to 'ReplaceFullPath'"),
        Rule("has(self.replaceFullPath) ? self.type == 'ReplaceFullPath' : true",
             "type must be 'ReplaceFullPath' when replaceFullPath is set"),
        Rule("self.type == 'ReplacePrefixMatch' ? has(self.replacePrefixMatch) : true",
             "replacePrefixMatch must be specified when type is set to 'ReplacePrefixMatch'"),
        Rule("has(self.replacePrefixMatch) ? self.type == 'ReplacePrefixMatch' : true",
             "type must be 'ReplacePrefixMatch' when replacePrefixMatch is set")]):
    """A new path: the whole of it, or the part the rule's PathPrefix match matched."""

    type = Field(String(enum=("ReplaceFullPath", "ReplacePrefixMatch")),
                 "ReplaceFullPath or ReplacePrefixMatch (which needs a PathPrefix match).", required=True)
    replace_full_path = Field(String(max_length=1024), "The path that replaces the request's.")
    replace_prefix_match = Field(String(max_length=1024),
                                 "What replaces the matched prefix ('/v2' with prefix '/v1' turns '/v1/a' into "
                                 "'/v2/a').")


class HTTPRequestRedirectFilter(Struct):
    """An HTTP redirect answered by the Gateway itself: the parts given replace the request's."""

    scheme = Field(String(enum=("http", "https")), "The scheme of the Location; the request's when unset.")
    hostname = Field(PreciseHostname, "The host of the Location; the request's when unset.")
    path = Field(HTTPPathModifier, "The path of the Location; the request's when unset.")
    port = Field(PortNumber, "The port of the Location; by default the scheme's well-known port when the scheme "
                             "changes, otherwise the listener's.", **_PORT)
    status_code = Field(Integer(enum=(301, 302, 303, 307, 308)), "The status of the answer; 302 by default.",
                        default=302)


class HTTPURLRewriteFilter(Struct):
    """A rewrite of the request before it goes to the backend."""

    hostname = Field(PreciseHostname, "The Host header the backend sees.")
    path = Field(HTTPPathModifier, "The path the backend sees.")


class Fraction(Struct, rules=[Rule("self.numerator <= self.denominator",
                                   "numerator must be less than or equal to denominator")]):
    """A share: numerator out of denominator."""

    numerator = Field(Int32(minimum=0), "The part.", required=True)
    denominator = Field(Int32(minimum=1), "The whole; 100 by default.", default=100)


class HTTPRequestMirrorFilter(Struct):
    """A copy of the request sent to another backend; its answer is thrown away."""

    backend_ref = Field(BackendObjectReference, "Where copies go.", required=True)
    percent = Field(Int32(minimum=0, maximum=100), "The percentage of requests mirrored; all when neither this "
                                                   "nor fraction is set.")
    fraction = Field(Fraction, "The share of requests mirrored, as a fraction.")


class HTTPCORSFilter(Struct):
    """Cross-origin resource sharing: the Gateway answers preflight requests and adds the CORS headers."""

    allow_origins = Field(ListOf(CORSOrigin, max_items=64, list_type="set", rules=[
        Rule("!('*' in self && self.size() > 1)", "AllowOrigins cannot contain '*' alongside other origins")]),
                          "Origins allowed to read responses; '*' for any (alone).")
    allow_credentials = Field(Boolean(), "Whether the browser may send credentials (cookies, authorization).")
    allow_methods = Field(ListOf(String(enum=(*HTTP_METHODS, "*")), max_items=9, list_type="set", rules=[
        Rule("!('*' in self && self.size() > 1)", "AllowMethods cannot contain '*' alongside other methods")]),
                          "Methods allowed in cross-origin requests; '*' for any (alone).")
    allow_headers = Field(ListOf(HeaderName, max_items=64, list_type="set", rules=[
        Rule("!('*' in self && self.size() > 1)", "AllowHeaders cannot contain '*' alongside other methods")]),
                          "Request headers allowed in cross-origin requests; '*' for any (alone).")
    expose_headers = Field(ListOf(HeaderName, max_items=64, list_type="set"),
                           "Response headers a script may read besides the safelisted ones.")
    max_age = Field(Int32(minimum=1), "Seconds a browser may cache a preflight answer; 5 by default.", default=5)


def _filter_type_rules(*fields: tuple[str, str]) -> list[Rule]:
    """A union's pairing rules: the member named by type is set, and no other."""
    out = []
    for member, type_name in fields:
        out.append(Rule(f"!(has(self.{member}) && self.type != '{type_name}')",
                        f"filter.{member} must be nil if the filter.type is not {type_name}"))
        out.append(Rule(f"!(!has(self.{member}) && self.type == '{type_name}')",
                        f"filter.{member} must be specified for {type_name} filter.type"))
    return out


_MIRROR_RULES = [Rule("!(has(self.percent) && has(self.fraction))",
                      "Only one of percent or fraction may be specified in HTTPRequestMirrorFilter")]


class HTTPRouteFilter(Struct, rules=_filter_type_rules(
        ("cors", "CORS"), ("requestHeaderModifier", "RequestHeaderModifier"),
        ("responseHeaderModifier", "ResponseHeaderModifier"), ("requestMirror", "RequestMirror"),
        ("requestRedirect", "RequestRedirect"), ("urlRewrite", "URLRewrite"), ("extensionRef", "ExtensionRef"))):
    """One processing step for matching requests; type names it, and only the member of that name is set."""

    type = Field(String(enum=("RequestHeaderModifier", "ResponseHeaderModifier", "RequestMirror", "RequestRedirect",
                              "URLRewrite", "ExtensionRef", "CORS")),
                 "Which filter this is; the member of the same name holds its settings.", required=True)
    request_header_modifier = Field(HTTPHeaderFilter, "Changes to the request's headers.")
    response_header_modifier = Field(HTTPHeaderFilter, "Changes to the response's headers.")
    request_mirror = Field(HTTPRequestMirrorFilter, "Copies requests to another backend.", rules=_MIRROR_RULES)
    request_redirect = Field(HTTPRequestRedirectFilter, "Answers with a redirect instead of forwarding.")
    url_rewrite = Field(HTTPURLRewriteFilter, "Rewrites the host or path before forwarding.")
    cors = Field(HTTPCORSFilter, "Answers CORS preflights and adds CORS headers.")
    extension_ref = Field(LocalObjectReference, "An implementation-specific filter, as an object in the route's "
                                                "namespace.")


HTTP_FILTERS_RULES = (
    Rule("!(self.exists(f, f.type == 'RequestRedirect') && self.exists(f, f.type == 'URLRewrite'))",
         "May specify either httpRouteFilterRequestRedirect or httpRouteFilterRequestRewrite, but not both"),
    Rule("self.filter(f, f.type == 'CORS').size() <= 1", "CORS filter cannot be repeated"),
    Rule("self.filter(f, f.type == 'RequestHeaderModifier').size() <= 1",
         "RequestHeaderModifier filter cannot be repeated"),
    Rule("self.filter(f, f.type == 'ResponseHeaderModifier').size() <= 1",
         "ResponseHeaderModifier filter cannot be repeated"),
    Rule("self.filter(f, f.type == 'RequestRedirect').size() <= 1", "RequestRedirect filter cannot be repeated"),
    Rule("self.filter(f, f.type == 'URLRewrite').size() <= 1", "URLRewrite filter cannot be repeated"),
)


class HTTPBackendRef(BackendRef):
    """A backend of an HTTP rule, with filters applied only to requests sent to it."""

    filters = Field(ListOf(HTTPRouteFilter, max_items=16, list_type="atomic", rules=HTTP_FILTERS_RULES),
                    "Filters for requests sent to this backend, after the rule's own.")


class HTTPRouteTimeouts(Struct, rules=[
        Rule("!(has(self.request) && has(self.backendRequest) && duration(self.request) != duration('0s') && "
             "duration(self.backendRequest) > duration(self.request))",
             "backendRequest timeout cannot be longer than request timeout")]):
    """How long requests may take."""

    request = Field(Duration, "How long the Gateway waits for the whole answer to a client's request (retries "
                              "included); 0s disables the limit.")
    backend_request = Field(Duration, "How long one request to a backend may take; no longer than request.")


class HTTPRouteRetry(Struct):
    """When the Gateway sends a failed backend request again (GEP-1731; experimental channel in v1.6.1)."""

    codes = Field(ListOf(Integer("An HTTP status code of a backend answer to retry (400-599).", minimum=400,
                                 maximum=599), list_type="set"),
                  "The backend answers that are retried; 500, 502, 503 and 504 must be supported.")
    attempts = Field(Integer(minimum=1), "How many times one request may be sent again; unset: the "
                                         "implementation's number.")
    backoff = Field(Duration, "The least time between two attempts.")


def _replace_prefix_rule(within_backends: bool, member: str, message: str) -> Rule:
    uses = (f"has(f.{member}) && has(f.{member}.path) && f.{member}.path.type == 'ReplacePrefixMatch' && "
            f"has(f.{member}.path.replacePrefixMatch)")
    needs = "((size(self.matches) != 1 || !has(self.matches[0].path) || self.matches[0].path.type != 'PathPrefix') " \
            "? false : true)"
    if within_backends:
        found = f"(has(self.backendRefs) && self.backendRefs.exists_one(b, (has(b.filters) && " \
                f"b.filters.exists_one(f, {uses})) ))"
    else:
        found = f"(has(self.filters) && self.filters.exists_one(f, {uses}))"
    return Rule(f"{found} ? {needs} : true", message)


class HTTPRouteRule(Struct, rules=[
        Rule("(has(self.backendRefs) && size(self.backendRefs) > 0) ? (!has(self.filters) || "
             "self.filters.all(f, !has(f.requestRedirect))): true",
             "RequestRedirect filter must not be used together with backendRefs"),
        _replace_prefix_rule(False, "requestRedirect", "When using RequestRedirect filter with "
                             "path.replacePrefixMatch, exactly one PathPrefix match must be specified"),
        _replace_prefix_rule(False, "urlRewrite", "When using URLRewrite filter with path.replacePrefixMatch, "
                             "exactly one PathPrefix match must be specified"),
        _replace_prefix_rule(True, "requestRedirect", "Within backendRefs, when using RequestRedirect filter with "
                             "path.replacePrefixMatch, exactly one PathPrefix match must be specified"),
        _replace_prefix_rule(True, "urlRewrite", "Within backendRefs, When using URLRewrite filter with "
                             "path.replacePrefixMatch, exactly one PathPrefix match must be specified")]):
    """Requests that match, what happens to them, and where they go."""

    name = Field(SectionName, "The rule's name, for status and policies.")
    matches = Field(ListOf(HTTPRouteMatch, max_items=64, list_type="atomic"),
                    "The requests this rule takes: any match (each match is all of its parts). Among rules, "
                    "the most specific match wins: Exact path, then longest prefix, method, most headers, most "
                    "query parameters.", default=[{"path": {"type": "PathPrefix", "value": "/"}}])
    filters = Field(ListOf(HTTPRouteFilter, max_items=16, list_type="atomic", rules=HTTP_FILTERS_RULES),
                    "Filters applied, in order, to every request the rule takes.")
    backend_refs = Field(ListOf(HTTPBackendRef, max_items=16, list_type="atomic"),
                         "Where requests go, shared by weight. None (and no redirect): the Gateway answers 500; a "
                         "backend that cannot be resolved gets its share answered with 500.")
    timeouts = Field(HTTPRouteTimeouts, "Time limits for the rule's requests.")
    retry = Field(HTTPRouteRetry, "Retries of the rule's failed backend requests.", channel="experimental")


def _matches_total(guarded: bool) -> Rule:
    """At most 128 matches over the 16 rules: CEL's cost limit forbids a loop, so the rule adds them one by one."""
    parts = []
    for i in range(16):
        size = f"self[{i}].matches.size()"
        if guarded:
            size = f"(has(self[{i}].matches) ? {size} : 0)"
        parts.append(f"(self.size() > {i} ? {size} : 0)")
    return Rule(" + ".join(parts) + " <= 128", "While 16 rules and 64 matches per rule are allowed, the total "
                "number of matches across all rules in a route must be less than 128")


class HTTPRouteSpec(CommonRouteSpec):
    """The hostnames an HTTPRoute serves and its rules."""

    hostnames = Field(ListOf(Hostname, max_items=16, list_type="atomic"),
                      "The Host headers this route serves, intersected with the listener's hostname; unset, "
                      "every host the listener takes. A route whose hostnames meet none of a listener's is not "
                      "accepted there.")
    rules = Field(ListOf(HTTPRouteRule, min_items=1, max_items=16, list_type="atomic", rules=[_matches_total(False)]),
                  "The rules; by default one that sends every request nowhere (a '/' prefix match).",
                  default=[{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}]}])


class HTTPRouteStatus(RouteStatus):
    """What each parent made of the route."""


class HTTPRoute(Object):
    """HTTP routing: requests a Gateway listener receives, matched by host, path, headers, query and method,
    filtered, and sent to Services by weight."""

    spec = Field(HTTPRouteSpec, "What the route does.", required=True)
    status = Field(HTTPRouteStatus, "What each parent made of the route.")


# --- GRPCRoute --------------------------------------------------------------------------------------


class GRPCMethodMatch(Struct, rules=[
        Rule("has(self.type) ? has(self.service) || has(self.method) : true",
             "One or both of 'service' or 'method' must be specified"),
        Rule("(!has(self.type) || self.type == 'Exact') && has(self.service) ? "
             "self.service.matches(r\"\"\"^(?i)\\.?[a-z_][a-z_0-9]*(\\.[a-z_][a-z_0-9]*)*$\"\"\"): true",
             r"service must only contain valid characters (matching ^(?i)\.?[a-z_][a-z_0-9]*(\.[a-z_][a-z_0-9]*)*$)"),
        Rule("(!has(self.type) || self.type == 'Exact') && has(self.method) ? "
             "self.method.matches(r\"\"\"^[A-Za-z_][A-Za-z_0-9]*$\"\"\"): true",
             "method must only contain valid characters (matching ^[A-Za-z_][A-Za-z_0-9]*$)")]):
    """Which gRPC calls match: by service (package.Service) and method."""

    type = Field(String(enum=("Exact", "RegularExpression")), "Exact (the default) or RegularExpression.",
                 default="Exact")
    service = Field(String(max_length=1024), "The fully qualified service (helloworld.Greeter); any when unset.")
    method = Field(String(max_length=1024), "The method (SayHello); any when unset.")


class GRPCHeaderMatch(Struct):
    """A metadata entry (header) the call must carry."""

    type = Field(String(enum=("Exact", "RegularExpression")), "Exact (the default) or RegularExpression.",
                 default="Exact")
    name = Field(HeaderName, "The header's name, compared without case.", required=True)
    value = Field(String(min_length=1, max_length=4096), "The value to match.", required=True)


class GRPCRouteMatch(Struct):
    """A call predicate: method and headers, all of which must hold."""

    method = Field(GRPCMethodMatch, "The service and method to match; any when unset.")
    headers = Field(ListOf(GRPCHeaderMatch, max_items=16, list_type="map", map_keys=("name",)),
                    "Headers that must all be present and match.")


class GRPCRouteFilter(Struct, rules=_filter_type_rules(
        ("requestHeaderModifier", "RequestHeaderModifier"), ("responseHeaderModifier", "ResponseHeaderModifier"),
        ("requestMirror", "RequestMirror"), ("extensionRef", "ExtensionRef"))):
    """One processing step for matching calls; type names it, and only the member of that name is set."""

    type = Field(String(enum=("ResponseHeaderModifier", "RequestHeaderModifier", "RequestMirror", "ExtensionRef")),
                 "Which filter this is; the member of the same name holds its settings.", required=True)
    request_header_modifier = Field(HTTPHeaderFilter, "Changes to the request's headers.")
    response_header_modifier = Field(HTTPHeaderFilter, "Changes to the response's headers.")
    request_mirror = Field(HTTPRequestMirrorFilter, "Copies calls to another backend.", rules=_MIRROR_RULES)
    extension_ref = Field(LocalObjectReference, "An implementation-specific filter, as an object in the route's "
                                                "namespace.")


GRPC_FILTERS_RULES = (
    Rule("self.filter(f, f.type == 'RequestHeaderModifier').size() <= 1",
         "RequestHeaderModifier filter cannot be repeated"),
    Rule("self.filter(f, f.type == 'ResponseHeaderModifier').size() <= 1",
         "ResponseHeaderModifier filter cannot be repeated"),
)


class GRPCBackendRef(BackendRef):
    """A backend of a gRPC rule, with filters applied only to calls sent to it."""

    filters = Field(ListOf(GRPCRouteFilter, max_items=16, list_type="atomic", rules=GRPC_FILTERS_RULES),
                    "Filters for calls sent to this backend, after the rule's own.")


class GRPCRouteRule(Struct):
    """Calls that match, what happens to them, and where they go."""

    name = Field(SectionName, "The rule's name, for status and policies.")
    matches = Field(ListOf(GRPCRouteMatch, max_items=64, list_type="atomic"),
                    "The calls this rule takes: any match. Unset, every call. Among rules, an exact method beats "
                    "a service-only match, then more headers win.")
    filters = Field(ListOf(GRPCRouteFilter, max_items=16, list_type="atomic", rules=GRPC_FILTERS_RULES),
                    "Filters applied to every call the rule takes.")
    backend_refs = Field(ListOf(GRPCBackendRef, max_items=16, list_type="atomic"),
                         "Where calls go, shared by weight; none answers UNAVAILABLE.")


class GRPCRouteSpec(CommonRouteSpec):
    """The hostnames a GRPCRoute serves and its rules."""

    hostnames = Field(ListOf(Hostname, max_items=16, list_type="atomic"),
                      "The :authority values this route serves, intersected with the listener's hostname.")
    rules = Field(ListOf(GRPCRouteRule, max_items=16, list_type="atomic", rules=[_matches_total(True)]),
                  "The rules.")


class GRPCRouteStatus(RouteStatus):
    """What each parent made of the route."""


class GRPCRoute(Object):
    """gRPC routing: calls matched by service, method and headers, sent to backends by weight."""

    spec = Field(GRPCRouteSpec, "What the route does.", required=True)
    status = Field(GRPCRouteStatus, "What each parent made of the route.")


# --- TLSRoute, TCPRoute, UDPRoute -------------------------------------------------------------------


class TLSRouteRule(Struct):
    """Where the TLS connections of a TLSRoute go."""

    name = Field(SectionName, "The rule's name, for status and policies.")
    backend_refs = Field(ListOf(BackendRef, min_items=1, max_items=16, list_type="atomic"),
                         "Where connections go, shared by weight.", required=True)


_RFC1123 = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$"
TLS_HOSTNAMES_RULES = (
    Rule("self.all(h, !isIP(h))", "Hostnames cannot contain an IP"),
    Rule(f"self.all(h, !h.contains('*') ? h.matches('{_RFC1123}') : true)",
         "Hostnames must be valid based on RFC-1123"),
    Rule(f"self.all(h, h.contains('*') ? (h.startsWith('*.') && h.substring(2).matches('{_RFC1123}')) : true)",
         "Wildcards on hostnames must be the first label, and the rest of hostname must be valid based on RFC-1123"),
)


class TLSRouteSpec(CommonRouteSpec):
    """The SNI names a TLSRoute serves and its rule."""

    hostnames = Field(ListOf(Hostname, min_items=1, max_items=1024, list_type="atomic", rules=TLS_HOSTNAMES_RULES),
                      "The server names (TLS SNI) this route takes, intersected with the listener's hostname.",
                      required=True)
    rules = Field(ListOf(TLSRouteRule, min_items=1, max_items=1, list_type="atomic"), "The one rule.",
                  required=True)


class TLSRouteStatus(RouteStatus):
    """What each parent made of the route."""


class TLSRoute(Object):
    """TLS routing by server name (SNI): on a TLS listener in Passthrough mode the encrypted stream goes to the
    backend as it came; in Terminate mode the Gateway decrypts it and sends the bytes on."""

    spec = Field(TLSRouteSpec, "What the route does.", required=True)
    status = Field(TLSRouteStatus, "What each parent made of the route.")


class TCPRouteRule(Struct):
    """Where the connections of a TCPRoute go."""

    name = Field(SectionName, "The rule's name, for status and policies.")
    backend_refs = Field(ListOf(BackendRef, min_items=1, max_items=16, list_type="atomic"),
                         "Where connections go, shared by weight; a connection to a backend that cannot be "
                         "resolved is refused.", required=True)


class TCPRouteSpec(CommonRouteSpec):
    """A TCPRoute's rule."""

    rules = Field(ListOf(TCPRouteRule, min_items=1, max_items=1, list_type="atomic"), "The one rule.",
                  required=True)


class TCPRouteStatus(RouteStatus):
    """What each parent made of the route."""


class TCPRoute(Object):
    """TCP forwarding: every connection a TCP listener accepts goes to the route's backends."""

    spec = Field(TCPRouteSpec, "What the route does.", required=True)
    status = Field(TCPRouteStatus, "What each parent made of the route.")


class UDPRouteRule(Struct):
    """Where the datagrams of a UDPRoute go."""

    name = Field(SectionName, "The rule's name, for status and policies.")
    backend_refs = Field(ListOf(BackendRef, min_items=1, max_items=16, list_type="atomic"),
                         "Where datagrams go, shared by weight.", required=True)


class UDPRouteSpec(CommonRouteSpec):
    """A UDPRoute's rule."""

    rules = Field(ListOf(UDPRouteRule, min_items=1, max_items=1, list_type="atomic"), "The one rule.",
                  required=True)


class UDPRouteStatus(RouteStatus):
    """What each parent made of the route."""


class UDPRoute(Object):
    """UDP forwarding: datagrams a UDP listener receives go to the route's backends."""

    spec = Field(UDPRouteSpec, "What the route does.", required=True)
    status = Field(UDPRouteStatus, "What each parent made of the route.")


# --- ListenerSet --------------------------------------------------------------------------------------


class ListenerEntry(Struct):
    """A listener a ListenerSet adds to its Gateway."""

    name = Field(SectionName, "The listener's name, unique within the ListenerSet.", required=True)
    hostname = Field(Hostname, "Only requests for this host (HTTP Host, TLS SNI) reach the listener; not allowed "
                               "for TCP and UDP.")
    port = Field(PortNumber, "The port the listener accepts on.", required=True, **_PORT)
    protocol = Field(ProtocolType, "HTTP, HTTPS, TLS, TCP or UDP.", required=True)
    tls = Field(ListenerTLSConfig, "TLS settings: required for HTTPS and TLS.")
    allowed_routes = Field(AllowedRoutes, "Which routes may attach: routes of the ListenerSet's namespace by "
                                          "default.", default={"namespaces": {"from": "Same"}})


class ListenerSetSpec(Struct):
    """The Gateway and the listeners to add to it."""

    parent_ref = Field(ParentGatewayReference, "The Gateway; it must allow ListenerSets from this namespace "
                                               "(spec.allowedListeners).", required=True)
    listeners = Field(ListOf(ListenerEntry, min_items=1, max_items=64, list_type="map", map_keys=("name",), rules=[
        *LISTENERS_RULES,
        Rule(f"self.all(l1, !has(l1.port) || self.exists_one(l2, has(l2.port) && l1.port == l2.port && "
             f"{_UNIQUE_LISTENER}))", _UNIQUE_LISTENER_MESSAGE)]),
                      "The listeners to add. On a conflict with the Gateway's own listeners, or an older "
                      "ListenerSet's, this set's listener loses.", required=True)


class ListenerEntryStatus(Struct):
    """The state of one listener of the set."""

    name = Field(SectionName, "The listener's name.", required=True)
    supported_kinds = Field(ListOf(RouteGroupKind, max_items=8, list_type="atomic"),
                            "The route kinds this listener accepts.")
    attached_routes = Field(Int32(), "How many routes are attached to this listener.", required=True)
    conditions = Field(conditions("Accepted, Programmed, ResolvedRefs, Conflicted.", max_items=8), required=True)


class ListenerSetStatus(Struct):
    """What the Gateway's controller made of the set."""

    conditions = Field(conditions("Accepted (the Gateway took the set) and Programmed.", max_items=8),
                       default=ACCEPTED_PROGRAMMED_PENDING)
    listeners = Field(ListOf(ListenerEntryStatus, max_items=64, list_type="map", map_keys=("name",)),
                      "One entry per listener.")


class ListenerSet(Object):
    """Listeners added to a Gateway from another object (and namespace), so that application teams can bring
    their own hostnames and certificates to a shared Gateway."""

    spec = Field(ListenerSetSpec, "The Gateway and the listeners.", required=True)
    status = Field(ListenerSetStatus, "What the controller observed.",
                   default={"conditions": ACCEPTED_PROGRAMMED_PENDING})


# --- policies: BackendTLSPolicy ----------------------------------------------------------------------


class LocalPolicyTargetReference(Struct):
    """An object in the policy's namespace the policy applies to."""

    group = Field(Group, "The target's API group.", required=True)
    kind = Field(Kind, "The target's kind.", required=True)
    name = Field(ObjectName, "The target's name.", required=True)


class LocalPolicyTargetReferenceWithSectionName(LocalPolicyTargetReference):
    """A target, or one part of it (a Service port by name)."""

    section_name = Field(SectionName, "A part of the target (a Service's port name); the whole target when "
                                      "unset.")


class PolicyAncestorStatus(Struct):
    """How one ancestor (a Gateway the policy's target is used through) sees the policy."""

    ancestor_ref = Field(ParentReference, "The ancestor.", required=True)
    controller_name = Field(GatewayController, "The controller that wrote this entry.", required=True)
    conditions = Field(conditions("Accepted, ResolvedRefs.", min_items=1, max_items=8), required=True)


class PolicyStatus(Struct):
    """A policy's status: one entry per ancestor."""

    ancestors = Field(ListOf(PolicyAncestorStatus, max_items=16, list_type="atomic"),
                      "The ancestors that judged the policy.", required=True)


class SubjectAltName(Struct, rules=[
        Rule('!(self.type == "Hostname" && (!has(self.hostname) || self.hostname == ""))',
             "SubjectAltName element must contain Hostname, if Type is set to Hostname"),
        Rule('!(self.type != "Hostname" && has(self.hostname) && self.hostname != "")',
             "SubjectAltName element must not contain Hostname, if Type is not set to Hostname"),
        Rule('!(self.type == "URI" && (!has(self.uri) || self.uri == ""))',
             "SubjectAltName element must contain URI, if Type is set to URI"),
        Rule('!(self.type != "URI" && has(self.uri) && self.uri != "")',
             "SubjectAltName element must not contain URI, if Type is not set to URI")]):
    """A name the backend's certificate must carry."""

    type = Field(String(enum=("Hostname", "URI")), "Hostname (a DNS SAN) or URI (a URI SAN, e.g. SPIFFE).",
                 required=True)
    hostname = Field(Hostname, "The DNS name, for type Hostname.")
    uri = Field(AbsoluteURI, "The URI, for type URI.")


WellKnownCACertificates = String(
    "A named set of CA certificates: System (the platform's trusted roots), or a domain-prefixed name an "
    "implementation defines.",
    min_length=1, max_length=253,
    pattern=r"^(System|([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/([A-Za-z0-9][-A-Za-z0-9_.]"
            r"{0,61})?[A-Za-z0-9]))$")


class BackendTLSPolicyValidation(Struct, rules=[
        Rule('!(has(self.caCertificateRefs) && size(self.caCertificateRefs) > 0 && has(self.wellKnownCACertificates) '
             '&& self.wellKnownCACertificates != "")',
             "must not contain both CACertificateRefs and WellKnownCACertificates"),
        Rule('(has(self.caCertificateRefs) && size(self.caCertificateRefs) > 0 || has(self.wellKnownCACertificates) '
             '&& self.wellKnownCACertificates != "")',
             "must specify either CACertificateRefs or WellKnownCACertificates")]):
    """How the Gateway checks the backend's certificate."""

    ca_certificate_refs = Field(ListOf(LocalObjectReference, max_items=8, list_type="atomic"),
                                "ConfigMaps (key ca.crt) holding the CA certificates the backend's chain must end "
                                "in. Either these or wellKnownCACertificates.")
    well_known_ca_certificates = Field(WellKnownCACertificates, "A named CA set instead of caCertificateRefs.",
                                       json="wellKnownCACertificates")
    hostname = Field(PreciseHostname, "The name sent as SNI, and the name the certificate must carry unless "
                                      "subjectAltNames are given.", required=True)
    subject_alt_names = Field(ListOf(SubjectAltName, max_items=5, list_type="atomic"),
                              "Names the certificate must carry (any one of them), instead of hostname.")


class BackendTLSPolicySpec(Struct):
    """Which backends the policy covers, and how their certificates are checked."""

    target_refs = Field(ListOf(LocalPolicyTargetReferenceWithSectionName, min_items=1, max_items=16,
                               list_type="atomic", rules=[
        Rule("self.all(p1, self.all(p2, p1.group == p2.group && p1.kind == p2.kind && p1.name == p2.name ? "
             "((!has(p1.sectionName) || p1.sectionName == '') == (!has(p2.sectionName) || p2.sectionName == '')) : "
             "true))", "sectionName must be specified when targetRefs includes 2 or more references to the same "
             "target"),
        Rule("self.all(p1, self.exists_one(p2, p1.group == p2.group && p1.kind == p2.kind && p1.name == p2.name && "
             "(((!has(p1.sectionName) || p1.sectionName == '') && (!has(p2.sectionName) || p2.sectionName == '')) || "
             "(has(p1.sectionName) && has(p2.sectionName) && p1.sectionName == p2.sectionName))))",
             "sectionName must be unique when targetRefs includes 2 or more references to the same target")]),
                         "The Services (or ports of them) whose connections from the Gateway use TLS.",
                         required=True)
    validation = Field(BackendTLSPolicyValidation, "How the backend's certificate is checked.", required=True)
    options = Field(MapOf(AnnotationValue, max_properties=16), "Implementation-specific TLS settings.")


class BackendTLSPolicy(Object):
    """TLS from the Gateway to a backend: the Gateway connects to the targeted Services with TLS, sends hostname
    as SNI, and checks the certificate against the given CAs and names."""

    spec = Field(BackendTLSPolicySpec, "The targets and the validation.", required=True)
    status = Field(PolicyStatus, "What each ancestor made of the policy.")


# --- ReferenceGrant -------------------------------------------------------------------------------------


class ReferenceGrantFrom(Struct):
    """Objects that may refer into this namespace: a kind in a namespace."""

    group = Field(Group, "The referrers' API group.", required=True)
    kind = Field(Kind, "The referrers' kind: HTTPRoute, Gateway...", required=True)
    namespace = Field(Namespace, "The referrers' namespace.", required=True)


class ReferenceGrantTo(Struct):
    """Objects of this namespace that may be referred to: a kind, or one object of it."""

    group = Field(Group, "The referents' API group; \"\" for the core group.", required=True)
    kind = Field(Kind, "The referents' kind: Service, Secret...", required=True)
    name = Field(ObjectName, "One object of that kind; every one of them when unset.")


class ReferenceGrantSpec(Struct):
    """Who may refer to what."""

    from_ = Field(ListOf(ReferenceGrantFrom, min_items=1, max_items=16, list_type="atomic"),
                  "The referrers allowed.", required=True)
    to = Field(ListOf(ReferenceGrantTo, min_items=1, max_items=16, list_type="atomic"),
               "The referents they may use.", required=True)


class ReferenceGrant(Object):
    """Permission for objects of another namespace to refer to objects of this one (a route in 'web' to a Service
    here, a Gateway to a Secret here). Without one, such references do not resolve."""

    spec = Field(ReferenceGrantSpec, "Who may refer to what.", required=True)


__all__ = ["BackendTLSPolicy", "Condition", "GRPCRoute", "Gateway", "GatewayClass", "HTTPRoute", "ListenerSet",
           "ReferenceGrant", "TCPRoute", "TLSRoute", "UDPRoute"]
