"""The cluster's DNS as a workload: the ``coredns`` Deployment, the ``kube-dns`` Service and the Corefile.

A pod's DNS query is answered only when the ``kube-dns`` Service has a ready CoreDNS pod behind it and
CoreDNS could start with its Corefile (ConfigMap ``kube-system/coredns``, key ``Corefile``; without
one, kubeadm's Corefile, which kind installs). What the objects say decides the answers:

- ``replicas: 0``, or no pod Ready: kube-dns has no endpoints, every query times out;
- a Corefile that does not parse, a ``forward`` argument that is neither an address nor a file, or a
  forwarding loop caught by the ``loop`` plugin: CoreDNS exits at start (CrashLoopBackOff), so every
  query times out too;
- a forwarding loop without ``loop``, or an upstream that does not answer: names outside the
  cluster get SERVFAIL (CoreDNS's ``forward``: "no healthy upstream"), cluster names still answer;
- no ``kubernetes`` plugin for the cluster domain: cluster names are forwarded and NXDOMAIN.

Each of these is a ``Problem`` naming the object to fix and the command that fixes it; the doctor
(``doctor/dnschecks.py``) and the trace's dns hop report them.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from ..cluster.state import ClusterState
from ..cluster.workloadstatus import SIDE_PLUGIN_PORTS, opened_side_ports
from ..model.loader import BUILTIN
from .corefile import Corefile, CorefileError, ServerBlock, default_corefile, forward_targets, parse_corefile

DEPLOYMENT = "kube-system/coredns"
CONFIGMAP = "kube-system/coredns"
SERVICE = "kube-system/kube-dns"
RESTART = "kubectl -n kube-system rollout restart deployment coredns"
EDIT = "kubectl -n kube-system edit configmap coredns"


@dataclass(frozen=True, slots=True)
class Problem:
    code: str
    subject: str  # "Deployment kube-system/coredns"
    message: str
    fix: str
    effect: str  # "all": no query is answered; "external": forwarded names fail; "cluster": cluster names fail
    # "error": knetsim knows the failure; "info": a caveat about what knetsim cannot see (an upstream address
    # neither the cluster nor the outside model has: it may well answer on the real network).
    severity: str = "error"


@dataclass(frozen=True, slots=True)
class CoreDNS:
    """What the cluster's DNS workload is and does, read from its objects."""

    corefile: Corefile | None  # None: it does not parse (see problems)
    corefile_source: str  # "ConfigMap kube-system/coredns" or "kubeadm's default Corefile"
    explicit: bool  # the Corefile came from a ConfigMap in the input
    replicas: int | None  # the Deployment's spec.replicas (None: no coredns Deployment)
    pods: int
    ready_pods: int
    problems: tuple[Problem, ...]
    # Forward targets (per server block zone) that do not answer: "servfail" with the reason.
    failing_forwards: tuple[tuple[str, str], ...] = ()

    @property
    def serving(self) -> bool:
        """Does a query sent to kube-dns get any answer?"""
        return not any(p.effect == "all" for p in self.problems)

    @property
    def outage(self) -> Problem | None:
        """The problem that keeps every query from being answered, if there is one."""
        return next((p for p in self.problems if p.effect == "all"), None)

    def forward_failure(self, zone: str) -> str:
        """Why names forwarded by the server block of ``zone`` fail ("" when they do not)."""
        return next((why for z, why in self.failing_forwards if z == zone), "")


def _corefile_text(state: ClusterState) -> tuple[str, str, bool]:
    cm = state.others.get(("ConfigMap", CONFIGMAP))
    if cm is not None:
        data = cm.raw.get("data") or {}
        if isinstance(data.get("Corefile"), str):
            # The cluster's own (knetsim's kind-like kube-system) holds the cluster config's DNS settings; one the
            # input or a client brings decides them itself.
            return data["Corefile"], f"ConfigMap {CONFIGMAP}", cm.source.file != BUILTIN.file
    return default_corefile(state.config.cluster_domain), "kubeadm's default Corefile", False


