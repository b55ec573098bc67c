"""The DRA kubelet plugin service: a thin NodePrepare/NodeUnprepare adapter (docs/design.md D19).

``k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin`` and ``...v1beta1.DRAPlugin`` on one unix socket,
``<kubelet dir>/plugins/<driver>/dra.sock`` (docs/design.md D10), beside the device health stream
(:mod:`bridge.kubeletplugin.health_stream`). Each call fans out per claim to
:class:`bridge.kubeletplugin.claims.ClaimPreparer` and answers one map entry per requested claim UID, each
with its own error (docs/design.md D16); an empty request succeeds (liveness probes send one).
The RPC itself fails only for a request that is not one (never for a claim). Each call is
counted and timed in :class:`bridge.health.Metrics` (``dra_bridge_claim_operations_total``,
``..._errors_total``, ``..._seconds``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc

from dra_bridge.bridge.file_lock import file_lock
from dra_bridge.bridge.health import Metrics
from dra_bridge.bridge.kubeletapi import (
    dra_health_v1alpha1_pb2_grpc,
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
)
from dra_bridge.bridge.kubeletplugin.claims import ClaimPreparer, ClaimRef, Outcome
from dra_bridge.bridge.kubeletplugin.health_stream import HealthStream
from dra_bridge.bridge.kubeletplugin.registration import listen


class DraService:
    """One ``DRAPlugin`` servicer over ``pb2`` (the v1 or v1beta1 messages)."""

    def __init__(
        self, preparer: ClaimPreparer, pb2: Any, metrics: Metrics | None = None, lock: Path | None = None
    ) -> None:
        self.preparer, self.pb2, self.metrics, self.lock = preparer, pb2, metrics, lock

    @contextlib.asynccontextmanager
    async def _serialized(self) -> AsyncIterator[None]:
        """With ``lock`` (rolling updates): hold it and read the checkpoint again first, since the
        other instance may have changed it; without: nothing (one process, the preparer's own lock)."""
        if self.lock is None:
            yield
            return
        async with file_lock(self.lock):
            self.preparer.reload()
            yield

    def _observe(self, op: str, start: float, claims: int, errors: int) -> None:
        if self.metrics is not None:
            self.metrics.claim_ops.labels(op=op).inc(claims)
            self.metrics.claim_errors.labels(op=op).inc(errors)
            self.metrics.claim_seconds.labels(op=op).observe(time.monotonic() - start)

    async def NodePrepareResources(self, request: Any, context: Any) -> Any:
        start = time.monotonic()
        refs = [ClaimRef(c.namespace, c.name, c.uid) for c in request.claims]
        try:
            async with self._serialized():
                outcomes = await self.preparer.prepare(refs)
        except OSError as exc:  # the lock file: every claim gets the error, the call still answers
            outcomes = {r.uid: Outcome(error=f"cannot lock {self.lock}: {exc}") for r in refs}
        response = self.pb2.NodePrepareResourcesResponse()
        for uid, outcome in outcomes.items():
            entry = response.claims[uid]
            if outcome.error:
                entry.error = outcome.error
                continue
            for d in outcome.devices:
                entry.devices.add(
                    request_names=list(d.request_names),
                    pool_name=d.pool_name,
                    device_name=d.device_name,
                    cdi_device_ids=list(d.cdi_device_ids),
                )
        self._observe("prepare", start, len(refs), sum(1 for o in outcomes.values() if o.error))
        return response

    async def NodeUnprepareResources(self, request: Any, context: Any) -> Any:
        start = time.monotonic()
        refs = [ClaimRef(c.namespace, c.name, c.uid) for c in request.claims]
        try:
            async with self._serialized():
                outcomes = await self.preparer.unprepare(refs)
        except OSError as exc:  # the lock file: every claim gets the error, the call still answers
            outcomes = {r.uid: Outcome(error=f"cannot lock {self.lock}: {exc}") for r in refs}
        response = self.pb2.NodeUnprepareResourcesResponse()
        for uid, outcome in outcomes.items():
            response.claims[uid].error = outcome.error
        self._observe("unprepare", start, len(refs), sum(1 for o in outcomes.values() if o.error))
        return response


class DraV1(DraService, dra_v1_pb2_grpc.DRAPluginServicer):
    """``k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin``."""

    def __init__(self, preparer: ClaimPreparer, metrics: Metrics | None = None, lock: Path | None = None) -> None:
        super().__init__(preparer, dra_v1_pb2, metrics, lock)


class DraV1beta1(DraService, dra_v1beta1_pb2_grpc.DRAPluginServicer):
    """``k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin`` (no ``share_id``)."""

    def __init__(self, preparer: ClaimPreparer, metrics: Metrics | None = None, lock: Path | None = None) -> None:
        super().__init__(preparer, dra_v1beta1_pb2, metrics, lock)


async def serve_dra(
    socket: Path,
    preparer: ClaimPreparer,
    metrics: Metrics | None = None,
    health: HealthStream | None = None,
    lock: Path | None = None,
) -> grpc.aio.Server:
    """Serve both DRA versions on ``socket`` (``<kubelet dir>/plugins/<driver>/dra.sock``), and the
    device health stream (:mod:`bridge.kubeletplugin.health_stream`) when ``health`` is given. ``lock``: the file
    lock every call holds when several instances share the checkpoint (rolling updates)."""
    services: list[tuple[Any, Any]] = [
        (dra_v1_pb2_grpc.add_DRAPluginServicer_to_server, DraV1(preparer, metrics, lock)),
        (dra_v1beta1_pb2_grpc.add_DRAPluginServicer_to_server, DraV1beta1(preparer, metrics, lock)),
    ]
    if health is not None:
        services.append((dra_health_v1alpha1_pb2_grpc.add_DRAResourceHealthServicer_to_server, health))
    return await listen(socket, services)
