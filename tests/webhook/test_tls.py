"""Real HTTPS on loopback: TLS 1.2+, certificate rotation without a restart or dropped requests."""

from __future__ import annotations

import shutil
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from cryptography import x509

from dra_bridge.webhook.certs import CertPaths, write_certs
from dra_bridge.webhook.errors import WebhookConfigError
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.runtime import Runtime
from dra_bridge.webhook.server import make_app
from dra_bridge.webhook.tls import TlsReloader
from tests.factories import make_pod
from tests.webhook.conftest import FakeEnsurer, body, make_admission_review


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> tuple[CertPaths, CertPaths]:
    base = tmp_path_factory.mktemp("certs")
    return (
        write_certs(base / "a", "dra", "webhook", ("127.0.0.1",)),
        write_certs(base / "b", "dra", "webhook", ("127.0.0.1",)),
    )


def client_ctx(ca: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca))
    return ctx


class Served:
    def __init__(self, runtime: Runtime, url: str, live: CertPaths) -> None:
        self.runtime, self.url, self.live = runtime, url, live


@pytest.fixture
async def served(pairs: tuple[CertPaths, CertPaths], tmp_path: Path) -> AsyncIterator[Served]:
    live = CertPaths(tmp_path / "ca.crt", tmp_path / "ca.key", tmp_path / "tls.crt", tmp_path / "tls.key")
    for src, dst in zip((pairs[0].cert, pairs[0].key), (live.cert, live.key), strict=True):
        shutil.copy(src, dst)
    tls = TlsReloader(live.cert, live.key)
    runtime = Runtime("resource.k8s.io/v1", tls=tls)
    runner = web.AppRunner(make_app(runtime, Admitter(runtime.context, FakeEnsurer(), runtime.metrics)))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls.context)
    await site.start()
    port = runner.addresses[0][1]
    yield Served(runtime, f"https://127.0.0.1:{port}", live)
    await runner.cleanup()


def test_certificate_sans_cover_the_service_names_and_ips(pairs: tuple[CertPaths, CertPaths]) -> None:
    cert = x509.load_pem_x509_certificate(pairs[0].cert.read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "webhook.dra.svc" in sans.get_values_for_type(x509.DNSName)
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert oct(pairs[0].key.stat().st_mode & 0o777) == "0o600"


def test_missing_certificate_fails_at_startup_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(WebhookConfigError, match=r"tls\.crt"):
        TlsReloader(tmp_path / "tls.crt", tmp_path / "tls.key")


# The test's client offers TLS 1.1 on purpose: the ssl module warns that the version is deprecated.
@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated:DeprecationWarning")
async def test_tls_1_1_clients_are_refused(served: Served, pairs: tuple[CertPaths, CertPaths]) -> None:
    ctx = client_ctx(pairs[0].ca_cert)
    ctx.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
    ctx.maximum_version = ssl.TLSVersion.TLSv1_1
    port = int(served.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=2) as raw, pytest.raises(ssl.SSLError):
        ctx.wrap_socket(raw, server_hostname="127.0.0.1")


async def test_ready_over_tls_and_admits(served: Served, pairs: tuple[CertPaths, CertPaths]) -> None:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client_ctx(pairs[0].ca_cert))) as s:
        async with s.get(f"{served.url}/readyz") as resp:
            assert resp.status == 200 and (await resp.json())["tls"] == "loaded"
        async with s.post(f"{served.url}/mutate/enforce", data=body(make_admission_review(make_pod()))) as resp:
            assert resp.status == 200 and "patch" in (await resp.json())["response"]


async def test_rotated_certificate_is_served_without_dropping_open_connections(
    served: Served, pairs: tuple[CertPaths, CertPaths]
) -> None:
    old, new = pairs
    conn = aiohttp.TCPConnector(ssl=client_ctx(old.ca_cert), limit=1)
    async with aiohttp.ClientSession(connector=conn) as keep_alive:
        async with keep_alive.get(f"{served.url}/healthz") as resp:
            assert resp.status == 200
        shutil.copy(new.key, served.live.key)
        shutil.copy(new.cert, served.live.cert)
        served.runtime.check_files()
        assert served.runtime.tls is not None and served.runtime.tls.reloads == 2
        # The open keep-alive connection still answers (it completed its handshake earlier).
        async with keep_alive.post(f"{served.url}/mutate/enforce", data=body(make_admission_review(make_pod()))) as r:
            assert r.status == 200
    # New handshakes present the new certificate: the old CA no longer verifies it.
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client_ctx(new.ca_cert))) as s,
        s.get(f"{served.url}/healthz") as resp,
    ):
        assert resp.status == 200
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client_ctx(old.ca_cert))) as s:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await s.get(f"{served.url}/healthz")


async def test_a_mismatched_new_pair_keeps_the_old_certificate(
    served: Served, pairs: tuple[CertPaths, CertPaths]
) -> None:
    shutil.copy(pairs[1].cert, served.live.cert)  # new certificate, old key
    served.runtime.check_files()
    assert served.runtime.tls is not None and served.runtime.tls.error
    ready, detail = served.runtime.readiness()
    assert ready and "refused" in detail["tls"]
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client_ctx(pairs[0].ca_cert))) as s,
        s.get(f"{served.url}/healthz") as resp,
    ):
        assert resp.status == 200
