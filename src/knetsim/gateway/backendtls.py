"""BackendTLSPolicy: how the Gateway's proxy speaks TLS to a backend, and whether that TLS would verify.

After Envoy Gateway (``internal/gatewayapi/backendtlspolicy.go``) and GEP-1897:

* a policy targets Services (``targetRefs``; a ``sectionName`` is a Service port name and wins over a
  policy for the whole Service); of two policies for the same target, the older one (then
  ``namespace/name``) applies and the other gets ``Accepted: False, Conflicted``;
* it applies where a route sends traffic to the target: each route parentRef doing so becomes an
  ancestor in the policy's status (``Accepted``, ``ResolvedRefs``); a CA reference that does not
  resolve makes the policy ``NoValidCACertificate``/``InvalidCACertificateRef`` (``InvalidKind``
  for an unsupported kind) and the route's backend invalid (``InvalidBackendTLS``: 500);
* the proxy then connects with SNI ``validation.hostname`` and verifies the backend's certificate
  against ``caCertificateRefs`` (or the system trust store for ``wellKnownCACertificates: System``)
  and against ``hostname`` — or, when ``subjectAltNames`` are listed, against those instead.

``verify_backend`` answers the last point for one backend pod: its certificate is the ``tls.crt`` of
a ``kubernetes.io/tls`` Secret it mounts (as the conformance suite's ``tls-backend`` does), else a
self-signed one derived from its identity; a pod that does not speak TLS at all fails the handshake.
The proxy presents the Gateway's ``spec.tls.backend.clientCertificateRef`` as its client certificate;
a pod that asks for one (the echo server's ``TLS_CLIENT_CACERTS``: a CA file in a mounted ConfigMap
or Secret, as the suite's ``tls-backend-with-client-cert-validation`` does) refuses the handshake
without it, or with one its CAs do not verify.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..cluster.state import ClusterState
from ..model.gatewayapi import BackendTLSPolicy, ParentRef
from ..model.objects import Pod
from . import certs
from .conditions import Conditions, Reason, Type
from .grants import ReferenceFrom
from .listeners import find_object, resolve_ca_refs


@dataclass(frozen=True, slots=True)
class BackendTLS:
    """What the proxy does when it connects to a backend a policy targets."""

    policy: str  # namespace/name
    sni: str
    subject_alt_names: tuple[tuple[str, str], ...]
    cas: tuple[Any, ...]  # x509 trust anchors; () with system_trust
    system_trust: bool

    def to_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "sni": self.sni,
                "subject_alt_names": [{"type": t, "value": v} for t, v in self.subject_alt_names],
                "trust": "system" if self.system_trust else f"{len(self.cas)} CA certificate(s) from the policy"}


@dataclass(slots=True)
class Ancestor:
    ref: dict[str, Any]  # the route's parentRef, group and kind defaulted
    conditions: Conditions = field(default_factory=Conditions)


@dataclass(slots=True)
class PolicyContext:
    policy: BackendTLSPolicy
    bundle: BackendTLS | None = None
    error: tuple[str, str, str] | None = None  # (Accepted reason, ResolvedRefs reason, message)
    conflict: str | None = None  # the older policy this one conflicts with
    ancestors: list[Ancestor] = field(default_factory=list)

    def add_ancestor(self, ref: dict[str, Any]) -> None:
        if any(a.ref == ref for a in self.ancestors):
            return
        ancestor = Ancestor(ref)
        if self.conflict is not None:
            ancestor.conditions.set(Type.ACCEPTED, False, Reason.CONFLICTED,
                                    f"Policy conflicts with BackendTLSPolicy {self.conflict}.")
        elif self.error is not None:
            accepted_reason, resolved_reason, message = self.error
            ancestor.conditions.set(Type.ACCEPTED, False, accepted_reason, message)
            ancestor.conditions.set(Type.RESOLVED_REFS, False, resolved_reason, message)
        else:
            ancestor.conditions.set(Type.RESOLVED_REFS, True, Reason.RESOLVED_REFS,
                                    "Resolved all the Object references.")
            ancestor.conditions.set(Type.ACCEPTED, True, Reason.ACCEPTED, "Policy has been accepted.")
        self.ancestors.append(ancestor)


def ancestor_ref(ref: ParentRef) -> dict[str, Any]:
    """A parentRef as status carries it: group and kind defaulted, keys in kubectl's order."""
    out: dict[str, Any] = {"group": ref.group, "kind": ref.kind, "name": ref.name}
    if ref.namespace:
        out["namespace"] = ref.namespace
    if ref.port is not None:
        out["port"] = ref.port
    if ref.section_name:
        out["sectionName"] = ref.section_name
    return out


def _message(text: str) -> str:
    """``Error2ConditionMsg``: capitalized, with a final period."""
    text = text[:1].upper() + text[1:]
    return text if text.endswith(".") else text + "."


