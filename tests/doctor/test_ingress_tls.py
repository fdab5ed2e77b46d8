"""Ingress TLS as ingress-nginx reads it: each broken Secret or certificate is a finding; the repaired one is not."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from knetsim import Cluster


def certificate(*names: str) -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(1).not_valid_before(now - timedelta(days=1)).not_valid_after(now + timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
            .sign(key, hashes.SHA256()))
    return (base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode(),
            base64.b64encode(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption())).decode())


def secret(namespace: str = "shop", secret_type: str = "kubernetes.io/tls", **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "shop-tls", "namespace": namespace},
            "type": secret_type, "data": data}


BASE = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "certs"}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
     "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
              "template": {"metadata": {"labels": {"app": "web"}},
                           "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                                    "ports": [{"containerPort": 80}]}]}}}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
     "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
    {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "shop", "namespace": "shop"},
     "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}],
              "rules": [{"host": "shop.example.com", "http": {"paths": [
                  {"path": "/", "pathType": "Prefix",
                   "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}},
]


def tls_findings(*extra: dict) -> list:
    text = yaml.safe_dump_all([*BASE, *extra])
    return [(f.code, f) for f in Cluster.from_yaml(text).doctor().findings
            if f.code.startswith("IngressTLS")]


def test_a_good_certificate_is_no_finding() -> None:
    crt, key = certificate("shop.example.com")
    assert tls_findings(secret(**{"tls.crt": crt, "tls.key": key})) == []


def test_a_missing_secret() -> None:
    [(code, found)] = tls_findings()
    assert code == "IngressTLSSecretNotFound" and found.subject == "Ingress shop/shop"
    assert "Fake Certificate" in found.message
    assert found.fix == "kubectl -n shop create secret tls shop-tls --cert=tls.crt --key=tls.key"


def test_a_secret_in_another_namespace() -> None:
    crt, key = certificate("shop.example.com")
    [(code, found)] = tls_findings(secret("certs", **{"tls.crt": crt, "tls.key": key}))
    assert code == "IngressTLSSecretOtherNamespace"
    assert "the Secret is in namespace certs" in found.message and "Secret certs/shop-tls" in found.evidence


def test_a_secret_of_the_wrong_type() -> None:
    crt, _ = certificate("shop.example.com")
    [(code, found)] = tls_findings(secret(secret_type="Opaque", **{"cert.pem": crt}))
    assert code == "IngressTLSSecretWrongType"
    assert "type Opaque with the keys cert.pem" in found.message


def test_a_certificate_that_does_not_parse() -> None:
    _, key = certificate("shop.example.com")
    junk = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n")
    [(code, found)] = tls_findings(secret(**{"tls.crt": junk.decode(), "tls.key": key}))
    assert code == "IngressTLSCertificateInvalid"
    assert "unable to validate certificate in tls.crt" in found.message


def test_a_certificate_whose_names_do_not_cover_the_host() -> None:
    crt, key = certificate("www.example.com", "*.other.example.com")
    [(code, found)] = tls_findings(secret(**{"tls.crt": crt, "tls.key": key}))
    assert code == "IngressTLSHostNotCovered"
    assert "is for www.example.com, *.other.example.com, which does not cover shop.example.com" in found.message
    assert "subjectAltName=DNS:shop.example.com" in found.fix
    wildcard, wildcard_key = certificate("*.example.com")
    assert tls_findings(secret(**{"tls.crt": wildcard, "tls.key": wildcard_key})) == []
