"""Cluster DNS: the records of a ClusterState, a pod's resolver, and a loopback DNS server.

Layer rule (DESIGN.md): imports ``model`` and ``cluster`` only; NetworkPolicy and the data
plane are decided by the caller, which gets the nameserver address of every query.
"""

from .records import Answer, ClusterDNS, Record, Upstream, lookup, reverse_name, zone_records
from .resolver import (
    MODES,
    Query,
    Resolution,
    ResolvConf,
    cluster_nameservers,
    query_names,
    resolv_conf,
    resolve,
)

__all__ = [
    "MODES",
    "Answer",
    "ClusterDNS",
    "Query",
    "Record",
    "Resolution",
    "ResolvConf",
    "Upstream",
    "cluster_nameservers",
    "lookup",
    "query_names",
    "resolv_conf",
    "resolve",
    "reverse_name",
    "zone_records",
]
