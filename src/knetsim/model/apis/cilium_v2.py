"""cilium.io/v2: the fields of Cilium's policy kinds (CiliumNetworkPolicy, CiliumClusterwideNetworkPolicy).

Cilium writes both CRDs with controller-gen from the same Go types (cilium/cilium pkg/policy/api: rule.go,
ingress.go, egress.go, l4.go, l7.go, http.go, fqdn.go, cidr.go, icmp.go, service.go, groups.go; the CRDs are
pkg/k8s/apis/cilium.io/client/crds/v2/ciliumnetworkpolicies.yaml and ciliumclusterwidenetworkpolicies.yaml).
Field names, JSON types and where each may appear are those: an allow rule's ``toPorts`` may carry L7 rules and
TLS contexts, a deny rule's only ports; only an egress allow rule takes ``toFQDNs``; only allow rules take
``authentication``. The descriptions are knetsim's.

The fields are the union over the releases a cluster may still run (v1.14 to main): knetsim simulates v1.18,
whose ``rules`` still take ``kafka``, ``l7proto`` and ``l7`` (dropped from the newest CRD), and an older
status's ``nodes`` is kept. Refusing a field some supported Cilium accepts would be a false alarm on a valid
policy, the worst an analyzer can do; a misspelt name is refused by every release alike.

Only structure is declared, as for Calico's and Antrea's kinds: no enums or patterns. Cilium's own rules
(entities, selectors, ports, which peers may be combined) are checked by the reader knetsim evaluates Cilium by
(policy/cilium/read.py), in its words.
"""

from __future__ import annotations

from .markers import Boolean, Field, Int32, Int64, Integer, IntOrString, ListOf, MapOf, String, Struct, Untyped
from .meta import LabelSelector, Object


class EndpointSelector(LabelSelector):
    """Endpoints (pods, or nodes where the field says so) by their labels: Kubernetes' label selector shape.
    Keys may carry a source prefix (`k8s:io.kubernetes.pod.namespace`); an empty selector selects every one."""


class Authentication(Struct):
    """The mutual authentication the allowed traffic must have."""

    mode = Field(String(), "disabled, required or test-always-fail.", required=True)


class ICMPField(Struct):
    """One ICMP type, of one IP family."""

    family = Field(String(), "IPv4 (the default) or IPv6.")
    type = Field(IntOrString(), "The ICMP type: a number (0-255) or its name (EchoRequest...).", required=True)


class ICMPRule(Struct):
    """ICMP types the rule covers."""

    fields = Field(ListOf(ICMPField), "The ICMP types (any of them).")


class CIDRRule(Struct):
    """Addresses by CIDR (or by CiliumCIDRGroup), less the ranges in except."""

    cidr = Field(String(), "A CIDR prefix or an IP address.")
    cidr_group_ref = Field(String(), "A CiliumCIDRGroup by name: its CIDRs.")
    cidr_group_selector = Field(LabelSelector, "CiliumCIDRGroups by their labels: their CIDRs.")
    except_ = Field(ListOf(String()), "Ranges within cidr left out.")


class AWSGroup(Struct):
    """AWS security groups, whose members' addresses the rule covers."""

    labels = Field(MapOf(String()), "Tags of the instances.")
    region = Field(String(), "The AWS region.")
    security_groups_ids = Field(ListOf(String()), "Security groups by ID.")
    security_groups_names = Field(ListOf(String()), "Security groups by name.")


class Groups(Struct):
    """Addresses supplied by an outside provider (only AWS)."""

    aws = Field(AWSGroup, "AWS security groups.")


class K8sServiceNamespace(Struct):
    """A Kubernetes Service by name and namespace."""

    service_name = Field(String(), "The Service's name.")
    namespace = Field(String(), "The Service's namespace; the policy's own when empty.")


class K8sServiceSelectorNamespace(Struct):
    """Kubernetes Services by their labels, in a namespace."""

    selector = Field(LabelSelector, "The Services' labels.", required=True)
    namespace = Field(String(), "The namespace; every namespace when empty.")


class Service(Struct):
    """Kubernetes Services, whose endpoints (backends) the rule covers."""

    k8s_service = Field(K8sServiceNamespace, "One Service by name.")
    k8s_service_selector = Field(K8sServiceSelectorNamespace, "Services by their labels.")


