"""webhook/drain.py: after SIGTERM the webhook keeps serving for the drain period, every answer
closes its connection, idle keep-alive connections are closed, and /readyz is 503."""

from __future__ import annotations

import asyncio
import contextlib
import time

from aiohttp import web

from dra_bridge.webhook.drain import Drain


async def _ok(_request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _start() -> tuple[web.AppRunner, Drain, int]:
    app = web.Application()
    app.router.add_post("/mutate/enforce", _ok)
    app.router.add_get("/readyz", _ok)
    drain = Drain()
    drain.install(app)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, drain, port


async def _request(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, method: str, path: str
) -> tuple[str, dict[str, str]]:
    writer.write(f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n".encode())
    await writer.drain()
    head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)).decode()
    status, *lines = head.strip().split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    await reader.readexactly(int(headers.get("content-length", "0")))
    return status, headers


async def _closed(reader: asyncio.StreamReader) -> bool:
    return await asyncio.wait_for(reader.read(1), 5) == b""


async def _connect(port: int, opened: list[asyncio.StreamWriter]) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    opened.append(writer)
    return reader, writer


async def _close(opened: list[asyncio.StreamWriter]) -> None:
    for writer in opened:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


def test_answers_close_their_connection_during_the_drain_and_serve_before_it() -> None:
    async def go() -> None:
        runner, drain, port = await _start()
        opened: list[asyncio.StreamWriter] = []
        try:
            reader, writer = await _connect(port, opened)
            status, headers = await _request(reader, writer, "POST", "/mutate/enforce")
            assert status.endswith("200 OK") and headers.get("connection", "keep-alive").lower() != "close"
            drain.start()
            status, headers = await _request(reader, writer, "POST", "/mutate/enforce")
            assert status.endswith("200 OK") and headers["connection"].lower() == "close"
            assert await _closed(reader)
            # a new connection during the drain is still served (the listener stays open)
            reader, writer = await _connect(port, opened)
            status, headers = await _request(reader, writer, "GET", "/readyz")
            assert "503" in status and headers["connection"].lower() == "close"
        finally:
            await _close(opened)
            await runner.cleanup()

    asyncio.run(go())


def test_the_drain_closes_connections_idle_for_a_while_and_lasts_its_period() -> None:
    async def go() -> None:
        runner, drain, port = await _start()
        opened: list[asyncio.StreamWriter] = []
        try:
            reader, writer = await _connect(port, opened)
            await _request(reader, writer, "POST", "/mutate/enforce")  # now idle, kept alive
            started = time.monotonic()
            task = asyncio.create_task(drain.run(runner, 1.2, idle=0.5))
            # a connection idle for less than `idle` is left to its next answer
            busy_reader, busy_writer = await _connect(port, opened)
            await asyncio.sleep(0.3)
            status, headers = await _request(busy_reader, busy_writer, "POST", "/mutate/enforce")
            assert status.endswith("200 OK") and headers["connection"].lower() == "close"
            assert await _closed(reader)
            assert 0.4 <= time.monotonic() - started < 1.0
            # still serving a new connection while the drain lasts
            reader, writer = await _connect(port, opened)
            status, _ = await _request(reader, writer, "POST", "/mutate/enforce")
            assert status.endswith("200 OK")
            await task
            assert time.monotonic() - started >= 1.2
        finally:
            await _close(opened)
            await runner.cleanup()

    asyncio.run(go())
