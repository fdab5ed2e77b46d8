"""NetworkPolicy (and, on the ebpf data plane, CiliumNetworkPolicy): verdicts, explanations, matrix, lint."""

from __future__ import annotations

from .engine import (
    DirectionVerdict,
    PolicyIndex,
    PolicyInputError,
    RuleMatch,
    Verdict,
    connections,
    direction_connections,
    endpoint,
    evaluate,
    policy_index,
)
from .ports import ConnSet
from .rules import Endpoint, Peer, Policy, Port, Rule

__all__ = [
    "ConnSet",
    "DirectionVerdict",
    "Endpoint",
    "Peer",
    "Policy",
    "PolicyIndex",
    "PolicyInputError",
    "Port",
    "Rule",
    "RuleMatch",
    "Verdict",
    "connections",
    "direction_connections",
    "endpoint",
    "evaluate",
    "policy_index",
]
