"""The serving certificate against the registration's CA bundle and the service name it calls.

Certificates are generated here (``webhook.certs.write_certs`` and a small issuer for chains with
an intermediate); the reloader is exercised through the Runtime's readiness and real HTTPS.
"""

from __future__ import annotations

import datetime
import logging
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from dra_bridge.webhook.certs import CertPaths, write_certs
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.runtime import Runtime
from dra_bridge.webhook.server import make_app
from dra_bridge.webhook.serving_check import check_serving_certificate
from dra_bridge.webhook.settings import Settings
from dra_bridge.webhook.tls import TlsReloader
from tests.webhook.conftest import FakeEnsurer


def now() -> datetime.datetime:
    """The time of the check (never the module's import time: collection may run minutes earlier)."""
    return datetime.datetime.now(datetime.UTC)


SERVICE = "webhook.dra.svc"


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> tuple[CertPaths, CertPaths]:
    base = tmp_path_factory.mktemp("certs")
    return (
        write_certs(base / "a", "dra", "webhook", ("127.0.0.1",)),
        write_certs(base / "b", "dra", "webhook", ("127.0.0.1",)),
    )


def _issue(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Certificate | None,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool,
    sans: tuple[str, ...] = (),
) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer.subject if issuer else name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now() - datetime.timedelta(hours=1))
        .not_valid_after(now() + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in sans]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(*certs: x509.Certificate) -> bytes:
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)


@pytest.fixture(scope="module")
def chain() -> tuple[bytes, bytes]:
    """(leaf + intermediate PEM, root PEM): a leaf for *.dra.svc issued by an intermediate CA."""
    root_key, mid_key, leaf_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
    root = _issue("root", root_key, None, root_key, ca=True)
    mid = _issue("intermediate", mid_key, root, root_key, ca=True)
    leaf = _issue("leaf", leaf_key, mid, mid_key, ca=False, sans=("*.dra.svc",))
    return _pem(leaf, mid), _pem(root)


def test_a_pair_from_the_bundles_ca_covering_the_name_passes(pairs: tuple[CertPaths, CertPaths]) -> None:
    a = pairs[0]
    assert check_serving_certificate(a.cert.read_bytes(), a.ca_cert.read_bytes(), SERVICE, now()) == ""
    assert check_serving_certificate(a.cert.read_bytes(), a.ca_cert.read_bytes(), None, now()) == ""
    assert check_serving_certificate(a.cert.read_bytes(), None, "127.0.0.1", now()) == ""


def test_a_bundle_of_several_cas_passes_when_one_issued_the_pair(pairs: tuple[CertPaths, CertPaths]) -> None:
    a, b = pairs
    bundle = b.ca_cert.read_bytes() + a.ca_cert.read_bytes()
    assert check_serving_certificate(a.cert.read_bytes(), bundle, SERVICE, now()) == ""


def test_a_chain_through_an_intermediate_passes_and_a_wildcard_covers_one_label(chain: tuple[bytes, bytes]) -> None:
    leaf_and_mid, root = chain
    assert check_serving_certificate(leaf_and_mid, root, SERVICE, now()) == ""
    assert "does not cover" in check_serving_certificate(leaf_and_mid, root, "a.webhook.dra.svc", now())
    leaf_only = leaf_and_mid.split(b"-----END CERTIFICATE-----")[0] + b"-----END CERTIFICATE-----\n"
    assert "CA bundle" in check_serving_certificate(leaf_only, root, SERVICE, now())


@pytest.mark.parametrize(
    ("bundle", "name", "at", "says"),
    [
        ("other", SERVICE, 0, "does not chain to the CA bundle"),
        ("own", "webhook.elsewhere.svc", 0, "does not cover webhook.elsewhere.svc"),
        ("own", "10.0.0.1", 0, "does not cover 10.0.0.1"),
        ("own", SERVICE, 400, "expired"),
        ("own", SERVICE, -1, "not valid before"),
        ("garbage", SERVICE, 0, "no PEM certificate"),
    ],
    ids=["another-ca", "another-name", "another-ip", "expired", "not-yet-valid", "bundle-not-pem"],
)
def test_a_mismatch_is_one_line_saying_what(
    pairs: tuple[CertPaths, CertPaths], bundle: str, name: str, at: int, says: str
) -> None:
    a, b = pairs
    raw = {"own": a.ca_cert.read_bytes(), "other": b.ca_cert.read_bytes(), "garbage": b"not a certificate"}[bundle]
    reason = check_serving_certificate(a.cert.read_bytes(), raw, name, now() + datetime.timedelta(days=at))
    assert says in reason and "\n" not in reason, reason