def coredns_of(state: ClusterState) -> CoreDNS:
    """Read the DNS workload of ``state``."""
    text, source, explicit = _corefile_text(state)
    problems: list[Problem] = []
    corefile: Corefile | None = None
    try:
        corefile = parse_corefile(text)
    except CorefileError as exc:
        problems.append(Problem(
            "CorefileInvalid", f"ConfigMap {CONFIGMAP}",
            f"CoreDNS cannot start: {exc}. The coredns pods crash at start (CrashLoopBackOff), are never Ready, "
            "and kube-dns has no endpoints: every DNS query from every pod times out",
            f"correct line {exc.line} of the Corefile ({EDIT}), then {RESTART}", "all"))

    deployment = state.workloads.get(("Deployment", DEPLOYMENT))
    replicas: int | None = None
    if deployment is not None:
        raw = (deployment.raw.get("spec") or {}).get("replicas")
        replicas = int(raw) if isinstance(raw, int) else 1
    svc = state.services.get(SERVICE)
    # The CoreDNS pods are the Deployment's (its selector), whatever the Service selects: a kube-dns whose
    # selector went wrong selects none of them, which is its own finding.
    selector: dict[str, str] = {"k8s-app": "kube-dns"}
    if deployment is not None:
        match = ((deployment.raw.get("spec") or {}).get("selector") or {}).get("matchLabels")
        if isinstance(match, dict) and match:
            selector = {str(k): str(v) for k, v in match.items()}
    elif svc is not None and svc.selector:
        selector = dict(svc.selector)
    pods = [p for p in state.pods_in("kube-system") if all(p.labels.get(k) == v for k, v in selector.items())]
    ready = [p for p in pods if p.ready and p.phase == "Running"]
    endpoints = 0
    if svc is not None:
        endpoints = sum(1 for es in state.slices_for(svc) for ep in es.endpoints if ep.ready is not False)
    scale_fix = "kubectl -n kube-system scale deployment coredns --replicas=2"
    if replicas == 0:
        problems.append(Problem(
            "CoreDNSScaledToZero", f"Deployment {DEPLOYMENT}",
            "the coredns Deployment has replicas: 0: no CoreDNS pod runs, the kube-dns Service has no endpoints, "
            "and every DNS query from every pod times out (no NetworkPolicy is involved)", scale_fix, "all"))
    elif svc is None:
        problems.append(Problem(
            "KubeDNSServiceMissing", f"Service {SERVICE}",
            "there is no kube-dns Service: pods send their DNS queries to "
            f"{state.config.dns_service_ip} (the kubelet's clusterDNS), where nothing answers",
            f"recreate Service {SERVICE} with clusterIP {state.config.dns_service_ip}, selector k8s-app=kube-dns "
            "and ports 53/UDP, 53/TCP", "all"))
    elif pods and not ready and corefile is not None and (closed := _probe_port_closed(corefile, pods)):
        plugin = next(name for name, port in SIDE_PLUGIN_PORTS.items() if port == closed)
        moved = next((d for b in corefile.blocks if (d := b.plugin(plugin)) is not None and d.args), None)
        why = (f"the Corefile has no `{plugin}` plugin, so nothing answers their readiness probe on :{closed}"
               if moved is None else f"the Corefile's `{plugin}` plugin listens on {moved.args[0]}, not on :{closed} "
               "where their readiness probe asks")
        fix = (f"add `{plugin}` to the Corefile's `.:53` block: {EDIT}, then {RESTART}" if moved is None else
               f"give `{plugin}` its default address (`{plugin}` alone, :{closed}): {EDIT}, then {RESTART}")
        problems.append(Problem(
            "CoreDNSNotReady", f"Deployment {DEPLOYMENT}",
            f"none of the {len(pods)} CoreDNS pod(s) is Ready: {why} (connection refused); kube-dns has no ready "
            "endpoints and every DNS query times out", fix, "all"))
    elif pods and not ready:
        problems.append(Problem(
            "CoreDNSNotReady", f"Deployment {DEPLOYMENT}",
            f"none of the {len(pods)} CoreDNS pod(s) is Ready: kube-dns has no ready endpoints and every DNS query "
            "times out", "kubectl -n kube-system describe pods -l k8s-app=kube-dns (its readiness probe and logs "
            "say why)", "all"))
    elif not pods and deployment is not None:
        problems.append(Problem(
            "CoreDNSNotRunning", f"Deployment {DEPLOYMENT}",
            "no CoreDNS pod exists: kube-dns has no endpoints and every DNS query times out",
            f"kubectl -n kube-system describe deployment coredns; {scale_fix}", "all"))
    elif ready and endpoints == 0 and svc.selector:
        problems.append(Problem(
            "KubeDNSNoEndpoints", f"Service {SERVICE}",
            f"the kube-dns Service selects no ready CoreDNS pod (selector {dict(svc.selector)}): every DNS query "
            "times out", "kubectl -n kube-system patch service kube-dns --type=merge -p "
            "'{\"spec\":{\"selector\":{\"k8s-app\":\"kube-dns\"}}}'", "all"))

    if corefile is not None and not any(b.port == 53 for b in corefile.blocks):
        ports = sorted({b.port for b in corefile.blocks})
        problems.append(Problem(
            "CorefileNoPort53", f"ConfigMap {CONFIGMAP}",
            f"no server block of the Corefile listens on port 53 (only {', '.join(map(str, ports))}): kube-dns sends "
            "every query to 53, where nothing answers, so every DNS query times out",
            f"serve `.:53` (the kube-dns targetPort): {EDIT}, then {RESTART}", "all"))
    failing: list[tuple[str, str]] = []
    if corefile is not None:
        crash = _plugin_problems(state, corefile, pods, problems, failing)
        if crash is not None:
            problems.append(crash)
    if any(p.code in ("CorefileInvalid", "CoreDNSForwardLoop") and p.effect == "all" for p in problems):
        # The pods are not Ready because CoreDNS exits at start (the build gives them CrashLoopBackOff): the
        # Corefile finding names the cause, a second one about readiness would only send the reader to logs.
        problems = [p for p in problems if p.code != "CoreDNSNotReady"]
    return CoreDNS(corefile, source, explicit, replicas, len(pods), len(ready), tuple(problems), tuple(failing))




