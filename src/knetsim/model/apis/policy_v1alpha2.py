"""policy.networking.k8s.io/v1alpha2: ClusterNetworkPolicy (network-policy-api v0.2.0, standard channel).

A cluster-wide policy in one of two tiers: Admin (judged before every NetworkPolicy) or Baseline
(after them), ordered by priority (0-1000), with ordered rules whose action is Accept, Deny or Pass.
The experimental channel's ``nodes`` and ``domainNames`` peers are marked as such: the standard CRD
(knetsim's default) leaves them out, the experimental one has them.
"""

from __future__ import annotations

from .markers import EXPERIMENTAL, Field, Int32, ListOf, Rule, String, Struct
from .meta import Condition, LabelSelector, Object, ObjectMeta
from .policy_v1alpha1 import CIDR, DomainName

_PORT = {"minimum": 1, "maximum": 65535}


class NamespacedPod(Struct):
    """Pods chosen by their namespace's labels and their own."""

    namespace_selector = Field(LabelSelector, "The namespaces; unset or {} selects every namespace.")
    pod_selector = Field(LabelSelector, "The pods of those namespaces; {} selects every pod.", required=True)


class ClusterNetworkPolicySubject(Struct, min_properties=1, max_properties=1):
    """The pods a policy applies to: exactly one of namespaces or pods."""

    namespaces = Field(LabelSelector, "Every pod of the namespaces this selector picks.")
    pods = Field(NamespacedPod, "The pods these selectors pick.")


class PortRange(Struct, rules=[Rule("self.start < self.end", "Start port must be less than End port")]):
    """A range of ports, both ends included."""

    start = Field(Int32(**_PORT), "The first port.", required=True)
    end = Field(Int32(**_PORT), "The last port; greater than start.", required=True)


class Port(Struct, min_properties=1, max_properties=1):
    """A destination port: exactly one of number or range."""

    number = Field(Int32(**_PORT), "One port.")
    range = Field(PortRange, "A range of ports.")


class ClusterNetworkPolicyProtocolTCP(Struct, min_properties=1):
    """TCP, to a destination port."""

    destination_port = Field(Port, "The destination port or range.")


class ClusterNetworkPolicyProtocolUDP(Struct, min_properties=1):
    """UDP, to a destination port."""

    destination_port = Field(Port, "The destination port or range.")


class ClusterNetworkPolicyProtocolSCTP(Struct, min_properties=1):
    """SCTP, to a destination port."""

    destination_port = Field(Port, "The destination port or range.")


class ClusterNetworkPolicyProtocol(Struct, min_properties=1, max_properties=1):
    """A protocol and destination port: exactly one of tcp, udp, sctp or destinationNamedPort."""

    tcp = Field(ClusterNetworkPolicyProtocolTCP, "TCP to a port or range.")
    udp = Field(ClusterNetworkPolicyProtocolUDP, "UDP to a port or range.")
    sctp = Field(ClusterNetworkPolicyProtocolSCTP, "SCTP to a port or range.")
    destination_named_port = Field(String(), "A container port name, resolved on each destination pod (with the "
                                             "protocol that port declares).")


class ClusterNetworkPolicyIngressPeer(Struct, min_properties=1, max_properties=1):
    """Where traffic comes from: exactly one of namespaces or pods."""

    namespaces = Field(LabelSelector, "Every pod of the namespaces this selector picks.")
    pods = Field(NamespacedPod, "The pods these selectors pick.")


