"""X.509 for the Gateway: serving certificates read from Secrets, CA bundles, chain verification, and the
certificates simulated servers present.

Read with ``cryptography``; the checks are Envoy Gateway's (``internal/gatewayapi/tls.go``,
``parseCertsFromTLSSecretsData``): every certificate of the serving chain parses and is inside its
validity window, the private key is PKCS#1, PKCS#8 or SEC1 and matches the leaf. A mismatch between
the listener's hostname and the certificate's names is *not* a condition there (clients notice it at
the handshake); ``CertificateInfo.covers`` answers it for the router and the doctor. Messages are Go's
(``certificate CN has expired since 2001-01-01 00:00:00 +0000 UTC``), so they read as Envoy Gateway's.

``verify`` is what the proxy (for a BackendTLSPolicy) or a client does with a presented chain: build a
path to one of the trusted CAs (RFC 5280, cryptography's verifier), then match the expected name (RFC
6125: a wildcard covers one label) or the subjectAltNames a policy lists instead; the failure is said
in OpenSSL's words, as Envoy and curl print them.

Simulated servers that have no certificate of their own (a backend pod behind a TLS passthrough
listener) present a self-signed one whose P-256 key is derived from a name (``derived_identity``): the
same pod gets the same key and certificate on every run and machine.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509 import verification
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ..model.names import is_ip
from ..model.timestamps import rfc3339
from ..model.withheld import withheld_keys

TLS_CERT_KEY = "tls.crt"
TLS_KEY_KEY = "tls.key"
CA_CERT_KEY = "ca.crt"
SECRET_TYPE_TLS = "kubernetes.io/tls"
# The validity window of the certificates knetsim makes up: fixed, so they are the same on every run.
DERIVED_NOT_BEFORE = datetime(2025, 1, 1, tzinfo=UTC)
DERIVED_NOT_AFTER = datetime(2125, 1, 1, tzinfo=UTC)


class CertificateError(ValueError):
    """A Secret, ConfigMap or PEM that cannot serve as asked; the message is the controller's."""


def go_time(when: datetime) -> str:
    """A time as Go's ``%v`` prints a UTC ``time.Time``."""
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S +0000 UTC")


def _common_name(name: x509.Name) -> str:
    attrs = name.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(attrs[0].value) if attrs else ""


def _key_type(key: Any) -> str:
    if isinstance(key, ec.EllipticCurvePublicKey):
        return f"ECDSA {key.curve.name}"
    if isinstance(key, rsa.RSAPublicKey):
        return f"RSA {key.key_size}"
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "Ed25519"
    return type(key).__name__


def name_matches(pattern: str, host: str) -> bool:
    """RFC 6125 §6.4.3 as TLS clients apply it: case-insensitive; ``*.a.com`` covers exactly one label."""
    pattern, host = pattern.lower().rstrip("."), host.lower().rstrip(".")
    if pattern.startswith("*."):
        head, _, rest = host.partition(".")
        return bool(head) and rest == pattern[2:]
    return pattern == host


@dataclass(frozen=True, slots=True)
class CertificateInfo:
    """What a client sees of a certificate (``openssl x509 -noout -subject -issuer -dates -ext subjectAltName``)."""

    subject: str  # RFC 4514
    issuer: str
    common_name: str
    dns_names: tuple[str, ...]
    ip_addresses: tuple[str, ...]
    uris: tuple[str, ...]
    not_before: str  # RFC 3339
    not_after: str
    serial: str  # hex
    sha256_fingerprint: str  # AA:BB:..., as openssl x509 -fingerprint -sha256 prints it
    key_type: str
    self_signed: bool
    is_ca: bool

    @classmethod
    def of(cls, cert: x509.Certificate) -> CertificateInfo:
        try:
            san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            dns = tuple(san.get_values_for_type(x509.DNSName))
            ips = tuple(str(ip) for ip in san.get_values_for_type(x509.IPAddress))
            uris = tuple(san.get_values_for_type(x509.UniformResourceIdentifier))
        except x509.ExtensionNotFound:
            dns, ips, uris = (), (), ()
        try:
            is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        except x509.ExtensionNotFound:
            is_ca = False
        digest = cert.fingerprint(hashes.SHA256()).hex().upper()
        return cls(cert.subject.rfc4514_string(), cert.issuer.rfc4514_string(), _common_name(cert.subject), dns, ips,
                   uris, rfc3339(cert.not_valid_before_utc), rfc3339(cert.not_valid_after_utc),
                   format(cert.serial_number, "x"), ":".join(digest[i:i + 2] for i in range(0, len(digest), 2)),
                   _key_type(cert.public_key()), cert.subject == cert.issuer, is_ca)

    @property
    def names(self) -> tuple[str, ...]:
        """The names a hostname is checked against: the DNS SANs, else (legacy clients) the CN."""
        return self.dns_names or ((self.common_name,) if self.common_name else ())

    def covers(self, hostname: str) -> bool:
        if is_ip(hostname):
            return hostname in self.ip_addresses
        return any(name_matches(n, hostname) for n in self.dns_names)

    def to_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "issuer": self.issuer, "dns_names": list(self.dns_names),
                "ip_addresses": list(self.ip_addresses), "uris": list(self.uris), "not_before": self.not_before,
                "not_after": self.not_after, "serial": self.serial, "sha256_fingerprint": self.sha256_fingerprint,
                "key_type": self.key_type, "self_signed": self.self_signed}


