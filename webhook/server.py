"""The aiohttp application: admission paths, probes and metrics (docs/design.md D15).

    make_app(runtime, admitter, background=()) -> web.Application
        POST /mutate/enforce   apply the plan (JSON Patch), ensuring templates first
        POST /mutate/audit     admit unchanged; the plan as warnings, auditAnnotations, Events
        GET  /healthz          200 while the process serves and its file reload loop runs (503 naming why)
        GET  /readyz           200/503 with a JSON detail (TLS loaded, policy and catalog in force)
        GET  /metrics          Prometheus text format

App state lives under ``AppKey``s; background tasks (file reload loop, template watch) are
started and stopped by ``cleanup_ctx``. Bodies over 3 MiB are refused with 413 before they
are read in full.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from dra_bridge.webhook.decision import Mode
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.review import MAX_BODY_BYTES
from dra_bridge.webhook.runtime import Runtime

RUNTIME: web.AppKey[Runtime] = web.AppKey("runtime", Runtime)
ADMITTER: web.AppKey[Admitter] = web.AppKey("admitter", Admitter)
Background = Callable[[asyncio.Event], Coroutine[Any, Any, None]]


def _json(status: int, body: object) -> web.Response:
    return web.Response(status=status, text=json.dumps(body), content_type="application/json")


async def _read_limited(request: web.Request) -> bytes | None:
    """The body, or None when it exceeds MAX_BODY_BYTES (declared or actually sent)."""
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        return None
    chunks, size = [], 0
    async for chunk in request.content.iter_chunked(65536):
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _mutate(mode: Mode) -> Callable[[web.Request], Coroutine[Any, Any, web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        admitter = request.app[ADMITTER]
        body = await _read_limited(request)
        if body is None:
            admitter.metrics.errors.labels("bad-request").inc()
            admitter.metrics.requests.labels(mode, "bad-request").inc()
            return _json(413, {"error": f"body exceeds the {MAX_BODY_BYTES} byte limit"})
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


async def metrics(request: web.Request) -> web.Response:
    """Prometheus exposition of this process's registry."""
    body = request.app[RUNTIME].metrics.render()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def reload_loop(runtime: Runtime, interval: float, stop: asyncio.Event) -> None:
    """Check the watched files every ``interval`` seconds, in a worker thread, until ``stop`` is
    set; supervised by ``runtime.reloader`` (webhook.reload.Reloader)."""
    await runtime.reloader.run(runtime.check_files, interval, stop)


def make_app(runtime: Runtime, admitter: Admitter, background: Sequence[Background] = ()) -> web.Application:
    """The application; ``background`` coroutines get a stop Event and run while it serves."""
    app = web.Application(client_max_size=MAX_BODY_BYTES + 1)
    app[RUNTIME] = runtime
    app[ADMITTER] = admitter
    app.router.add_post("/mutate/enforce", _mutate("enforce"))
    app.router.add_post("/mutate/audit", _mutate("audit"))
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)

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
