"""An Ingress's TLS: the Secret each ``spec.tls`` entry names, and the certificate in it, as ingress-nginx reads them.

ingress-nginx takes ``secretName`` in the Ingress's own namespace only, reads the keys ``tls.crt`` and ``tls.key``
(the API server requires them on a ``kubernetes.io/tls`` Secret), and serves its own "Kubernetes Ingress
Controller Fake Certificate" for a host whose Secret is missing, unreadable, or whose certificate does not name
the host (kubernetes/ingress-nginx internal/ingress/controller: getPemCertificate, and the server's SSL
configuration). Clients then fail the TLS verification: every one of these is an error.

A Secret read without its data (a live cluster read with names only) is not judged on its content.
"""

from __future__ import annotations

from typing import Any

from ..cluster.state import ClusterState
from ..gateway.certs import (
    SECRET_TYPE_TLS,
    TLS_CERT_KEY,
    TLS_KEY_KEY,
    CertificateError,
    CertificateInfo,
    serving_pair,
    tls_secret_pair,
)
from ..gateway.findings import cert_manager_issuer
from .checks import Finding

FAKE = "its 'Kubernetes Ingress Controller Fake Certificate'"


def _create_secret(namespace: str, name: str) -> str:
    return f"kubectl -n {namespace} create secret tls {name} --cert=tls.crt --key=tls.key"


def ingress_tls_findings(state: ClusterState, namespace: str | None) -> list[Finding]:
    out: list[Finding] = []
    secrets = {key: obj for (kind, key), obj in state.others.items() if kind == "Secret"}
    for ing in state.ingresses.values():
        if namespace and ing.namespace != namespace:
            continue
        subject = f"Ingress {ing.key}"
        rule_hosts = [r.host for r in ing.rules if r.host]
        for index, tls in enumerate(ing.tls):
            if not tls.secret_name:
                continue  # the controller's default certificate, on purpose
            where = f"spec.tls[{index}]"
            hosts = list(tls.hosts) or rule_hosts
            secret = secrets.get(f"{ing.namespace}/{tls.secret_name}")
            if secret is None:
                elsewhere = sorted(key for key, obj in secrets.items() if obj.name == tls.secret_name)
                if elsewhere:
                    other = elsewhere[0].split("/", 1)[0]
                    out.append(Finding(
                        "IngressTLSSecretOtherNamespace", "error", "ingress", subject,
                        f"{where}.secretName {tls.secret_name!r} is read in the Ingress's namespace {ing.namespace}, "
                        f"but the Secret is in namespace {other}: an Ingress cannot use another namespace's Secret, "
                        f"so ingress-nginx serves {FAKE} for {', '.join(hosts) or 'its hosts'}",
                        f"copy the Secret into {ing.namespace}: kubectl -n {other} get secret {tls.secret_name} "
                        f"-o yaml | sed 's/namespace: {other}/namespace: {ing.namespace}/' | kubectl apply -f - "
                        f"(or create it there: {_create_secret(ing.namespace, tls.secret_name)})",
                        tuple(f"Secret {key}" for key in elsewhere[:3])))
                elif issuer := cert_manager_issuer(state, ing.meta.annotations, ing.namespace, tls.secret_name):
                    # cert-manager creates the Secret: its absence from the manifests is the normal state before
                    # issuance, not a mistake (a live cluster that still lacks it: the Certificate's status says why).
                    out.append(Finding(
                        "IngressTLSSecretIssued", "info", "ingress", subject,
                        f"{where}.secretName {tls.secret_name!r} is cert-manager's to create ({issuer}); until it "
                        f"has issued the certificate, ingress-nginx serves {FAKE} for "
                        f"{', '.join(hosts) or 'its hosts'}",
                        f"if it stays so, ask cert-manager why: kubectl -n {ing.namespace} get "
                        "certificate,certificaterequest,order,challenge"))
                else:
                    out.append(Finding(
                        "IngressTLSSecretNotFound", "error", "ingress", subject,
                        f"{where}.secretName {tls.secret_name!r}: there is no Secret {tls.secret_name} in namespace "
                        f"{ing.namespace}, so ingress-nginx serves {FAKE} for {', '.join(hosts) or 'its hosts'} "
                        "and clients fail the certificate check",
                        _create_secret(ing.namespace, tls.secret_name)))
                continue
            body: dict[str, Any] = secret.raw
            if not body.get("data") and not body.get("stringData"):
                continue  # read without its data: nothing to judge
            cert_pem, key_pem = tls_secret_pair(body)
            secret_type = str(body.get("type") or "Opaque")
            if not cert_pem or not key_pem:
                keys = sorted({*(body.get("data") or {}), *(body.get("stringData") or {})})
                out.append(Finding(
                    "IngressTLSSecretWrongType", "error", "ingress", subject,
                    f"{where}.secretName {tls.secret_name!r} is a Secret of type {secret_type} with the keys "
                    f"{', '.join(keys) or 'none'}; ingress-nginx needs {TLS_CERT_KEY} and {TLS_KEY_KEY} (a "
                    f"{SECRET_TYPE_TLS} Secret has them), so it serves {FAKE}",
                    f"kubectl -n {ing.namespace} delete secret {tls.secret_name}; "
                    + _create_secret(ing.namespace, tls.secret_name), (f"Secret {secret.key}",)))
                continue
            try:
                served = serving_pair(f"Secret {secret.key}", cert_pem, key_pem, None)
            except CertificateError as exc:
                out.append(Finding(
                    "IngressTLSCertificateInvalid", "error", "ingress", subject,
                    f"{where}.secretName {tls.secret_name!r}: {exc}; ingress-nginx serves {FAKE} instead",
                    "put a PEM certificate and its private key in the Secret: "
                    + _create_secret(ing.namespace, tls.secret_name) + " (kubectl create secret tls checks the pair)",
                    (f"Secret {secret.key}",)))
                continue
            info: CertificateInfo = served.info
            uncovered = [h for h in hosts if not info.covers(h)]
            if uncovered:
                names = ", ".join(info.dns_names) or (f"CN={info.common_name} and no subjectAltName"
                                                      if info.common_name else "none")
                out.append(Finding(
                    "IngressTLSHostNotCovered", "error", "ingress", subject,
                    f"{where}: the certificate in Secret {secret.key} is for {names}, which does not cover "
                    f"{', '.join(uncovered)}: ingress-nginx serves {FAKE} for "
                    f"{'that host' if len(uncovered) == 1 else 'those hosts'} and clients fail the name check",
                    f"issue a certificate whose subjectAltName lists {', '.join(uncovered)} (e.g. openssl req -x509 "
                    f"-newkey rsa:2048 -nodes -keyout tls.key -out tls.crt -subj /CN={uncovered[0]} -addext "
                    f"subjectAltName=DNS:{uncovered[0]}), then {_create_secret(ing.namespace, tls.secret_name)} "
                    "--dry-run=client -o yaml | kubectl apply -f -",
                    (f"Secret {secret.key}", f"certificate subject {info.subject}")))
    return out
