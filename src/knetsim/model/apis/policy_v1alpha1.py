"""policy.networking.k8s.io/v1alpha1: AdminNetworkPolicy and BaselineAdminNetworkPolicy (network-policy-api v0.1.8).

The first cluster-wide policies: an AdminNetworkPolicy (priority 0-1000, Allow/Deny/Pass) is judged
before every NetworkPolicy, the one BaselineAdminNetworkPolicy (named "default", Allow/Deny) after
them. network-policy-api v0.2 replaced both with ClusterNetworkPolicy (``policy_v1alpha2``).
Fields of the experimental channel (``nodes`` and ``domainNames`` peers, ``namedPort``) are marked as
such: the standard CRDs (knetsim's default) leave them out, the experimental ones have them.
"""

from __future__ import annotations

from .markers import EXPERIMENTAL, Field, Int32, ListOf, Rule, String, Struct
from .meta import Condition, LabelSelector, Object, ObjectMeta

_PORT = {"minimum": 1, "maximum": 65535}


class NamespacedPod(Struct):
    """Pods chosen by their namespace's labels and their own."""

    namespace_selector = Field(LabelSelector, "The namespaces; {} selects every namespace.", required=True)
    pod_selector = Field(LabelSelector, "The pods of those namespaces; {} selects every pod.", required=True)


class AdminNetworkPolicySubject(Struct, min_properties=1, max_properties=1):
    """The pods a policy applies to: exactly one of namespaces or pods."""

    namespaces = Field(LabelSelector, "Every pod of the namespaces this selector picks.")
    pods = Field(NamespacedPod, "The pods these selectors pick.")


class Port(Struct):
    """One port and protocol."""

    protocol = Field(String(), "TCP, UDP or SCTP; TCP by default.", required=True, default="TCP")
    port = Field(Int32(**_PORT), "The port number.", required=True)


class PortRange(Struct):
    """A range of ports, both ends included."""

    protocol = Field(String(), "TCP, UDP or SCTP; TCP by default.", default="TCP")
    start = Field(Int32(**_PORT), "The first port.", required=True)
    end = Field(Int32(**_PORT), "The last port.", required=True)


class AdminNetworkPolicyPort(Struct, min_properties=1, max_properties=1):
    """Destination ports a rule applies to: exactly one of portNumber or portRange (or, in the experimental
    channel, namedPort)."""

    port_number = Field(Port, "One port.")
    named_port = Field(String(), "A container port name, resolved on each destination pod.", channel=EXPERIMENTAL)
    port_range = Field(PortRange, "A range of ports.")


DomainName = String("A DNS name, optionally with a leading '*.' standing for one label.",
                    pattern=r"^(\*\.)?([a-zA-z0-9]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\.)+[a-zA-z0-9]([-a-zA-Z0-9_]*"
                            r"[a-zA-Z0-9])?\.?$")
CIDR = String("An IPv4 or IPv6 network in CIDR notation (10.0.0.0/8, 2001:db8::/64).", max_length=43,
              rules=(Rule("isCIDR(self)", "Invalid CIDR format provided"),))


class AdminNetworkPolicyIngressPeer(Struct, min_properties=1, max_properties=1):
    """Where traffic comes from: exactly one of namespaces or pods."""

    namespaces = Field(LabelSelector, "Every pod of the namespaces this selector picks.")
    pods = Field(NamespacedPod, "The pods these selectors pick.")


class AdminNetworkPolicyEgressPeer(Struct, min_properties=1, max_properties=1):
    """Where traffic goes to: exactly one of namespaces, pods or networks (or, in the experimental channel,
    nodes or domainNames)."""

    namespaces = Field(LabelSelector, "Every pod of the namespaces this selector picks.")
    pods = Field(NamespacedPod, "The pods these selectors pick.")
    nodes = Field(LabelSelector, "The nodes this selector picks.", channel=EXPERIMENTAL)
    networks = Field(ListOf(CIDR, min_items=1, max_items=25, list_type="set"),
                     "Addresses in these CIDRs, inside the cluster or out (pod and node addresses included).")
    domain_names = Field(ListOf(DomainName, min_items=1, max_items=25, list_type="set"),
                         "DNS names (a leading '*.' for one label); Allow rules only.", channel=EXPERIMENTAL)


_PORTS = ListOf(AdminNetworkPolicyPort, min_items=1, max_items=100)
_PORTS_DOC = "The destination ports the rule applies to; every port when unset."


class AdminNetworkPolicyIngressRule(Struct):
    """An ingress rule: traffic from these peers, to these ports, gets this action."""

    name = Field(String(max_length=100), "The rule's name, for status and logs.")
    action = Field(String(enum=("Allow", "Deny", "Pass")),
                   "Allow: accepted, no further policy is consulted. Deny: dropped. Pass: skip the remaining "
                   "AdminNetworkPolicies; NetworkPolicies decide.", required=True)
    from_ = Field(ListOf(AdminNetworkPolicyIngressPeer, min_items=1, max_items=100), "The sources.", required=True)
    ports = Field(_PORTS, _PORTS_DOC)


