"""The check types a lab file can use; each grades one semantic criterion of the end state.

Every check answers with what it expected and what it found, in the cluster's own terms
(pods, addresses, ports, the hop that dropped a packet), never a position in a YAML list:
an equivalent answer written another way (matchExpressions instead of matchLabels, rules in
another order, one policy or three) gets the same marks.

Spec checks read the objects the API server returned (``Snapshot``). Traffic checks
(``trace``, ``route``, ``dns``) ask knetsim's simulation of those objects and are marked
``simulated``. Checks default to the lab's namespace; ``namespace:`` overrides it.

A lab grades only what happens in its own namespaces: a connection that works because of an
object elsewhere (an Ingress of another namespace claiming the lab's host) earns nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..ingress import resolve_class
from ..model.labels import Selector, closest_labels
from ..model.objects import DEFAULT_CLASS_ANNOTATION, INGRESS_CLASS_ANNOTATION
from ..network.trace import TraceInputError
from .model import Check, CriterionResult
from .snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class Context:
    snapshot: Snapshot
    namespace: str
    # Every namespace the lab creates: what it grades.
    namespaces: tuple[str, ...] = ()

    def owns(self, namespace: str) -> bool:
        return namespace in (self.namespaces or (self.namespace,))


@dataclass(frozen=True, slots=True)
class Verdict:
    description: str
    passed: bool
    expected: str
    found: str
    simulated: bool = False


CheckFn = Callable[[Context, Mapping[str, Any]], Verdict]
CHECKS: dict[str, CheckFn] = {}


def check(name: str) -> Callable[[CheckFn], CheckFn]:
    def register(fn: CheckFn) -> CheckFn:
        CHECKS[name] = fn
        return fn
    return register


def evaluate(ctx: Context, c: Check) -> CriterionResult:
    fn = CHECKS.get(c.type)
    if fn is None:
        raise KeyError(f"unknown check type {c.type!r} (known: {', '.join(sorted(CHECKS))})")
    v = fn(ctx, c.params)
    found = v.found
    if not v.passed and c.params.get("note"):
        found += f" — {str(c.params['note']).strip()}"
    return CriterionResult(c.type, str(c.params.get("description") or v.description), v.passed, v.expected, found,
                           c.points, v.simulated)


# --- helpers ----------------------------------------------------------------------------------


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return _meta(obj).get("labels") or {}


def _ns(ctx: Context, p: Mapping[str, Any]) -> str:
    return str(p.get("namespace") or ctx.namespace)


def _names(objs: list[Mapping[str, Any]]) -> str:
    return ", ".join(str(_meta(o).get("name")) for o in objs) or "none"


def live_pods(ctx: Context, ns: str) -> list[dict[str, Any]]:
    """Pods that count: not being deleted, not finished."""
    return [p for p in ctx.snapshot.items("Pod", ns)
            if not _meta(p).get("deletionTimestamp")
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]


def select(ctx: Context, ns: str, selector: str) -> list[dict[str, Any]]:
    sel = Selector.parse(selector)
    return [p for p in live_pods(ctx, ns) if sel.matches(_labels(p))]


def pod_ready(pod: Mapping[str, Any]) -> tuple[bool, str]:
    status = pod.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            if cond.get("status") == "True":
                return True, ""
            return False, str(cond.get("message") or cond.get("reason") or "Ready=False")
    return False, f"phase {status.get('phase') or 'Pending'}, no Ready condition"


def _service(ctx: Context, p: Mapping[str, Any]) -> tuple[str, str, dict[str, Any] | None, str]:
    ns, name = _ns(ctx, p), str(p["service"])
    svc = ctx.snapshot.get("Service", ns, name)
    missing = ""
    if svc is None:
        there = _names(ctx.snapshot.items("Service", ns))
        missing = f"no Service {name} in namespace {ns} (Services there: {there})"
    return ns, name, svc, missing


def _selector_text(svc: Mapping[str, Any]) -> str:
    sel = (svc.get("spec") or {}).get("selector") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(sel.items())) or "<none>"


def _service_port(svc: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str]:
    ports = (svc.get("spec") or {}).get("ports") or []
    want_port, want_name = p.get("port"), p.get("name")
    for sp in ports:
        if want_port is not None and sp.get("port") != want_port:
            continue
        if want_name is not None and sp.get("name") != want_name:
            continue
        return sp, ""
    listed = ", ".join(f"{sp.get('name') or '<unnamed>'} {sp.get('port')}/{sp.get('protocol', 'TCP')}"
                       for sp in ports) or "none"
    what = " named " + str(want_name) if want_name is not None else ""
    return None, f"no port {want_port if want_port is not None else ''}{what} (ports: {listed})".replace("  ", " ")


def resolve_target_port(pod: Mapping[str, Any], target: Any, protocol: str = "TCP") -> int | None:
    """A Service targetPort on one pod: a number as is, a name through the containers' named ports."""
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for c in (pod.get("spec") or {}).get("containers") or []:
        for cp in c.get("ports") or []:
            if cp.get("name") == target and cp.get("protocol", "TCP") == protocol:
                return int(cp["containerPort"])
    return None


