"""Which Kubernetes knetsim is: v1.33 to v1.38, one declared table of what changes between them.

Admission reads the version in force (``in_force()``) and asks the table, never its own ``if version >= ...``:

    GATES      feature gates that change what the API server admits: alpha (off), beta (on by default), GA
               (locked on), each row citing its KEP and the change that moved it
    WARNINGS   warnings the API server sends from a version on (deprecations), with their text
    RELEASES   what the live API server of each version says of itself: the patch release ``/version`` reports
               and the aggregated discovery formats it serves

The version in force is the newest unless a command says otherwise (``--kubernetes-version MAJOR.MINOR``): a
``ContextVar``, so one process can check a manifest against two versions one after the other, and a command's
choice ends with the command (``using``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

SUPPORTED = ("1.33", "1.34", "1.35", "1.36", "1.37", "1.38")
NEWEST = SUPPORTED[-1]


@dataclass(frozen=True, order=True, slots=True)
class KubernetesVersion:
    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    def enabled(self, gate: str) -> bool:
        """Is the feature gate on at this version (its default; GA gates are locked on)?"""
        return GATE[gate].enabled_at(self)

    def warns(self, warning: str) -> bool:
        return WARNING[warning].since <= self


def parse(text: str) -> KubernetesVersion:
    """``1.36``, ``v1.36`` or ``1.36.2`` (the patch does not change what is admitted); ValueError names the
    versions knetsim knows."""
    raw = text.strip().removeprefix("v")
    parts = raw.split(".")
    if len(parts) in (2, 3) and all(p.isdigit() for p in parts):
        version = KubernetesVersion(int(parts[0]), int(parts[1]))
        if str(version) in SUPPORTED:
            return version
    raise ValueError(f"unsupported Kubernetes version {text!r}: knetsim simulates {SUPPORTED[0]} to {SUPPORTED[-1]} "
                     "(MAJOR.MINOR)")


def _v(text: str) -> KubernetesVersion:
    major, minor = text.split(".")
    return KubernetesVersion(int(major), int(minor))


@dataclass(frozen=True, slots=True)
class Gate:
    name: str
    kep: str
    alpha: KubernetesVersion  # off by default
    beta: KubernetesVersion | None  # on by default from here
    ga: KubernetesVersion | None  # locked on from here
    what: str
    source: str

    def enabled_at(self, version: KubernetesVersion) -> bool:
        on_from = self.beta or self.ga
        return on_from is not None and version >= on_from


@dataclass(frozen=True, slots=True)
class ServerWarning:
    name: str
    since: KubernetesVersion
    text: str
    source: str


GATES = (
    Gate("StrictIPCIDRValidation", "KEP-4858", alpha=_v("1.33"), beta=_v("1.36"), ga=_v("1.38"),
         what="IPs with leading 0s (010.0.0.5), IPv4-mapped IPv6 IPs and CIDRs with bits set beyond the prefix "
              "length (192.168.0.5/24) are refused in the legacy IP/CIDR fields (NetworkPolicy ipBlock, Service "
              "externalIPs and loadBalancerSourceRanges); before, accepted with a warning",
         source="kubernetes/enhancements keps/sig-network/4858-ip-cidr-validation; CHANGELOG-1.38 #141979 (GA, "
                "always in effect); apimachinery pkg/util/validation/ip.go (IsValidIPForLegacyField)"),
    Gate("RelaxedServiceNameValidation", "KEP-5311", alpha=_v("1.34"), beta=_v("1.36"), ga=_v("1.37"),
         what="a Service's name is an RFC 1123 label (it may start with a digit) instead of an RFC 1035 label",
         source="kubernetes/enhancements keps/sig-network/5311-relaxed-validation-for-services-names; the v1.37 "
                "release blog (Graduations to Stable)"),
    Gate("PreferSameTrafficDistribution", "KEP-3015", alpha=_v("1.33"), beta=_v("1.34"), ga=_v("1.35"),
         what="trafficDistribution accepts PreferSameZone (an alias of PreferClose) and PreferSameNode",
         source="kubernetes/kubernetes #130844 (alpha, 1.33), #134457 (GA, 1.35)"),
    Gate("KubeProxyNFTablesLocalhostNodePorts", "KEP-6032", alpha=_v("1.37"), beta=_v("1.38"), ga=None,
         what="kube-proxy's nftables mode serves NodePorts on localhost (127.0.0.1, ::1; TCP only, by a userspace "
              "proxy on the loopback address) when --nodeport-addresses names a loopback CIDR (`172.18.0.0/16,"
              "127.0.0.0/8`; kube-proxy takes `primary` only alone); the default `primary` still leaves localhost out",
         source="kubernetes/website feature-gates/kube-proxy-nf-tables-localhost-node-ports.md (alpha, off, "
                "1.37); kubernetes/kubernetes CHANGELOG-1.38 #142490 (beta, on by default); kubernetes/enhancements "
                "keps/sig-network/6032-localhost-nodeport-userspace-proxy"),
)
GATE = {g.name: g for g in GATES}

WARNINGS = (
    ServerWarning("PreferCloseDeprecated", _v("1.35"),
            'spec.trafficDistribution: "PreferClose" is deprecated; use "PreferSameZone"',
            "kubernetes/kubernetes #134457; pkg/api/service/warnings.go (GetWarningsForService)"),
    ServerWarning("ExternalIPsDeprecated", _v("1.36"), "spec.externalIPs is deprecated",
            "KEP-5707 (deprecation, 1.36: warn on create and update). The text is what a v1.36 API server's warning "
            "reads in a recorded client log; the upstream source line was not found"),
)
WARNING = {w.name: w for w in WARNINGS}



@dataclass(frozen=True, slots=True)
class Release:
    """One minor version as the live API server (``knetsim up``) serves it."""

    version: KubernetesVersion
    # The patch release /version reports (gitVersion v1.MINOR.PATCH). knetsim models a minor's behaviour, not
    # its patches: the number is the release whose changelog the rows cite, .0 for every minor.
    patch: int
    # Aggregated discovery (apidiscovery.k8s.io) versions served, the preferred first.
    discovery: tuple[str, ...]
    source: str

    @property
    def git_version(self) -> str:
        return f"v{self.version}.{self.patch}"


_BOTH_DISCOVERY = ("v2", "v2beta1")
RELEASES = (
    *(Release(_v(minor), 0, _BOTH_DISCOVERY,
              "KEP-3352 (aggregated discovery v2 GA in 1.30; v2beta1 still served beside it)")
      for minor in SUPPORTED[:-1]),
    Release(_v("1.38"), 0, ("v2",),
            "kubernetes/kubernetes CHANGELOG-1.38 #141208: the apidiscovery.k8s.io/v2beta1 types and the "
            "AggregatedDiscoveryRemoveBetaType gate are removed; only v2 is served"),
)
RELEASE = {str(r.version): r for r in RELEASES}


def release(version: KubernetesVersion | None = None) -> Release:
    """The live API server's row for ``version`` (default: the version in force)."""
    return RELEASE[str(version or in_force())]


_DEFAULT = _v(NEWEST)
_IN_FORCE: ContextVar[KubernetesVersion | None] = ContextVar("knetsim_kubernetes_version", default=None)


def in_force() -> KubernetesVersion:
    return _IN_FORCE.get() or _DEFAULT


def serve_as(version: KubernetesVersion | str) -> KubernetesVersion:
    """The version in force for the whole process where no ``using`` block says otherwise: the live cluster's
    daemon is one version from start to stop, its controllers and every request alike."""
    global _DEFAULT
    _DEFAULT = parse(version) if isinstance(version, str) else version
    return _DEFAULT


@contextmanager
def using(version: KubernetesVersion | str) -> Iterator[KubernetesVersion]:
    """Admission as ``version`` admits, inside the block."""
    chosen = parse(version) if isinstance(version, str) else version
    token = _IN_FORCE.set(chosen)
    try:
        yield chosen
    finally:
        _IN_FORCE.reset(token)
