"""Malformed HTTP from a caller is one INFO line without a traceback, bounded in rate; the caller
gets aiohttp's 400 (a real ``dra-webhook serve`` over HTTPS, raw requests on a socket)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from dra_bridge.webhook.malformed_http import MAX_LINES_PER_WINDOW
from tests.webhook.test_connections import Served, answer, serving

MALFORMED = [
    b"GET /healthz HTTP/1.1\r\nHo st: x\r\n\r\n",
    b"GET /" + b"a" * 10000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(40)) + b"\r\n",
    b"POST /mutate/enforce HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"POST /mutate/enforce HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
    b"POST /mutate/enforce HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\nX\x1b[31m: \x07y\r\n\r\n",
]


async def _send(served: Served, request: bytes) -> int:
    stream = await served.tls()
    stream[1].write(request)
    status, _, _ = await answer(stream)
    return status


def _server_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith(("aiohttp", "dra_bridge.webhook.malformed_http"))]


async def test_malformed_requests_are_one_info_line_each_without_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with serving(tmp_path) as served:
        for request in MALFORMED:
            caplog.clear()
            assert await _send(served, request) == 400, request[:40]
            records = _server_records(caplog)
            assert [r.levelno for r in records] == [logging.INFO], (request[:40], records)
            assert records[0].exc_info is None and "Traceback" not in caplog.text
            assert "127.0.0.1" in records[0].getMessage() and "malformed request" in records[0].getMessage()
            assert len(records[0].getMessage()) < 400


async def test_a_flood_of_malformed_requests_logs_a_bounded_number_of_lines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with serving(tmp_path) as served:
        for _ in range(MAX_LINES_PER_WINDOW + 20):
            assert await _send(served, MALFORMED[0]) == 400
    records = _server_records(caplog)
    assert len(records) == MAX_LINES_PER_WINDOW, [r.getMessage() for r in records]
    assert all(r.levelno == logging.INFO and r.exc_info is None for r in records)


def test_the_first_line_of_a_new_window_says_how_many_were_left_out(caplog: pytest.LogCaptureFixture) -> None:
    from aiohttp.http_exceptions import BadHttpMessage

    from dra_bridge.webhook.malformed_http import WINDOW_SECONDS, RequestLog

    now = [0.0]
    log = RequestLog(clock=lambda: now[0])
    caplog.set_level(logging.INFO)
    for _ in range(MAX_LINES_PER_WINDOW + 5):
        log.exception("Error handling request from %s", "10.0.0.1", exc_info=BadHttpMessage("bad\x1b[2J header"))
    now[0] = WINDOW_SECONDS
    log.exception("Error handling request from %s", "10.0.0.1", exc_info=BadHttpMessage("x" * 5000))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == MAX_LINES_PER_WINDOW + 1
    assert "\x1b" not in lines[0] and "\\x1b[2J" in lines[0]
    assert "(5 more not logged before this one)" in lines[-1] and len(lines[-1]) < 400