# --- reading Secrets and ConfigMaps ------------------------------------------------------------


def secret_type(secret: Mapping[str, Any]) -> str:
    return str(secret.get("type") or "Opaque")


def data_value(obj: Mapping[str, Any], key: str, *, base64_data: bool) -> bytes | None:
    """A key of a Secret (``data`` base64, ``stringData`` plain) or a ConfigMap (``data`` plain,
    ``binaryData`` base64), as the API would return it; None when absent or undecodable."""
    plain_field, encoded_field = ("stringData", "data") if base64_data else ("data", "binaryData")
    plain = obj.get(plain_field)
    if isinstance(plain, Mapping) and isinstance(plain.get(key), str):
        return str(plain[key]).encode()
    encoded = obj.get(encoded_field)
    if isinstance(encoded, Mapping) and isinstance(encoded.get(key), str):
        try:
            return base64.b64decode(str(encoded[key]), validate=True)
        except (binascii.Error, ValueError):
            return None
    return None


def _pem_blocks(data: bytes) -> list[tuple[str, bytes]]:
    """(type, DER) of each PEM block, in order; junk between blocks is skipped (as encoding/pem does)."""
    out = []
    text = data.decode("latin-1")
    pos = 0
    while True:
        start = text.find("-----BEGIN ", pos)
        if start < 0:
            return out
        head_end = text.find("-----", start + 11)
        if head_end < 0:
            return out
        label = text[start + 11:head_end]
        end_marker = f"-----END {label}-----"
        end = text.find(end_marker, head_end)
        if end < 0:
            return out
        body = "".join(line for line in text[head_end + 5:end].splitlines() if ":" not in line)
        with contextlib.suppress(binascii.Error, ValueError):
            out.append((label, base64.b64decode(body, validate=False)))
        pos = end + len(end_marker)


def _certificate(der: bytes) -> x509.Certificate:
    try:
        return x509.load_der_x509_certificate(der)
    except ValueError as exc:
        raise CertificateError(f"x509: malformed certificate ({exc})") from None


def _check_validity(cert: x509.Certificate, now: datetime) -> None:
    cn = _common_name(cert.subject)
    if now > cert.not_valid_after_utc:
        raise CertificateError(f"certificate {cn} has expired since {go_time(cert.not_valid_after_utc)}")
    if now < cert.not_valid_before_utc:
        raise CertificateError(f"certificate {cn} will be valid after {go_time(cert.not_valid_before_utc)}")


@dataclass(frozen=True, slots=True)
class ServingCertificate:
    """A certificate chain and its key that a listener serves (or a simulated server presents)."""

    source: str  # "Secret ns/name", or "derived from pod ns/name"
    chain: tuple[x509.Certificate, ...]
    key: Any  # a cryptography private key

    @property
    def leaf(self) -> x509.Certificate:
        return self.chain[0]

    @property
    def info(self) -> CertificateInfo:
        return _info(self.leaf)

    def chain_pem(self) -> bytes:
        return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in self.chain)

    def key_pem(self) -> bytes:
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption())


@lru_cache(maxsize=4096)
def _info(cert: x509.Certificate) -> CertificateInfo:
    return CertificateInfo.of(cert)


