"""Does the serving certificate fit the registration? Its CA bundle and the name it calls.

    check_serving_certificate(chain_pem, bundle_pem | None, name | None, now) -> "" | reason

The API server verifies the webhook's certificate against the ``caBundle`` of its
MutatingWebhookConfiguration and the host it calls (``<service>.<namespace>.svc`` for a
``service`` reference, the URL's host otherwise), as Go's ``crypto/x509`` does: a path from
the served leaf through the intermediates served with it up to a certificate of the bundle,
each certificate signed by the next and inside its validity window, and the host among the
leaf's subjectAltNames (DNS names, one leftmost ``*`` label; IP addresses for an IP host; the
subject CN is ignored, as Go ignores it). This module repeats that check so a pair the API
server would refuse is reported by the webhook itself (``webhook.tls`` calls it at start and
on every reload). ``bundle_pem`` None skips the chain, ``name`` None the name (a URL-mode
registration on loopback). The reason is one line; it never raises.
"""

from __future__ import annotations

import datetime
import ipaddress

from cryptography import x509
from cryptography.exceptions import InvalidSignature

_MAX_DEPTH = 8


def _window(cert: x509.Certificate, now: datetime.datetime) -> str:
    if now < cert.not_valid_before_utc:
        return f"{cert.subject.rfc4514_string()} is not valid before {cert.not_valid_before_utc:%Y-%m-%dT%H:%M:%SZ}"
    if now > cert.not_valid_after_utc:
        return f"{cert.subject.rfc4514_string()} expired at {cert.not_valid_after_utc:%Y-%m-%dT%H:%M:%SZ}"
    return ""


def _signed_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    if cert.issuer != issuer.subject:
        return False
    try:
        cert.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _chain(certs: list[x509.Certificate], roots: list[x509.Certificate], now: datetime.datetime) -> str:
    """ "" when a path from ``certs[0]`` through ``certs[1:]`` reaches a root, else why not."""
    current, intermediates = certs[0], certs[1:]
    for _ in range(_MAX_DEPTH):
        if problem := _window(current, now):
            return problem
        if current in roots:
            return ""
        root = next((r for r in roots if _signed_by(current, r)), None)
        if root is not None:
            return _window(root, now)
        parent = next((c for c in intermediates if c is not current and _signed_by(current, c)), None)
        if parent is None:
            return (
                f"no certificate of the CA bundle (or served with it) issued "
                f"{current.subject.rfc4514_string()} (issuer {current.issuer.rfc4514_string()})"
            )
        current = parent
    return f"no path to the CA bundle within {_MAX_DEPTH} certificates"


def _covers(cert: x509.Certificate, name: str) -> str:
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return f"does not cover {name} (it has no subjectAltName)"
    dns = [str(n).lower() for n in sans.get_values_for_type(x509.DNSName)]
    ips = sans.get_values_for_type(x509.IPAddress)
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        host = name.lower().rstrip(".")
        first, _, rest = host.partition(".")
        if host in dns or any(d.startswith("*.") and d[2:] == rest and first for d in dns):
            return ""
    else:
        if ip in ips:
            return ""
    listed = ", ".join([*dns, *(str(i) for i in ips)]) or "none"
    return f"does not cover {name} (subjectAltNames: {listed})"


def check_serving_certificate(
    chain_pem: bytes, bundle_pem: bytes | None, name: str | None, now: datetime.datetime
) -> str:
    """ "" when the chain (leaf first, PEM) fits ``bundle_pem`` and ``name``, else a one-line reason
    (see the module docstring); ``now`` is timezone-aware."""
    try:
        certs = x509.load_pem_x509_certificates(chain_pem)
    except ValueError as exc:
        return f"does not parse: {exc}"
    if bundle_pem is not None:
        try:
            roots = x509.load_pem_x509_certificates(bundle_pem)
        except ValueError:
            return "cannot be checked: the CA bundle holds no PEM certificate"
        if problem := _chain(certs, roots, now):
            return f"does not chain to the CA bundle: {problem}"
    elif problem := _window(certs[0], now):
        return f"is not valid now: {problem}"
    return _covers(certs[0], name) if name else ""


__all__ = ["check_serving_certificate"]