class FQDNSelector(Struct):
    """DNS names: exactly, or by a pattern with `*` wildcards."""

    match_name = Field(String(), "A DNS name, matched exactly (a trailing dot is implied).")
    match_pattern = Field(String(), "A DNS name with `*` wildcards (`*.example.com`; `**.` for every level).")


class PortRuleDNS(FQDNSelector):
    """DNS lookups the proxy lets through: names exactly, or by a pattern with `*` wildcards."""


class PortProtocol(Struct):
    """A destination port (or range) and its protocol."""

    port = Field(String(), "A port number, or a named container port.")
    end_port = Field(Int32(), "The last port of a range starting at port.")
    protocol = Field(String(), "TCP, UDP, SCTP, VRRP, IGMP or ANY (the default: any of TCP, UDP, SCTP).")


class Secret(Struct):
    """A Kubernetes Secret by name and namespace."""

    name = Field(String(), "The Secret's name.", required=True)
    namespace = Field(String(), "The Secret's namespace.")


class TLSContext(Struct):
    """Certificates for the L7 proxy's side of a TLS connection, from a Secret."""

    secret = Field(Secret, "The Secret holding them.", required=True)
    trusted_ca = Field(String(), "The Secret's item with the trusted CA (ca.crt by default).", json="trustedCA")
    certificate = Field(String(), "The Secret's item with the certificate chain (tls.crt by default).")
    private_key = Field(String(), "The Secret's item with the private key (tls.key by default).")


class EnvoyConfig(Struct):
    """The CiliumEnvoyConfig (or CiliumClusterwideEnvoyConfig) defining a listener."""

    kind = Field(String(), "CiliumEnvoyConfig or CiliumClusterwideEnvoyConfig.")
    name = Field(String(), "Its name.", required=True)


class Listener(Struct):
    """A custom Envoy listener the traffic is redirected to."""

    envoy_config = Field(EnvoyConfig, "Where the listener is defined.", required=True)
    name = Field(String(), "The listener's name.", required=True)
    priority = Field(Integer(), "Which listener wins when rules name several (1-100).")


class HeaderMatch(Struct):
    """A request header that must be present, with a value given here or in a Secret."""

    mismatch = Field(String(), "What to do when the value differs: LOG, ADD, DELETE or REPLACE (drop if unset).")
    name = Field(String(), "The header's name.", required=True)
    secret = Field(Secret, "A Secret holding the value.")
    value = Field(String(), "The value, exactly.")


class PortRuleHTTP(Struct):
    """HTTP requests the proxy lets through: every field set must match (regular expressions)."""

    path = Field(String(), "A regular expression over the request path.")
    method = Field(String(), "A regular expression over the request method.")
    host = Field(String(), "A regular expression over the Host header.")
    headers = Field(ListOf(String()), "Headers that must be present (`Name: value`).")
    header_matches = Field(ListOf(HeaderMatch), "Headers that must match a value.")


class PortRuleKafka(Struct):
    """Kafka requests the proxy lets through (Cilium up to v1.18)."""

    role = Field(String(), "produce or consume: the API keys of that role.")
    api_key = Field(String(), "A Kafka API key by name (produce, fetch...).")
    api_version = Field(String(), "The API version.")
    client_id = Field(String(), "The client ID.", json="clientID")
    topic = Field(String(), "The topic.")


class L7Rules(Struct):
    """Layer 7 rules on the port, for one protocol: only requests some rule matches are let through."""

    http = Field(ListOf(PortRuleHTTP), "HTTP requests.")
    kafka = Field(ListOf(PortRuleKafka), "Kafka requests (Cilium up to v1.18).")
    dns = Field(ListOf(PortRuleDNS), "DNS lookups (what makes toFQDNs learn addresses).")
    l7proto = Field(String(), "The name of a proxy parser for the generic rules in l7 (Cilium up to v1.18).")
    l7 = Field(ListOf(MapOf(String())), "Generic key/value rules for the l7proto parser (Cilium up to v1.18).")


