"""Optional caller authentication: with a client CA, only a caller presenting a certificate that
CA signed (the API server, through its AdmissionConfiguration's kubeConfigFile) is admitted: another
CA's fails the TLS handshake, none is answered 403 on the admission paths while the probes answer
(docs/webhook.md, "Caller authentication")."""

from __future__ import annotations

import asyncio
import shutil
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from dra_bridge.webhook.certs import CertPaths, write_certs
from dra_bridge.webhook.errors import WebhookConfigError
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.runtime import Runtime
from dra_bridge.webhook.server import make_app
from dra_bridge.webhook.settings import Settings
from dra_bridge.webhook.tls import TlsReloader
from tests.e2e.certs import CertificateAuthority, KeyPair
from tests.factories import make_pod
from tests.webhook.conftest import FakeEnsurer, body, make_admission_review


class Callers:
    def __init__(self, base: Path) -> None:
        self.serving = write_certs(base / "serving", "dra", "webhook", ("127.0.0.1",))
        self.ca = CertificateAuthority(base / "callers", "callers-ca")
        self.other_ca = CertificateAuthority(base / "others", "others-ca")
        self.apiserver = self.ca.issue("apiserver", "kube-apiserver", client=True)
        self.server_only = self.ca.issue("server-only", "not-a-client", server=True)
        self.stranger = self.other_ca.issue("stranger", "kube-apiserver", client=True)


@pytest.fixture(scope="module")
def callers(tmp_path_factory: pytest.TempPathFactory) -> Callers:
    return Callers(tmp_path_factory.mktemp("client-auth"))


@pytest.fixture
async def served(callers: Callers, tmp_path: Path) -> AsyncIterator[tuple[int, TlsReloader, Path]]:
    client_ca = tmp_path / "client-ca.crt"
    shutil.copy(callers.ca.cert_file, client_ca)
    tls = TlsReloader(callers.serving.cert, callers.serving.key, client_ca=client_ca)
    runtime = Runtime("resource.k8s.io/v1", tls=tls)
    runner = web.AppRunner(make_app(runtime, Admitter(runtime.context, FakeEnsurer(), runtime.metrics)))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls.context)
    await site.start()
    yield runner.addresses[0][1], tls, client_ca
    await runner.cleanup()


async def call(
    port: int, serving: CertPaths, pair: KeyPair | None, path: str = "/mutate/enforce", method: str = "POST"
) -> bytes:
    """One request (POST /mutate/enforce) over a fresh TLS connection; the raw answer (raises when
    refused)."""
    ctx = ssl.create_default_context(cafile=str(serving.ca_cert))
    if pair is not None:
        ctx.load_cert_chain(str(pair.cert), str(pair.key))
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
    try:
        data = body(make_admission_review(make_pod()))
        head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n"
        writer.write(head.encode() + data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


async def test_a_caller_with_a_certificate_of_the_client_ca_is_answered(
    served: tuple[int, TlsReloader, Path], callers: Callers
) -> None:
    port, _, _ = served
    answer = await call(port, callers.serving, callers.apiserver)
    assert answer.startswith(b"HTTP/1.1 200") and b'"patch"' in answer


@pytest.mark.parametrize("who", ["another-ca", "no-client-usage"])
async def test_a_caller_with_a_certificate_not_of_the_client_ca_fails_the_handshake(
    served: tuple[int, TlsReloader, Path], callers: Callers, who: str
) -> None:
    port, _, _ = served
    pair = {"another-ca": callers.stranger, "no-client-usage": callers.server_only}[who]
    with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
        answer = await call(port, callers.serving, pair)
        assert answer == b"", answer  # TLS 1.3: the refusal can arrive as the connection closing
        raise ConnectionResetError("closed without an answer")


@pytest.mark.parametrize("path", ["/mutate/enforce", "/mutate/audit"])
async def test_a_caller_without_a_certificate_is_refused_on_the_admission_paths(
    served: tuple[int, TlsReloader, Path], callers: Callers, path: str
) -> None:
    port, _, _ = served
    answer = await call(port, callers.serving, None, path)
    assert answer.startswith(b"HTTP/1.1 403"), answer
    assert b"client certificate" in answer and b'"patch"' not in answer


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
async def test_the_probes_answer_a_caller_without_a_certificate(
    served: tuple[int, TlsReloader, Path], callers: Callers, path: str
) -> None:
    """The kubelet's HTTPS probes present no certificate."""
    port, _, _ = served
    answer = await call(port, callers.serving, None, path, method="GET")
    assert not answer.startswith(b"HTTP/1.1 403") and answer.startswith(b"HTTP/1.1 "), answer


async def test_a_changed_client_ca_file_is_loaded_with_the_serving_pair(
    served: tuple[int, TlsReloader, Path], callers: Callers
) -> None:
    port, tls, client_ca = served
    with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
        if not await call(port, callers.serving, callers.stranger):
            raise ConnectionResetError("closed without an answer")
    client_ca.write_bytes(callers.ca.pem + callers.other_ca.pem)  # a second CA is trusted too
    tls.check()
    assert tls.error == ""
    assert (await call(port, callers.serving, callers.stranger)).startswith(b"HTTP/1.1 200")
    client_ca.write_text("not a certificate\n")
    tls.check()
    assert "client CA" in tls.error  # the last good one stays in force
    assert (await call(port, callers.serving, callers.apiserver)).startswith(b"HTTP/1.1 200")


def test_a_client_ca_that_does_not_load_is_a_startup_error(callers: Callers, tmp_path: Path) -> None:
    bad = tmp_path / "ca.crt"
    bad.write_text("no PEM here\n")
    for path in (bad, tmp_path / "missing.crt"):
        with pytest.raises(WebhookConfigError, match="client CA"):
            TlsReloader(callers.serving.cert, callers.serving.key, client_ca=path)


def test_the_flag_sets_the_client_ca() -> None:
    argv = ["--tls-cert-file=c", "--tls-key-file=k"]
    assert Settings.from_args([*argv, "--client-ca-file=/etc/ca.crt"], {}).client_ca_file == Path("/etc/ca.crt")
    assert Settings.from_args(argv, {"DRA_WEBHOOK_CLIENT_CA_FILE": "/x"}).client_ca_file == Path("/x")
    assert Settings.from_args(argv, {}).client_ca_file is None


def test_a_bad_client_ca_file_stays_reported_across_a_new_serving_pair(callers: Callers, tmp_path: Path) -> None:
    client_ca, cert, key = tmp_path / "ca.crt", tmp_path / "tls.crt", tmp_path / "tls.key"
    shutil.copy(callers.ca.cert_file, client_ca)
    shutil.copy(callers.serving.cert, cert)
    shutil.copy(callers.serving.key, key)
    tls = TlsReloader(cert, key, client_ca=client_ca)
    client_ca.write_text("broken\n")
    tls.check()
    assert "client CA" in tls.error
    rotated = write_certs(tmp_path / "rotated", "dra", "webhook", ("127.0.0.1",))
    shutil.copy(rotated.cert, cert)
    shutil.copy(rotated.key, key)
    assert tls.check() and "client CA" in tls.error  # the pair loaded; the CA file is still refused
    shutil.copy(callers.ca.cert_file, client_ca)
    tls.check()
    assert tls.error == ""
