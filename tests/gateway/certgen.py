"""Test certificates: a CA, leaves it signs, and the Secret/ConfigMap manifests that carry them.

Keys are derived from names and ECDSA signatures are deterministic (RFC 6979), so a test that prints a
fingerprint gets the same one on every run; the validity window is given explicitly (expired and
not-yet-valid certificates are test cases too).
"""

from __future__ import annotations

import base64
import ipaddress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from knetsim.gateway.certs import derived_key

VALID_FROM = datetime(2024, 1, 1, tzinfo=UTC)
VALID_UNTIL = datetime(2124, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Issued:
    cert: x509.Certificate
    key: Any

    @property
    def cert_pem(self) -> str:
        return self.cert.public_bytes(serialization.Encoding.PEM).decode()

    @property
    def key_pem(self) -> str:
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()).decode()


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _serial(cn: str) -> int:
    return int.from_bytes(cn.encode().ljust(16, b".")[:16], "big") >> 1


def ca(cn: str, *, not_before: datetime = VALID_FROM, not_after: datetime = VALID_UNTIL) -> Issued:
    key = derived_key(f"test ca {cn}")
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn)).public_key(key.public_key())
            .serial_number(_serial(cn)).not_valid_before(not_before).not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256(), ecdsa_deterministic=True))
    return Issued(cert, key)


def leaf(cn: str, names: list[str], issuer: Issued | None = None, *, not_before: datetime = VALID_FROM,
         not_after: datetime = VALID_UNTIL, uris: tuple[str, ...] = (), client: bool = False) -> Issued:
    """A serving (or, ``client=True``, client) certificate for ``names``; self-signed without ``issuer``."""
    key = derived_key(f"test leaf {cn} {','.join(names)}")
    sans: list[x509.GeneralName] = []
    for n in names:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(n)))
        except ValueError:
            sans.append(x509.DNSName(n))
    sans += [x509.UniformResourceIdentifier(u) for u in uris]
    signer = issuer.key if issuer else key
    issuer_name = issuer.cert.subject if issuer else _name(cn)
    builder = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(issuer_name)
               .public_key(key.public_key()).serial_number(_serial(cn + ",".join(names)))
               .not_valid_before(not_before).not_valid_after(not_after)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH if client
                                                     else ExtendedKeyUsageOID.SERVER_AUTH]), critical=False))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    if issuer is not None:
        builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer.key.public_key()),
                                        critical=False)
    return Issued(builder.sign(signer, hashes.SHA256(), ecdsa_deterministic=True), key)


def tls_secret(namespace: str, name: str, issued: Issued, *, key_pem: str | None = None) -> dict[str, Any]:
    def enc(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    key = key_pem if key_pem is not None else issued.key_pem
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": name, "namespace": namespace},
            "data": {"tls.crt": enc(issued.cert_pem), "tls.key": enc(key)}}


def ca_configmap(namespace: str, name: str, *cas: Issued) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"ca.crt": "".join(c.cert_pem for c in cas)}}