class PortRule(Struct):
    """Ports (any of them), and what must hold of the traffic on them."""

    ports = Field(ListOf(PortProtocol), "The ports; every port when empty.")
    terminating_tls = Field(TLSContext, "TLS the proxy terminates.", json="terminatingTLS")
    originating_tls = Field(TLSContext, "TLS the proxy originates.", json="originatingTLS")
    server_names = Field(ListOf(String()), "TLS server names (SNI) allowed, with `*` wildcards.")
    listener = Field(Listener, "A custom Envoy listener to redirect the traffic to.")
    rules = Field(L7Rules, "Layer 7 rules for the traffic on these ports.")


class PortDenyRule(Struct):
    """Ports (any of them) a deny rule covers: no layer 7 rules in a deny."""

    ports = Field(ListOf(PortProtocol), "The ports; every port when empty.")


_SELECTORS = "Endpoints by their labels (any of the selectors); `[{}]` is every endpoint."
# Deprecated: endpoint selectors every peer had to match too in earlier releases; the newest CRD declares a list of
# strings that must stay empty. Either form is kept (knetsim names the field as not simulated).
_DEPRECATED = "Deprecated: label requirements every peer had to meet too (endpoint selectors in earlier releases)."


class _IngressCommon(Struct):
    from_endpoints = Field(ListOf(EndpointSelector), _SELECTORS)
    from_requires = Field(ListOf(Untyped()), _DEPRECATED)
    from_cidr = Field(ListOf(String()), "Addresses outside the cluster, as CIDRs.", json="fromCIDR")
    from_cidr_set = Field(ListOf(CIDRRule), "Addresses outside the cluster, as CIDRs less exceptions.",
                          json="fromCIDRSet")
    from_entities = Field(ListOf(String()), "Entities: world, cluster, host, remote-node, kube-apiserver, "
                                            "health, ingress, init, unmanaged, none, all.")
    from_groups = Field(ListOf(Groups), "Addresses an outside provider supplies (AWS).")
    from_nodes = Field(ListOf(EndpointSelector), "Nodes by their labels.")


class IngressRule(_IngressCommon):
    """Traffic to the selected endpoints this rule allows: from these peers, to these ports."""

    to_ports = Field(ListOf(PortRule), "The ports (any of them), with their layer 7 rules.")
    icmps = Field(ListOf(ICMPRule), "ICMP types allowed.")
    authentication = Field(Authentication, "The authentication the traffic must have.")


class IngressDenyRule(_IngressCommon):
    """Traffic to the selected endpoints this rule denies, whatever an allow rule says."""

    to_ports = Field(ListOf(PortDenyRule), "The ports (any of them).")
    icmps = Field(ListOf(ICMPRule), "ICMP types denied.")


class _EgressCommon(Struct):
    to_endpoints = Field(ListOf(EndpointSelector), _SELECTORS)
    to_requires = Field(ListOf(Untyped()), _DEPRECATED)
    to_cidr = Field(ListOf(String()), "Addresses outside the cluster, as CIDRs.", json="toCIDR")
    to_cidr_set = Field(ListOf(CIDRRule), "Addresses outside the cluster, as CIDRs less exceptions.",
                        json="toCIDRSet")
    to_entities = Field(ListOf(String()), "Entities: world, cluster, host, remote-node, kube-apiserver, "
                                          "health, ingress, init, unmanaged, none, all.")
    to_services = Field(ListOf(Service), "Kubernetes Services: their backends.")
    to_groups = Field(ListOf(Groups), "Addresses an outside provider supplies (AWS).")
    to_nodes = Field(ListOf(EndpointSelector), "Nodes by their labels.")


class EgressRule(_EgressCommon):
    """Traffic from the selected endpoints this rule allows: to these peers, on these ports."""

    to_ports = Field(ListOf(PortRule), "The ports (any of them), with their layer 7 rules.")
    to_fqdns = Field(ListOf(FQDNSelector), "DNS names: the addresses the endpoint's lookups of them returned "
                                           "(a DNS rule in toPorts must let those lookups through).",
                     json="toFQDNs")
    icmps = Field(ListOf(ICMPRule), "ICMP types allowed.")
    authentication = Field(Authentication, "The authentication the traffic must have.")


