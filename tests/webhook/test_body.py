"""Request bodies of a real ``dra-webhook serve``: compressed ones refused with 415, a client gone
mid-body one INFO line; ``/metrics`` on its own port with ``--metrics-port``."""

from __future__ import annotations

import asyncio
import gzip
import logging
import zlib
from pathlib import Path

import aiohttp
import pytest

from tests.webhook.test_api_unreachable import closed_port
from tests.webhook.test_connections import REVIEW, answer, post, serving


@pytest.mark.parametrize(
    ("encoding", "payload"),
    [
        ("gzip", gzip.compress(REVIEW)),
        ("deflate", zlib.compress(REVIEW)),
        ("gzip", b"not gzip at all"),
        ("br", b"\x00\x01"),
    ],
    ids=["gzip", "deflate", "gzip-garbage", "br"],
)
async def test_a_compressed_body_is_answered_415_naming_the_encoding_we_accept(
    tmp_path: Path, encoding: str, payload: bytes
) -> None:
    async with serving(tmp_path) as served:
        stream = await served.tls()
        stream[1].write(post("/mutate/enforce", payload, f"Content-Encoding: {encoding}"))
        status, headers, text = await answer(stream)
    assert status == 415, text
    assert headers.get("accept-encoding") == "identity"
    assert encoding in text.decode()


async def test_identity_encoding_is_an_ordinary_review(tmp_path: Path) -> None:
    async with serving(tmp_path) as served:
        stream = await served.tls()
        stream[1].write(post("/mutate/enforce", REVIEW, "Content-Encoding: identity"))
        status, _, _ = await answer(stream)
    assert status == 200


async def test_a_client_gone_mid_body_is_one_info_line_and_no_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with serving(tmp_path) as served:
        for _ in range(3):
            _, writer = await served.tls()
            writer.write(post("/mutate/enforce", REVIEW[:100], f"Content-Length: {len(REVIEW)}"))
            await writer.drain()
            await asyncio.sleep(0.1)
            writer.transport.abort()
        await asyncio.sleep(0.3)
    ours = [r for r in caplog.records if r.name.startswith(("dra_bridge", "aiohttp")) and "watch" not in r.getMessage()]
    errors = [r for r in ours if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]
    gone = [r for r in ours if "went away mid-body" in r.getMessage()]
    assert len(gone) == 3 and all(r.levelno == logging.INFO and r.exc_info is None for r in gone)


async def test_metrics_port_serves_metrics_in_plain_http_and_the_https_port_no_longer_does(tmp_path: Path) -> None:
    port = closed_port()
    async with serving(tmp_path, "--metrics-port", str(port)) as served, aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{port}/metrics") as resp:
            assert resp.status == 200 and "dra_webhook_requests_total" in await resp.text()
        async with session.post(f"http://127.0.0.1:{port}/mutate/enforce", data=REVIEW) as resp:
            assert resp.status in (404, 405)  # admission stays on the HTTPS port
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=served.client_tls)) as tls:
            async with tls.get(f"https://127.0.0.1:{served.port}/metrics") as resp:
                assert resp.status == 404
            async with tls.get(f"https://127.0.0.1:{served.port}/healthz") as resp:
                assert resp.status == 200


async def test_without_metrics_port_the_https_port_serves_metrics(tmp_path: Path) -> None:
    async with serving(tmp_path) as served:
        connector = aiohttp.TCPConnector(ssl=served.client_tls)
        async with (
            aiohttp.ClientSession(connector=connector) as tls,
            tls.get(f"https://127.0.0.1:{served.port}/metrics") as resp,
        ):
            assert resp.status == 200 and "dra_webhook_requests_total" in await resp.text()
