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


@pytest.mark.parametrize(
    "encodings",
    [("identity", "gzip"), ("gzip", "identity"), ("identity, gzip",), ("identity", "identity, br")],
    ids=["identity-then-gzip", "gzip-then-identity", "a-list", "identity-then-a-list"],
)
async def test_any_non_identity_content_encoding_among_several_is_415(
    tmp_path: Path, encodings: tuple[str, ...]
) -> None:
    async with serving(tmp_path) as served:
        stream = await served.tls()
        stream[1].write(post("/mutate/enforce", gzip.compress(REVIEW), *(f"Content-Encoding: {e}" for e in encodings)))
        status, headers, text = await answer(stream)
    assert status == 415, text
    assert headers.get("accept-encoding") == "identity"


async def test_several_identity_content_encodings_are_an_ordinary_review(tmp_path: Path) -> None:
    async with serving(tmp_path) as served:
        stream = await served.tls()
        stream[1].write(post("/mutate/enforce", REVIEW, "Content-Encoding: identity", "Content-Encoding: identity"))
        status, _, _ = await answer(stream)
    assert status == 200


@pytest.mark.parametrize(
    ("payload", "content_type", "want"),
    [
        (REVIEW.decode().encode("utf-16"), "application/json", 400),
        (REVIEW.decode().encode("utf-16-le"), "application/json", 400),
        (REVIEW.decode().encode("utf-32"), "application/json", 400),
        (b"\xef\xbb\xbf" + REVIEW, "application/json", 400),
        (REVIEW.decode().encode("utf-16"), "application/json; charset=utf-16", 415),
        (REVIEW, "application/json; charset=latin-1", 415),
    ],
    ids=["utf-16-bom", "utf-16-le", "utf-32", "utf-8-bom", "charset-utf-16", "charset-latin-1"],
)
async def test_a_review_body_that_is_not_plain_utf8_is_refused(
    tmp_path: Path, payload: bytes, content_type: str, want: int
) -> None:
    async with serving(tmp_path) as served:
        stream = await served.tls()
        request = post("/mutate/enforce", payload).replace(
            b"Content-Type: application/json", f"Content-Type: {content_type}".encode()
        )
        stream[1].write(request)
        status, _, text = await answer(stream)
    assert status == want, text


async def test_a_utf8_charset_is_an_ordinary_review(tmp_path: Path) -> None:
    async with serving(tmp_path) as served:
        stream = await served.tls()
        request = post("/mutate/enforce", REVIEW).replace(
            b"Content-Type: application/json", b"Content-Type: application/json; charset=UTF-8"
        )
        stream[1].write(request)
        status, _, text = await answer(stream)
    assert status == 200, text