class Policies:
    """Every BackendTLSPolicy of the cluster, resolved once, in precedence order."""

    def __init__(self, state: ClusterState, now: datetime) -> None:
        ordered = sorted(state.backend_tls_policies.values(),
                         key=lambda p: (p.meta.creation_timestamp is None, p.meta.creation_timestamp or "",
                                        p.namespace, p.name))
        self.contexts: dict[str, PolicyContext] = {}
        owners: dict[tuple[str, str, str, str, str], str] = {}
        for policy in ordered:
            ctx = PolicyContext(policy)
            for target in policy.target_refs:
                key = (policy.namespace, target.group, target.kind, target.name, target.section_name or "")
                if key in owners and ctx.conflict is None:
                    ctx.conflict = owners[key]
                owners.setdefault(key, policy.key)
            self._resolve(state, ctx, now)
            self.contexts[policy.key] = ctx
        self._ordered = [self.contexts[p.key] for p in ordered]

    @staticmethod
    def _resolve(state: ClusterState, ctx: PolicyContext, now: datetime) -> None:
        policy = ctx.policy
        sans = tuple((s.type, s.value) for s in policy.subject_alt_names if s.type in ("Hostname", "URI"))
        if policy.well_known_ca == "System":
            ctx.bundle = BackendTLS(policy.key, policy.hostname, sans, (), True)
            return
        cas, error, reason = resolve_ca_refs(state, policy.ca_refs,
                                             ReferenceFrom.gateway_api("BackendTLSPolicy", policy.namespace), now,
                                             cross_namespace=False)
        if error is not None:
            resolved = Reason.INVALID_KIND if reason == Reason.INVALID_CA_CERTIFICATE_KIND \
                else Reason.INVALID_CA_CERTIFICATE_REF
            ctx.error = (Reason.NO_VALID_CA_CERTIFICATE, resolved, _message(error))
            return
        ctx.bundle = BackendTLS(policy.key, policy.hostname, sans, tuple(cas), False)

    def for_backend(self, namespace: str, service: str, port_name: str) -> PolicyContext | None:
        """``getBackendTLSPolicy``: a policy naming this Service port wins over one for the whole Service."""
        def matches(ctx: PolicyContext, section: bool) -> bool:
            if ctx.policy.namespace != namespace:
                return False
            for t in ctx.policy.target_refs:
                if t.group in ("", "core") and t.kind == "Service" and t.name == service:
                    if section and port_name and t.section_name == port_name:
                        return True
                    if not section and t.section_name is None:
                        return True
            return False

        return next((c for c in self._ordered if matches(c, True)), None) or \
            next((c for c in self._ordered if matches(c, False)), None)


# --- the backend's side of the handshake ------------------------------------------------------------


def pod_certificate(state: ClusterState, pod: Pod) -> certs.ServingCertificate:
    """The certificate a simulated TLS server in ``pod`` presents: a mounted ``kubernetes.io/tls`` Secret's,
    else one derived from the pod's identity (names: the pod's name and IP)."""
    for volume in (pod.raw.get("spec") or {}).get("volumes") or []:
        if not isinstance(volume, Mapping):
            continue
        secret_name = (volume.get("secret") or {}).get("secretName") if isinstance(volume.get("secret"),
                                                                                   Mapping) else None
        if not secret_name:
            continue
        secret = find_object(state, "Secret", pod.namespace, str(secret_name))
        if secret is None:
            continue
        crt, key = certs.tls_secret_pair(secret.raw)
        if not crt or not key:
            continue
        try:
            return certs.serving_pair(f"{pod.namespace}/{secret_name}", crt, key, None)
        except certs.CertificateError:
            continue
    ips = (pod.pod_ip,) if pod.pod_ip else ()
    return certs.derived_identity(f"pod {pod.key}", pod.name, (pod.name,), ips)


@dataclass(frozen=True, slots=True)
class BackendHandshake:
    pod: str
    certificate: certs.CertificateInfo
    verdict: certs.Verdict
    policy: str = ""  # the BackendTLSPolicy, namespace/name
    sni: str = ""  # the server name the proxy sends and checks
    client_certificate: certs.CertificateInfo | None = None  # what the proxy presents (spec.tls.backend)
    # Set where the pod, not the proxy, ends the handshake: Envoy's transport failure reason for its alert.
    refused_by_pod: str | None = None

    def failure(self) -> str:
        if self.refused_by_pod is not None:
            return f"pod {self.pod} refuses the proxy's client certificate: {self.verdict.describe()}"
        return f"does not verify pod {self.pod}'s certificate: {self.verdict.describe()}"

    def to_dict(self) -> dict[str, Any]:
        out = {"policy": self.policy, "sni": self.sni, "pod": self.pod, "certificate": self.certificate.to_dict(),
               "verified": self.verdict.ok, "error": self.verdict.error, "detail": self.verdict.detail}
        if self.client_certificate is not None:
            out["client_certificate"] = self.client_certificate.to_dict()
        return out


