"""A CA and a serving certificate for the webhook (development, or a self-signed deployment).

    write_certs(out_dir, namespace, service, ip_addresses=(), days=365, replace_ca=True) -> CertPaths
        ca.crt, ca.key, tls.crt, tls.key in out_dir (keys mode 0600; ``replace_ca=False``, the
        command line's default: WebhookConfigError when ca.key exists, unless ``--force``)
    check_inputs(namespace, service, ip_addresses, days) -> None
        WebhookConfigError naming the ``dra-webhook certs`` flag of the first unusable value

``namespace`` and ``service`` must be DNS labels (RFC 1123: at most 63 characters of
``a-z``, ``0-9`` and ``-``, starting and ending with a letter or digit), every IP address
must parse, and ``days`` must be a positive integer that ends by :data:`LAST_VALID` (year 9999).

The serving certificate's SANs are the Service's DNS names (``svc``, ``svc.ns``,
``svc.ns.svc``, ``svc.ns.svc.cluster.local``) plus any IP addresses (e.g. 127.0.0.1 for a
webhook called by ``url`` on loopback). ECDSA P-256 keys; the CA's ``ca.crt`` is the
``caBundle`` of the MutatingWebhookConfiguration. Self-signed certificates are not renewed:
regenerate them before they expire.

Each file is written to a temporary file of a random name in ``out_dir``, created exclusively
(``O_EXCL|O_NOFOLLOW``: never an existing file, never through a link an attacker planted),
given its mode (0600 for keys, 0644 for certificates) and synced, then renamed over the final
name (a link there is replaced, not followed).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from dra_bridge.webhook.errors import WebhookConfigError

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


@dataclass(frozen=True)
class CertPaths:
    """Where :func:`write_certs` put the files."""

    ca_cert: Path
    ca_key: Path
    cert: Path
    key: Path


def _write(path: Path, data: bytes, mode: int) -> None:
    """``data`` at ``path`` with ``mode``, through a new temporary file (see the module docstring)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)  # the umask narrowed it at most: set it exactly
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    data = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _write(path, data, 0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    _write(path, cert.public_bytes(serialization.Encoding.PEM), 0o644)


def dns_names(namespace: str, service: str) -> list[str]:
    """The DNS names the API server may use to reach ``service`` in ``namespace``."""
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]


#: The last moment an X.509 validity can name (RFC 5280 4.1.2.5: GeneralizedTime, year 9999).
LAST_VALID = datetime.datetime(9999, 12, 31, 23, 59, 59, tzinfo=datetime.UTC)


def check_inputs(namespace: str, service: str, ip_addresses: tuple[str, ...] = (), days: int = 365) -> None:
    """WebhookConfigError naming the flag (``--namespace``, ``--service``, ``--ip``, ``--days``) of a bad value."""
    for flag, value in (("--namespace", namespace), ("--service", service)):
        if not _DNS_LABEL.fullmatch(value):
            raise WebhookConfigError(
                f"{flag} {value!r} is not a DNS label (RFC 1123: at most 63 characters of a-z, 0-9 "
                "and '-', starting and ending with a letter or digit)"
            )
    for ip in ip_addresses:
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            raise WebhookConfigError(f"--ip {ip!r} is not an IPv4 or IPv6 address") from None
    if isinstance(days, bool) or not isinstance(days, int) or days < 1:
        raise WebhookConfigError(f"--days {days!r} must be a positive integer (days the certificates stay valid)")
    most = (LAST_VALID - datetime.datetime.now(datetime.UTC)).days
    if days > most:
        raise WebhookConfigError(
            f"--days {days}: a certificate cannot be valid past {LAST_VALID:%Y-%m-%d} (RFC 5280 "
            f"GeneralizedTime): at most {most} days from today"
        )


def write_certs(
    out_dir: Path,
    namespace: str,
    service: str,
    ip_addresses: tuple[str, ...] = (),
    days: int = 365,
    replace_ca: bool = True,
) -> CertPaths:
    """Generate and write a CA and a serving certificate signed by it; see the module docstring.

    Raises WebhookConfigError (see :func:`check_inputs`; and, unless ``replace_ca``, when
    ``out_dir/ca.key`` exists) before writing anything.
    """
    check_inputs(namespace, service, ip_addresses, days)
    if not replace_ca and os.path.lexists(out_dir / "ca.key"):
        raise WebhookConfigError(
            f"--out {out_dir}: {out_dir / 'ca.key'} exists: a CA key is not overwritten (every pair it "
            "signed, and the caBundle, would change); pass --force to replace it"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    until = now + datetime.timedelta(days=days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"dra-bridge-webhook-ca.{namespace}")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names(namespace, service)]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{service}.{namespace}.svc")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = CertPaths(out_dir / "ca.crt", out_dir / "ca.key", out_dir / "tls.crt", out_dir / "tls.key")
    _write_key(paths.ca_key, ca_key)
    _write_cert(paths.ca_cert, ca)
    # Key first, then certificate: a reloader that sees the new certificate finds its key.
    _write_key(paths.key, key)
    _write_cert(paths.cert, cert)
    return paths