class EgressDenyRule(_EgressCommon):
    """Traffic from the selected endpoints this rule denies, whatever an allow rule says."""

    to_ports = Field(ListOf(PortDenyRule), "The ports (any of them).")
    icmps = Field(ListOf(ICMPRule), "ICMP types denied.")


class DefaultDeny(Struct):
    """Whether the selected endpoints deny, per direction, what no policy allows."""

    ingress = Field(Boolean(), "Deny unallowed ingress; true by default when the rule has ingress rules.")
    egress = Field(Boolean(), "Deny unallowed egress; true by default when the rule has egress rules.")


class Label(Struct):
    """A label of the rule (source:key=value)."""

    key = Field(String(), "The key.", required=True)
    value = Field(String(), "The value.")
    source = Field(String(), "Where the label comes from (k8s, unspec...).")


class LogConfig(Struct):
    """What Hubble records of the flows the rule decides."""

    value = Field(String(), "A short free-form string (up to 32 characters) added to those flows.")


class Rule(Struct):
    """One Cilium rule: the endpoints (or nodes) it selects and the traffic to and from them it allows or
    denies."""

    endpoint_selector = Field(EndpointSelector, "The endpoints the rule applies to (or nodeSelector).")
    node_selector = Field(EndpointSelector, "The nodes the rule applies to, in a clusterwide policy (a host "
                                            "policy; or endpointSelector).")
    ingress = Field(ListOf(IngressRule), "What may reach the selected endpoints (any of the rules).")
    ingress_deny = Field(ListOf(IngressDenyRule), "What may not reach them, whatever ingress allows.")
    egress = Field(ListOf(EgressRule), "What the selected endpoints may reach (any of the rules).")
    egress_deny = Field(ListOf(EgressDenyRule), "What they may not reach, whatever egress allows.")
    labels = Field(ListOf(Label), "Labels identifying the rule.")
    enable_default_deny = Field(DefaultDeny, "Whether the selected endpoints deny what no policy allows.")
    description = Field(String(), "Free-form text about the rule.")
    log = Field(LogConfig, "What Hubble records of the flows the rule decides.")


class PolicyCondition(Struct):
    """One aspect of the policy's state, as Cilium reports it."""

    type = Field(String(), "The aspect (Valid...).", required=True)
    status = Field(String(), "True, False or Unknown.", required=True)
    last_transition_time = Field(String(format="date-time"), "When the status last changed.")
    reason = Field(String(), "Why, in one word.")
    message = Field(String(), "Why, in words.")


class NodeStatus(Struct):
    """How one node took the policy."""

    ok = Field(Boolean(), "Whether the node parsed and imported it.")
    error = Field(String(), "Why it could not.")
    last_updated = Field(String(format="date-time"), "When this was written.")
    local_policy_revision = Field(Int64(), "The node's policy revision that first carried it.")
    enforcing = Field(Boolean(), "Whether every endpoint the policy selected then enforces it.")
    annotations = Field(MapOf(String()), "The policy's annotations as the node took them.")


class PolicyStatus(Struct):
    """What Cilium reports of the policy (written by Cilium, not by users)."""

    conditions = Field(ListOf(PolicyCondition, list_type="map", map_keys=("type",)), "The policy's conditions.")
    derivative_policies = Field(MapOf(NodeStatus), "The policies derived from this one (toGroups), by name.")
    nodes = Field(MapOf(NodeStatus), "Per node (Cilium before v1.15).")


def _kind(name: str, doc: str) -> type[Struct]:
    return type(name, (Object,), {
        "__doc__": doc,
        "spec": Field(Rule, "The policy's rule."),
        "specs": Field(ListOf(Rule), "More rules, each as spec."),
        "status": Field(PolicyStatus, "What Cilium reports of the policy."),
    })


# Each kind's root type, by kind name: both kinds have the same fields (one's a namespace's, the other's the
# cluster's; nodeSelector means something only in the clusterwide one, but both CRDs declare it).
KINDS: dict[str, type[Struct]] = {
    "CiliumNetworkPolicy": _kind("CiliumNetworkPolicy", "A Cilium network policy of one namespace."),
    "CiliumClusterwideNetworkPolicy": _kind("CiliumClusterwideNetworkPolicy", "A cluster-wide Cilium network policy."),
}