def serving_pair(name: str, cert_pem: bytes, key_pem: bytes, now: datetime | None) -> ServingCertificate:
    """Envoy Gateway's checks of a ``kubernetes.io/tls`` Secret's pair; raises CertificateError in its words.
    ``now`` None: the validity window is not checked (a server presents an expired certificate too)."""
    blocks = [(label, der) for label, der in _pem_blocks(cert_pem)]
    if not cert_pem:
        raise CertificateError(f"{name} must contain valid tls.crt and tls.key, unable to validate certificate in "
                               "tls.crt: no certificate data provided")
    chain = []
    for _label, der in blocks:
        try:
            cert = _certificate(der)
            if now is not None:
                _check_validity(cert, now)
        except CertificateError as exc:
            raise CertificateError(f"{name} must contain valid tls.crt and tls.key, unable to validate certificate "
                                   f"in tls.crt: {exc}") from None
        chain.append(cert)
    if not chain:
        raise CertificateError(f"{name} must contain valid tls.crt and tls.key, unable to validate certificate in "
                               "tls.crt: unable to decode pem data for certificate")
    if key_pem == WITHHELD_KEY:
        # Read from a cluster without its key: the API server checked the pair is there, the chain is checked here.
        return ServingCertificate(name, tuple(chain), None)
    keys = [(label, der) for label, der in _pem_blocks(key_pem)]
    key_block = next(((label, der) for label, der in keys if label in ("PRIVATE KEY", "RSA PRIVATE KEY",
                                                                        "EC PRIVATE KEY")), keys[0] if keys else None)
    if key_block is None:
        raise CertificateError(f"{name} must contain valid tls.crt and tls.key, unable to decode pem data in tls.key")
    label, der = key_block
    formats = {"PRIVATE KEY": "PKCS8", "RSA PRIVATE KEY": "PKCS1", "EC PRIVATE KEY": "EC"}
    if label not in formats:
        raise CertificateError(f"{name} must contain valid tls.crt and tls.key, {label} key format found in tls.key, "
                               "supported formats are PKCS1, PKCS8 or EC")
    try:
        pem = f"-----BEGIN {label}-----\n{base64.encodebytes(der).decode()}-----END {label}-----\n".encode()
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise CertificateError(f"{name} must contain valid tls.crt and tls.key, unable to parse {formats[label]} "
                               "formatted private key in tls.key") from None
    if not _key_matches(key, chain[0]):
        raise CertificateError(f"{name} must contain a matching tls.crt and tls.key: tls: private key does not match "
                               "public key")
    return ServingCertificate(name, tuple(chain), key)


def _key_matches(key: Any, cert: x509.Certificate) -> bool:
    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    try:
        return bool(key.public_key().public_bytes(*fmt) == cert.public_key().public_bytes(*fmt))
    except (AttributeError, ValueError, UnsupportedAlgorithm):
        return False


# Stands for a private key the cluster holds and its reader withheld (model/withheld.py): present, not checked.
WITHHELD_KEY = b"<private key withheld by the cluster reader>"


