"""What antrea-controller's validating webhook refuses, in its words and in its order.

The API server checks an Antrea object against its CRD's schema first (a 422 naming the field: model/apis); what
passes goes to antrea-controller's webhook (the ``crdvalidator.antrea.io`` ValidatingWebhookConfiguration), whose
refusal ``kubectl apply`` prints as ``Error from server: error when creating "x.yaml": admission webhook
"acnpvalidator.antrea.io" denied the request: appliedTo should not be set in both spec and rules``: a 400 with no
reason (the webhook sets only a message; the API server frames it, apiserver's webhook ``ToStatusErr``).

Checks, reasons and their order: antrea-io/antrea ``pkg/controller/networkpolicy/validate.go`` (validatePolicy:
tier, Pass in the baseline tier, rule names as the mutating webhook completes them, appliedTo, peers, appliedTo
Services, FQDNs, multicast, IGMP, layer 7 (the L7NetworkPolicy gate off, its default), ports; the Tier validator's
create, update and delete). Each function here returns the first reason, or None when the webhook admits.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ...model.names import is_label_value, is_qualified_name
from .model import ACNP, ANNP, STATIC_TIERS

# build/yamls/antrea.yml, the crdvalidator.antrea.io configuration's webhooks, by the kind each validates.
WEBHOOKS = {ACNP: "acnpvalidator.antrea.io", ANNP: "annpvalidator.antrea.io", "Tier": "tiervalidator.antrea.io",
            "ClusterGroup": "clustergroupvalidator.antrea.io", "Group": "groupvalidator.antrea.io"}
# tier.go staticTierSet: how a policy may name a static tier besides its Tier object's lower-case name.
STATIC_TIER_NAMES = frozenset({"Emergency", "SecurityOps", "NetworkOps", "Platform", "Application", "Baseline"})
# validate.go reservedTierPriorities: kept free around the static tiers at the bottom of the order.
RESERVED_PRIORITIES = frozenset({251, 252, 254, 255})
MAX_TIERS = 20  # tier.go maxSupportedTiers, the static six included
_FQDN_CHARS = re.compile(r"^[-0-9a-zA-Z.*]+$")  # validate.go allowedFQDNChars


def message(kind: str, reason: str) -> str:
    """The refusal as the API server words a webhook's denial."""
    return f'admission webhook "{WEBHOOKS[kind]}" denied the request: {reason}'


def _set(value: Any) -> bool:
    """Go's ``reflect.Value.IsZero`` on a decoded field: a field given at all (even ``{}``) counts, "" does not."""
    return value is not None and value != ""


def _fields_set(body: Mapping[str, Any]) -> int:
    return sum(1 for v in body.values() if _set(v))


def _rules(spec: Mapping[str, Any], direction: str) -> list[Mapping[str, Any]]:
    rules = spec.get(direction)
    return [r for r in rules if isinstance(r, Mapping)] if isinstance(rules, list) else []


def _entries(value: Any) -> list[Mapping[str, Any]]:
    return [e for e in value if isinstance(e, Mapping)] if isinstance(value, list) else []


def _labels_reason(*selectors: Any) -> str | None:
    """checkSelectorsLabels: the matchLabels of each selector given (matchExpressions are the schema's)."""
    for selector in selectors:
        labels = selector.get("matchLabels") if isinstance(selector, Mapping) else None
        for key, value in (labels or {}).items() if isinstance(labels, Mapping) else ():
            errors = is_qualified_name(str(key))
            if errors:
                return f"Invalid label key: {key}: {'; '.join(errors)}"
            errors = is_label_value(str(value))
            if errors:
                return f"Invalid label value: {value}: {'; '.join(errors)}"
    return None


def _ip_block_reason(block: Mapping[str, Any]) -> str | None:
    """validateIPBlock."""
    cidr = block.get("cidr")
    if not cidr:
        return "field 'cidr' is required in an ipBlock"
    try:
        network = ipaddress.ip_network(str(cidr), strict=False)
    except ValueError:
        return f"invalid CIDR address: {cidr}"  # Go's net.ParseCIDR error
    for text in block.get("except") or ():
        try:
            excepted = ipaddress.ip_network(str(text), strict=False)
        except ValueError:
            return f"invalid except CIDR value: invalid CIDR address: {text}"
        if excepted.version != network.version or not network.supernet_of(excepted) \
                or network.prefixlen >= excepted.prefixlen:
            return f"except CIDR {text} is not a strict subset of CIDR {cidr}"
    return None


