"""One connection end to end: DNS → Service → EndpointSlices → data plane → policy → listener → app."""

from .connect import dns_reachable
from .trace import LAYERS, OUTCOMES, Backend, Finding, Hop, Reply, Target, Trace, TraceInputError, parse_target
from .tracer import trace

__all__ = [
    "LAYERS",
    "OUTCOMES",
    "Backend",
    "Finding",
    "Hop",
    "Reply",
    "Target",
    "Trace",
    "TraceInputError",
    "dns_reachable",
    "parse_target",
    "trace",
]
