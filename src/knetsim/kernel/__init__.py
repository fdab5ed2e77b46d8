"""Kernel mode: the cluster's rules loaded into a real Linux network stack.

    from knetsim.kernel import Topology, verify
    with Topology.build(state, "nftables") as topo:   # network namespaces, veths, rules, listeners
        ...
    report = verify(state, "iptables")                 # every simulated verdict against the kernel

Layer: beside ``network/`` and above it — it reads the ClusterState, the data plane's renders,
the policy engine's answers, the DNS server and the simulated apps' replies, and checks
``network.trace``. Nothing in the simulation imports it. Linux and root only; see
``missing_requirements``.
"""

from .netns import KernelError, Unavailable, missing_requirements, sweep
from .plan import MAX_POD_NAMESPACES, PlanError
from .topology import KERNEL_DATAPLANES, Topology, leftovers

__all__ = [
    "KERNEL_DATAPLANES",
    "MAX_POD_NAMESPACES",
    "KernelError",
    "PlanError",
    "Topology",
    "Unavailable",
    "leftovers",
    "missing_requirements",
    "sweep",
]