def _applied_to_reason(spec: Mapping[str, Any], ingress: list[Mapping[str, Any]],
                       egress: list[Mapping[str, Any]]) -> str | None:
    """validateAppliedTo."""
    in_spec = bool(spec.get("appliedTo"))
    in_rules = sum(1 for r in (*ingress, *egress) if r.get("appliedTo"))
    if in_spec and in_rules:
        return "appliedTo should not be set in both spec and rules"
    if not in_spec and not in_rules:
        return "appliedTo needs to be set in either spec or rules"
    if in_rules and in_rules != len(ingress) + len(egress):
        return "appliedTo field should either be set in all rules or in none of them"

    def check(entries: list[Mapping[str, Any]], egress_scope: bool) -> str | None:
        services = 0
        for entry in entries:
            count = _fields_set(entry)
            for name in ("group", "nodeSelector", "serviceAccount", "service"):
                if _set(entry.get(name)) and count > 1:
                    return f"{name} cannot be set with other peers in appliedTo"
            if _set(entry.get("service")):
                if egress_scope:
                    return "egress rule cannot be applied to Services"
                services += 1
            reason = _labels_reason(entry.get("podSelector"), entry.get("namespaceSelector"),
                                    entry.get("externalEntitySelector"), entry.get("nodeSelector"))
            if reason:
                return reason
        if 0 < services < len(entries):
            return "a rule/policy cannot be applied to Services and other peers at the same time"
        return None

    reason = check(_entries(spec.get("appliedTo")), bool(egress))
    for rule in ingress:
        reason = reason or check(_entries(rule.get("appliedTo")), False)
    for rule in egress:
        reason = reason or check(_entries(rule.get("appliedTo")), True)
    return reason


def _peers_reason(ingress: list[Mapping[str, Any]], egress: list[Mapping[str, Any]]) -> str | None:
    """validatePeers."""

    def check(peers: list[Mapping[str, Any]]) -> str | None:
        for peer in peers:
            namespaces = peer.get("namespaces")
            if _set(peer.get("namespaceSelector")) and _set(namespaces):
                return "namespaces and namespaceSelector cannot be set at the same time for a single NetworkPolicyPeer"
            if isinstance(namespaces, Mapping):
                if _fields_set(namespaces) > 1:
                    return "only one matching criteria can be specified in a single peer namespaces field"
                for key in namespaces.get("sameLabels") or ():
                    if is_qualified_name(str(key)):
                        return f"Invalid label key in sameLabels rule: {key}"
            if isinstance(peer.get("ipBlock"), Mapping):
                reason = _ip_block_reason(peer["ipBlock"])
                if reason:
                    return reason
            count = _fields_set(peer)
            for name in ("group", "serviceAccount", "nodeSelector"):
                if _set(peer.get(name)) and count > 1:
                    return f"{name} cannot be set with other peers in rules"
            reason = _labels_reason(peer.get("podSelector"), peer.get("namespaceSelector"),
                                    peer.get("externalEntitySelector"), peer.get("nodeSelector"))
            if reason:
                return reason
        return None

    for rule in ingress:
        reason = check(_entries(rule.get("from")))
        if reason:
            return reason
    for rule in egress:
        if rule.get("toServices") is not None and (rule.get("to") or rule.get("ports") is not None
                                                   or rule.get("protocols") is not None):
            return "`toServices` cannot be used with `to`, `ports` or `protocols`"
        reason = check(_entries(rule.get("to")))
        if reason:
            return reason
    return None


def _service_ingress_reason(spec: Mapping[str, Any], ingress: list[Mapping[str, Any]]) -> str | None:
    """validateAppliedToServiceIngressPeer: a rule applied to Services takes ipBlock peers only."""

    def to_services(entries: list[Mapping[str, Any]]) -> bool:
        return bool(entries) and _set(entries[0].get("service"))

    policy_wide = to_services(_entries(spec.get("appliedTo")))
    for rule in ingress:
        if policy_wide or to_services(_entries(rule.get("appliedTo"))):
            for peer in _entries(rule.get("from")):
                if not _set(peer.get("ipBlock")) or _fields_set(peer) > 1:
                    return "a rule/policy that is applied to Services can only use ipBlock to select workloads"
    return None