def _container_ports(pod: Mapping[str, Any]) -> str:
    out = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        for cp in c.get("ports") or []:
            out.append(f"{cp.get('containerPort')}" + (f" ({cp['name']})" if cp.get("name") else ""))
    return ", ".join(out) or "none declared"


# --- Services ---------------------------------------------------------------------------------


@check("service")
def service_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    """A Service exists with the given type; optionally headless or an ExternalName target."""
    ns, name, svc, missing = _service(ctx, p)
    want = str(p.get("serviceType", "ClusterIP"))
    headless = bool(p.get("headless"))
    external = p.get("externalName")
    desc = f"Service {ns}/{name} has type {want}"
    expected = f"type {want}"
    if headless:
        desc += " and no cluster IP (headless)"
        expected += ", clusterIP None"
    if external:
        desc += f" answering a CNAME to {external}"
        expected += f", externalName {external}"
    if svc is None:
        return Verdict(desc, False, expected, missing)
    spec = svc.get("spec") or {}
    got_type = str(spec.get("type", "ClusterIP"))
    found = [f"type {got_type}"]
    ok = got_type == want
    if headless:
        cip = spec.get("clusterIP")
        found.append(f"clusterIP {cip}")
        ok = ok and cip == "None"
        if cip != "None":
            found[-1] += " (clusterIP is immutable: delete the Service and create it with clusterIP: None)"
    if external:
        got = spec.get("externalName")
        found.append(f"externalName {got}")
        ok = ok and str(got or "").rstrip(".") == str(external).rstrip(".")
    return Verdict(desc, ok, expected, ", ".join(found))


@check("selects")
def selects_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    """The Service's selector selects exactly the pods ``pods`` describes (a label selector)."""
    ns, name, svc, missing = _service(ctx, p)
    intended = select(ctx, ns, str(p["pods"]))
    desc = f"Service {ns}/{name} selects exactly the pods {p['pods']}"
    expected = f"the {len(intended)} pod(s) {p['pods']}: {_names(intended)}"
    if not intended:
        return Verdict(desc, False, f"pods {p['pods']} in {ns}",
                       f"no pod in {ns} has the labels {p['pods']} any more (pods: {_names(live_pods(ctx, ns))})")
    if svc is None:
        return Verdict(desc, False, expected, missing)
    raw = (svc.get("spec") or {}).get("selector") or {}
    if not raw:
        return Verdict(desc, False, expected, "the Service has no selector, so it selects no pod")
    sel = Selector.from_map(raw)
    chosen = [q for q in live_pods(ctx, ns) if sel.matches(_labels(q))]
    want = {_meta(q)["name"] for q in intended}
    got = {_meta(q)["name"] for q in chosen}
    if want == got:
        return Verdict(desc, True, expected, f"selector {_selector_text(svc)} selects {_names(chosen)}")
    if not chosen:
        found = f"selector {_selector_text(svc)} selects no pod in {ns}"
        near = closest_labels(raw, (_labels(q) for q in live_pods(ctx, ns)))
        if near:
            found += "; " + "; ".join(f"{w}: nearest existing label {n} ({how})" for w, n, how in near)
        return Verdict(desc, False, expected, found)
    parts = [f"selector {_selector_text(svc)} selects {_names(chosen)}"]
    if got - want:
        parts.append(f"{len(got - want)} pod(s) too many: {', '.join(sorted(got - want))}")
    if want - got:
        parts.append(f"misses {', '.join(sorted(want - got))}")
    return Verdict(desc, False, expected, "; ".join(parts))


