"""A self-signed serving certificate for 127.0.0.1, made once per state dir.

TLS is not optional: client-go's clientcmd only reads a user's credentials (the bearer
token) when the cluster's transport is TLS, so over plain http kubectl would never send
the token and every request would be 401.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Pending:
    """A certificate being made by a child process, into files of its own until the daemon installs it."""

    proc: subprocess.Popen[bytes]
    cert: Path
    key: Path

    def discard(self) -> None:
        self.proc.wait()
        for path in (self.cert, self.key):
            path.unlink(missing_ok=True)


def begin(state_dir: Path) -> Pending | None:
    """Start making the serving certificate when the state dir has none, so the child makes it while the
    daemon loads (on two cores the two overlap). The files are the child's own (``.serving-PID.*``):
    only the daemon that holds the state dir installs them (``ensure_cert``)."""
    if (state_dir / "serving.crt").exists() and (state_dir / "serving.key").exists():
        return None
    stem = state_dir / f".serving-{os.getpid()}"
    cert, key = stem.with_suffix(".crt"), stem.with_suffix(".key")
    # In a child process: the crypto library is needed once per state dir, and a long-running server
    # would otherwise keep its 7 MB mapped for nothing.
    proc = subprocess.Popen([sys.executable, "-m", "knetsim.daemon.tlscert", str(cert), str(key)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return Pending(proc, cert, key)


def ensure_cert(state_dir: Path, pending: Pending | None = None) -> tuple[Path, Path]:
    cert, key = state_dir / "serving.crt", state_dir / "serving.key"
    if cert.exists() and key.exists():
        if pending is not None:
            pending.discard()
        return cert, key
    if pending is None:
        pending = begin(state_dir)
    if pending is not None and pending.proc.wait() == 0:
        os.chmod(pending.key, 0o600)
        os.replace(pending.key, key)
        os.replace(pending.cert, cert)
        return cert, key
    if pending is not None:
        pending.discard()
    # openssl(1) as a fallback when the cryptography wheel is not installed.
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "3650",
                    "-subj", "/CN=knetsim", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    os.chmod(key, 0o600)
    return cert, key


def _with_cryptography(cert_path: Path, key_path: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "knetsim")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                    x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


if __name__ == "__main__":
    try:
        _with_cryptography(Path(sys.argv[1]), Path(sys.argv[2]))
    except ImportError:
        raise SystemExit(3) from None