def _ports_reason(ingress: list[Mapping[str, Any]], egress: list[Mapping[str, Any]]) -> str | None:
    """validatePort."""
    for rule in (*ingress, *egress):
        for port in _entries(rule.get("ports")):
            number, end = port.get("port"), port.get("endPort")
            if end is not None:
                if number is None:
                    return "if `endPort` is specified `port` must be specified"
                if isinstance(number, str):
                    return "if `port` is a string `endPort` cannot be specified"
                if isinstance(end, int) and isinstance(number, int) and end < number:
                    return "`endPort` should be greater than or equal to `port`"
            source, source_end = port.get("sourcePort"), port.get("sourceEndPort")
            if source_end is not None:
                if source is None:
                    return "if `sourceEndPort` is specified `sourcePort` must be specified"
                if isinstance(source_end, int) and isinstance(source, int) and source_end < source:
                    return "`sourceEndPort` should be greater than or equal to `sourcePort`"
    return None


def _rule_names(ingress: list[Mapping[str, Any]], egress: list[Mapping[str, Any]]) -> list[str]:
    """Each rule's name once Antrea's mutating webhook has named the unnamed ones (mutate.go generateRuleNames:
    ``<direction>-<action>-<7 hex of a SHA-1 of the rule>``): two identical unnamed rules get one name, so the policy
    is refused (its docs: a policy with duplicate rules is rejected). The hash here is of the rule's canonical JSON,
    not Go's encoding of the typed rule: equal rules collide either way."""
    names = []
    for direction, rules in (("ingress", ingress), ("egress", egress)):
        for rule in rules:
            if rule.get("name"):
                names.append(str(rule["name"]))
                continue
            digest = hashlib.sha1(json.dumps(rule, sort_keys=True, separators=(",", ":")).encode(),
                                  usedforsecurity=False).hexdigest()
            names.append(f"{direction}-{str(rule.get('action') or '').lower()}-{digest[:7]}")
    return names


def _protocol_reasons(ingress: list[Mapping[str, Any]], egress: list[Mapping[str, Any]]) -> str | None:
    """validateFQDNSelectors, validateEgressMulticastAddress, validateMulticastIGMP, validateL7Protocols (with
    L7NetworkPolicy off, as it is by default), in that order."""
    for rule in egress:
        for peer in _entries(rule.get("to")):
            fqdn = peer.get("fqdn")
            if fqdn and not _FQDN_CHARS.match(str(fqdn)):
                return f"invalid characters in egress rule fqdn field: {fqdn}"
    for rule in egress:
        multicast = unicast = others = False
        for peer in _entries(rule.get("to")):
            block = peer.get("ipBlock")
            if not isinstance(block, Mapping):
                continue
            try:
                address = ipaddress.ip_network(str(block.get("cidr")), strict=False).network_address
            except ValueError:
                return f"invalid multicast groupAddress address (to.IPBlock.CIDR): invalid CIDR address: " \
                       f"{block.get('cidr')}"
            multicast, unicast = multicast or address.is_multicast, unicast or not address.is_multicast
            others = others or any(_set(peer.get(k)) for k in ("podSelector", "namespaceSelector", "namespaces",
                                                                 "externalEntitySelector", "serviceAccount",
                                                                 "nodeSelector"))
            if multicast and rule.get("action") in ("Pass", "Reject"):
                return "multicast does not support action Pass or Reject"
        if multicast and unicast:
            return "can not set multicast groupAddress and unicast ip address at the same time"
        if multicast and others:
            return "can not set multicast groupAddress and selectors at the same time"
    igmp = icmp = False
    for rule in (*ingress, *egress):
        for protocol in _entries(rule.get("protocols")):
            if isinstance(protocol.get("igmp"), Mapping):
                igmp = True
                group = protocol["igmp"].get("groupAddress")
                if group:
                    try:
                        multicast_group = ipaddress.ip_address(str(group)).is_multicast
                    except ValueError:
                        multicast_group = False
                    if not multicast_group:
                        return f"groupAddress {group} is not multicast address"
                if rule.get("action") in ("Pass", "Reject"):
                    return "protocol IGMP does not support Pass or Reject"
            if isinstance(protocol.get("icmp"), Mapping):
                icmp = True
        if igmp and (rule.get("ports") or rule.get("toServices") or rule.get("from") or rule.get("to") or icmp):
            return "protocol IGMP can not be used with other protocols or other properties like from, to"
    for rule in (*ingress, *egress):
        if rule.get("l7Protocols"):
            return "layer 7 protocols can only be used when L7NetworkPolicy is enabled"
    return None


