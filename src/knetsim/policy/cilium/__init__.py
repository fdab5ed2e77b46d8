"""Cilium's policy kinds: CiliumNetworkPolicy and CiliumClusterwideNetworkPolicy (``read.py``), and the walk a
Cilium agent does for one side of a connection, deny before allow (``evaluate.py``)."""

from .read import (
    CLUSTERWIDE_KIND,
    ENTITIES,
    KIND,
    KINDS,
    CiliumPolicy,
    CiliumPolicyError,
    DNSMatch,
    always_enforced,
    http_rule_matches,
    parse,
    read,
    read_with_notes,
)

__all__ = ["CLUSTERWIDE_KIND", "ENTITIES", "KIND", "KINDS", "CiliumPolicy", "CiliumPolicyError", "DNSMatch",
           "always_enforced", "http_rule_matches", "parse", "read",
           "read_with_notes"]
