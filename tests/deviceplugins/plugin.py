"""The test device plugin's ``v1beta1.DevicePlugin`` service (grpc.aio), one resource, one strategy.

- ``GetDevicePluginOptions``: ``pre_start_required`` false, ``get_preferred_allocation_available``
  true (NVIDIA's options, ``internal/plugin/server.go`` of NVIDIA/k8s-device-plugin);
- ``ListAndWatch``: the device list at once, then again after every health change
  (:meth:`DevicePluginService.set_health`), until the caller or the server ends the stream;
- ``GetPreferredAllocation`` and ``Allocate``: :mod:`tests.deviceplugins.strategies`;
- ``PreStartContainer``: a no-op, as NVIDIA's.

A bad request is answered ``INVALID_ARGUMENT`` with the reason; anything unexpected ``INTERNAL``
naming the RPC. The process never dies of a request.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc

from dra_bridge.bridge.deviceplugin import api_pb2, api_pb2_grpc
from dra_bridge.bridge.deviceplugin.client import HEALTHY, UNHEALTHY
from tests.deviceplugins import strategies
from tests.deviceplugins.strategies import BadRequest, Strategy

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class TestDevice:
    """One advertised device: its kubelet-facing ID, health and NUMA node (None: no topology)."""

    __test__ = False  # not a pytest class

    id: str
    healthy: bool = True
    numa: int | None = None

    def message(self) -> api_pb2.Device:
        topology = api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=self.numa)]) if self.numa is not None else None
        return api_pb2.Device(ID=self.id, health=HEALTHY if self.healthy else UNHEALTHY, topology=topology)


def parse_devices(text: str) -> list[TestDevice]:
    """``GPU-a,GPU-b@1``: comma-separated IDs, each optionally ``@<NUMA node>``."""
    devices = []
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        device_id, _, numa = item.partition("@")
        devices.append(TestDevice(device_id, numa=int(numa) if numa else None))
    if not devices:
        raise ValueError("no devices given")
    if len({d.id for d in devices}) != len(devices):
        raise ValueError(f"duplicate device IDs in {text!r}")
    return devices


class DevicePluginService(api_pb2_grpc.DevicePluginServicer):
    """Serves ``devices`` of ``resource`` under ``strategy``; ``calls`` counts RPCs by name."""

    def __init__(self, resource: str, strategy: Strategy, devices: Sequence[TestDevice]) -> None:
        self.resource = resource
        self.strategy = strategy
        self.devices = list(devices)
        self.calls: dict[str, int] = {}
        self._changed = asyncio.Event()
        self._version = 0

    @property
    def known(self) -> list[str]:
        return [d.id for d in self.devices]

    def set_health(self, device_id: str, healthy: bool) -> None:
        """Mark a device (un)healthy; every open ListAndWatch stream sends the new list."""
        for device in self.devices:
            if device.id == device_id:
                if device.healthy != healthy:
                    device.healthy = healthy
                    self._version += 1
                    self._changed.set()
                return
        raise KeyError(f"unknown device {device_id}")

    def _list(self) -> api_pb2.ListAndWatchResponse:
        return api_pb2.ListAndWatchResponse(devices=[d.message() for d in self.devices])

    async def _answer(self, rpc: str, context: Any, build: Callable[[], T]) -> T:
        self.calls[rpc] = self.calls.get(rpc, 0) + 1
        try:
            return build()
        except BadRequest as exc:
            logger.warning("%s refused: %s", rpc, exc)
            code, message = grpc.StatusCode.INVALID_ARGUMENT, str(exc)
        except Exception as exc:  # the plugin answers every request, whatever went wrong
            logger.exception("%s failed", rpc)
            code, message = grpc.StatusCode.INTERNAL, f"{rpc} failed: {type(exc).__name__}: {exc}"
        await context.abort(code, message)
        raise AssertionError("context.abort returned")  # pragma: no cover

    async def GetDevicePluginOptions(self, request: api_pb2.Empty, context: Any) -> api_pb2.DevicePluginOptions:
        return await self._answer(
            "GetDevicePluginOptions",
            context,
            lambda: api_pb2.DevicePluginOptions(pre_start_required=False, get_preferred_allocation_available=True),
        )

    async def ListAndWatch(self, request: api_pb2.Empty, context: Any) -> AsyncIterator[api_pb2.ListAndWatchResponse]:
        self.calls["ListAndWatch"] = self.calls.get("ListAndWatch", 0) + 1
        seen = -1
        while True:
            if seen != self._version:
                seen = self._version
                yield self._list()
            self._changed.clear()
            if seen == self._version:
                await self._changed.wait()

    async def GetPreferredAllocation(
        self, request: api_pb2.PreferredAllocationRequest, context: Any
    ) -> api_pb2.PreferredAllocationResponse:
        return await self._answer(
            "GetPreferredAllocation", context, lambda: strategies.preferred(self.resource, self.known, request)
        )

    async def Allocate(self, request: api_pb2.AllocateRequest, context: Any) -> api_pb2.AllocateResponse:
        return await self._answer(
            "Allocate", context, lambda: strategies.allocate(self.strategy, self.resource, self.known, request)
        )

    async def PreStartContainer(
        self, request: api_pb2.PreStartContainerRequest, context: Any
    ) -> api_pb2.PreStartContainerResponse:
        return await self._answer("PreStartContainer", context, api_pb2.PreStartContainerResponse)