def _live(tmp_path: Path, pair: CertPaths, ca: CertPaths) -> CertPaths:
    live = CertPaths(tmp_path / "ca.crt", tmp_path / "ca.key", tmp_path / "tls.crt", tmp_path / "tls.key")
    for src, dst in ((pair.cert, live.cert), (pair.key, live.key), (ca.ca_cert, live.ca_cert)):
        shutil.copy(src, dst)
    return live


def test_a_pair_from_another_ca_at_start_is_served_but_not_ready(
    pairs: tuple[CertPaths, CertPaths], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = pairs
    live = _live(tmp_path, a, b)
    with caplog.at_level(logging.ERROR):
        tls = TlsReloader(live.cert, live.key, ca_bundle=live.ca_cert, service_name=SERVICE)
    ready, detail = Runtime("resource.k8s.io/v1", tls=tls).readiness()
    assert not ready and "does not chain to the CA bundle" in detail["tls"] and str(live.ca_cert) in detail["tls"]
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "\n" not in errors[0] and "does not chain" in errors[0], errors


def test_a_reload_is_checked_and_readiness_follows(pairs: tuple[CertPaths, CertPaths], tmp_path: Path) -> None:
    a, b = pairs
    live = _live(tmp_path, a, a)
    tls = TlsReloader(live.cert, live.key, ca_bundle=live.ca_cert, service_name=SERVICE)
    runtime = Runtime("resource.k8s.io/v1", tls=tls)
    assert runtime.readiness()[0]
    shutil.copy(b.key, live.key)
    shutil.copy(b.cert, live.cert)  # rotated to a pair of another CA: the registration would refuse it
    runtime.check_files()
    ready, detail = runtime.readiness()
    assert not ready and "does not chain" in detail["tls"]
    shutil.copy(b.ca_cert, live.ca_cert)  # the bundle follows
    runtime.check_files()
    assert runtime.readiness()[0]
    assert 'dra_webhook_config_valid{file="tls"} 1.0' in runtime.metrics.render().decode()


def test_without_a_bundle_or_a_name_nothing_is_checked(pairs: tuple[CertPaths, CertPaths], tmp_path: Path) -> None:
    a, b = pairs
    live = _live(tmp_path, a, b)
    assert Runtime("resource.k8s.io/v1", tls=TlsReloader(live.cert, live.key)).readiness()[0]


@pytest.fixture
async def served_mismatch(pairs: tuple[CertPaths, CertPaths], tmp_path: Path) -> AsyncIterator[str]:
    a, b = pairs
    live = _live(tmp_path, a, b)
    tls = TlsReloader(live.cert, live.key, ca_bundle=live.ca_cert)
    runtime = Runtime("resource.k8s.io/v1", tls=tls)
    runner = web.AppRunner(make_app(runtime, Admitter(runtime.context, FakeEnsurer(), runtime.metrics)))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls.context).start()
    yield f"https://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


async def test_readyz_over_https_says_503_and_why(served_mismatch: str, pairs: tuple[CertPaths, CertPaths]) -> None:
    import ssl

    ctx = ssl.create_default_context(cafile=str(pairs[0].ca_cert))
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as s,
        s.get(f"{served_mismatch}/readyz") as resp,
    ):
        assert resp.status == 503 and "does not chain to the CA bundle" in (await resp.json())["tls"]


def test_settings_take_the_bundle_and_the_service_name_with_env_twins() -> None:
    pair = ["--tls-cert-file", "c", "--tls-key-file", "k"]
    s = Settings.from_args([*pair, "--ca-bundle", "/ca.crt"], {"DRA_WEBHOOK_SERVICE_NAME": SERVICE})
    assert s.ca_bundle == Path("/ca.crt") and s.service_name == SERVICE
    assert Settings.from_args(pair, {}).ca_bundle is None and Settings.from_args(pair, {}).service_name is None
