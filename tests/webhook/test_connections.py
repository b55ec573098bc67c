"""Bounded connections of a real ``dra-webhook serve`` over HTTPS: every phase times out, and at
the connection cap the oldest connection without a request head makes room (docs/design.md D31)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dra_bridge.webhook.certs import write_certs
from dra_bridge.webhook.cli import serve
from dra_bridge.webhook.errors import WebhookConfigError
from dra_bridge.webhook.settings import Settings
from tests.factories import make_pod
from tests.webhook.conftest import body, make_admission_review, write_kubeconfig
from tests.webhook.test_api_unreachable import closed_port

Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@dataclass
class Served:
    port: int
    client_tls: ssl.SSLContext
    opened: list[asyncio.StreamWriter] = field(default_factory=list)

    async def tls(self) -> Stream:
        """A connection whose TLS handshake is done."""
        return self._keep(await asyncio.open_connection("127.0.0.1", self.port, ssl=self.client_tls))

    async def tcp(self) -> Stream:
        """A connection that never starts TLS."""
        return self._keep(await asyncio.open_connection("127.0.0.1", self.port))

    def _keep(self, stream: Stream) -> Stream:
        self.opened.append(stream[1])
        return stream

    async def close(self) -> None:
        for writer in self.opened:
            writer.close()
            with contextlib.suppress(ConnectionError, ssl.SSLError):
                await writer.wait_closed()


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, *flags: str) -> AsyncIterator[Served]:
    """``dra-webhook serve`` in this process with ``flags``, its API server unreachable (the
    watches retry in the background; admission does not need them)."""
    paths = write_certs(tmp_path / "certs", "dra", "webhook", ("127.0.0.1",))
    port = closed_port()
    settings = Settings.from_args(
        [
            "--tls-cert-file",
            str(paths.cert),
            "--tls-key-file",
            str(paths.key),
            "--kubeconfig",
            str(write_kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{closed_port()}")),
            "--api-version",
            "v1",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            *flags,
        ],
        {},
    )
    ready = asyncio.Event()
    task = asyncio.create_task(serve(settings, ready))
    waiting = asyncio.create_task(ready.wait())
    await asyncio.wait([task, waiting], timeout=5, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if task.done():
        task.result()
    served = Served(port, ssl.create_default_context(cafile=str(paths.ca_cert)))
    try:
        yield served
    finally:
        await served.close()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def closed_within(stream: Stream, seconds: float) -> float:
    """Seconds until the server closed ``stream`` (anything it sent is skipped); fails after ``seconds``."""
    reader, writer = stream
    start = time.monotonic()
    try:
        async with asyncio.timeout(seconds):
            while await reader.read(65536):
                pass
    except (ConnectionError, ssl.SSLError):
        pass
    except TimeoutError:
        pytest.fail(f"still open after {seconds} s")
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError, ssl.SSLError):
            await writer.wait_closed()
    return time.monotonic() - start


async def still_open(stream: Stream) -> bool:
    """True when a GET /healthz on ``stream`` is answered."""
    reader, writer = stream
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        status = await asyncio.wait_for(reader.readline(), 2)
    except (ConnectionError, ssl.SSLError, TimeoutError):
        return False
    return status.startswith(b"HTTP/1.1 200")


def post(path: str, payload: bytes, *extra: str) -> bytes:
    head = [f"POST {path} HTTP/1.1", "Host: x", "Content-Type: application/json", *extra]
    if not any(h.lower().startswith("content-length") for h in extra):
        head.append(f"Content-Length: {len(payload)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + payload


async def answer(stream: Stream) -> tuple[int, dict[str, str], bytes]:
    """One HTTP response read from ``stream``: status, headers (lower-case names), body."""
    reader, _ = stream
    status = int((await reader.readline()).split()[1])
    headers: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, await reader.readexactly(int(headers.get("content-length", "0")))


async def metrics(served: Served) -> str:
    stream = await served.tls()
    stream[1].write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    return (await answer(stream))[2].decode()


REVIEW = body(make_admission_review(make_pod(gpus=1)))


async def review_on(stream: Stream) -> int:
    stream[1].write(post("/mutate/enforce", REVIEW))
    status, _, text = await answer(stream)
    assert status == 200 and json.loads(text)["response"]["allowed"] is True, text[:300]
    return status


async def test_a_connection_that_never_starts_tls_is_closed_after_the_handshake_timeout(tmp_path: Path) -> None:
    async with serving(tmp_path, "--handshake-timeout", "0.5") as served:
        took = await closed_within(await served.tcp(), 4)
    assert 0.4 < took < 3


async def test_a_connection_that_never_completes_its_headers_is_closed_after_the_header_timeout(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path, "--header-timeout", "0.5") as served:
        stream = await served.tls()
        stream[1].write(b"POST /mutate/enforce HTTP/1.1\r\nHost: x\r\n")  # a slowloris: the head never ends
        took = await closed_within(stream, 4)
        exposed = await metrics(served)
    assert 0.4 < took < 3
    assert 'dra_webhook_connections_closed_total{port="https",reason="header-timeout"} 1.0' in exposed


async def test_an_idle_kept_alive_connection_is_closed_after_the_idle_timeout(tmp_path: Path) -> None:
    async with serving(tmp_path, "--idle-timeout", "0.6") as served:
        stream = await served.tls()
        await review_on(stream)
        took = await closed_within(stream, 4)
    assert 0.5 < took < 3


async def test_a_body_that_stops_coming_is_answered_408_after_the_body_timeout(tmp_path: Path) -> None:
    async with serving(tmp_path, "--body-timeout", "0.5") as served:
        stream = await served.tls()
        stream[1].write(post("/mutate/enforce", REVIEW[:100], f"Content-Length: {len(REVIEW)}"))
        start = time.monotonic()
        status, headers, _ = await asyncio.wait_for(answer(stream), 4)
        assert status == 408 and headers.get("connection") == "close"
        assert 0.4 < time.monotonic() - start < 3
        await closed_within(stream, 3)


async def test_the_last_request_a_connection_may_carry_says_connection_close(tmp_path: Path) -> None:
    async with serving(tmp_path, "--max-requests-per-connection", "2") as served:
        stream = await served.tls()
        await review_on(stream)
        stream[1].write(post("/mutate/enforce", REVIEW))
        status, headers, _ = await answer(stream)
        assert status == 200 and headers.get("connection") == "close"
        await closed_within(stream, 2)


async def test_at_the_cap_the_oldest_connection_without_a_request_head_is_closed_and_a_review_is_answered(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path, "--max-connections", "4") as served:
        api_server = await served.tls()
        await review_on(api_server)  # a kept-alive connection that has sent a request
        hostile = [await served.tls() for _ in range(3)]  # handshaken, silent: the cap is reached
        newcomer = await served.tls()
        assert await review_on(newcomer) == 200
        await closed_within(hostile[0], 2)  # the oldest silent one made room
        assert await still_open(hostile[1]) and await still_open(hostile[2])
        assert await review_on(api_server) == 200  # the one that had sent a request was kept
        exposed = await metrics(served)  # a fifth connection again: the oldest silent one goes
    assert 'dra_webhook_connections_closed_total{port="https",reason="evicted"} 2.0' in exposed
    assert 'dra_webhook_connections{phase="busy",port="https"} 1.0' in exposed


async def test_at_the_cap_with_no_silent_connection_the_longest_idle_one_makes_room(tmp_path: Path) -> None:
    async with serving(tmp_path, "--max-connections", "2") as served:
        first, second = await served.tls(), await served.tls()
        await review_on(first)
        await review_on(second)  # both idle between requests; first the longer
        third = await served.tls()
        assert await review_on(third) == 200
        await closed_within(first, 2)
        assert await review_on(second) == 200


async def test_at_the_cap_with_every_connection_mid_request_the_new_one_is_closed(tmp_path: Path) -> None:
    async with serving(tmp_path, "--max-connections", "2") as served:
        busy = [await served.tls(), await served.tls()]
        for stream in busy:  # heads complete, bodies half sent: both mid-request
            stream[1].write(post("/mutate/enforce", REVIEW[:100], f"Content-Length: {len(REVIEW)}"))
            await stream[1].drain()
        await asyncio.sleep(0.2)
        newcomer = await served.tcp()
        await closed_within(newcomer, 2)
        for stream in busy:  # the requests in flight were left to finish
            stream[1].write(REVIEW[100:])
            status, _, text = await answer(stream)
            assert status == 200, text


async def test_half_open_connections_at_the_cap_do_not_lock_out_a_review(tmp_path: Path) -> None:
    async with serving(tmp_path, "--max-connections", "8") as served:
        for _ in range(20):
            await served.tcp()  # never starts TLS
        assert await review_on(await served.tls()) == 200


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--header-timeout", "0"),
        ("--idle-timeout", "soon"),
        ("--max-connections", "2.5"),
        ("--max-requests-per-connection", "-1"),
        ("--handshake-timeout", "inf"),
        ("--body-timeout", "nan"),
        ("--metrics-port", "0"),
        ("--metrics-port", "9443"),
    ],
)
def test_a_limit_or_port_that_does_not_parse_is_a_one_line_error_naming_its_flag_and_twin(
    flag: str, value: str
) -> None:
    with pytest.raises(WebhookConfigError) as exc:
        Settings.from_args(["--tls-cert-file", "c", "--tls-key-file", "k", "--port", "9443", flag, value], {})
    twin = "DRA_WEBHOOK_" + flag[2:].replace("-", "_").upper()
    assert str(exc.value).startswith(f"{flag}/{twin} ") and "\n" not in str(exc.value), exc.value


def test_limits_fall_back_to_their_env_twins_then_to_the_documented_defaults() -> None:
    env = {"DRA_WEBHOOK_MAX_CONNECTIONS": "64", "DRA_WEBHOOK_IDLE_TIMEOUT": "5"}
    limits = Settings.from_args(["--tls-cert-file", "c", "--tls-key-file", "k"], env).connections
    assert (limits.max_connections, limits.idle_timeout) == (64, 5.0)
    assert (limits.header_timeout, limits.body_timeout, limits.handshake_timeout, limits.max_requests) == (
        10.0,
        10.0,
        10.0,
        1000,
    )