def policy_reason(raw: Mapping[str, Any], tier_exists: Callable[[str], bool] | None) -> str | None:
    """Why the webhook refuses an Antrea ClusterNetworkPolicy or NetworkPolicy (create or update), or None.
    ``tier_exists``: whether the cluster holds a Tier of that name (None: not known, not checked)."""
    spec = raw.get("spec")
    if not isinstance(spec, Mapping):
        return None
    ingress, egress = _rules(spec, "ingress"), _rules(spec, "egress")
    tier = str(spec.get("tier") or "")
    # validateTierForPolicy: a static tier by its CamelCase name (tier.go staticTierSet) or by the name of the Tier
    # object antrea-controller creates for it (lower case); any other name must be a Tier the cluster holds.
    if tier and tier not in STATIC_TIER_NAMES and tier not in STATIC_TIERS and tier_exists is not None \
            and not tier_exists(tier):
        return f"tier {tier} does not exist"
    if tier.lower() == "baseline" and any(r.get("action") == "Pass" for r in (*ingress, *egress)):
        return "`Pass` action should not be set for Baseline Tier policy rules"
    names = _rule_names(ingress, egress)
    if len(names) != len(set(names)):
        return "rules names must be unique within the policy"
    return (_applied_to_reason(spec, ingress, egress) or _peers_reason(ingress, egress)
            or _service_ingress_reason(spec, ingress) or _protocol_reasons(ingress, egress)
            or _ports_reason(ingress, egress))


def tier_create_reason(raw: Mapping[str, Any], others: Iterable[tuple[str, int]]) -> str | None:
    """Why the webhook refuses a new Tier; ``others``: (name, priority) of the Tiers the cluster holds besides the
    static six (which antrea-controller creates, so their priorities are taken)."""
    name = str((raw.get("metadata") or {}).get("name") or "")
    priority = (raw.get("spec") or {}).get("priority")
    if not isinstance(priority, int) or isinstance(priority, bool):
        return None  # the schema's to refuse
    others = [o for o in others if o[0] != name and o[0] not in STATIC_TIERS]
    if len(STATIC_TIERS) + len(others) >= MAX_TIERS:
        return f"maximum number of Tiers supported: {MAX_TIERS}"
    if priority in RESERVED_PRIORITIES:
        return f"tier {name} priority {priority} is reserved"
    if priority in STATIC_TIERS.values() or any(p == priority for _, p in others):
        return f"tier {name} priority {priority} overlaps with existing Tier"
    return None


def tier_update_reason(raw: Mapping[str, Any], old: Mapping[str, Any]) -> str | None:
    if (raw.get("spec") or {}).get("priority") != (old.get("spec") or {}).get("priority"):
        return "update to Tier priority is not allowed"
    return None


def tier_delete_reason(name: str, policies: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the webhook refuses to delete a Tier: a static one, or one that policies still name."""
    if name in STATIC_TIERS:
        return f"cannot delete reserved tier {name}"
    for kind, plural in ((ACNP, "Antrea ClusterNetworkPolicies"), (ANNP, "Antrea NetworkPolicies")):
        count = sum(1 for p in policies if p.get("kind") == kind
                    and str((p.get("spec") or {}).get("tier") or "") == name)
        if count:
            return f"tier {name} is referenced by {count} {plural}"
    return None


__all__ = ["WEBHOOKS", "message", "policy_reason", "tier_create_reason", "tier_delete_reason", "tier_update_reason"]