def tls_secret_pair(secret: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """(tls.crt, tls.key) of a Secret; the key is ``WITHHELD_KEY`` where a cluster reader kept it out."""
    crt = data_value(secret, TLS_CERT_KEY, base64_data=True) or b""
    if TLS_KEY_KEY in withheld_keys(secret):
        return crt, WITHHELD_KEY
    return crt, data_value(secret, TLS_KEY_KEY, base64_data=True) or b""


def ca_certificates(data: bytes, now: datetime) -> tuple[list[x509.Certificate], list[str]]:
    """A CA bundle's certificates still valid at ``now``, and why the others were dropped (a bundle is a set of
    independent trust anchors: an expired one goes, the rest stay)."""
    good, problems = [], []
    for _label, der in _pem_blocks(data):
        try:
            cert = _certificate(der)
            _check_validity(cert, now)
        except CertificateError as exc:
            problems.append(str(exc))
            continue
        good.append(cert)
    if not good and not problems:
        problems.append("unable to decode pem data for certificate")
    return good, problems


def load_pem_chain(data: bytes) -> list[x509.Certificate]:
    """Every certificate of a PEM file (a client certificate and its intermediates); raises CertificateError."""
    chain = [_certificate(der) for label, der in _pem_blocks(data) if label == "CERTIFICATE"]
    if not chain:
        raise CertificateError("no certificate found in the PEM data")
    return chain


# --- verification ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    error: str | None = None  # OpenSSL's words: "unable to get local issuer certificate", ...
    detail: str | None = None  # knetsim's explanation

    def describe(self) -> str:
        return "verified" if self.ok else f"{self.error}" + (f" ({self.detail})" if self.detail else "")


def verify(chain: Sequence[x509.Certificate], roots: Sequence[x509.Certificate], now: datetime, *,
           hostname: str | None = None, subject_alt_names: Sequence[tuple[str, str]] = ()) -> Verdict:
    """Does ``chain`` (leaf first) verify against ``roots`` at ``now``, for ``hostname`` or, when given, one of
    ``subject_alt_names`` (("Hostname"|"URI", value), which replace the hostname check, GEP-1897)?"""
    leaf = chain[0]
    if not roots:
        return Verdict(False, "unable to get local issuer certificate", "no CA certificate is trusted")
    if now > leaf.not_valid_after_utc:
        return Verdict(False, "certificate has expired", f"notAfter {go_time(leaf.not_valid_after_utc)}")
    if now < leaf.not_valid_before_utc:
        return Verdict(False, "certificate is not yet valid", f"notBefore {go_time(leaf.not_valid_before_utc)}")
    builder = (verification.PolicyBuilder().store(verification.Store(list(roots))).time(now)
               .extension_policies(ca_policy=verification.ExtensionPolicy.webpki_defaults_ca(),
                                   ee_policy=verification.ExtensionPolicy.permit_all()))
    try:
        builder.build_client_verifier().verify(leaf, list(chain[1:]))
    except verification.VerificationError as exc:
        issuer = _common_name(leaf.issuer) or leaf.issuer.rfc4514_string()
        if leaf.subject == leaf.issuer and not any(r.subject == leaf.subject for r in roots):
            return Verdict(False, "self-signed certificate", f"{issuer} is not among the trusted CAs")
        if not any(r.subject == leaf.issuer for r in roots) and not any(c.subject == leaf.issuer for c in chain[1:]):
            return Verdict(False, "unable to get local issuer certificate",
                           f"the certificate is issued by {issuer}, which is not among the trusted CAs")
        return Verdict(False, "certificate verify failed", str(exc))
    except (ValueError, InvalidSignature) as exc:
        return Verdict(False, "certificate verify failed", str(exc))
    info = _info(leaf)
    if subject_alt_names:
        for kind, value in subject_alt_names:
            if kind == "Hostname" and any(name_matches(value, n) or name_matches(n, value) for n in info.dns_names):
                return Verdict(True)
            if kind == "URI" and value in info.uris:
                return Verdict(True)
        wanted = ", ".join(f"{k} {v}" for k, v in subject_alt_names)
        return Verdict(False, "certificate verify failed: SAN mismatch",
                       f"the certificate's names ({', '.join(info.dns_names + info.uris) or 'none'}) match none of "
                       f"the subjectAltNames ({wanted})")
    if hostname is not None and not info.covers(hostname):
        return Verdict(False, "certificate verify failed: hostname mismatch",
                       f"{hostname} is not among the certificate's names ({', '.join(info.names) or 'none'})")
    return Verdict(True)


# --- certificates knetsim makes up -------------------------------------------------------------


def derived_key(identity: str) -> ec.EllipticCurvePrivateKey:
    """A P-256 key that depends on ``identity`` only."""
    order = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
    seed = int.from_bytes(hashlib.sha256(f"knetsim key {identity}".encode()).digest(), "big")
    return ec.derive_private_key(seed % (order - 1) + 1, ec.SECP256R1())


@lru_cache(maxsize=1024)
def derived_identity(identity: str, common_name: str, dns_names: tuple[str, ...] = (),
                     ip_addresses: tuple[str, ...] = ()) -> ServingCertificate:
    """A self-signed serving certificate whose key, serial and signature depend on the arguments only
    (RFC 6979 deterministic ECDSA): the same server presents the same bytes on every run."""
    key = derived_key(identity)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64] or "knetsim")])
    serial = int.from_bytes(hashlib.sha256(f"knetsim serial {identity}".encode()).digest()[:16], "big") >> 1
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
               .serial_number(serial or 1).not_valid_before(DERIVED_NOT_BEFORE).not_valid_after(DERIVED_NOT_AFTER)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(key, hashes.SHA256(), ecdsa_deterministic=True)
    return ServingCertificate(f"derived from {identity}", (cert,), key)
