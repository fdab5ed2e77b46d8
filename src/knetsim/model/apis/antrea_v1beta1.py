"""crd.antrea.io/v1beta1: the fields of Antrea's policy kinds (ClusterNetworkPolicy, NetworkPolicy, Tier,
ClusterGroup, Group).

Antrea declares them as CRDs (antrea-io/antrea build/yamls/antrea-crds.yml, v2.7.0) written from its Go types
(pkg/apis/crd/v1beta1). Field names, types and where each may appear are those: a ClusterNetworkPolicy's peer
may name namespaces by ``namespaces.match`` or a service account, a namespaced NetworkPolicy's may not; only an
egress peer takes ``fqdn``, only an ingress peer ``scope``. The descriptions are knetsim's.

As for Calico's kinds, only structure is declared; the rules of Antrea's validating webhook are checked by the
reader knetsim evaluates Antrea by (policy/antrea/model.py), in its words.
"""

from __future__ import annotations

from .markers import Boolean, Field, Integer, IntOrString, ListOf, Number, String, Struct
from .meta import Condition, LabelSelector, Object


class NamespacedName(Struct):
    """An object by name and namespace."""

    name = Field(String(), "The name.")
    namespace = Field(String(), "The namespace.")


class IPBlock(Struct):
    """A CIDR, less the ranges in except."""

    cidr = Field(String(), "The range.")
    except_ = Field(ListOf(String()), "Ranges within cidr left out.")


class PeerNamespaces(Struct):
    """Namespaces relative to the pod the rule applies to."""

    match = Field(String(), "Self: the namespace of the pod the rule applies to.")
    same_labels = Field(ListOf(String()), "Label keys whose values must be the same as on that pod's namespace.")


class _PeerCommon(Struct):
    pod_selector = Field(LabelSelector, "Pods by their labels (in the namespaces namespaceSelector picks).")
    namespace_selector = Field(LabelSelector, "Namespaces by their labels.")
    ip_block = Field(IPBlock, "Addresses by CIDR.")
    group = Field(String(), "A ClusterGroup (or, in a namespaced policy, a Group) by name.")
    node_selector = Field(LabelSelector, "Nodes by their labels.")


class ClusterIngressPeer(_PeerCommon):
    """Where traffic may come from, in a ClusterNetworkPolicy."""

    namespaces = Field(PeerNamespaces, "Namespaces relative to the pod the rule applies to.")
    service_account = Field(NamespacedName, "Pods running as this service account.")
    scope = Field(String(), "Cluster (the default) or ClusterSet.")


class ClusterEgressPeer(_PeerCommon):
    """Where traffic may go to, in a ClusterNetworkPolicy."""

    namespaces = Field(PeerNamespaces, "Namespaces relative to the pod the rule applies to.")
    service_account = Field(NamespacedName, "Pods running as this service account.")
    fqdn = Field(String(), "A DNS name, exact or with `*` wildcards, resolved through the cluster's DNS.")


class IngressPeer(_PeerCommon):
    """Where traffic may come from, in a namespaced Antrea NetworkPolicy."""

    external_entity_selector = Field(LabelSelector, "ExternalEntities by their labels.")
    scope = Field(String(), "Cluster (the default) or ClusterSet.")


class EgressPeer(_PeerCommon):
    """Where traffic may go to, in a namespaced Antrea NetworkPolicy."""

    external_entity_selector = Field(LabelSelector, "ExternalEntities by their labels.")
    fqdn = Field(String(), "A DNS name, exact or with `*` wildcards, resolved through the cluster's DNS.")


class _ClusterAppliedToCommon(Struct):
    pod_selector = Field(LabelSelector, "Pods by their labels.")
    namespace_selector = Field(LabelSelector, "Every pod of the namespaces these labels pick.")
    group = Field(String(), "The members of a ClusterGroup.")
    service_account = Field(NamespacedName, "Pods running as this service account.")


class ClusterEgressAppliedTo(_ClusterAppliedToCommon):
    """What one egress rule of a ClusterNetworkPolicy applies to, instead of the policy's appliedTo."""


class ClusterIngressAppliedTo(_ClusterAppliedToCommon):
    """What one ingress rule of a ClusterNetworkPolicy applies to, instead of the policy's appliedTo."""

    service = Field(NamespacedName, "A NodePort Service.")


