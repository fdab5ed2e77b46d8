"""projectcalico.org/v3 (and crd.projectcalico.org/v1, the CRDs that store it): the fields of Calico's policy kinds.

Calico declares these as Go types (projectcalico/calico api/pkg/apis/projectcalico/v3: policy.go, tier.go,
networkset.go...), from which calico-apiserver serves the v3 group and controller-gen writes the v1 CRDs
(manifests/calico.yaml, v3.32.1). Field names and types are those; the descriptions are knetsim's.

Only structure is declared: which fields exist and their JSON types. Calico's own rules (actions, selectors,
ports, tiers) are checked by the reader knetsim evaluates Calico by (policy/calico/model.py), in Calico's words,
so the schema carries no enum or pattern that would answer before it in other words.
"""

from __future__ import annotations

from .markers import Boolean, Field, Integer, IntOrString, ListOf, MapOf, Number, String, Struct
from .meta import LabelSelector, Object

_SELECTOR = "A Calico selector expression (`app == 'web' && has(tier)`, `all()`...)."


class ServiceAccountMatch(Struct):
    """Endpoints by the service account their pod runs as: named, or whose labels the selector matches."""

    names = Field(ListOf(String()), "Service account names; one of them must be the pod's.")
    selector = Field(String(), "A Calico selector over the service account's labels.")


class ServiceMatch(Struct):
    """A Kubernetes Service, whose endpoints (or, as a destination, its cluster IP and ports) the rule matches."""

    name = Field(String(), "The Service's name.")
    namespace = Field(String(), "The Service's namespace; the policy's own when empty.")


class EntityRule(Struct):
    """One end of a rule (source or destination): every field set must match."""

    nets = Field(ListOf(String()), "CIDRs the address must be in (one of them).")
    not_nets = Field(ListOf(String()), "CIDRs the address must not be in.")
    selector = Field(String(), "Endpoints (and network sets) whose labels match. " + _SELECTOR)
    not_selector = Field(String(), "Endpoints whose labels must not match this selector.")
    namespace_selector = Field(String(), "Endpoints in namespaces whose labels match this selector.")
    ports = Field(ListOf(IntOrString()), "Ports: a number, a range `\"8000:8100\"` or a named port.")
    not_ports = Field(ListOf(IntOrString()), "Ports that must not match.")
    service_accounts = Field(ServiceAccountMatch, "Endpoints by their pod's service account.")
    services = Field(ServiceMatch, "Endpoints of a Kubernetes Service.")


class ICMPFields(Struct):
    """An ICMP type and, optionally, code."""

    type_ = Field(Integer(), "The ICMP type (0-254).")
    code = Field(Integer(), "The ICMP code (0-255); needs type.")


class HTTPPath(Struct):
    """A request path to match: exactly, or by prefix."""

    exact = Field(String(), "The whole path.")
    prefix = Field(String(), "A prefix of the path.")


class HTTPMatch(Struct):
    """HTTP attributes of a request (enforced by Calico's application layer policy)."""

    methods = Field(ListOf(String()), "Request methods (GET, POST...); any of them.")
    paths = Field(ListOf(HTTPPath), "Request paths; any of them.")


class RuleMetadata(Struct):
    """Data attached to a rule, kept with it."""

    annotations = Field(MapOf(String()), "Free-form key/value pairs.")


class PolicyRule(Struct):
    """One rule: what traffic it matches, and the action taken when it does (rules are tried in order)."""

    action = Field(String(), "Allow, Deny, Log or Pass (to the next tier).", required=True)
    ip_version = Field(Integer(), "4 or 6: only that IP version matches.")
    protocol = Field(IntOrString(), "TCP, UDP, ICMP, ICMPv6, SCTP, UDPLite, or a protocol number (1-255).")
    icmp = Field(ICMPFields, "ICMP type and code (protocol ICMP or ICMPv6).")
    not_protocol = Field(IntOrString(), "A protocol that must not match.")
    not_icmp = Field(ICMPFields, "ICMP type and code that must not match.", json="notICMP")
    source = Field(EntityRule, "Where the packet comes from.")
    destination = Field(EntityRule, "Where the packet goes to.")
    http = Field(HTTPMatch, "HTTP attributes the request must have.")
    metadata = Field(RuleMetadata, "Annotations of the rule.")


class _PolicySpecCommon(Struct):
    tier = Field(String(), "The tier the policy belongs to; `default` when empty.")
    order = Field(Number(), "The policy's place in its tier: lower first; unset, after every ordered policy.")
    selector = Field(String(), "The endpoints the policy applies to. " + _SELECTOR)
    types = Field(ListOf(String()), "Ingress, Egress or both: which directions the policy applies to.")
    ingress = Field(ListOf(PolicyRule), "Rules for traffic to the selected endpoints, in order.")
    egress = Field(ListOf(PolicyRule), "Rules for traffic from the selected endpoints, in order.")
    service_account_selector = Field(String(), "Also selects endpoints by their service account's labels.")
    performance_hints = Field(ListOf(String()), "Hints to Calico's data plane (AssumeNeededOnEveryNode).")


