"""Readiness, liveness and metrics of the agent.

:class:`Health` holds what the last tick learned about each real dependency (the kubelet's
PodResources socket, the API server, the state file) plus the interlock detail; the agent is
*ready* only when all three answer and the prepared-claim checkpoint is readable. Liveness is
"the loop ticked recently", so a missing kubelet or API server, or an unreadable checkpoint, makes
the pod unready, never restarted (no crash loop that would lose the recorded inventory: it is on
disk anyway; nor one that would stop the alarm over a file a restart cannot repair).
:func:`serve` exposes ``/readyz``, ``/healthz`` (JSON detail) and ``/metrics`` (Prometheus text)
on an aiohttp server.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

logger = logging.getLogger(__name__)


class Metrics:
    """The agent's Prometheus metrics, in their own registry (one per agent; tests make many)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.publishing = Gauge(
            "dra_bridge_publishing",
            "1 while the node's inventory is published as ResourceSlices",
            registry=self.registry,
        )
        self.refused = Gauge(
            "dra_bridge_interlock_refused",
            "1 while this interlock stops publication",
            ["interlock"],
            registry=self.registry,
        )
        self.recorded = Gauge(
            "dra_bridge_recorded_devices", "devices in the recorded inventory", registry=self.registry
        )
        self.dra_mode = Gauge(
            "dra_bridge_dra_mode", "1 when the Node is labelled dra-bridge.io/mode=dra", registry=self.registry
        )
        self.alarms = Counter(
            "dra_bridge_alarms", "published devices that the kubelet offered again", registry=self.registry
        )
        self.slice_writes = Counter(
            "dra_bridge_slice_writes",
            "ResourceSlice API writes (create, update, delete)",
            ["op"],
            registry=self.registry,
        )
        self._slice_writes_seen: dict[str, int] = {}
        self.taint_changes = Counter(
            "dra_bridge_device_taint_changes",
            "devices the bridge tainted dra-bridge.io/unhealthy (tainted) or untainted (cleared)",
            ["change"],
            registry=self.registry,
        )
        self.claim_ops = Counter(
            "dra_bridge_claim_operations",
            "claims the kubelet asked to prepare or unprepare",
            ["op"],
            registry=self.registry,
        )
        self.claim_errors = Counter(
            "dra_bridge_claim_operation_errors", "claims answered with an error", ["op"], registry=self.registry
        )
        self.claim_seconds = Histogram(
            "dra_bridge_claim_operation_seconds",
            "seconds per NodePrepareResources / NodeUnprepareResources call",
            ["op"],
            registry=self.registry,
        )
        self.checkpoint_readable = Gauge(
            "dra_bridge_checkpoint_readable",
            "1 while the prepared-claim checkpoint is readable, 0 while it is not (the count is unknown)",
            registry=self.registry,
        )
        self.prepared = Gauge(
            "dra_bridge_prepared_claims",
            "claims prepared on this node (the checkpoint's count)",
            registry=self.registry,
        )

    def count_slice_writes(self, totals: dict[str, int]) -> None:
        """Advance ``dra_bridge_slice_writes_total{op}`` to the publisher's running ``totals`` (op ->
        writes so far): the counter grows by what was written since the last call, never falls."""
        for op, total in totals.items():
            done = total - self._slice_writes_seen.get(op, 0)
            self.slice_writes.labels(op=op).inc(max(done, 0))
            self._slice_writes_seen[op] = max(total, self._slice_writes_seen.get(op, 0))

    def text(self) -> bytes:
        """The Prometheus exposition of this registry."""
        return bytes(generate_latest(self.registry))


NOT_CHECKED = "not checked yet"
"""A dependency's status before its first check (not a failure: nothing to recover from)."""


@dataclass(frozen=True)
class Clocks:
    """The agent's clocks: ``monotonic`` times its ticks and liveness, ``wall`` dates what it
    writes (the recorded inventory, Events, the Node condition). Tests pass one fake clock as both."""

    monotonic: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time


@dataclass
class Health:
    """Dependency status and the reason for each failure (empty string = fine)."""

    kubelet: str = NOT_CHECKED
    api: str = NOT_CHECKED
    state: str = ""
    plugin: str = ""
    """Why the DRA plugin's registration or DRA socket did not answer the last dial (liveness)."""
    checkpoint: str = ""
    """Why the prepared-claim checkpoint is unreadable (readiness, never liveness: a restart cannot
    repair the file, and a crash loop would stop the alarm)."""
    sharing: str = ""
    """Why devices served with sharing the bridge cannot carry (MPS) are not published (detail
    only: the node's other devices are served)."""
    interlocks: dict[str, str] = field(default_factory=dict)
    last_tick: float = 0.0
    clock: Callable[[], float] = time.monotonic

    @property
    def ready(self) -> bool:
        """True when the kubelet, the API server, the state file and the checkpoint all answered."""
        return not (self.kubelet or self.api or self.state or self.checkpoint)

    def alive(self, max_age: float) -> bool:
        """True when the loop ticked within ``max_age`` seconds (or has not started yet) and the
        DRA plugin's sockets answered the last dial."""
        return not self.plugin and (self.last_tick == 0.0 or self.clock() - self.last_tick <= max_age)

    def detail(self) -> dict[str, Any]:
        """JSON-able detail for the probes and ``dra-bridge inventory``."""
        return {
            "ready": self.ready,
            "kubelet": self.kubelet or "ok",
            "apiServer": self.api or "ok",
            "state": self.state or "ok",
            "draPlugin": self.plugin or "ok",
            "checkpoint": self.checkpoint or "ok",
            "sharing": self.sharing or "ok",
            "interlocks": dict(self.interlocks),
        }


async def serve(health: Health, metrics: Metrics, port: int, max_age: float) -> Any:
    """Start the probe/metrics server on ``port``; returns the aiohttp runner (call ``cleanup()``)."""
    from aiohttp import web

    async def readyz(_: web.Request) -> web.Response:
        return web.json_response(health.detail(), status=200 if health.ready else 503, dumps=json.dumps)

    async def healthz(_: web.Request) -> web.Response:
        ok = health.alive(max_age)
        return web.json_response({"alive": ok}, status=200 if ok else 503)

    async def metrics_view(_: web.Request) -> web.Response:
        return web.Response(body=metrics.text(), content_type="text/plain")

    app = web.Application()
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_view)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, port=port).start()
    logger.info("probes and metrics on :%d (/readyz, /healthz, /metrics)", port)
    return runner