class ClusterNetworkPolicyEgressPeer(Struct, min_properties=1, max_properties=1):
    """Where traffic goes to: exactly one of namespaces, pods or networks (or, in the experimental channel,
    nodes or domainNames)."""

    namespaces = Field(LabelSelector, "Every pod of the namespaces this selector picks.")
    pods = Field(NamespacedPod, "The pods these selectors pick.")
    nodes = Field(LabelSelector, "The nodes this selector picks: their addresses, and hostNetwork pods on them.",
                  channel=EXPERIMENTAL)
    networks = Field(ListOf(CIDR, min_items=1, max_items=25, list_type="set"),
                     "Addresses in these CIDRs, inside the cluster or out (pod and node addresses included).")
    domain_names = Field(ListOf(DomainName, min_items=1, max_items=25, list_type="set"),
                         "DNS names (a leading '*.' for one label); Accept rules only.", channel=EXPERIMENTAL)


_ACTION = String(enum=("Accept", "Deny", "Pass"))
_ACTION_DOC = ("Accept: allowed, no later tier is consulted. Deny: dropped. Pass: skip the rest of this tier; "
               "the next tier decides (from Admin, the NetworkPolicies).")
_PROTOCOLS = ListOf(ClusterNetworkPolicyProtocol, min_items=1, max_items=25)
_PROTOCOLS_DOC = "The protocols and destination ports the rule applies to; everything (ICMP too) when unset."


class ClusterNetworkPolicyIngressRule(Struct):
    """An ingress rule: traffic from these peers, to these ports, gets this action."""

    name = Field(String(max_length=100), "The rule's name, for status and logs.")
    action = Field(_ACTION, _ACTION_DOC, required=True)
    from_ = Field(ListOf(ClusterNetworkPolicyIngressPeer, min_items=1, max_items=25), "The sources.", required=True)
    protocols = Field(_PROTOCOLS, _PROTOCOLS_DOC)


class ClusterNetworkPolicyEgressRule(Struct, rules=[
        Rule("!(self.to.exists(peer, has(peer.networks) || has(peer.nodes) || has(peer.domainNames)) && "
             "has(self.protocols) && self.protocols.exists(protocol, has(protocol.destinationNamedPort)))",
             "networks/nodes/domainNames peer cannot be set with namedPorts since there are no namedPorts for "
             "networks/nodes/domainNames", channel=EXPERIMENTAL)]):
    """An egress rule: traffic to these peers and ports gets this action."""

    name = Field(String(max_length=100), "The rule's name, for status and logs.")
    action = Field(_ACTION, _ACTION_DOC, required=True)
    to = Field(ListOf(ClusterNetworkPolicyEgressPeer, min_items=1, max_items=25), "The destinations.",
               required=True)
    protocols = Field(_PROTOCOLS, _PROTOCOLS_DOC)


class ClusterNetworkPolicySpec(Struct):
    """The tier, priority, subject and rules."""

    tier = Field(String(enum=("Admin", "Baseline")),
                 "Admin: judged before NetworkPolicies. Baseline: after them, for traffic they did not decide.",
                 required=True)
    priority = Field(Int32(minimum=0, maximum=1000), "Order within the tier: lower numbers first. The first "
                                                     "matching rule of the first policy decides.", required=True)
    subject = Field(ClusterNetworkPolicySubject, "The pods the policy applies to.", required=True)
    ingress = Field(ListOf(ClusterNetworkPolicyIngressRule, max_items=25),
                    "Rules for traffic into the subject, in order.")
    egress = Field(ListOf(ClusterNetworkPolicyEgressRule, max_items=25),
                   "Rules for traffic from the subject, in order.")


class ClusterNetworkPolicyStatus(Struct):
    """What the implementation reports."""

    conditions = Field(ListOf(Condition, list_type="map", map_keys=("type",)),
                       "The implementation's conditions.", required=True)


class ClusterNetworkPolicy(Object):
    """A cluster-wide network policy in the Admin or Baseline tier. Cluster-scoped."""

    metadata = Field(ObjectMeta, required=True)
    spec = Field(ClusterNetworkPolicySpec, "The tier, priority, subject and rules.", required=True)
    status = Field(ClusterNetworkPolicyStatus, "What the implementation reports.")


__all__ = ["ClusterNetworkPolicy"]