class ClusterAppliedTo(ClusterIngressAppliedTo):
    """What a ClusterNetworkPolicy applies to."""

    node_selector = Field(LabelSelector, "Nodes by their labels (host traffic).")


class RuleAppliedTo(Struct):
    """What one rule of a namespaced Antrea NetworkPolicy applies to, instead of the policy's appliedTo."""

    pod_selector = Field(LabelSelector, "Pods by their labels.")
    group = Field(String(), "The members of a Group.")


class AppliedTo(RuleAppliedTo):
    """What a namespaced Antrea NetworkPolicy applies to, in its namespace."""

    external_entity_selector = Field(LabelSelector, "ExternalEntities by their labels.")


class NetworkPolicyPort(Struct):
    """A protocol and destination port or range, and optionally a source port range."""

    protocol = Field(String(), "TCP, UDP or SCTP; TCP when empty.")
    port = Field(IntOrString(), "A port number or a named container port.")
    end_port = Field(Integer(), "The last port of a range starting at port.")
    source_port = Field(Integer(), "The first source port.")
    source_end_port = Field(Integer(), "The last source port.")


class ICMPProtocol(Struct):
    """ICMP by type and code."""

    icmp_type = Field(Integer(), "The ICMP type.")
    icmp_code = Field(Integer(), "The ICMP code.")


class IGMPProtocol(Struct):
    """IGMP by type and group address."""

    igmp_type = Field(Integer(), "The IGMP message type.")
    group_address = Field(String(), "The multicast group address.")


class NetworkPolicyProtocol(Struct):
    """A protocol other than TCP, UDP and SCTP: exactly one of icmp or igmp."""

    icmp = Field(ICMPProtocol, "ICMP.")
    igmp = Field(IGMPProtocol, "IGMP.")


class HTTPProtocol(Struct):
    """HTTP requests by host, method and path."""

    host = Field(String(), "The Host header.")
    method = Field(String(), "The request method.")
    path = Field(String(), "The request path (a prefix with `*`).")


class TLSProtocol(Struct):
    """TLS connections by server name."""

    sni = Field(String(), "The server name the client asks for.")


class L7Protocol(Struct):
    """A layer-7 match: exactly one of http or tls."""

    http = Field(HTTPProtocol, "HTTP.")
    tls = Field(TLSProtocol, "TLS.")


class ServiceReference(Struct):
    """A Service by name, for toServices."""

    name = Field(String(), "The Service's name.")
    namespace = Field(String(), "The Service's namespace.")
    scope = Field(String(), "Cluster (the default) or ClusterSet.")


class _RuleCommon(Struct):
    action = Field(String(), "Allow, Drop, Reject or Pass.", required=True)
    ports = Field(ListOf(NetworkPolicyPort), "Ports (any of them); every port when empty.")
    protocols = Field(ListOf(NetworkPolicyProtocol), "Other protocols (any of them).")
    l7_protocols = Field(ListOf(L7Protocol), "Layer-7 matches (any of them).", json="l7Protocols")
    name = Field(String(), "The rule's name, unique in the policy; generated when empty.")
    enable_logging = Field(Boolean(), "Log the connections the rule matches.")
    log_label = Field(String(), "A label added to those log lines.")


class ClusterIngressRule(_RuleCommon):
    """One ingress rule of a ClusterNetworkPolicy, tried in order."""

    from_ = Field(ListOf(ClusterIngressPeer), "The sources (any of them).")
    applied_to = Field(ListOf(ClusterIngressAppliedTo), "What this rule applies to, instead of the policy's.")


class ClusterEgressRule(_RuleCommon):
    """One egress rule of a ClusterNetworkPolicy, tried in order."""

    to = Field(ListOf(ClusterEgressPeer), "The destinations (any of them).")
    to_services = Field(ListOf(ServiceReference), "Services, matched by their cluster IP and ports.")
    applied_to = Field(ListOf(ClusterEgressAppliedTo), "What this rule applies to, instead of the policy's.")


class IngressRule(_RuleCommon):
    """One ingress rule of a namespaced Antrea NetworkPolicy, tried in order."""

    from_ = Field(ListOf(IngressPeer), "The sources (any of them).")
    applied_to = Field(ListOf(RuleAppliedTo), "What this rule applies to, instead of the policy's.")


