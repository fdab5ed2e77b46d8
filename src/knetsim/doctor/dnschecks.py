"""The doctor on the cluster's DNS as a workload, and on what pods look up.

- The DNS workload (``dns/coredns.py``): the coredns Deployment scaled to zero or not Ready, the
  kube-dns Service without endpoints, a Corefile that does not parse, a bad ``forward``, a forwarding
  loop, an upstream that does not answer, no ``kubernetes`` zone — each named by its object, with the
  command that fixes it. These come first: when DNS is down every other name lookup fails with it, and
  no NetworkPolicy is to blame.
- Init containers run one after another, and one that waits for a name (``until nslookup mydb; do
  sleep 2; done``, the pattern of the Kubernetes docs' init-container example) blocks the pod
  (``Init:0/1``) for as long as the name does not resolve.
- ``client_targets``: the hosts a pod's configuration names, without what its program reads as data
  (agnhost porter's ``SERVE_PORT_*`` values are reply text) or looks up by name only (``nslookup
  kubernetes.default`` is a DNS query, not a connection to port 443).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..cluster.state import ClusterState
from ..dns import resolve
from ..dns.coredns import coredns_of
from ..dns.hostsfile import hosts_lookup
from ..model.objects import Pod, parse_container
from ..model.programs import dns_lookup_names, program_data_env, waited_names
from .checks import SYSTEM_NAMESPACES, Finding, referenced_hosts


def coredns_findings(state: ClusterState) -> list[Finding]:
    """The DNS workload's problems, as doctor findings."""
    dns = coredns_of(state)
    out = []
    for p in dns.problems:
        layer = "dns"
        evidence = [f"Corefile from {dns.corefile_source}"]
        if p.subject.startswith("Deployment"):
            evidence = [f"replicas {dns.replicas}, {dns.ready_pods} of {dns.pods} CoreDNS pod(s) Ready"]
        out.append(Finding(p.code, p.severity, layer, p.subject, p.message, p.fix, tuple(evidence)))
    return out


def init_wait_findings(state: ClusterState, pod: Pod) -> list[Finding]:
    """The first init container that waits for a name that does not resolve: the pod never starts."""
    inits = [c for c in (pod.raw.get("spec") or {}).get("initContainers") or [] if isinstance(c, dict)
             and c.get("restartPolicy") != "Always"]
    for index, raw in enumerate(inits):
        for tool, name, words in waited_names([*(raw.get("command") or []), *(raw.get("args") or [])],
                                              pod.namespace):
            mode = "busybox-nslookup" if tool == "nslookup" and "busybox" in str(raw.get("image") or "") else "glibc"
            resolution = resolve(state, pod, name, mode=mode)
            if resolution.ok:
                continue
            first, *rest = name.split(".")
            namespace = rest[0] if rest and rest[0] in state.namespaces else pod.namespace
            elsewhere = sorted(s.namespace for s in state.services.values() if s.name == first
                               and s.namespace != namespace)
            if elsewhere:
                fix = (f"the Service {first!r} lives in namespace {elsewhere[0]}: wait for "
                       f"{first}.{elsewhere[0]}.svc.{state.config.cluster_domain} instead")
            else:
                fix = (f"create the Service the init container waits for (kubectl -n {namespace} create service "
                       f"clusterip {first} --tcp=80:80, selecting the pods that serve it), or correct the name "
                       f"in init container {raw.get('name')!r}")
            return [Finding(
                "InitContainerWaitsForName", "error", "dns", f"Pod {pod.key}",
                f"init container {raw.get('name')!r} ({index + 1} of {len(inits)}) loops until {name!r} resolves, "
                f"and it does not ({resolution.outcome}: no Service {first!r} in namespace {namespace}): the pod "
                f"stays Init:{index}/{len(inits)}, its app containers never start and it is never Ready",
                fix, (f"{tool} {name}: {resolution.outcome}", words))]
    return []


def client_targets(pod: Pod) -> list[tuple[str, int | None, str]]:
    """``referenced_hosts`` less program data (porter's reply text) and names that are only looked up."""
    skip_env: set[str] = set()
    lookups: dict[str, set[str]] = {}
    for raw in (pod.raw.get("spec") or {}).get("containers") or []:
        if not isinstance(raw, dict):
            continue
        container = parse_container(raw)
        skip_env.update(f"container {container.name} env {k}=" for k in program_data_env(container))
        text = " ".join((*container.command, *container.args))
        lookups[container.name] = set(dns_lookup_names(text))
    out = []
    for host, port, where in referenced_hosts(pod):
        if any(where.startswith(prefix) for prefix in skip_env):
            continue
        container_name = where.split(" ", 2)[1] if where.startswith("container ") else ""
        if port is None and host in lookups.get(container_name, set()):
            continue  # nslookup/dig/host NAME: a DNS query, not a connection
        out.append((host, port, where))
    return out


_URL_HOST = re.compile(r"\b(?:wget|curl)\b[^|;&]*?\bhttps?://([A-Za-z0-9][A-Za-z0-9.-]*)")


def _cluster_shaped(state: ClusterState, name: str) -> bool:
    """A name meant for the cluster DNS: one label, ``svc.ns``, or under ``svc.<cluster domain>``."""
    labels = name.lower().rstrip(".").split(".")
    zone = f"svc.{state.config.cluster_domain.lower().rstrip('.')}"
    return len(labels) == 1 or (len(labels) == 2 and labels[1] in state.namespaces) or \
        name.lower().rstrip(".").endswith("." + zone)


