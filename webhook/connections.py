"""Bounded connections: every phase of a connection has a deadline, and one port has a cap.

    install(app)                                  the middleware (before the runner freezes the app)
    tracker = ConnectionTracker(limits)
    TrackedSite(runner, host, port, tracker, ssl_context).start()
    tracker.open / tracker.closed[reason]         connections open now; closed by this module, by why
    ConnectionCollector({"https": tracker, ...})  their Prometheus metrics (below)

A connection is in one phase at a time, each with its deadline (webhook.connection_limits):

    handshake  accepted, TLS handshake running           handshake_timeout, from accept
    header     waiting for a request's head              header_timeout, from the handshake's end or
                                                         the first byte of a kept-alive request
    busy       a request is being read and answered      (the body: webhook.body, body_timeout)
    idle       kept alive between requests               idle_timeout, from the last answer

At ``max_connections`` a newly accepted connection closes another one first (docs/design.md D31):
the oldest that has never completed a request head (handshake or header phase, no request yet),
else the one idle or waiting longest between requests, else (every one busy) the new one itself.
So connections that never send a request cannot lock out the API server's.

Metrics, by ``port`` (``https``, ``metrics``): ``dra_webhook_connections{port, phase}`` (open now)
and ``dra_webhook_connections_closed_total{port, reason}`` (closed here: ``handshake-timeout``,
``header-timeout``, ``idle-timeout``, ``evicted``, ``refused``, ``shutdown``).

The TLS layer is asyncio's own ``SSLProtocol``, created here (not by ``loop.create_server``) so
that the module sees a connection from accept on, before its handshake, and can close it
then. Its read buffer is :data:`TLS_READ_BUFFER` bytes instead of asyncio's 256 KiB, the main
cost of a connection that does nothing.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import math
import ssl
from asyncio.sslproto import SSLProtocol
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import cast

from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from dra_bridge.webhook.connection_limits import ConnectionLimits

#: Bytes asyncio's TLS layer reads at once (one TLS record is at most 16 KiB plus overhead).
TLS_READ_BUFFER = 32 * 1024
#: SSLProtocol takes a waiter future; a server-side connection has nobody awaiting it.
_NO_WAITER = cast("asyncio.Future[None]", None)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Phase(enum.Enum):
    """Where a connection is (module docstring)."""

    HANDSHAKE = "handshake"
    HEADER = "header"
    BUSY = "busy"
    IDLE = "idle"


class _Connection(asyncio.Protocol):
    """Sits between the transport (the TLS layer's, or the socket's on a plain port) and
    aiohttp's RequestHandler, which it forwards everything to; keeps the phase and its deadline."""

    def __init__(self, tracker: ConnectionTracker, inner: RequestHandler, tls: bool) -> None:
        self._tracker = tracker
        self._loop = tracker.loop
        self.inner = inner
        self.tls = tls
        self.raw: asyncio.Transport | None = None
        self._app: asyncio.BaseTransport | None = None
        self.requests = 0
        self.opened = self.since = self._loop.time()
        self.phase = Phase.HANDSHAKE
        self._timer: asyncio.TimerHandle | None = None

    # the socket side: accept and loss, seen before and without the TLS handshake
    def attach(self, raw: asyncio.BaseTransport) -> bool:
        """Track the accepted connection; False when the cap refused it (it is being closed)."""
        self.raw = cast(asyncio.Transport, raw)
        if not self._tracker.admit(self):
            self._tracker.count("refused")
            self.raw.abort()
            return False
        if self.tls:
            self._deadline(self._tracker.limits.handshake_timeout, "handshake-timeout")
        return True

    def detach(self) -> None:
        self._cancel()
        self._tracker.forget(self)

    def abort(self, reason: str) -> None:
        """Close at once (no TLS close_notify), counted under ``reason``."""
        self._tracker.count(reason)
        self.detach()
        if self.raw is not None:
            self.raw.abort()

    # the application side (asyncio.Protocol), forwarded to aiohttp
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not self.tls and not self.attach(transport):
            return
        self._app = transport
        self.inner.connection_made(transport)
        self._enter(Phase.HEADER)

    def data_received(self, data: bytes) -> None:
        if self.phase is Phase.IDLE:
            self._enter(Phase.HEADER)
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        self.inner.eof_received()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.detach()
        if self._app is not None:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    # request boundaries, from the middleware
    def request_started(self) -> bool:
        """The phase is busy; True when this request is the last this connection may carry."""
        self.requests += 1
        self._enter(Phase.BUSY)
        return self.requests >= int(self._tracker.limits.max_requests)

    def request_finished(self) -> None:
        if self.phase is Phase.BUSY:
            self._enter(Phase.IDLE)

    def _enter(self, phase: Phase) -> None:
        self.phase, self.since = phase, self._loop.time()
        limits = self._tracker.limits
        if phase is Phase.HEADER:
            self._deadline(limits.header_timeout, "header-timeout")
        elif phase is Phase.IDLE:
            self._deadline(limits.idle_timeout, "idle-timeout")
        else:
            self._cancel()

    def _deadline(self, seconds: float, reason: str) -> None:
        self._cancel()
        self._timer = self._loop.call_later(seconds, self.abort, reason)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class _TlsLayer(SSLProtocol):
    """asyncio's TLS protocol with a smaller read buffer, telling its connection of accept and loss."""

    max_size = TLS_READ_BUFFER

    def __init__(self, loop: asyncio.AbstractEventLoop, conn: _Connection, context: ssl.SSLContext, timeout: float):
        # asyncio's own handshake timeout is a backstop: the connection's deadline fires first
        super().__init__(
            loop, conn, context, _NO_WAITER, server_side=True, ssl_handshake_timeout=math.ceil(timeout) + 1
        )
        self._conn = conn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._conn.attach(transport)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._conn.detach()
        super().connection_lost(exc)