class AdminNetworkPolicyEgressRule(Struct, rules=[
        Rule("!(self.to.exists(peer, has(peer.networks) || has(peer.nodes) || has(peer.domainNames)) && "
             "has(self.ports) && self.ports.exists(port, has(port.namedPort)))",
             "networks/nodes/domainNames peer cannot be set with namedPorts since there are no namedPorts for "
             "networks/nodes/domainNames", channel=EXPERIMENTAL)]):
    """An egress rule: traffic to these peers and ports gets this action."""

    name = Field(String(max_length=100), "The rule's name, for status and logs.")
    action = Field(String(enum=("Allow", "Deny", "Pass")),
                   "Allow: accepted, no further policy is consulted. Deny: dropped. Pass: skip the remaining "
                   "AdminNetworkPolicies; NetworkPolicies decide.", required=True)
    to = Field(ListOf(AdminNetworkPolicyEgressPeer, min_items=1, max_items=100), "The destinations.", required=True)
    ports = Field(_PORTS, _PORTS_DOC)


class AdminNetworkPolicySpec(Struct):
    """The subject, the priority and the rules."""

    priority = Field(Int32(minimum=0, maximum=1000), "Lower numbers are judged first (0 before 1000); the "
                                                     "first rule that matches, in the first policy, decides.",
                     required=True)
    subject = Field(AdminNetworkPolicySubject, "The pods the policy applies to.", required=True)
    ingress = Field(ListOf(AdminNetworkPolicyIngressRule, max_items=100),
                    "Rules for traffic into the subject, in order.")
    egress = Field(ListOf(AdminNetworkPolicyEgressRule, max_items=100),
                   "Rules for traffic from the subject, in order.")


class PolicyStatus(Struct):
    """What the implementation reports."""

    conditions = Field(ListOf(Condition, list_type="map", map_keys=("type",)),
                       "The implementation's conditions.", required=True)


class AdminNetworkPolicy(Object):
    """A cluster-wide policy judged before every NetworkPolicy, by priority. Cluster-scoped."""

    metadata = Field(ObjectMeta, required=True)
    spec = Field(AdminNetworkPolicySpec, "The subject, priority and rules.", required=True)
    status = Field(PolicyStatus, "What the implementation reports.")


class BaselineAdminNetworkPolicyIngressRule(Struct):
    """An ingress rule of the baseline."""

    name = Field(String(max_length=100), "The rule's name, for status and logs.")
    action = Field(String(enum=("Allow", "Deny")), "Allow or Deny, when no NetworkPolicy decided.", required=True)
    from_ = Field(ListOf(AdminNetworkPolicyIngressPeer, min_items=1, max_items=100), "The sources.", required=True)
    ports = Field(_PORTS, _PORTS_DOC)


class BaselineAdminNetworkPolicyEgressPeer(Struct, min_properties=1, max_properties=1):
    """Where traffic goes to: exactly one of namespaces, pods or networks (or, in the experimental channel,
    nodes)."""

    namespaces = Field(LabelSelector, "Every pod of the namespaces this selector picks.")
    pods = Field(NamespacedPod, "The pods these selectors pick.")
    nodes = Field(LabelSelector, "The nodes this selector picks.", channel=EXPERIMENTAL)
    networks = Field(ListOf(CIDR, min_items=1, max_items=25, list_type="set"), "Addresses in these CIDRs.")


class BaselineAdminNetworkPolicyEgressRule(Struct, rules=[
        Rule("!(self.to.exists(peer, has(peer.networks) || has(peer.nodes)) && has(self.ports) && "
             "self.ports.exists(port, has(port.namedPort)))",
             "networks/nodes peer cannot be set with namedPorts since there are no namedPorts for networks/nodes",
             channel=EXPERIMENTAL)]):
    """An egress rule of the baseline."""

    name = Field(String(max_length=100), "The rule's name, for status and logs.")
    action = Field(String(enum=("Allow", "Deny")), "Allow or Deny, when no NetworkPolicy decided.", required=True)
    to = Field(ListOf(BaselineAdminNetworkPolicyEgressPeer, min_items=1, max_items=100), "The destinations.",
               required=True)
    ports = Field(_PORTS, _PORTS_DOC)


class BaselineAdminNetworkPolicySpec(Struct):
    """The subject and the rules."""

    subject = Field(AdminNetworkPolicySubject, "The pods the baseline applies to.", required=True)
    ingress = Field(ListOf(BaselineAdminNetworkPolicyIngressRule, max_items=100),
                    "Rules for traffic into the subject, in order.")
    egress = Field(ListOf(BaselineAdminNetworkPolicyEgressRule, max_items=100),
                   "Rules for traffic from the subject, in order.")


class BaselineAdminNetworkPolicy(Object, rules=[
        Rule("self.metadata.name == 'default'",
             'Only one baseline admin network policy with metadata.name="default" can be created in the cluster')]):
    """The cluster's default for traffic no NetworkPolicy decided: one object, named "default". Cluster-scoped."""

    metadata = Field(ObjectMeta, required=True)
    spec = Field(BaselineAdminNetworkPolicySpec, "The subject and rules.", required=True)
    status = Field(PolicyStatus, "What the implementation reports.")


__all__ = ["AdminNetworkPolicy", "BaselineAdminNetworkPolicy"]