@check("endpoints")
def endpoints_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    """The Service's EndpointSlices list the intended pods as ready (read from the API)."""
    ns, name, svc, missing = _service(ctx, p)
    intended = select(ctx, ns, str(p["pods"]))
    want = sorted(str((q.get("status") or {}).get("podIP")) for q in intended)
    desc = f"Service {ns}/{name} has a ready endpoint for each pod {p['pods']}"
    expected = f"{len(want)} ready address(es): {', '.join(want) or 'none'}"
    if svc is None:
        return Verdict(desc, False, expected, missing)
    ready: list[str] = []
    not_ready: list[tuple[str, str]] = []
    portless: list[str] = []
    has_ports = bool((svc.get("spec") or {}).get("ports"))
    for es in ctx.snapshot.items("EndpointSlice", ns):
        if _labels(es).get("kubernetes.io/service-name") != name:
            continue
        if has_ports and not es.get("ports"):
            # The controller still lists pods on which no targetPort resolves, in a slice
            # without ports: nothing can be forwarded to them.
            portless += [a for ep in es.get("endpoints") or [] for a in ep.get("addresses") or []]
            continue
        for ep in es.get("endpoints") or []:
            ok = (ep.get("conditions") or {}).get("ready") is not False
            ref = (ep.get("targetRef") or {}).get("name") or ""
            for a in ep.get("addresses") or []:
                if ok:
                    ready.append(a)
                else:
                    not_ready.append((a, ref))
    ready.sort()
    if want and ready == want:
        return Verdict(desc, True, expected, f"{len(ready)} ready: {', '.join(ready)}")
    found = f"{len(ready)} ready address(es)" + (f" ({', '.join(ready)})" if ready else "")
    if not_ready:
        reasons = []
        for addr, ref in sorted(not_ready):
            pod = ctx.snapshot.get("Pod", ns, ref) if ref else None
            why = pod_ready(pod)[1] if pod else "not ready"
            reasons.append(f"{addr} ({ref or 'pod'}: {why})")
        found += f", {len(not_ready)} not ready: " + "; ".join(reasons)
    if portless:
        found += (f", {len(portless)} without any port ({', '.join(sorted(portless))}): the Service's targetPort "
                  "does not resolve on those pods")
    elif not ready and not not_ready:
        found += f"; selector {_selector_text(svc)}"
    return Verdict(desc, False, expected, found)


@check("port")
def port_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    """A Service port exists and its targetPort resolves, on every selected pod, to ``targetPort``."""
    ns, name, svc, missing = _service(ctx, p)
    want_target = int(p["targetPort"])
    label = f"port {p.get('port')}" + (f" named {p['name']}" if p.get("name") else "")
    desc = f"Service {ns}/{name} {label} reaches the pods' container port {want_target}"
    expected = f"{label} → container port {want_target} on every selected pod"
    if p.get("named"):
        desc += " through a named targetPort"
        expected += ", targetPort given by name"
    if svc is None:
        return Verdict(desc, False, expected, missing)
    sp, why = _service_port(svc, p)
    if sp is None:
        return Verdict(desc, False, expected, why)
    target = sp.get("targetPort", sp.get("port"))
    protocol = str(sp.get("protocol", "TCP"))
    raw = (svc.get("spec") or {}).get("selector") or {}
    pods = [q for q in live_pods(ctx, ns) if raw and Selector.from_map(raw).matches(_labels(q))]
    if not pods:
        return Verdict(desc, False, expected, f"targetPort {target}, but the Service selects no pod to resolve it on")
    wrong = []
    for q in pods:
        got = resolve_target_port(q, target, protocol)
        if got != want_target:
            what = f"does not declare a port named {target!r}" if got is None else f"resolves to {got}"
            wrong.append(f"{_meta(q)['name']} {what} (container ports: {_container_ports(q)})")
    found = f"targetPort {target}"
    if wrong:
        return Verdict(desc, False, expected, found + ": " + "; ".join(wrong))
    if p.get("named") and not (isinstance(target, str) and not target.isdigit()):
        return Verdict(desc, False, expected, found + " is a number, not the pods' port name")
    return Verdict(desc, True, expected, found + f" → {want_target} on {len(pods)} pod(s)")


@check("node-port")
def node_port_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    ns, name, svc, missing = _service(ctx, p)
    desc = f"Service {ns}/{name} port {p['port']} is open on every node at {p['nodePort']}"
    expected = f"nodePort {p['nodePort']}"
    if svc is None:
        return Verdict(desc, False, expected, missing)
    sp, why = _service_port(svc, p)
    if sp is None:
        return Verdict(desc, False, expected, why)
    got = sp.get("nodePort")
    return Verdict(desc, got == p["nodePort"], expected, f"nodePort {got}" if got else "no nodePort")


