"""What callers send cannot forge a webhook log line: control characters reach the log escaped."""

from __future__ import annotations

import io
import logging
from collections.abc import Awaitable, Callable, Iterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from dra_bridge.kube import logs
from tests.factories import make_pod
from tests.webhook.conftest import body, make_admission_review

Client = TestClient[web.Request, web.Application]
ClientFactory = Callable[[web.Application], Awaitable[Client]]
FORGED = "x\n2026-01-01 00:00:00,000 INFO dra_bridge.webhook.handler: admission uid=forged\r\x1b[31m"


@pytest.fixture
def log() -> Iterator[io.StringIO]:
    """The webhook's log as its command configures it, into a buffer."""
    stream = io.StringIO()
    handler = logs.configure("INFO", stream)
    yield stream
    logging.getLogger().removeHandler(handler)


async def test_a_name_and_uid_with_a_newline_and_an_escape_stay_on_one_escaped_line(
    aiohttp_client: ClientFactory, app: web.Application, log: io.StringIO
) -> None:
    client = await aiohttp_client(app)
    review = make_admission_review(make_pod(name=f"trainer{FORGED}", gpus=1), uid=f"uid{FORGED}")
    resp = await client.post("/mutate/enforce", data=body(review), headers={"Content-Type": "application/json"})
    assert resp.status == 200
    lines = [line for line in log.getvalue().splitlines() if "dra_bridge.webhook.handler" in line]
    (line,) = [line for line in lines if "outcome=" in line]  # the forged one is not a line of its own
    assert "\x1b" not in log.getvalue() and "\r" not in log.getvalue()
    escaped = "x\\n2026-01-01 00:00:00,000 INFO dra_bridge.webhook.handler: admission uid=forged\\r\\x1b[31m"
    assert f"uid=uid{escaped} " in line and f"name=trainer{escaped} " in line
    assert len(log.getvalue().splitlines()) == log.getvalue().count("\n")  # no stray line separator
