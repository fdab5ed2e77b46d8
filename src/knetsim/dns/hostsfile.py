"""The /etc/hosts the kubelet writes into every container, and lookups in it.

glibc and musl read /etc/hosts before asking DNS (``hosts: files dns``), so ``localhost`` is the
loopback address and the pod's own hostname its pod IP without a query. kubelet's
``managedHostsFileContent``: the loopback and IPv6 names, then ``<podIP> <hostname>`` for each of the
pod's addresses, one line per family on a dual-stack cluster (with the
``<hostname>.<subdomain>.<namespace>.svc.<domain>`` name first when the pod has a subdomain), then the
pod's ``hostAliases`` after a blank line and a comment, one line per address with its names tab-separated
(pkg/kubelet/kubelet_pods.go hostsEntriesFromHostAliases).
"""

from __future__ import annotations

from ..cluster.state import ClusterState
from ..model.objects import Pod

_HEADER = ("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
           "fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")


def _entries(state: ClusterState, pod: Pod) -> list[tuple[str, list[str]]]:
    out = [("127.0.0.1", ["localhost"]), ("::1", ["localhost", "ip6-localhost", "ip6-loopback"])]
    if pod.pod_ip:
        spec = pod.raw.get("spec") or {}
        hostname = spec.get("hostname") or pod.name
        sub = spec.get("subdomain")
        names = [f"{hostname}.{sub}.{pod.namespace}.svc.{state.config.cluster_domain}", hostname] if sub \
            else [hostname]
        # One entry per status.podIPs (kubelet writes every family's address, the primary first).
        out.extend((ip, names) for ip in pod.pod_ips or (pod.pod_ip,))
    return out


def _aliases(pod: Pod) -> list[tuple[str, list[str]]]:
    """The pod's spec.hostAliases as (ip, hostnames), in order."""
    return [(str(a.get("ip") or ""), [str(h) for h in a.get("hostnames") or ()])
            for a in (pod.raw.get("spec") or {}).get("hostAliases") or () if isinstance(a, dict)]


def hosts_file(state: ClusterState, pod: Pod) -> str:
    text = _HEADER
    for ip, names in _entries(state, pod)[2:]:
        # kubelet separates the subdomain name and the hostname by a tab too.
        text += "\t".join([ip, *names]) + "\n"
    aliases = _aliases(pod)
    if aliases:
        text += "\n# Entries added by HostAliases.\n" + "".join("\t".join([ip, *names]) + "\n" for ip, names in aliases)
    return text


def hosts_lookup(state: ClusterState, pod: Pod, name: str) -> str | None:
    """The IPv4 address /etc/hosts gives ``name`` (case-insensitive, a trailing dot ignored), if any."""
    wanted = name.rstrip(".").lower()
    for ip, names in [*_entries(state, pod), *_aliases(pod)]:
        if ":" not in ip and wanted in (n.lower() for n in names):
            return ip
    return None
