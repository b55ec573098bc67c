"""The aiohttp application: admission paths, probes and metrics (docs/design.md D15).

    make_app(runtime, admitter, background=()) -> web.Application
        POST /mutate/enforce   apply the plan (JSON Patch), ensuring templates first
        POST /mutate/audit     admit unchanged; the plan as warnings, auditAnnotations, Events
        GET  /healthz          200 while the process serves and its file reload loop runs (503 naming why)
        GET  /readyz           200/503 with a JSON detail (TLS loaded, policy and catalog in force)
        GET  /metrics          Prometheus text format

App state lives under ``AppKey``s; background tasks (file reload loop, template watch) are
started and stopped by ``cleanup_ctx``. Bodies are read by :func:`webhook.body.read_body`
(413 over 3 MiB before they are read in full, 415 when compressed, 408 when slow). With
``metrics=False`` (``--metrics-port``) this app has no ``/metrics``: :func:`make_metrics_app` serves it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from dra_bridge.webhook.body import Refusal, read_body
from dra_bridge.webhook.connection_limits import ConnectionLimits
from dra_bridge.webhook.decision import Mode
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.review import MAX_BODY_BYTES
from dra_bridge.webhook.runtime import Runtime

RUNTIME: web.AppKey[Runtime] = web.AppKey("runtime", Runtime)
ADMITTER: web.AppKey[Admitter] = web.AppKey("admitter", Admitter)
Background = Callable[[asyncio.Event], Coroutine[Any, Any, None]]


def _json(status: int, body: object) -> web.Response:
    return web.Response(status=status, text=json.dumps(body), content_type="application/json")


def _verified_peer(request: web.Request) -> bool:
    """Whether the caller presented a certificate that the TLS handshake verified (with
    ``CERT_OPTIONAL`` a certificate that does not verify fails the handshake, none at all does not)."""
    transport = request.transport
    return transport is not None and bool(transport.get_extra_info("peercert"))


def _mutate(mode: Mode, body_timeout: float) -> Callable[[web.Request], Coroutine[Any, Any, web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        admitter = request.app[ADMITTER]
        tls = request.app[RUNTIME].tls
        if tls is not None and tls.client_ca is not None and not _verified_peer(request):
            admitter.metrics.errors.labels("bad-request").inc()
            admitter.metrics.requests.labels(mode, "unauthenticated").inc()
            refused = _json(403, {"error": "a client certificate signed by --client-ca-file is required"})
            refused.force_close()
            return refused
        body = await read_body(request, body_timeout)
        if isinstance(body, Refusal):
            admitter.metrics.errors.labels("bad-request").inc()
            admitter.metrics.requests.labels(mode, "bad-request").inc()
            refused = _json(body.status, {"error": body.message})
            refused.headers.update(body.headers)
            if body.close:
                refused.force_close()
            return refused
        status, answer = await admitter.handle(body, mode)
        return _json(status, answer)

    return handler


async def healthz(request: web.Request) -> web.Response:
    """Liveness: the event loop answers and the file reload loop runs (``Runtime.liveness``)."""
    alive, why = request.app[RUNTIME].liveness()
    return web.Response(text="ok") if alive else web.Response(status=503, text=why)


async def readyz(request: web.Request) -> web.Response:
    """Readiness with a JSON detail; 503 until TLS and a valid policy are in force."""
    ready, detail = request.app[RUNTIME].readiness()
    return _json(200 if ready else 503, detail)


async def metrics_page(request: web.Request) -> web.Response:
    """Prometheus exposition of this process's registry."""
    body = request.app[RUNTIME].metrics.render()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def make_metrics_app(runtime: Runtime) -> web.Application:
    """``GET /metrics`` alone, for its own port (``--metrics-port``, plain HTTP)."""
    app = web.Application(client_max_size=1024)
    app[RUNTIME] = runtime
    app.router.add_get("/metrics", metrics_page)
    return app


async def reload_loop(runtime: Runtime, interval: float, stop: asyncio.Event) -> None:
    """Check the watched files every ``interval`` seconds, in a worker thread, until ``stop`` is
    set; supervised by ``runtime.reloader`` (webhook.reload.Reloader)."""
    await runtime.reloader.run(runtime.check_files, interval, stop)


def make_app(
    runtime: Runtime,
    admitter: Admitter,
    background: Sequence[Background] = (),
    *,
    body_timeout: float = ConnectionLimits.body_timeout,
    metrics: bool = True,
) -> web.Application:
    """The application; ``background`` coroutines get a stop Event and run while it serves."""
    app = web.Application(client_max_size=MAX_BODY_BYTES + 1)
    app[RUNTIME] = runtime
    app[ADMITTER] = admitter
    app.router.add_post("/mutate/enforce", _mutate("enforce", body_timeout))
    app.router.add_post("/mutate/audit", _mutate("audit", body_timeout))
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    if metrics:
        app.router.add_get("/metrics", metrics_page)

    async def tasks(_app: web.Application) -> AsyncIterator[None]:
        stop = asyncio.Event()
        running = [asyncio.get_running_loop().create_task(fn(stop)) for fn in background]
        yield
        stop.set()
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    app.cleanup_ctx.append(tasks)
    return app
