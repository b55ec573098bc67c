"""An API server that cannot be reached: template failures follow the policy's onError.

Real endpoints, no fakes: a closed loopback port (connection refused) and a loopback server
that answers the TLS handshake with plain text (a TLS error).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from dra_bridge.kube.api import ApiServer
from dra_bridge.kube.client import Client
from dra_bridge.webhook.errors import TemplateError
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.review import AdmissionResponse
from dra_bridge.webhook.runtime import Runtime, watch_policy
from dra_bridge.webhook.templates import KubeTemplateEnsurer
from tests.factories import make_pod
from tests.webhook.conftest import body, make_admission_review, response_of
from tests.webhook.test_templates import template


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


async def _plain_text(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.0 400 Bad Request\r\n\r\nnot TLS\r\n")
    await writer.drain()
    writer.close()


@pytest.fixture(params=["refused", "tls"])
async def endpoint(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    if request.param == "refused":
        yield f"https://127.0.0.1:{closed_port()}"
        return
    server = await asyncio.start_server(_plain_text, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"https://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


@pytest.fixture
async def api(endpoint: str) -> AsyncIterator[ApiServer]:
    cfg = client.Configuration(host=endpoint)
    cfg.verify_ssl = False
    api = Client(client.ApiClient(cfg))
    yield ApiServer(api)
    await api.close()


async def test_an_unreachable_api_server_is_a_template_error(api: ApiServer) -> None:
    ensurer = KubeTemplateEnsurer(api, "resource.k8s.io/v1", deadline=5.0)
    with pytest.raises(TemplateError, match="cannot reach the API server"):
        await ensurer.ensure([template()], dry_run=False)


def runtime_with(tmp_path: Path, on_error: str) -> Runtime:
    path = tmp_path / "policy.yaml"
    path.write_text(f"defaults: {{onError: {on_error}}}\n")
    return Runtime("resource.k8s.io/v1", policy=watch_policy(path), require_tls=False)


async def admit(api: ApiServer, runtime: Runtime) -> tuple[int, AdmissionResponse]:
    admitter = Admitter(runtime.context, KubeTemplateEnsurer(api, "resource.k8s.io/v1", deadline=5.0), runtime.metrics)
    status, answer = await admitter.handle(body(make_admission_review(make_pod())), "enforce")
    return status, response_of(answer)


def assert_one_warning_without_traceback(caplog: pytest.LogCaptureFixture) -> None:
    noisy = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(noisy) == 1, [r.getMessage() for r in noisy]
    assert noisy[0].levelno == logging.WARNING and noisy[0].exc_info is None
    assert "cannot reach the API server" in noisy[0].getMessage()


async def test_on_error_deny_refuses_the_pod_when_the_api_server_is_unreachable(
    api: ApiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = runtime_with(tmp_path, "deny")
    status, resp = await admit(api, runtime)
    assert status == 200 and resp["allowed"] is False and "patch" not in resp
    assert resp["status"]["code"] == 403 and "cannot reach the API server" in resp["status"]["message"]
    metrics = runtime.metrics.render().decode()
    assert 'dra_webhook_errors_total{kind="template"} 1.0' in metrics
    assert 'kind="internal"' not in metrics
    assert 'dra_webhook_requests_total{mode="enforce",outcome="denied"} 1.0' in metrics
    assert_one_warning_without_traceback(caplog)


async def test_on_error_admit_unchanged_warns_when_the_api_server_is_unreachable(
    api: ApiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = runtime_with(tmp_path, "admit-unchanged")
    status, resp = await admit(api, runtime)
    assert status == 200 and resp["allowed"] is True and "patch" not in resp
    assert any("could not be ensured" in w and "cannot reach the API server" in w for w in resp["warnings"])
    assert not any("internal error" in w for w in resp["warnings"])
    metrics = runtime.metrics.render().decode()
    assert 'dra_webhook_errors_total{kind="template"} 1.0' in metrics
    assert 'kind="internal"' not in metrics
    assert_one_warning_without_traceback(caplog)


async def test_the_template_watch_backs_off_exponentially(api: ApiServer, caplog: pytest.LogCaptureFixture) -> None:
    stop = asyncio.Event()
    delays: list[float] = []

    async def sleep(delay: float) -> None:
        delays.append(delay)
        if len(delays) == 7:
            stop.set()

    ensurer = KubeTemplateEnsurer(api, "resource.k8s.io/v1", sleep=sleep)
    await asyncio.wait_for(ensurer.watch_deletions(stop), 10)
    assert delays == [1, 2, 4, 8, 16, 30, 30]
    assert "retrying in 30s" in caplog.text