class EgressRule(_RuleCommon):
    """One egress rule of a namespaced Antrea NetworkPolicy, tried in order."""

    to = Field(ListOf(EgressPeer), "The destinations (any of them).")
    to_services = Field(ListOf(ServiceReference), "Services, matched by their cluster IP and ports.")
    applied_to = Field(ListOf(RuleAppliedTo), "What this rule applies to, instead of the policy's.")


_TIER = "The tier, by name (emergency, securityops, networkops, platform, application, baseline or a Tier's); " \
        "application when empty."
_PRIORITY = "The policy's place in its tier: lower first (1-10000)."


class ClusterNetworkPolicySpec(Struct):
    """A cluster-wide Antrea policy."""

    tier = Field(String(), _TIER)
    priority = Field(Number(), _PRIORITY, required=True)
    applied_to = Field(ListOf(ClusterAppliedTo), "What the policy applies to (unless each rule says).")
    ingress = Field(ListOf(ClusterIngressRule), "Ingress rules, in order.")
    egress = Field(ListOf(ClusterEgressRule), "Egress rules, in order.")


class NetworkPolicySpec(Struct):
    """An Antrea policy of one namespace."""

    tier = Field(String(), _TIER)
    priority = Field(Number(), _PRIORITY, required=True)
    applied_to = Field(ListOf(AppliedTo), "What the policy applies to (unless each rule says).")
    ingress = Field(ListOf(IngressRule), "Ingress rules, in order.")
    egress = Field(ListOf(EgressRule), "Egress rules, in order.")


class NetworkPolicyStatus(Struct):
    """How far the agents have realised the policy."""

    phase = Field(String(), "Pending, Realizing, Realized or Failed.")
    observed_generation = Field(Integer(), "The generation the status is about.")
    current_nodes_realized = Field(Integer(), "Nodes that have realised it.")
    desired_nodes_realized = Field(Integer(), "Nodes that should.")
    conditions = Field(ListOf(Condition), "The policy's conditions.")


class TierSpec(Struct):
    """A tier of Antrea policies."""

    priority = Field(Integer(), "The tier's place: lower first (Emergency 50 ... Baseline 253).", required=True)
    description = Field(String(), "What the tier is for.")


class GroupSpec(Struct):
    """Members selected by labels, listed by address, a Service's endpoints, or other groups."""

    pod_selector = Field(LabelSelector, "Pods by their labels.")
    namespace_selector = Field(LabelSelector, "Namespaces by their labels.")
    external_entity_selector = Field(LabelSelector, "ExternalEntities by their labels.")
    ip_blocks = Field(ListOf(IPBlock), "Addresses by CIDR.")
    service_reference = Field(NamespacedName, "The endpoints of a Service.")
    child_groups = Field(ListOf(String()), "Other groups, whose members are this group's too.")


class ClusterGroupSpec(GroupSpec):
    """A cluster-wide group."""

    node_selector = Field(LabelSelector, "Nodes by their labels.")


class GroupStatus(Struct):
    """Whether the group's members are computed."""

    conditions = Field(ListOf(Condition), "The group's conditions.")


class ClusterNetworkPolicy(Object):
    """A cluster-wide Antrea network policy."""

    spec = Field(ClusterNetworkPolicySpec)
    status = Field(NetworkPolicyStatus)


class NetworkPolicy(Object):
    """An Antrea network policy of one namespace."""

    spec = Field(NetworkPolicySpec)
    status = Field(NetworkPolicyStatus)


class Tier(Object):
    """An Antrea policy tier."""

    spec = Field(TierSpec)


class ClusterGroup(Object):
    """A cluster-wide group of endpoints that policies refer to."""

    spec = Field(ClusterGroupSpec)
    status = Field(GroupStatus)


class Group(Object):
    """A group of endpoints of one namespace."""

    spec = Field(GroupSpec)
    status = Field(GroupStatus)


KINDS: dict[str, type[Struct]] = {cls.__name__: cls for cls in (ClusterNetworkPolicy, NetworkPolicy, Tier,
                                                                   ClusterGroup, Group)}