class ConnectionTracker:
    """The connections of one port (module docstring)."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self._conns: dict[_Connection, None] = {}  # in accept order
        self.closed: collections.Counter[str] = collections.Counter()
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    @property
    def open(self) -> int:
        """Connections open now (handshaking ones included)."""
        return len(self._conns)

    def phases(self) -> collections.Counter[str]:
        """Open connections by phase."""
        return collections.Counter(c.phase.value for c in self._conns)

    def count(self, reason: str) -> None:
        self.closed[reason] += 1

    def protocol(self, server: web.Server, context: ssl.SSLContext | None) -> asyncio.BaseProtocol:
        """A protocol for one accepted connection (the ``loop.create_server`` factory)."""
        conn = _Connection(self, server(), tls=context is not None)
        if context is None:
            return conn
        return _TlsLayer(self.loop, conn, context, self.limits.handshake_timeout)

    def admit(self, conn: _Connection) -> bool:
        """Track ``conn``; at the cap, first close another one; False when none may be (D31)."""
        if len(self._conns) >= self.limits.max_connections:
            victim = self._victim()
            if victim is None:
                return False
            victim.abort("evicted")
        self._conns[conn] = None
        return True

    def _victim(self) -> _Connection | None:
        waiting: _Connection | None = None
        for conn in self._conns:  # oldest first
            if conn.phase is Phase.BUSY:
                continue
            if conn.requests == 0:
                return conn
            if waiting is None or conn.since < waiting.since:
                waiting = conn
        return waiting

    def forget(self, conn: _Connection) -> None:
        self._conns.pop(conn, None)

    def abort_handshaking(self) -> None:
        """Close the connections aiohttp does not know of yet (at shutdown)."""
        for conn in [c for c in self._conns if c.phase is Phase.HANDSHAKE]:
            conn.abort("shutdown")


def install(app: web.Application) -> None:
    """Add the middleware that tells each connection where its requests begin and end (before
    the runner freezes ``app``)."""
    app.middlewares.insert(0, _middleware)


@web.middleware
async def _middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    transport = request.transport
    conn = transport.get_protocol() if transport is not None else None
    if not isinstance(conn, _Connection):
        return await handler(request)
    last = conn.request_started()
    try:
        response = await handler(request)
        if last:
            response.force_close()
        return response
    finally:
        if last:
            request.protocol.close()
        conn.request_finished()


class TrackedSite(web.BaseSite):
    """A TCP site whose connections ``tracker`` bounds; TLS when ``ssl_context`` is given."""

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str,
        port: int,
        tracker: ConnectionTracker,
        ssl_context: ssl.SSLContext | None = None,
        backlog: int = 128,
    ) -> None:
        super().__init__(runner, backlog=backlog)
        self._host, self._port, self._tracker, self._tls = host, port, tracker, ssl_context
        self._listening: asyncio.Server | None = None

    @property
    def name(self) -> str:
        return f"{'https' if self._tls else 'http'}://{self._host}:{self.port}"

    @property
    def port(self) -> int:
        """The bound port (the one asked for, until started)."""
        if self._listening is not None and self._listening.sockets:
            return int(self._listening.sockets[0].getsockname()[1])
        return self._port

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        self._server = self._listening = await asyncio.get_running_loop().create_server(
            lambda: self._tracker.protocol(server, self._tls),
            self._host,
            self._port,
            backlog=self._backlog,
            reuse_address=True,
        )

    async def stop(self) -> None:
        await super().stop()
        self._tracker.abort_handshaking()


class ConnectionCollector(Collector):
    """Reads the trackers (by port name) at scrape time (module docstring)."""

    def __init__(self, trackers: Mapping[str, ConnectionTracker]) -> None:
        self.trackers = trackers

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        open_now = GaugeMetricFamily(
            "dra_webhook_connections", "Connections open, by port and phase", labels=["port", "phase"]
        )
        closed = CounterMetricFamily(
            "dra_webhook_connections_closed",
            "Connections the webhook closed on a limit, by port and reason",
            labels=["port", "reason"],
        )
        for port, tracker in sorted(self.trackers.items()):
            phases = tracker.phases()
            for phase in Phase:
                open_now.add_metric([port, phase.value], phases[phase.value])
            for reason, count in sorted(tracker.closed.items()):
                closed.add_metric([port, reason], count)
        yield open_now
        yield closed