def pod_client_cas(state: ClusterState, pod: Pod, now: datetime) -> tuple[str, list[Any]] | None:
    """The CAs ``pod``'s TLS server verifies client certificates against, with the file they come from; None
    when it asks for no client certificate. The echo server's convention: ``TLS_CLIENT_CACERTS`` names a CA
    file, here looked up in the ConfigMap or Secret volume mounted over it."""
    spec = pod.raw.get("spec") or {}
    volumes = {str(v.get("name")): v for v in spec.get("volumes") or [] if isinstance(v, Mapping)}
    for container in spec.get("containers") or []:
        if not isinstance(container, Mapping):
            continue
        path = next((str(e.get("value")) for e in container.get("env") or []
                     if isinstance(e, Mapping) and e.get("name") == "TLS_CLIENT_CACERTS" and e.get("value")), None)
        if path is None:
            continue
        for mount in container.get("volumeMounts") or []:
            if not isinstance(mount, Mapping):
                continue
            root = str(mount.get("mountPath") or "").rstrip("/")
            if not root or posixpath.dirname(path) != root:
                continue
            volume = volumes.get(str(mount.get("name")))
            source, kind = _projected_source(volume)
            if source is None:
                continue
            name = str(source.get("secretName" if kind == "Secret" else "name") or "")
            file = posixpath.basename(path)
            key = next((str(i.get("key")) for i in source.get("items") or []
                        if isinstance(i, Mapping) and i.get("path") == file), file)
            obj = find_object(state, kind, pod.namespace, name)
            data = certs.data_value(obj.raw, key, base64_data=kind == "Secret") if obj is not None else None
            cas = certs.ca_certificates(data, now)[0] if data else []
            return f"{kind} {pod.namespace}/{name} key {key}", cas
        return path, []  # asks for client certificates but its CA file is nowhere: nothing verifies
    return None


def _projected_source(volume: Mapping[str, Any] | None) -> tuple[Mapping[str, Any] | None, str]:
    if volume is None:
        return None, ""
    if isinstance(volume.get("configMap"), Mapping):
        return volume["configMap"], "ConfigMap"
    if isinstance(volume.get("secret"), Mapping):
        return volume["secret"], "Secret"
    return None, ""


def verify_backend(state: ClusterState, tls: BackendTLS, pod: Pod, now: datetime,
                   client_chain: Sequence[Any] | None = None) -> BackendHandshake:
    """What the proxy's TLS client concludes about ``pod``'s certificate under ``tls``, and whether ``pod``
    accepts the client certificate the proxy presents (``client_chain``, leaf first; () for none; None: the
    question is not asked, as where no one Gateway is meant)."""
    serving = pod_certificate(state, pod)
    if tls.system_trust:
        verdict = certs.Verdict(False, "unable to get local issuer certificate",
                                "the system trust store holds public CAs; no certificate in this cluster is issued by "
                                "one") if not serving.info.self_signed else certs.Verdict(
            False, "self-signed certificate", "the system trust store does not hold it")
    else:
        verdict = certs.verify(serving.chain, tls.cas, now, hostname=tls.sni, subject_alt_names=tls.subject_alt_names)
    presented = certs.CertificateInfo.of(client_chain[0]) if client_chain else None
    asked = pod_client_cas(state, pod, now) if verdict.ok and client_chain is not None else None
    refused = None
    if asked is not None:
        source, cas = asked
        if not client_chain:
            refused = _ALERT_CERTIFICATE_REQUIRED
            verdict = certs.Verdict(False, "tlsv13 alert certificate required",
                                    f"pod {pod.key} asks for a client certificate ({source}) and the Gateway presents "
                                    "none (spec.tls.backend.clientCertificateRef)")
        else:
            client = certs.verify(client_chain, cas, now)
            if not client.ok:
                refused = _ALERT_UNKNOWN_CA
                verdict = certs.Verdict(False, "tlsv1 alert unknown ca",
                                        f"pod {pod.key} does not accept the Gateway's client certificate "
                                        f"{presented.subject if presented else ''} against {source}: "
                                        f"{client.describe()}")
    return BackendHandshake(pod.key, serving.info, verdict, tls.policy, tls.sni, presented, refused)


# BoringSSL's packed errors for the alerts a TLS server sends about the client's certificate.
_ALERT_CERTIFICATE_REQUIRED = "TLS_error:|268436572:SSL routines:OPENSSL_internal:TLSV1_ALERT_CERTIFICATE_REQUIRED"
_ALERT_UNKNOWN_CA = "TLS_error:|268436504:SSL routines:OPENSSL_internal:TLSV1_ALERT_UNKNOWN_CA"

