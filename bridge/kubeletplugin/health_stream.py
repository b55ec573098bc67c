"""``v1alpha1.DRAResourceHealth/NodeWatchResources``: device health for the kubelet (KEP-4680).

Served on the DRA socket next to ``DRAPlugin``
(https://github.com/kubernetes/kubelet/blob/master/pkg/apis/dra-health/v1alpha1/api.proto) and advertised in
``GetInfo``'s ``supported_versions`` as ``v1alpha1.DRAResourceHealth``, as the Go helper does.
The kubelet (feature gate ``ResourceHealthStatus``, beta and on by default in 1.36) opens the
stream when it registers the plugin, reopens it every 5 s after it ends, and fills the pods'
``status.containerStatuses[].allocatedResourcesStatus`` from it.

Each message lists every device, complete (:func:`bridge.kubeletplugin.device_health.assess`). A message goes
out when the stream opens, when the assessment changes, and again every
``timeout / 3`` seconds, before the kubelet's per-device timeout
(``health_check_timeout_seconds`` = ``timeout``) would turn the devices UNKNOWN. An assessment
older than ``timeout`` (the agent stopped observing) is sent as UNKNOWN, never as fresh, with a message
that holds no changing number (the kubelet counts every new message as a status change).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from dra_bridge.bridge.kubeletapi import dra_health_v1alpha1_pb2 as pb2
from dra_bridge.bridge.kubeletapi import dra_health_v1alpha1_pb2_grpc as pb2_grpc
from dra_bridge.bridge.kubeletplugin.device_health import UNKNOWN, DeviceReport

logger = logging.getLogger(__name__)

SERVICE = "v1alpha1.DRAResourceHealth"
"""The registration string (``<package>.<service>``)."""
DEFAULT_TIMEOUT = 90
"""Seconds; the ``health_check_timeout_seconds`` the agent sends by default (the kubelet's own is 30)."""


class HealthStream(pb2_grpc.DRAResourceHealthServicer):
    """The current assessment and every open stream. ``timeout``: seconds (whole, >= 3)."""

    def __init__(self, timeout: int = DEFAULT_TIMEOUT, clock: Callable[[], float] = time.time) -> None:
        self.timeout, self.clock = max(3, int(timeout)), clock
        self.reports: tuple[DeviceReport, ...] = ()
        self.observed_at = 0.0
        self.opened = 0
        """How many streams the kubelet opened so far."""
        self._wakeups: set[asyncio.Event] = set()

    def update(self, reports: tuple[DeviceReport, ...]) -> None:
        """A new assessment (observed now); open streams send it at once when it differs."""
        changed = reports != self.reports
        self.reports, self.observed_at = reports, self.clock()
        if changed:
            for wakeup in self._wakeups:
                wakeup.set()

    def message(self) -> pb2.NodeWatchResourcesResponse:
        """The complete list as the kubelet reads it (stale assessments as UNKNOWN)."""
        now = self.clock()
        stale = now - self.observed_at > self.timeout
        response = pb2.NodeWatchResourcesResponse()
        for r in self.reports:
            health, text = (  # never a changing number: the kubelet counts each new message as a change
                (UNKNOWN, f"not observed within the last {self.timeout}s") if stale else (r.health, r.message)
            )
            response.devices.add(
                device=pb2.DeviceIdentifier(pool_name=r.pool, device_name=r.device),
                health=pb2.HealthStatus.Value(health),
                last_updated_time=int(self.observed_at),
                health_check_timeout_seconds=self.timeout,
                message=text,
            )
        return response

    async def NodeWatchResources(self, request: Any, context: Any) -> AsyncIterator[pb2.NodeWatchResourcesResponse]:
        self.opened += 1
        logger.info("the kubelet opened the device health stream (%d device(s))", len(self.reports))
        wakeup = asyncio.Event()
        self._wakeups.add(wakeup)
        try:
            while True:
                wakeup.clear()
                yield self.message()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wakeup.wait(), timeout=self.timeout / 3)
        finally:
            self._wakeups.discard(wakeup)
            logger.info("the device health stream closed")