# --- traffic (simulated) -------------------------------------------------------------------


def _outcome_text(t: Any) -> str:
    hop = t.failing_hop
    text = t.outcome
    if hop is not None:
        text += f" at {hop.layer}: {hop.detail}"
    elif t.backend is not None:
        text += f" to {t.backend.pod} {t.backend.ip}:{t.backend.port}"
    return text


def _worker_ip(ctx: Context) -> str:
    """The first node pods can run on (kind's control plane is tainted): where a learner would curl a NodePort."""
    nodes = sorted(ctx.snapshot.cluster.state.nodes.values(), key=lambda n: n.name)
    for n in nodes:
        if "node-role.kubernetes.io/control-plane" not in n.labels:
            return str(n.internal_ip)
    return str(nodes[0].internal_ip) if nodes else "127.0.0.1"


def _outside_the_lab(ctx: Context, t: Any) -> str:
    """Why a connection proves nothing for the lab: it reached a pod of another namespace (through that
    namespace's Ingress, say), so the lab's own objects did not carry it. Empty when they did."""
    if t.backend is None:
        return ""
    namespace = t.backend.pod.partition("/")[0]
    if ctx.owns(namespace):
        return ""
    route = next((h.to_dict().get("route") or {} for h in t.hops if h.layer == "ingress"), {})
    ingress = (route.get("match") or {}).get("ingress")
    via = f"through Ingress {ingress}" if ingress else f"to a pod of namespace {namespace}"
    mine = ", ".join(ctx.namespaces or (ctx.namespace,))
    return f"{via}, outside the lab's namespaces ({mine}): labs grade only their own objects"


@check("trace")
def trace_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    """A connection from a pod (``from``: ns/pod) to a target connects, or must not (``outcome``)."""
    src, target, want = str(p["from"]), str(p["to"]), str(p.get("outcome", "connected"))
    if "{node}" in target:
        target = target.replace("{node}", _worker_ip(ctx))
    if "/" not in src and src != "external":
        src = f"{ctx.namespace}/{src}"
    verb = "connects to" if want == "connected" else ("is dropped on the way to" if want == "timeout"
                                                       else f"ends {want} towards")
    desc = f"{src} {verb} {target}"
    try:
        t = ctx.snapshot.cluster.trace(src, target, protocol=str(p.get("protocol", "TCP")))
    except TraceInputError as exc:
        return Verdict(desc, False, want, f"cannot trace: {exc}", True)
    found = _outcome_text(t)
    ok = t.outcome == want
    elsewhere = _outside_the_lab(ctx, t)
    if ok and want == "connected" and elsewhere:
        return Verdict(desc, False, want, f"{found} — but {elsewhere}", True)
    status = t.reply.status if t.reply is not None else None
    if ok and want == "connected" and status is not None and status >= 400:
        # The TCP connection worked but nothing served the request: the Ingress controller's
        # own 404/503, not the application.
        ok = False
        found = f"connected, but HTTP {status}: {t.reply.body.strip().splitlines()[0] if t.reply.body.strip() else ''}"
        found = found.rstrip(": ")
    if not ok:
        found += _doctor_says(ctx, t, want)
    return Verdict(desc, ok, want, found, True)


_POLICY_NAMED = re.compile(r"NetworkPolicy ([a-z0-9][-a-z0-9.]*/[a-z0-9][-a-z0-9.]*)")
# What the policy lint says of a policy that explains a wrong answer (PodsNotIsolated is about a namespace).
_EXPLAINING = ("AndOrReadingsDiffer", "PeerSelectsNothing", "NamespaceSelectorMatchesNothing", "PolicySelectsNothing",
               "ServicePortInPolicy", "DNSEgressBlocked", "DNSIngressBlocked")


def _lint(ctx: Context) -> list[Any]:
    """The policy lint of the snapshot, once per snapshot (every trace criterion may ask)."""
    cached = ctx.snapshot.__dict__.get("_policy_lint")
    if cached is None:
        from ..policy.lint import lint

        cached = ctx.snapshot.__dict__["_policy_lint"] = lint(ctx.snapshot.cluster.state)
    return cached


