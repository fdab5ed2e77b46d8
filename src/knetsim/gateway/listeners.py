"""Listeners as the controller judges them: one per Gateway listener or ListenerSet entry.

After Envoy Gateway's ``ProcessListeners`` (``internal/gatewayapi/listener.go``, ``validate.go``), in
its three phases:

1. each listener on its own (``validate``): the allowedRoutes namespace selector, the protocol and the
   route kinds it supports (``supportedKinds``; HTTP/HTTPS: HTTPRoute, GRPCRoute; TLS Passthrough:
   TLSRoute; TLS Terminate: TCPRoute, TLSRoute; TCP: TCPRoute; UDP: UDPRoute), the TLS block per
   protocol with its certificate references (``kubernetes.io/tls`` Secrets, cross-namespace through a
   ReferenceGrant, read and checked by ``certs.serving_pair``), no hostname on TCP/UDP, and the
   Gateway's client-certificate validation for the listener's port;
2. conflicts between the valid ones (``conflicts``): protocols on one port (HTTPS and TLS share the
   TLS stack, UDP lives beside anything), hostnames on one port, one TCP and one UDP listener per
   port — the Gateway's own listeners win over a ListenerSet's, an older ListenerSet over a newer;
3. the closing conditions (``finish``): a listener without problems is Programmed, Accepted and
   ResolvedRefs; one whose only problem is a certificate is Accepted but not Programmed.

Then, among the HTTPS listeners of a Gateway, overlapping hostnames and certificate names get
``OverlappingTLSConfig`` (``overlapping_tls``), as clients may coalesce HTTP/2 connections there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..cluster.state import ClusterState
from ..model.gatewayapi import GROUP, Gateway, Listener, ListenerSet, RouteGroupKind
from ..model.labels import Selector
from ..model.objects import Object
from . import certs, hostnames
from .conditions import Conditions, Reason, Status, Type
from .grants import ReferenceFrom, ReferenceTo, reference_permitted

PROTOCOLS = ("HTTP", "HTTPS", "TLS", "TCP", "UDP")


def route_kinds_for(protocol: str, tls_mode: str | None) -> tuple[str, ...]:
    """The route kinds a listener of ``protocol`` serves (``allowedRouteKindsForProtocol``)."""
    if protocol in ("HTTP", "HTTPS"):
        return ("HTTPRoute", "GRPCRoute")
    if protocol == "TLS":
        return ("TLSRoute",) if tls_mode == "Passthrough" else ("TCPRoute", "TLSRoute")
    if protocol == "TCP":
        return ("TCPRoute",)
    if protocol == "UDP":
        return ("UDPRoute",)
    return ()


@dataclass(frozen=True, slots=True)
class FrontendValidation:
    """The client certificates a TLS-terminating listener asks for (Gateway ``spec.tls.frontend``)."""

    cas: tuple[Any, ...]  # x509.Certificate trust anchors
    mode: str  # AllowValidOnly | AllowInsecureFallback
    source: str  # "spec.tls.frontend.default.validation", ...
    error: str | None = None  # the CA references could not be resolved
    error_reason: str | None = None


@dataclass(slots=True)
class ListenerContext:
    """One listener, with the conditions it gets and the routes attached to it (filled by ``translate``)."""

    listener: Listener
    gateway: Gateway  # the Gateway the listener serves on
    listener_set: ListenerSet | None = None  # the ListenerSet that declares it, if any
    supported_kinds: list[RouteGroupKind] = field(default_factory=list)
    conditions: Conditions = field(default_factory=Conditions)
    attached_routes: int = 0
    certificates: list[certs.ServingCertificate] = field(default_factory=list)
    frontend: FrontendValidation | None = None
    namespace_selector: Selector | None = None
    spec_valid: bool = True
    protocol_conflicted: bool = False
    # Routing tables, filled by translate (rows of RouteEntry, GRPCEntry, StreamEntry).
    entries: list[Any] = field(default_factory=list)
    grpc_entries: list[Any] = field(default_factory=list)
    streams: list[Any] = field(default_factory=list)
    _index: tuple[dict[str, list[int]], list[tuple[str, int]], list[int]] | None = None

    @property
    def name(self) -> str:
        return self.listener.name

    @property
    def protocol(self) -> str:
        return self.listener.protocol

    @property
    def port(self) -> int | None:
        return self.listener.port

    @property
    def hostname(self) -> str | None:
        return self.listener.hostname

    @property
    def owner(self) -> Object:
        return self.listener_set if self.listener_set is not None else self.gateway

    @property
    def namespace(self) -> str:
        """Where the listener is declared: its routes' ``Same`` namespace and its Secrets' default namespace."""
        return self.owner.namespace

    @property
    def from_listener_set(self) -> bool:
        return self.listener_set is not None

    @property
    def display(self) -> str:
        """``ns/owner/listener``, as Envoy Gateway names listeners in conflict messages."""
        return f"{self.owner.namespace}/{self.owner.name}/{self.name}"

    @property
    def label(self) -> str:
        """How results name the listener: its name on the Gateway, ``ns/set/listener`` from a ListenerSet (whose
        listener names may repeat the Gateway's)."""
        return self.display if self.listener_set is not None else self.name

    @property
    def programmed(self) -> bool:
        return self.conditions.is_true(Type.PROGRAMMED)

    @property
    def terminates_tls(self) -> bool:
        return self.protocol == "HTTPS" or (self.protocol == "TLS" and self.listener.tls_mode != "Passthrough")

    def allows_kind(self, kind: str) -> bool:
        return any(k.group == GROUP and k.kind == kind for k in self.supported_kinds)

    def allows_namespace(self, state: ClusterState, namespace: str) -> bool:
        how = self.listener.namespaces_from
        if how == "All":
            return True
        if how == "Selector":
            return self.namespace_selector is not None and self.namespace_selector.matches(
                state.namespace_labels(namespace))
        return namespace == self.namespace  # Same (and any value the schema would have refused)

    def entries_for(self, host: str) -> list[Any]:
        """The HTTPRoute entries whose hostnames may match ``host`` (normalized), in table order.

        Indexed once (exact names, wildcard suffixes, entries for every host), so a Gateway with a
        thousand routes examines only the few that name the request's host.
        """
        if self._index is None:
            exact: dict[str, list[int]] = {}
            wild: list[tuple[str, int]] = []
            anyhost: list[int] = []
            for i, e in enumerate(self.entries):
                if not e.hostnames:
                    anyhost.append(i)
                for h in dict.fromkeys(e.hostnames):
                    if hostnames.is_wildcard(h):
                        wild.append((h, i))
                    else:
                        exact.setdefault(h, []).append(i)
            self._index = (exact, wild, anyhost)
        exact, wild, anyhost = self._index
        found = {*exact.get(host, ()), *anyhost, *(i for h, i in wild if hostnames.matches(h, host))}
        return [self.entries[i] for i in sorted(found)]


def parse_selector(raw: Mapping[str, Any]) -> tuple[Selector | None, str | None]:
    """A LabelSelector, or why it cannot be one (a malformed selector makes the listener invalid)."""
    try:
        return Selector.from_label_selector(raw), None
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        return None, f"{type(exc).__name__}: {exc}"


# --- phase 1: each listener on its own ----------------------------------------------------------


def validate(state: ClusterState, lc: ListenerContext, now: datetime) -> None:
    """``validateListenerSpec``: sets the listener's problem conditions, its supported kinds and spec_valid."""
    valid = _allowed_namespaces(lc)
    listener = lc.listener
    if listener.protocol in PROTOCOLS:
        if not _allowed_routes(lc, route_kinds_for(listener.protocol, listener.tls_mode)):
            valid = False
    else:
        valid = False
        lc.supported_kinds = []
        lc.conditions.set(Type.ACCEPTED, False, Reason.UNSUPPORTED_PROTOCOL,
                          f"Protocol {listener.protocol} is unsupported, must be HTTP, HTTPS, TCP or UDP.")
    if not _tls_configuration(state, lc, now):
        valid = False
    if listener.protocol in ("TCP", "UDP") and listener.hostname is not None:
        lc.conditions.set(Type.PROGRAMMED, False, Reason.INVALID,
                          f"Listener must not have hostname set when protocol is {listener.protocol}.")
        valid = False
    lc.spec_valid = valid


def _allowed_namespaces(lc: ListenerContext) -> bool:
    if lc.listener.namespaces_from != "Selector":
        return True
    if lc.listener.namespace_selector is None:
        lc.conditions.set(Type.PROGRAMMED, False, Reason.INVALID,
                          "The allowedRoutes.namespaces.selector field must be specified when "
                          "allowedRoutes.namespaces.from is set to \"Selector\".")
        return False
    selector, problem = parse_selector(lc.listener.namespace_selector)
    if selector is None:
        lc.conditions.set(Type.PROGRAMMED, False, Reason.INVALID,
                          f"The allowedRoutes.namespaces.selector could not be parsed: {problem}.")
        return False
    lc.namespace_selector = selector
    return True


def _allowed_routes(lc: ListenerContext, kinds: tuple[str, ...]) -> bool:
    listener = lc.listener
    if not listener.kinds:
        lc.supported_kinds = [RouteGroupKind(GROUP, k) for k in kinds]
        return True
    valid = True
    supported = []
    for k in listener.kinds:
        if k.group != GROUP:
            lc.conditions.set(Type.RESOLVED_REFS, False, Reason.INVALID_ROUTE_KINDS,
                              f"Group is not supported, group must be {GROUP}")
            valid = False
        elif k.kind in kinds:
            supported.append(k)
    for k in listener.kinds:
        if k.group == GROUP and k.kind not in kinds:
            lc.conditions.set(Type.RESOLVED_REFS, False, Reason.INVALID_ROUTE_KINDS,
                              f"{k.kind} is not supported, kind must be one of [{' '.join(kinds)}]")
            valid = False
    lc.supported_kinds = supported
    return valid


def _tls_configuration(state: ClusterState, lc: ListenerContext, now: datetime) -> bool:
    """``validateTLSConfiguration``: the TLS block each protocol must or must not have."""
    listener, cond = lc.listener, lc.conditions
    protocol = listener.protocol
    valid = True
    if protocol in ("HTTP", "TCP", "UDP"):
        if listener.tls_mode is not None:
            cond.set(Type.PROGRAMMED, False, Reason.INVALID,
                     f"Listener must not have TLS set when protocol is {protocol}.")
            valid = False
    elif protocol == "HTTPS":
        if listener.tls_mode is None:
            cond.set(Type.PROGRAMMED, False, Reason.INVALID, f"Listener must have TLS set when protocol is {protocol}.")
            valid = False
        elif listener.tls_mode != "Terminate":
            cond.set(Type.PROGRAMMED, False, "UnsupportedTLSMode",
                     f"TLS {listener.tls_mode} mode is not supported, TLS mode must be Terminate.")
            valid = False
        elif not _certificates(state, lc, now):
            valid = False
    elif protocol == "TLS":
        if listener.tls_mode is None:
            cond.set(Type.PROGRAMMED, False, Reason.INVALID, f"Listener must have TLS set when protocol is {protocol}.")
            valid = False
        elif listener.tls_mode == "Passthrough" and listener.certificate_refs:
            cond.set(Type.PROGRAMMED, False, Reason.INVALID,
                     "Listener must not have TLS certificate refs set for TLS mode Passthrough.")
            valid = False
        elif listener.tls_mode == "Terminate":
            if not listener.certificate_refs:
                cond.set(Type.PROGRAMMED, False, Reason.INVALID,
                         "Listener must have TLS certificate refs set for TLS mode Terminate.")
                valid = False
            elif not _certificates(state, lc, now):
                valid = False
    frontend = lc.frontend
    if frontend is not None and frontend.error is not None:
        message = f"Listener has invalid caCertificateRef for frontend TLS validation: {frontend.error}"
        reason = frontend.error_reason or Reason.INVALID_CA_CERTIFICATE_REF
        cond.set(Type.RESOLVED_REFS, False, reason, message)
        cond.set(Type.PROGRAMMED, False, reason, message)
        cond.set(Type.ACCEPTED, False, Reason.NO_VALID_CA_CERTIFICATE, message)
        valid = False
    return valid


def find_object(state: ClusterState, kind: str, namespace: str, name: str) -> Object | None:
    """A kept Secret or ConfigMap. One written without a namespace lands in the namespace of ``-n``,
    which the state does not record: it is taken to be the one asked for."""
    obj = state.others.get((kind, f"{namespace}/{name}"))
    if obj is not None:
        return obj
    other = state.others.get((kind, name))
    return other if other is not None and not other.namespace else None


def _certificates(state: ClusterState, lc: ListenerContext, now: datetime) -> bool:
    """``validateTerminateModeAndGetTLSSecrets`` and ``parseCertsFromTLSSecretsData``."""
    listener, cond = lc.listener, lc.conditions
    if not listener.certificate_refs:
        cond.set(Type.PROGRAMMED, False, Reason.INVALID, "Listener must have at least 1 TLS certificate ref")
        return False
    errors: list[tuple[str, str]] = []  # (reason, message)
    pairs: list[tuple[str, bytes, bytes]] = []
    origin = ReferenceFrom.gateway_api("ListenerSet" if lc.from_listener_set else "Gateway", lc.namespace)
    for idx, ref in enumerate(listener.certificate_refs):
        if ref.group != "":
            errors.append((Reason.INVALID_CERTIFICATE_REF, f"certificate refs {idx}: Listener's TLS certificate ref "
                                                           "group must be unspecified/empty."))
            continue
        if ref.kind != "Secret":
            errors.append((Reason.INVALID_CERTIFICATE_REF, f"certificate refs {idx}: Listener's TLS certificate ref "
                                                           "kind must be Secret."))
            continue
        ns = lc.namespace
        if ref.namespace and ref.namespace != lc.namespace:
            if not reference_permitted(origin, ReferenceTo.core("Secret", ref.namespace, ref.name),
                                       state.reference_grants.values()):
                errors.append((Reason.REF_NOT_PERMITTED, f"certificate refs {idx}: Certificate ref to secret "
                                                         f"{ref.namespace}/{ref.name} not permitted by any "
                                                         "ReferenceGrant."))
                continue
            ns = ref.namespace
        secret = find_object(state, "Secret", ns, ref.name)
        if secret is None:
            errors.append((Reason.INVALID_CERTIFICATE_REF,
                           f"certificate refs {idx}: Secret {ns}/{ref.name} does not exist."))
            continue
        if certs.secret_type(secret.raw) != certs.SECRET_TYPE_TLS:
            errors.append((Reason.INVALID_CERTIFICATE_REF, f"certificate refs {idx}: Secret {ns}/{ref.name} must "
                                                           f"be of type {certs.SECRET_TYPE_TLS}."))
            continue
        crt, key = certs.tls_secret_pair(secret.raw)
        if not crt or not key:
            errors.append((Reason.INVALID_CERTIFICATE_REF, f"certificate refs {idx}: Secret {ns}/{ref.name} must "
                                                           "contain tls.crt and tls.key."))
            continue
        pairs.append((f"{ns}/{ref.name}", crt, key))
    if not pairs:
        reason = Reason.REF_NOT_PERMITTED if all(r == Reason.REF_NOT_PERMITTED for r, _ in errors) \
            else Reason.INVALID_CERTIFICATE_REF
        cond.set(Type.RESOLVED_REFS, False, reason, "No valid secrets exist: " + "\n".join(m for _, m in errors))
        return False
    parse_errors: list[str] = []
    seen_names: set[tuple[str, str]] = set()
    for name, crt, key in pairs:
        try:
            serving = certs.serving_pair(name, crt, key, now)
        except certs.CertificateError as exc:
            parse_errors.append(str(exc))
            continue
        # One certificate per (key algorithm, name): Envoy picks among them by SNI and key type.
        info = serving.info
        algorithm = info.key_type.split()[0]
        clash = next((n for n in dict.fromkeys(info.names) if (algorithm, n) in seen_names), None)
        if clash is not None:
            parse_errors.append(f"{name} public key algorithm must be unique, certificate domain {clash} has a "
                                f"conflicting algorithm [{algorithm}]")
            continue
        seen_names.update((algorithm, n) for n in info.names)
        lc.certificates.append(serving)
    if not lc.certificates:
        cond.set(Type.RESOLVED_REFS, False, Reason.INVALID_CERTIFICATE_REF,
                 "No valid secrets exist: " + "\n".join(parse_errors) + ".")
        return False
    problems = [m for _, m in errors] + parse_errors
    if problems:
        cond.set(Type.RESOLVED_REFS, False, Reason.PARTIALLY_INVALID_CERTIFICATE_REF,
                 "Some secrets are invalid: " + "\n".join(problems))
    return True


def resolve_ca_refs(state: ClusterState, refs: Iterable[Any], origin: ReferenceFrom, now: datetime,
                    *, cross_namespace: bool) -> tuple[list[Any], str | None, str | None]:
    """``getCaCertsFromCARefs``: the CA certificates of ConfigMaps/Secrets (key ``ca.crt``, else
    ``tls.crt``), or (nothing, the error, the reason). ``cross_namespace``: a ref may name another
    namespace (with a ReferenceGrant), as the Gateway's frontend validation may; a policy's may not."""
    bundle: list[Any] = []
    found_supported = False
    for ref in refs:
        ns = ref.namespace or origin.namespace
        if ns != origin.namespace and cross_namespace and not reference_permitted(
                origin, ReferenceTo(ref.group, ref.kind, ns, ref.name), state.reference_grants.values()):
            return [], (f"cross-namespace reference is not permitted by any ReferenceGrant for caCertificateRef "
                        f"{ref.group}/{ref.name} (kind: {ref.kind}, namespace: {ns})"), Reason.REF_NOT_PERMITTED
        if ref.kind not in ("ConfigMap", "Secret") or ref.group not in ("", "core"):
            continue
        found_supported = True
        obj = find_object(state, ref.kind, ns, ref.name)
        if obj is None:
            what = "configmap" if ref.kind == "ConfigMap" else "secret"
            return [], f"{what} {ref.name} not found in namespace {ns}", Reason.INVALID_CA_CERTIFICATE_REF
        is_secret = ref.kind == "Secret"
        data = certs.data_value(obj.raw, certs.CA_CERT_KEY, base64_data=is_secret) or \
            certs.data_value(obj.raw, certs.TLS_CERT_KEY, base64_data=is_secret)
        if data is None:
            return [], f"no ca found in {'secret' if is_secret else 'configmap'} {ref.name}", \
                Reason.INVALID_CA_CERTIFICATE_REF
        good, _dropped = certs.ca_certificates(data, now)
        bundle.extend(good)
    if not bundle:
        if not found_supported:
            return [], ("Unsupported reference kind, supported kinds are ConfigMap, Secret, and ClusterTrustBundle "
                        "in caCertificateRefs"), Reason.INVALID_CA_CERTIFICATE_KIND
        return [], "no valid CA certificate found in referenced resources", Reason.NO_VALID_CA_CERTIFICATE
    return bundle, None, None


def frontend_for(state: ClusterState, gateway: Gateway, port: int | None, now: datetime,
                 cache: dict[str | None, FrontendValidation]) -> FrontendValidation | None:
    """The client-certificate validation of an HTTPS listener's port (per-port entry, else the default)."""
    spec = gateway.frontend_validation_for(port)
    if spec is None:
        return None
    if spec.path not in cache:
        cas, error, reason = resolve_ca_refs(state, spec.ca_refs, ReferenceFrom.gateway_api("Gateway",
                                                                                            gateway.namespace),
                                             now, cross_namespace=True)
        cache[spec.path] = FrontendValidation(tuple(cas), spec.mode, spec.path, error, reason)
    return cache[spec.path]


# --- phase 2: conflicts ----------------------------------------------------------------------------


def _stack(protocol: str) -> str:
    return "https/tls" if protocol in ("HTTPS", "TLS") else protocol


def _conflicted(lc: ListenerContext, reason: str, message: str) -> None:
    lc.conditions.set(Type.CONFLICTED, True, reason, message)
    if lc.from_listener_set:
        lc.conditions.set(Type.ACCEPTED, False, reason, message)
        lc.conditions.set(Type.PROGRAMMED, False, reason, message)
    if reason == Reason.PROTOCOL_CONFLICT:
        lc.protocol_conflicted = True


def conflicts(listeners: list[ListenerContext]) -> None:
    """Protocol, hostname and layer-4 conflicts among one Gateway's listeners (its own first, then the
    ListenerSets' in precedence order)."""
    _protocol_conflicts(listeners)
    _hostname_conflicts(listeners)
    for protocol in ("TCP", "UDP"):
        by_port: dict[int | None, list[ListenerContext]] = {}
        for lc in listeners:
            if lc.spec_valid and lc.protocol == protocol:
                by_port.setdefault(lc.port, []).append(lc)
        for on_port in by_port.values():
            for lc in on_port[1:]:
                lc.conditions.set(Type.CONFLICTED, True, Reason.PROTOCOL_CONFLICT,
                                  f"Only one {protocol} listener is allowed in a given port")


def _protocol_conflicts(listeners: list[ListenerContext]) -> None:
    by_port: dict[int | None, list[ListenerContext]] = {}
    for lc in listeners:
        if lc.spec_valid and lc.protocol in PROTOCOLS:
            by_port.setdefault(lc.port, []).append(lc)
    for on_port in by_port.values():
        stacks = {_stack(lc.protocol) for lc in on_port if lc.protocol != "UDP"}
        if len(stacks) <= 1:
            continue
        names = sorted(lc.display for lc in on_port if lc.protocol != "UDP")
        message = f"All listeners for a given port must use a compatible protocol, conflicting listeners: " \
                  f"{', '.join(names)}"
        own = {_stack(lc.protocol) for lc in on_port if lc.protocol != "UDP" and not lc.from_listener_set}
        if len(own) > 1:
            for lc in on_port:
                if lc.protocol != "UDP":
                    _conflicted(lc, Reason.PROTOCOL_CONFLICT, message)
            continue
        per_set: dict[str, set[str]] = {}
        for lc in on_port:
            if lc.protocol != "UDP" and lc.listener_set is not None:
                per_set.setdefault(lc.listener_set.key, set()).add(_stack(lc.protocol))
        winner = next(iter(own)) if own else None
        for lc in on_port:
            if lc.protocol == "UDP":
                continue
            if lc.listener_set is not None and not own and len(per_set[lc.listener_set.key]) > 1:
                _conflicted(lc, Reason.PROTOCOL_CONFLICT, message)
                continue
            if winner is None:
                winner = _stack(lc.protocol)
            elif _stack(lc.protocol) != winner:
                _conflicted(lc, Reason.PROTOCOL_CONFLICT, message)


def _hostname_conflicts(listeners: list[ListenerContext]) -> None:
    by_port: dict[int | None, list[ListenerContext]] = {}
    for lc in listeners:
        if lc.protocol in ("TCP", "UDP") or not lc.spec_valid or lc.protocol_conflicted:
            continue
        by_port.setdefault(lc.port, []).append(lc)
    for on_port in by_port.values():
        counts: dict[str, int] = {}
        for lc in on_port:
            counts[lc.hostname or ""] = counts.get(lc.hostname or "", 0) + 1
        own_count: dict[str, int] = {}
        same_set: set[str] = set()
        per_set: dict[tuple[str, str], int] = {}
        for lc in on_port:
            host = lc.hostname or ""
            if counts[host] <= 1:
                continue
            if lc.listener_set is None:
                own_count[host] = own_count.get(host, 0) + 1
            else:
                k = (lc.listener_set.key, host)
                per_set[k] = per_set.get(k, 0) + 1
                if per_set[k] > 1:
                    same_set.add(host)
        winners: dict[str, ListenerContext] = {}
        for lc in on_port:
            host = lc.hostname or ""
            if counts[host] <= 1 or own_count.get(host, 0) > 1:
                continue
            if host in same_set and lc.from_listener_set:
                continue
            current = winners.get(host)
            if current is None or (current.from_listener_set and not lc.from_listener_set):
                winners[host] = lc
        names: dict[str, list[str]] = {}
        for lc in on_port:
            if counts[lc.hostname or ""] > 1:
                names.setdefault(lc.hostname or "", []).append(lc.display)
        for lc in on_port:
            host = lc.hostname or ""
            if counts[host] <= 1:
                continue
            message = ("All listeners for a given port must use a unique hostname, conflicting listeners: "
                       + ", ".join(sorted(names[host])))
            winner = winners.get(host)
            if winner is None or lc is not winner:
                _conflicted(lc, Reason.HOSTNAME_CONFLICT, message)


# --- phase 3: closing conditions ---------------------------------------------------------------------


def finish(lc: ListenerContext) -> None:
    """``validateListenerConditions``."""
    cond = lc.conditions
    if not cond:
        cond.set(Type.PROGRAMMED, True, Reason.PROGRAMMED, "Sending translated listener configuration to the data "
                                                           "plane")
        cond.set(Type.ACCEPTED, True, Reason.ACCEPTED, "Listener has been successfully translated")
        cond.set(Type.RESOLVED_REFS, True, Reason.RESOLVED_REFS, "Listener references have been resolved")
        if lc.from_listener_set:
            cond.set(Type.CONFLICTED, False, Reason.NO_CONFLICTS, "No conflicts detected")
        return
    first = next(iter(cond.values()))
    if len(cond) == 1 and first.type == Type.RESOLVED_REFS:
        if first.reason == Reason.PARTIALLY_INVALID_CERTIFICATE_REF:
            cond.set(Type.ACCEPTED, True, Reason.ACCEPTED, "Listener has been successfully translated")
            cond.set(Type.PROGRAMMED, True, Reason.PROGRAMMED, "Sending translated listener configuration to the "
                                                               "data plane")
            return
        if first.reason == Reason.INVALID_CERTIFICATE_REF:
            cond.set(Type.ACCEPTED, True, Reason.ACCEPTED, "Listener has been successfully translated")
            cond.set(Type.PROGRAMMED, False, Reason.INVALID, "Listener is invalid, see other Conditions for details.")
            return
    if first.type != Type.PROGRAMMED or first.status != Status.TRUE:
        if Type.PROGRAMMED not in cond:
            cond.set(Type.PROGRAMMED, False, Reason.INVALID, "Listener is invalid, see other Conditions for details.")
        if Type.RESOLVED_REFS not in cond:
            cond.set(Type.RESOLVED_REFS, True, Reason.RESOLVED_REFS, "Listener references have been resolved")


def _has_invalid_condition(lc: ListenerContext) -> bool:
    c = lc.conditions
    refs = c.get(Type.RESOLVED_REFS)
    return c.is_false(Type.PROGRAMMED) or c.is_false(Type.ACCEPTED) or (
        refs is not None and not refs.ok and refs.reason != Reason.PARTIALLY_INVALID_CERTIFICATE_REF)


def _overlap(a: str | None, b: str | None) -> bool:
    """``areOverlappingHostnames``: no hostname overlaps everything; a wildcard covers one label here."""
    if a is None or b is None:
        return True

    def covers(this: str, other: str) -> bool:
        if other.startswith("*") and not this.startswith("*"):
            return this.endswith(other[1:]) and "." not in this[: -len(other[1:])]
        return this == other

    return covers(a, b) or covers(b, a)


def overlapping_tls(listeners: list[ListenerContext]) -> None:
    """``checkOverlappingTLSConfig`` for one Gateway's HTTPS listeners (hostnames, then certificate names:
    when both overlap, the certificates' reason is the one set)."""
    https = [lc for lc in listeners if lc.protocol == "HTTPS" and not _has_invalid_condition(lc)]
    for kind in ("hostnames", "certificates"):
        pairs: dict[int, tuple[ListenerContext, str, str]] = {}
        for i, a in enumerate(https):
            if i in pairs:
                continue
            for j in range(i + 1, len(https)):
                b = https[j]
                if j in pairs or a.port != b.port:
                    continue
                # As upstream: no break, so the first listener names the last one it overlaps with.
                if kind == "hostnames":
                    if _overlap(a.hostname, b.hostname):
                        pairs[i] = (b, a.hostname or "", b.hostname or "")
                        pairs[j] = (a, b.hostname or "", a.hostname or "")
                    continue
                hit = next(((x, y) for x in _cert_names(a) for y in _cert_names(b) if _overlap(x, y)), None)
                if hit is not None:
                    pairs[i] = (b, hit[0], hit[1])
                    pairs[j] = (a, hit[1], hit[0])
        for i, (other, mine, theirs) in sorted(pairs.items()):
            lc = https[i]
            where = f"in listener {other.name}" + ("" if other.gateway is lc.gateway else
                                                   f" of gateway {other.gateway.name}")
            if kind == "hostnames":
                lc.conditions.set(Type.OVERLAPPING_TLS_CONFIG, True, Reason.OVERLAPPING_HOSTNAMES,
                                  f"The hostname {mine} overlaps with the hostname {theirs} {where}.")
            else:
                lc.conditions.set(Type.OVERLAPPING_TLS_CONFIG, True, Reason.OVERLAPPING_CERTIFICATES,
                                  f"The certificate SAN {mine} overlaps with the certificate SAN {theirs} {where}. "
                                  "ALPN will default to HTTP/1.1 to prevent HTTP/2 connection coalescing, unless "
                                  "explicitly configured via ClientTrafficPolicy")


def _cert_names(lc: ListenerContext) -> list[str]:
    return [n for c in lc.certificates for n in c.info.dns_names]
