"""The drain after SIGTERM (docs/design.md D37): keep serving, but let no connection outlive it.

    Drain()                      .active, .start(), install(app), await run(runner, period)

A terminating pod is removed from the Service's endpoints while the API server may still call
it: on a new connection (kube-proxy still routes some there until its rules change) and on the
keep-alive connections it pooled before, which outlive the endpoint removal, and Go's client
does not retry a POST on a connection the server closed after reading it. So for ``period``
seconds after SIGTERM the webhook keeps its listener and answers every request, each answer
carrying ``Connection: close`` (the connection is closed once it is written), and connections
idle for ``IDLE`` seconds are closed (checked every ``SWEEP`` seconds), so the client opens a new
one, to a pod that is not going away. A connection idle for less is left to its next answer:
closing it could cross a request the client is writing, which fails with EOF. ``/readyz``
answers 503 during the drain. The chart's ``preStop`` sleep covers the endpoint propagation
before SIGTERM; this covers the pooled connections after it.
"""

from __future__ import annotations

import asyncio
import logging
import time

from aiohttp import hdrs, web
from aiohttp.typedefs import Handler
from aiohttp.web_protocol import RequestHandler

__all__ = ["DRAIN", "IDLE", "SWEEP", "Drain"]

logger = logging.getLogger(__name__)
#: Seconds between passes that close the idle connections during a drain.
SWEEP = 0.2
#: Seconds a connection must have been idle to be closed: closing one the client just picked
#: for a request (Go's pool reuses the most recent first) would fail that request (EOF).
IDLE = 1.0


class Drain:
    """Whether the process drains, and the hooks that make its answers close their connections."""

    def __init__(self) -> None:
        self.started: float | None = None

    @property
    def active(self) -> bool:
        """True once :meth:`start` was called."""
        return self.started is not None

    def start(self) -> None:
        """Begin draining: answers close their connections, /readyz is 503."""
        if self.started is None:
            self.started = time.monotonic()

    def install(self, app: web.Application) -> None:
        """Add the drain's hooks to ``app`` (before it starts)."""
        app[DRAIN] = self
        app.middlewares.append(self._readiness)
        app.on_response_prepare.append(self._close_after)

    @web.middleware
    async def _readiness(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self.active and request.path == "/readyz":
            return web.json_response({"ready": False, "draining": True}, status=503)
        return await handler(request)

    async def _close_after(self, _request: web.Request, response: web.StreamResponse) -> None:
        if self.active:  # the headers are computed before this hook: say it, and close once sent
            response.force_close()
            response.headers[hdrs.CONNECTION] = "close"

    async def run(self, runner: web.BaseRunner, period: float, idle: float = IDLE) -> None:
        """Drain for ``period`` seconds: serve, closing each connection idle for ``idle`` seconds."""
        self.start()
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + period
        logger.info("SIGTERM: draining for %.1f s (answers close their connections)", period)
        while True:
            server = runner.server
            for connection in server.connections if server is not None else ():
                if _idle_since(connection, loop.time()) >= idle:
                    connection.force_close()
            left = deadline - time.monotonic()
            if left <= 0:
                return
            await asyncio.sleep(min(SWEEP, left))


def _idle_since(connection: RequestHandler, now: float) -> float:
    """Seconds the connection has waited for a request (0 when busy), from the keep-alive
    deadline aiohttp sets at its start and after each answer."""
    waiter = getattr(connection, "_waiter", None)
    if waiter is None or waiter.done() or getattr(connection, "_request_in_progress", False):
        return 0.0
    deadline: float = getattr(connection, "_next_keepalive_close_time", 0.0)
    return now - (deadline - connection.keepalive_timeout)


DRAIN: web.AppKey[Drain] = web.AppKey("drain", Drain)