def _doctor_says(ctx: Context, t: Any, want: str) -> str:
    """What the doctor diagnoses about the policies behind a wrong answer, beyond the trace's "no ingress rule
    matches": an AND written for an OR, a namespaceSelector on a label no namespace has, a default deny whose
    podSelector leaves the pod out."""
    hop = t.failing_hop
    if hop is not None and hop.layer in ("policy", "dns"):
        named = set(_POLICY_NAMED.findall(hop.detail))
        said = [f for f in _lint(ctx) if f.code in _EXPLAINING and f.subject.split(" ", 1)[-1] in named]
        if said:
            return "; the doctor: " + "; ".join(f"{f.subject}: {f.message}" for f in said[:2])
        return ""
    if t.outcome != "connected" or want == "connected" or t.backend is None:
        return ""
    state = ctx.snapshot.cluster.state
    pod = state.pods.get(t.backend.pod)
    if pod is None:
        return ""
    policies = [p for p in state.network_policies.values() if p.namespace == pod.namespace]
    if any(p.pod_selector.matches(pod.labels) for p in policies):
        return ""
    # A default deny (no ingress rules) whose podSelector is not {}: the pods it leaves out accept anything.
    narrow = [p for p in policies if "Ingress" in p.policy_types and not p.ingress and not p.pod_selector.empty]
    text = f"; the doctor: {pod.key} is selected by no NetworkPolicy, so it accepts every connection"
    if narrow:
        text += (f"; NetworkPolicy {narrow[0].key} allows nothing in but selects only "
                 f"{narrow[0].pod_selector.formatted()}: a default deny selects every pod of the namespace with "
                 "podSelector: {}")
    return text


@check("route")
def route_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    """An HTTP request for host+path is routed by the Ingress controller to a Service and port."""
    host, path = str(p["host"]), str(p.get("path", "/"))
    cls = p.get("class")
    ns = _ns(ctx, p)
    via = f" through class {cls}" if cls else ""
    if p.get("service"):
        want = f"{ns}/{p['service']}"
        desc = f"http://{host}{path}{via} is routed to Service {want} port {p['port']}"
        expected = f"Service {want} port {p['port']}"
    else:
        want = f"{ns}/{p['not_service']}"
        desc = f"http://{host}{path}{via} does not reach Service {want}"
        expected = f"not Service {want}"
    r = ctx.snapshot.cluster.route(host, path, class_name=str(cls) if cls else None)
    backend = r.backend
    got_svc = backend.service if backend is not None and r.routed else None
    if r.match is not None and r.match.path is not None:
        how = f" (Ingress {r.match.ingress}, path {r.match.path} {r.match.path_type})"
    elif r.match is not None:
        how = f" (Ingress {r.match.ingress}, defaultBackend)"
    else:
        how = ""
    if got_svc is not None:
        found = f"Service {got_svc} port {backend.port}{how}"  # type: ignore[union-attr]
    else:
        found = r.summary
    if p.get("service"):
        ok = got_svc == want and backend is not None and backend.port == p["port"]
    else:
        ok = got_svc != want
    return Verdict(desc, ok, expected, found, True)


@check("dns")
def dns_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    """A name, looked up from a pod, answers the intended pods' IPs (``pods``) or a CNAME (``cname``)."""
    src, name = str(p["from"]), str(p["name"])
    if "/" not in src:
        src = f"{ctx.namespace}/{src}"
    ns = _ns(ctx, p)
    if p.get("cname"):
        want_cname = str(p["cname"]).rstrip(".")
        desc = f"{name}, looked up from {src}, is a CNAME to {want_cname}"
        expected = f"CNAME {want_cname}"
    else:
        intended = [q for q in select(ctx, ns, str(p["pods"])) if pod_ready(q)[0]]
        want_ips = sorted(str((q.get("status") or {}).get("podIP")) for q in intended)
        desc = f"{name}, looked up from {src}, answers the IPs of the pods {p['pods']}"
        expected = f"A {', '.join(want_ips) or 'records of the ready pods'}"
    try:
        res = ctx.snapshot.cluster.dns(name, src, "A")
    except TraceInputError as exc:
        return Verdict(desc, False, expected, f"cannot resolve: {exc}", True)
    answer = res.answer
    if answer is None or res.outcome in ("nxdomain", "nodata", "servfail", "timeout"):
        tried = ", ".join(q.name for q in res.queries)
        return Verdict(desc, False, expected, f"{res.outcome} (queries: {tried})", True)
    if p.get("cname"):
        cnames = [v.rstrip(".") for v in answer.values("CNAME")]
        found = f"CNAME {', '.join(cnames)}" if cnames else f"{res.outcome}: A {', '.join(answer.values('A')) or '-'}"
        return Verdict(desc, want_cname in cnames, expected, found, True)
    got = sorted(answer.values("A"))
    found = f"A {', '.join(got)}" if got else f"{res.outcome}: {res.explanation}"
    return Verdict(desc, bool(want_ips) and got == want_ips, expected, found, True)