def _probe_port_closed(corefile: Corefile, pods: list[Any]) -> int | None:
    """The side-plugin port the pods' readiness probe asks that the Corefile does not open (kubeadm's probe asks
    the ready plugin's :8181), as the kubelet's prober finds it closed (cluster/workloadstatus.py decides both)."""
    opened = opened_side_ports(corefile)
    for pod in pods:
        for container in (pod.raw.get("spec") or {}).get("containers") or []:
            port = ((container.get("readinessProbe") or {}).get("httpGet") or {}).get("port") \
                if isinstance(container, dict) else None
            if port in SIDE_PLUGIN_PORTS.values() and port not in opened:
                return int(port)
    return None


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_of(target: str) -> str:
    if target.startswith("["):
        return target[1:].split("]", 1)[0]
    return target.rsplit(":", 1)[0] if target.count(":") == 1 else target


def _plugin_problems(state: ClusterState, corefile: Corefile, pods: list, problems: list[Problem],
                     failing: list[tuple[str, str]]) -> Problem | None:
    """Loops, unreachable upstreams and a missing kubernetes plugin; returns a start-up crash, if any."""
    config = state.config
    own = {config.dns_service_ip, *(p.pod_ip for p in pods if p.pod_ip)}
    svc = state.services.get(SERVICE)
    if svc is not None:
        own.update(ip for ip in (*svc.cluster_ips, svc.cluster_ip) if ip and ip != "None")
    crash: Problem | None = None
    for block in corefile.blocks:
        fwd = block.plugin("forward")
        if fwd is None:
            continue
        zone = block.zones[0]
        targets = forward_targets(fwd)
        resolved: list[tuple[str, str]] = []  # (as written, the address the query goes to)
        for t in targets:
            if t.startswith("/"):
                # CoreDNS runs with dnsPolicy Default: /etc/resolv.conf is the node's.
                resolved += [(f"{t} ({ns})", ns) for ns in config.upstream_nameservers] or [(t, "")]
            else:
                resolved.append((t, _host_of(t)))
        looping = [w for w, host in resolved if _is_loopback(host) or host in own]
        if looping:
            where = looping[0]
            if block.plugin("loop") is not None and crash is None:
                crash = Problem(
                    "CoreDNSForwardLoop", f"ConfigMap {CONFIGMAP}",
                    f'CoreDNS exits at start: plugin/loop: Loop (127.0.0.1:53 -> :53) detected for zone "{zone}" '
                    f"(line {fwd.line}: forward to {where} sends queries back to CoreDNS itself). The pods "
                    "crash-loop and every DNS query times out",
                    f"forward to a resolver outside the cluster (e.g. `forward . /etc/resolv.conf` with a node "
                    f"resolv.conf that names a real nameserver, or `forward . 8.8.8.8`): {EDIT}, then {RESTART}",
                    "all")
            elif block.plugin("loop") is None:
                why = f"forward to {where} sends the query back to CoreDNS itself (a forwarding loop)"
                failing.append((zone, why))
                problems.append(Problem(
                    "CoreDNSForwardLoop", f"ConfigMap {CONFIGMAP}",
                    f"line {fwd.line}: {why}: names under {zone} that the cluster does not serve get SERVFAIL",
                    f"forward to a resolver outside the cluster: {EDIT}, then {RESTART}", "external"))
            continue
        answers = [_answers_dns(state, host) for _, host in resolved]
        unknown = [w for (w, _), a in zip(resolved, answers, strict=True) if a is None]
        if unknown and not any(answers):
            # An address knetsim has no model of (AWS's VPC resolver 10.0.0.2 on a cluster read through
            # --kubeconfig, a corporate nameserver): it is no evidence of a failure, so queries are assumed
            # answered and the doctor says what it could not check.
            problems.append(Problem(
                "CoreDNSUpstreamUnknown", f"ConfigMap {CONFIGMAP}",
                f"line {fwd.line}: `forward {' '.join(fwd.args)}` sends names under {zone} to {', '.join(unknown)}, "
                "which neither the cluster nor knetsim's outside model knows: knetsim assumes it answers and "
                "cannot check that it does",
                f"name it in the cluster config's outside.hosts (with port 53/UDP) to have it simulated, or check "
                f"from a pod: kubectl run -it --rm dnscheck --image=busybox:1.36 --restart=Never -- nslookup "
                f"kubernetes.io {_host_of(unknown[0].split(' (')[0]) if not unknown[0].startswith('/') else ''}"
                .rstrip(), "external", "info"))
            continue
        if not any(answers):
            why = (f"no upstream of `forward {' '.join(fwd.args)}` answers ({', '.join(w for w, _ in resolved)}): "
                   "CoreDNS's forward has no healthy upstream")
            failing.append((zone, why))
            what = "every name outside the cluster" if zone == "." else f"every name under {zone}"
            problems.append(Problem(
                "CoreDNSUpstreamUnreachable", f"ConfigMap {CONFIGMAP}",
                f"line {fwd.line}: {why}: {what} gets SERVFAIL",
                f"forward to a nameserver the nodes reach ({', '.join(config.upstream_nameservers) or 'the node'}"
                f"'s, or /etc/resolv.conf): {EDIT}, then {RESTART}", "external"))
    domain = config.cluster_domain.lower().rstrip(".") + "."
    block = corefile.block_for(domain)
    hosts = block.plugin("hosts") if block is not None else None
    if hosts is not None and hosts.sub("fallthrough") is None and block is not None and not hosts.args[1:]:
        problems.append(Problem(
            "CoreDNSHostsWithoutFallthrough", f"ConfigMap {CONFIGMAP}",
            f"line {hosts.line}: the hosts plugin serves every name of {block.zones[0]} and has no `fallthrough`: "
            "it runs before kubernetes and forward, so every name it does not list, Service names included, "
            "gets SERVFAIL",
            f"add `fallthrough` inside the hosts block: {EDIT}, then {RESTART}", "cluster"))
        return crash
    if block is None or not _kubernetes_serves(block, domain):
        problems.append(Problem(
            "CoreDNSNoKubernetesZone", f"ConfigMap {CONFIGMAP}",
            f"no server block answers the cluster domain {domain} with the kubernetes plugin: Service names are "
            "forwarded upstream and come back NXDOMAIN",
            f"add `kubernetes {config.cluster_domain} in-addr.arpa ip6.arpa` to the `.:53` block: {EDIT}, then "
            f"{RESTART}", "cluster"))
    return crash