def lookup_findings(state: ClusterState, pod: Pod) -> list[Finding]:
    """An app container that looks up or fetches a cluster name that resolves to nothing (``nslookup mydb``,
    ``wget http://mydb``): no Service of that name exists where the name points."""
    out: list[Finding] = []
    for raw in (pod.raw.get("spec") or {}).get("containers") or []:
        if not isinstance(raw, dict):
            continue
        text = " ".join(str(w) for w in (*(raw.get("command") or []), *(raw.get("args") or [])))
        names = [*dns_lookup_names(text), *(m.group(1) for m in _URL_HOST.finditer(text))]
        for name in dict.fromkeys(names):
            if not _cluster_shaped(state, name) or hosts_lookup(state, pod, name) is not None:
                continue  # /etc/hosts answers it before any DNS query (localhost, the pod's own hostname)
            resolution = resolve(state, pod, name)
            if resolution.ok or resolution.outcome != "nxdomain":
                continue
            first, *rest = name.split(".")
            namespace = rest[0] if rest and rest[0] in state.namespaces else pod.namespace
            if f"{namespace}/{first}" in state.services:
                # The Service is there. Either the pod's own resolver does not ask the cluster DNS (said here), or
                # the cluster DNS cannot answer it (a Corefile without the kubernetes plugin: its finding says so).
                if _bypasses_cluster_dns(state, pod):
                    out.append(_resolver_finding(pod, raw, name, f"{namespace}/{first}", resolution.outcome))
                continue
            elsewhere = sorted(s.namespace for s in state.services.values() if s.name == first)
            fix = (f"use {first}.{elsewhere[0]} (the Service lives in namespace {elsewhere[0]})" if elsewhere else
                   f"create Service {first} in namespace {namespace} (kubectl -n {namespace} expose deployment "
                   f"NAME --name={first} --port=PORT), or correct the name")
            if elsewhere:
                continue  # ShortNameOtherNamespace (doctor/checks.py) says it already
            out.append(Finding(
                "NameDoesNotResolve", "error", "dns", f"Pod {pod.key}",
                f"container {raw.get('name')!r} looks up {name!r}, which does not resolve (NXDOMAIN): there is no "
                f"Service {first!r} in namespace {namespace}", fix, (f"{name}: {resolution.outcome}",)))
    return out


def _bypasses_cluster_dns(state: ClusterState, pod: Pod) -> bool:
    spec = pod.raw.get("spec") or {}
    policy = str(spec.get("dnsPolicy") or "ClusterFirst")
    if policy == "None":
        servers = ((spec.get("dnsConfig") or {}).get("nameservers")) or []
        return state.config.dns_service_ip not in servers
    return policy == "Default" or (policy == "ClusterFirst" and bool(spec.get("hostNetwork")))


def _resolver_finding(pod: Pod, raw: dict, name: str, service: str, outcome: str) -> Finding:
    """A name of an existing Service that the pod cannot resolve because its DNS policy does not send it to the
    cluster DNS: ``dnsPolicy: Default`` (the node's resolv.conf), a hostNetwork pod with ``ClusterFirst`` (which
    then behaves as Default: kubernetes.io/docs/concepts/services-networking/dns-pod-service/#pod-s-dns-policy),
    or ``None`` with nameservers of its own."""
    spec = pod.raw.get("spec") or {}
    policy = str(spec.get("dnsPolicy") or "ClusterFirst")
    host_network = bool(spec.get("hostNetwork"))
    wanted = "ClusterFirstWithHostNet" if host_network else "ClusterFirst"
    why = (f"a hostNetwork pod with dnsPolicy {policy} uses its node's resolver" if host_network and
           policy == "ClusterFirst" else f"dnsPolicy {policy} sends its lookups to "
           + ("its dnsConfig nameservers" if policy == "None" else "its node's resolver"))
    return Finding(
        "NameDoesNotResolve", "error", "dns", f"Pod {pod.key}",
        f"container {raw.get('name')!r} looks up {name!r}, which does not resolve ({outcome.upper()}) although "
        f"Service {service} exists: {why}, which knows no cluster names",
        f"set spec.dnsPolicy: {wanted} in the pod's template (a bare pod is re-created: the field cannot be "
        "changed on a running pod)", (f"{name}: {outcome}", f"dnsPolicy {policy}, hostNetwork {host_network}"))


def dns_workload_findings(state: ClusterState, namespaces: Iterable[str] | None = None) -> list[Finding]:
    """Everything this module checks, for the doctor (``namespaces`` None: every user namespace)."""
    wanted = set(namespaces) if namespaces else None
    out = coredns_findings(state)
    if coredns_of(state).outage is not None:
        return out  # DNS itself is down: every wait for a name fails with it, named once above
    for pod in state.pods.values():
        if pod.namespace in SYSTEM_NAMESPACES or (wanted and pod.namespace not in wanted):
            continue
        out.extend(init_wait_findings(state, pod))
        out.extend(lookup_findings(state, pod))
    return out


__all__ = ["client_targets", "coredns_findings", "dns_workload_findings", "init_wait_findings", "lookup_findings"]