# --- Pods ----------------------------------------------------------------------------------


@check("pods-ready")
def pods_ready_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    ns = _ns(ctx, p)
    pods = select(ctx, ns, str(p["pods"]))
    count = int(p.get("count", 1))
    desc = f"{count} pod(s) {p['pods']} in {ns} are Ready"
    expected = f"{count} Ready pod(s)"
    ready = [q for q in pods if pod_ready(q)[0]]
    if len(ready) == count == len(pods):
        return Verdict(desc, True, expected, f"{len(ready)} Ready: {_names(ready)}")
    parts = [f"{len(ready)} of {len(pods)} Ready"]
    for q in pods:
        ok, why = pod_ready(q)
        if not ok:
            parts.append(f"{_meta(q)['name']}: {why}")
    return Verdict(desc, False, expected, "; ".join(parts))


# --- Ingress classes -------------------------------------------------------------------------


@check("ingress-class")
def ingress_class_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    """An Ingress is claimed by the controller ``controller`` (optionally through ``via``) and served."""
    ns, name = _ns(ctx, p), str(p["ingress"])
    controller = str(p["controller"])
    via = p.get("via")
    desc = f"Ingress {ns}/{name} is served by the controller {controller}"
    expected = f"claimed by {controller}" + (f" through {via}" if via else "")
    if via:
        desc += f" through {via}"
    ing = ctx.snapshot.cluster.state.ingresses.get(f"{ns}/{name}")
    if ing is None:
        there = _names(ctx.snapshot.items("Ingress", ns))
        return Verdict(desc, False, expected, f"no Ingress {name} in namespace {ns} (Ingresses there: {there})", True)
    res = resolve_class(ctx.snapshot.cluster.state, ing)
    ok = res.claimed and res.serving and res.controller == controller and (not via or res.source == via)
    found = res.reason
    if res.claimed and via and res.source != via:
        found += f" (through {res.source}, not {via})"
    return Verdict(desc, ok, expected, found, True)