def kubernetes_zones(block: ServerBlock) -> tuple[str, ...]:
    k = block.plugin("kubernetes")
    if k is None:
        return ()
    zones = tuple(z.lower().rstrip(".") + "." for z in k.args) if k.args else block.zones
    return zones


def _kubernetes_serves(block: ServerBlock, domain: str) -> bool:
    return any(domain == z or domain.endswith("." + z) or z == "." for z in kubernetes_zones(block))


def _answers_dns(state: ClusterState, host: str) -> bool | None:
    """Does something answer DNS at ``host``: the node's nameservers, a public resolver of the outside, or a
    Service of the cluster with port 53. None: an address knetsim has no model of (not the cluster's, not a
    host of the outside model), of which it cannot say."""
    if not host or host in state.config.upstream_nameservers:
        return True  # "": a resolv.conf whose nameservers the cluster config does not say
    outside = state.config.outside.host_at(host)
    if outside is not None:
        return outside.listens(53, "UDP")
    svc = state.service_by_ip(host)
    if svc is not None:
        return any(p.port == 53 for p in svc.ports) and any(
            ep.ready is not False for es in state.slices_for(svc) for ep in es.endpoints)
    if state.pod_by_ip(host) is not None or state.node_by_ip(host) is not None or _in_known_ranges(state, host):
        return False  # the cluster's own address space, or documentation addresses: nothing answers there
    return None


# RFC 5737 and RFC 3849: addresses for documentation only, which no network routes to a server.
DOCUMENTATION_RANGES = ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")


def _in_known_ranges(state: ClusterState, host: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    cidrs = (*state.config.pod_cidrs, *state.config.service_cidrs, *DOCUMENTATION_RANGES)
    return any(address.version == net.version and address in net
               for net in (ipaddress.ip_network(c, strict=False) for c in cidrs if c))


__all__ = ["CONFIGMAP", "DEPLOYMENT", "SERVICE", "CoreDNS", "Problem", "coredns_of", "kubernetes_zones"]