class NetworkPolicySpec(_PolicySpecCommon):
    """A namespaced Calico policy: it selects endpoints of its own namespace."""


class GlobalNetworkPolicySpec(_PolicySpecCommon):
    """A cluster-wide Calico policy: it selects endpoints of every namespace and host endpoints."""

    namespace_selector = Field(String(), "Only endpoints in namespaces whose labels match this selector.")
    do_not_track = Field(Boolean(), "Applies before connection tracking, to untracked traffic (host endpoints).")
    pre_dnat = Field(Boolean(), "Applies before destination NAT (host endpoints, ingress only).", json="preDNAT")
    apply_on_forward = Field(Boolean(), "Also applies to traffic a host endpoint forwards.")


_STAGED_ACTION = "Set (the default) or Delete: what enforcing this staged policy would do to its enforced twin."


class StagedNetworkPolicySpec(NetworkPolicySpec):
    """A NetworkPolicy Calico previews but never enforces."""

    staged_action = Field(String(), _STAGED_ACTION)


class StagedGlobalNetworkPolicySpec(GlobalNetworkPolicySpec):
    """A GlobalNetworkPolicy Calico previews but never enforces."""

    staged_action = Field(String(), _STAGED_ACTION)


class IPBlock(Struct):
    """A CIDR, less the ranges in except."""

    cidr = Field(String(), "The range.", required=True)
    except_ = Field(ListOf(String()), "Ranges within cidr left out.")


class KubernetesPeer(Struct):
    """A Kubernetes NetworkPolicy peer: pods by their labels and their namespace's, or an IP block."""

    pod_selector = Field(LabelSelector, "Pods by their labels.")
    namespace_selector = Field(LabelSelector, "Namespaces by their labels.")
    ip_block = Field(IPBlock, "Addresses outside the cluster's pods.")


class KubernetesPort(Struct):
    """A Kubernetes NetworkPolicy port: a protocol, a port number or name, an optional end of range."""

    protocol = Field(String(), "TCP, UDP or SCTP; TCP when empty.")
    port = Field(IntOrString(), "A port number or a named container port.")
    end_port = Field(Integer(), "The last port of a range starting at port.")


class KubernetesIngressRule(Struct):
    """Traffic from these peers to these ports."""

    from_ = Field(ListOf(KubernetesPeer), "The peers (any of them); every source when empty.")
    ports = Field(ListOf(KubernetesPort), "The ports (any of them); every port when empty.")


class KubernetesEgressRule(Struct):
    """Traffic to these peers on these ports."""

    to = Field(ListOf(KubernetesPeer), "The peers (any of them); every destination when empty.")
    ports = Field(ListOf(KubernetesPort), "The ports (any of them); every port when empty.")


class StagedKubernetesNetworkPolicySpec(Struct):
    """A Kubernetes NetworkPolicy Calico previews but never enforces."""

    staged_action = Field(String(), _STAGED_ACTION)
    pod_selector = Field(LabelSelector, "The pods of the namespace the policy applies to.")
    policy_types = Field(ListOf(String()), "Ingress, Egress or both.")
    ingress = Field(ListOf(KubernetesIngressRule), "What may reach the selected pods.")
    egress = Field(ListOf(KubernetesEgressRule), "What the selected pods may reach.")


class TierSpec(Struct):
    """A tier: an ordered group of policies, judged before the tiers of higher order."""

    order = Field(Number(), "Lower first; unset, after every ordered tier.")
    default_action = Field(String(), "Deny (the default) or Pass: what happens to traffic that the tier's "
                                     "policies select but none of their rules match.")


class NetworkSetSpec(Struct):
    """Addresses given labels, so that policy selectors can match them."""

    nets = Field(ListOf(String()), "The addresses, as CIDRs or IPs.")


def _kind(spec: type[Struct], doc: str) -> type[Struct]:
    return type(spec.__name__.removesuffix("Spec"), (Object,), {
        "__doc__": doc, "spec": Field(spec, _doc_of_spec(spec))})


def _doc_of_spec(spec: type[Struct]) -> str:
    return " ".join((spec.__doc__ or "").split())


# Each kind's root type, by kind name (both groups: the v1 CRDs have the v3 fields).
KINDS: dict[str, type[Struct]] = {
    "NetworkPolicy": _kind(NetworkPolicySpec, "A Calico network policy of one namespace."),
    "GlobalNetworkPolicy": _kind(GlobalNetworkPolicySpec, "A cluster-wide Calico network policy."),
    "StagedNetworkPolicy": _kind(StagedNetworkPolicySpec, "A Calico network policy staged for preview."),
    "StagedGlobalNetworkPolicy": _kind(StagedGlobalNetworkPolicySpec,
                                       "A cluster-wide Calico network policy staged for preview."),
    "StagedKubernetesNetworkPolicy": _kind(StagedKubernetesNetworkPolicySpec,
                                           "A Kubernetes NetworkPolicy staged for preview by Calico."),
    "Tier": _kind(TierSpec, "A Calico policy tier."),
    "NetworkSet": _kind(NetworkSetSpec, "Labelled addresses in one namespace."),
    "GlobalNetworkSet": _kind(NetworkSetSpec, "Labelled addresses for every namespace."),
}