@check("ingressclass")
def ingressclass_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    """An IngressClass exists for a controller; ``default: true`` also wants it to be the only default."""
    name, controller = str(p["name"]), str(p["controller"])
    default = p.get("default")
    desc = f"IngressClass {name} names the controller {controller}"
    expected = f"spec.controller {controller}"
    if default:
        desc = f"IngressClass {name} is the cluster's only default class"
        expected = f'annotation {DEFAULT_CLASS_ANNOTATION}: "true" on {name} and on no other class'
    ic = ctx.snapshot.get("IngressClass", None, name)
    if ic is None:
        return Verdict(desc, False, expected, f"no IngressClass {name} (classes: "
                       f"{_names(ctx.snapshot.items('IngressClass'))})")
    got = (ic.get("spec") or {}).get("controller")
    if got != controller:
        return Verdict(desc, False, expected, f"spec.controller {got}")
    if not default:
        return Verdict(desc, True, expected, f"spec.controller {got}")
    defaults = [c for c in ctx.snapshot.items("IngressClass")
                if (_meta(c).get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"]
    names = sorted(str(_meta(c)["name"]) for c in defaults)
    if names == [name]:
        return Verdict(desc, True, expected, f"default classes: {name}")
    if name not in names:
        value = (_meta(ic).get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION)
        found = f"{name} is not default (annotation {DEFAULT_CLASS_ANNOTATION}: {value!r})"
        if value not in (None, "true"):
            found += ' — only the exact string "true" counts'
        return Verdict(desc, False, expected, found + f"; default classes: {', '.join(names) or 'none'}")
    return Verdict(desc, False, expected, f"{len(names)} default classes: {', '.join(names)} — an Ingress "
                   "created without a class gets the newest of them (older API servers reject it)")


@check("no-class-annotation")
def no_class_annotation_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    ns, name = _ns(ctx, p), str(p["ingress"])
    desc = f"Ingress {ns}/{name} no longer uses the deprecated annotation {INGRESS_CLASS_ANNOTATION}"
    ing = ctx.snapshot.get("Ingress", ns, name)
    if ing is None:
        return Verdict(desc, False, "no annotation", f"no Ingress {name} in namespace {ns}")
    value = (_meta(ing).get("annotations") or {}).get(INGRESS_CLASS_ANNOTATION)
    if value is None:
        return Verdict(desc, True, "no annotation", "no annotation")
    return Verdict(desc, False, "no annotation", f"{INGRESS_CLASS_ANNOTATION}: {value}")


@check("ingressclass-served")
def ingressclass_served_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    """A running, ready Ingress controller implements the IngressClass (its --controller-class matches)."""
    from ..ingress import running_controllers

    name = str(p["name"])
    desc = f"a ready Ingress controller implements IngressClass {name}"
    ic = ctx.snapshot.cluster.state.ingress_classes.get(name)
    if ic is None:
        return Verdict(desc, False, f"IngressClass {name} with a running controller", f"no IngressClass {name}", True)
    controllers = running_controllers(ctx.snapshot.cluster.state)
    expected = f"a ready controller started with --controller-class={ic.controller}"
    matching = [c for c in controllers if c.controller == ic.controller]
    if not matching:
        running = ", ".join(c.controller for c in controllers) or "none"
        return Verdict(desc, False, expected, f"spec.controller {ic.controller}; running controllers: {running}", True)
    ready = [pod.pod for c in matching for pod in c.ready_pods]
    if not ready:
        return Verdict(desc, False, expected, f"controller {ic.controller} has no ready pod", True)
    return Verdict(desc, True, expected, f"served by {', '.join(ready)}", True)


# --- Gateway API ---------------------------------------------------------------------------------
# Status criteria read what the Gateway controller wrote (the API's objects); traffic criteria send
# requests through knetsim's simulation of the Gateway, as `knetsim route --gateway` does.


def _condition_of(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == type_), None)


@check("gateway")
def gateway_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    """A Gateway of class ``class`` with a ``protocol`` listener on ``port``, Programmed by its controller."""
    ns, name = _ns(ctx, p), str(p["name"])
    port, protocol = int(p.get("port", 80)), str(p.get("protocol", "HTTP"))
    desc = f"Gateway {ns}/{name} (class {p['class']}) listens on {port}/{protocol} and is Programmed"
    expected = f"class {p['class']}, listener {port}/{protocol}, Programmed True"
    gw = ctx.snapshot.get("Gateway", ns, name)
    if gw is None:
        return Verdict(desc, False, expected, f"no Gateway {name} in {ns} (Gateways: "
                       f"{_names(ctx.snapshot.items('Gateway', ns))})")
    spec = gw.get("spec") or {}
    if spec.get("gatewayClassName") != p["class"]:
        return Verdict(desc, False, expected, f"gatewayClassName {spec.get('gatewayClassName')!r}")
    listeners = spec.get("listeners") or []
    if not any(li.get("port") == port and li.get("protocol") == protocol for li in listeners):
        have = ", ".join(f"{li.get('name')} {li.get('port')}/{li.get('protocol')}" for li in listeners) or "none"
        return Verdict(desc, False, expected, f"listeners: {have}")
    programmed = _condition_of(gw, "Programmed")
    if programmed is None or programmed.get("status") != "True":
        why = f"{programmed.get('reason')}: {programmed.get('message')}" if programmed else "no status yet"
        return Verdict(desc, False, expected, f"Programmed is not True ({why})")
    addresses = ", ".join(str(a.get("value")) for a in (gw.get("status") or {}).get("addresses") or [])
    return Verdict(desc, True, expected, f"Programmed True, address {addresses or 'none'}")


@check("httproute")
def httproute_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    """An HTTPRoute the Gateway ``gateway`` accepted, with every reference resolved (as its status says)."""
    ns, name = _ns(ctx, p), str(p["name"])
    gateway = str(p["gateway"])
    desc = f"HTTPRoute {ns}/{name} is Accepted by Gateway {gateway} with all references resolved"
    expected = "Accepted True, ResolvedRefs True"
    rt = ctx.snapshot.get("HTTPRoute", ns, name)
    if rt is None:
        return Verdict(desc, False, expected, f"no HTTPRoute {name} in {ns} (HTTPRoutes: "
                       f"{_names(ctx.snapshot.items('HTTPRoute', ns))})")
    parents = [q for q in (rt.get("status") or {}).get("parents") or []
               if (q.get("parentRef") or {}).get("name") == gateway]
    if not parents:
        refs = [(q.get("name")) for q in (rt.get("spec") or {}).get("parentRefs") or []]
        return Verdict(desc, False, expected, f"no status from Gateway {gateway} (parentRefs: {refs or 'none'})")
    conds = {c.get("type"): c for c in parents[0].get("conditions") or []}
    bad = [f"{t} {c.get('status')} ({c.get('reason')}: {c.get('message')})" for t, c in conds.items()
           if t in ("Accepted", "ResolvedRefs") and c.get("status") != "True"]
    if bad or set(conds) < {"Accepted", "ResolvedRefs"}:
        return Verdict(desc, False, expected, "; ".join(bad) or f"conditions: {', '.join(conds) or 'none'}")
    return Verdict(desc, True, expected, "Accepted True, ResolvedRefs True")


def _gateway_request(ctx: Context, p: Mapping[str, Any]) -> tuple[str, Any]:
    from ..gateway import request_from

    headers = tuple((str(k), str(v)) for k, v in (p.get("headers") or {}).items())
    gw = str(p["gateway"])
    return (gw if "/" in gw else f"{ctx.namespace}/{gw}",
            request_from(str(p["host"]), str(p.get("path", "/")), method=str(p.get("method", "GET")), headers=headers))


@check("gateway-route")
def gateway_route_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    """A request through a Gateway reaches Service ``service`` port ``port`` (or gets ``status``)."""
    from ..gateway import GatewayRouteError, route

    gateway, request = _gateway_request(ctx, p)
    extra = " with " + ", ".join(f"{n}: {v}" for n, v in request.headers) if request.headers else ""
    ns = _ns(ctx, p)
    if p.get("service"):
        svc = p["service"] if "/" in str(p["service"]) else f"{ns}/{p['service']}"
        desc = f"{request.method} {request.url}{extra} through Gateway {gateway} reaches Service {svc} port {p['port']}"
        expected = f"Service {svc} port {p['port']}"
    else:
        svc = None
        desc = f"{request.method} {request.url}{extra} through Gateway {gateway} gets HTTP {p['status']}"
        expected = f"HTTP {p['status']}"
    try:
        r = route(ctx.snapshot.cluster.state, gateway, request, explain=False)
    except GatewayRouteError as exc:
        return Verdict(desc, False, expected, str(exc), True)
    if svc is not None:
        ok = r.proxied and r.backend is not None and r.backend.service == svc and r.backend.port == p["port"]
        found = f"Service {r.backend.service} port {r.backend.port} ({r.summary})" if r.proxied and r.backend \
            else r.summary
        return Verdict(desc, ok, expected, found, True)
    return Verdict(desc, r.http_status == p["status"], expected, r.summary, True)


@check("gateway-split")
def gateway_split_check(ctx: Context, p: Mapping[str, Any]) -> Verdict:
    """Traffic to a host through a Gateway splits between Services by weight (``shares``: service → fraction)."""
    from ..gateway import GatewayRouteError, route

    gateway, base = _gateway_request(ctx, p)
    ns = _ns(ctx, p)
    shares = {(s if "/" in s else f"{ns}/{s}"): float(v) for s, v in (p["shares"] or {}).items()}
    samples = int(p.get("samples", 1000))
    desc = (f"requests to {base.url} through Gateway {gateway} split "
            + ", ".join(f"{s} {v:.0%}" for s, v in shares.items()))
    expected = ", ".join(f"{s} {v:.0%}" for s, v in shares.items())
    counts: dict[str, int] = {}
    try:
        for i in range(samples):
            req = base.__class__(base.host, f"{base.path}{'&' if '?' in base.path else '?'}n={i}", base.method,
                                 base.scheme, base.port, base.headers)
            r = route(ctx.snapshot.cluster.state, gateway, req, explain=False)
            key = r.backend.service if r.proxied and r.backend else f"HTTP {r.http_status}"
            counts[key] = counts.get(key, 0) + 1
    except GatewayRouteError as exc:
        return Verdict(desc, False, expected, str(exc), True)
    found = ", ".join(f"{k} {v / samples:.0%}" for k, v in sorted(counts.items()))
    tolerance = float(p.get("tolerance", 0.05))
    ok = set(counts) <= set(shares) and all(abs(counts.get(s, 0) / samples - v) <= tolerance
                                            for s, v in shares.items())
    return Verdict(desc, ok, expected, f"{found} of {samples} requests", True)
