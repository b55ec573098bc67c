"""A fake kubelet's device-plugin side: ``v1beta1.Registration`` on ``<dir>/kubelet.sock`` (grpc.aio),
recording each ``RegisterRequest`` and refusing what the kubelet refuses (kubelet
``pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go``: a version other than ``v1beta1``, a resource
name without a domain). :meth:`FakeRegistration.restart`
does what a restarting kubelet does to the directory: delete every plugin socket, then serve a new
``kubelet.sock``."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import grpc

from dra_bridge.bridge.deviceplugin import api_pb2, api_pb2_grpc
from dra_bridge.bridge.deviceplugin.client import KUBELET_SOCKET, VERSION


class _Registration(api_pb2_grpc.RegistrationServicer):
    def __init__(self, requests: list[api_pb2.RegisterRequest], arrived: asyncio.Event) -> None:
        self.requests = requests
        self.arrived = arrived

    async def Register(self, request: api_pb2.RegisterRequest, context: Any) -> api_pb2.Empty:
        if request.version != VERSION:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"unsupported API version {request.version!r}")
        if "/" not in request.resource_name:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"invalid resource name {request.resource_name!r}: not an extended resource",
            )
        self.requests.append(request)
        self.arrived.set()
        return api_pb2.Empty()


class FakeRegistration:
    """Start/stop/restart the fake; ``requests`` holds every accepted ``RegisterRequest`` in order."""

    def __init__(self, plugin_dir: Path) -> None:
        self.dir = plugin_dir
        self.socket = plugin_dir / KUBELET_SOCKET
        self.requests: list[api_pb2.RegisterRequest] = []
        self._arrived = asyncio.Event()
        self._server: grpc.aio.Server | None = None

    async def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        server = grpc.aio.server()
        api_pb2_grpc.add_RegistrationServicer_to_server(_Registration(self.requests, self._arrived), server)
        server.add_insecure_port(f"unix://{self.socket}")
        await server.start()
        self._server = server

    async def stop(self) -> None:
        if self._server is not None:
            server, self._server = self._server, None
            await server.stop(None)
        self.socket.unlink(missing_ok=True)

    async def restart(self) -> None:
        """The kubelet restarting: its socket goes, every other socket in the directory is deleted, a new one serves."""
        await self.stop()
        for path in self.dir.iterdir():
            if path.is_socket():
                path.unlink()
        await self.start()

    async def wait_for(self, count: int, timeout: float = 5.0) -> api_pb2.RegisterRequest:
        """Wait until ``count`` registrations arrived; returns the last one."""
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{len(self.requests)} registrations after {timeout} s, expected {count}")
            self._arrived.clear()
            if len(self.requests) < count:
                try:
                    await asyncio.wait_for(self._arrived.wait(), remaining)
                except TimeoutError:
                    continue
        return self.requests[count - 1]
