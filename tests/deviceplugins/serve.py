"""Run a test device plugin as the kubelet sees one: ``python -m tests.deviceplugins.serve``.

::

    python -m tests.deviceplugins.serve --strategy envvar|volume-mounts|cdi-cri \\
        --resource nvidia.com/gpu --devices GPU-uuid,...[@numa] --kubelet-dir DIR --cdi-dir DIR \\
        [--identity-dir DIR] [--socket-name NAME] [--health-file FILE]

``--kubelet-dir`` is the device-plugin directory (the kubelet's ``/var/lib/kubelet/device-plugins``).
The plugin serves ``v1beta1.DevicePlugin`` on ``<dir>/<socket name>`` (NVIDIA's naming,
``nvidia-gpu.sock`` for ``nvidia.com/gpu``), then registers with the kubelet's
``v1beta1.Registration`` at ``<dir>/kubelet.sock`` (version ``v1beta1``, endpoint the socket's
file name, the resource, its options), retrying until the kubelet answers. When ``kubelet.sock``
is re-created (the kubelet restarted, and deleted every plugin socket, as the device manager's
``CleanupPluginDirectory`` does) it
serves again on a fresh socket and registers again. With ``cdi-cri`` it first writes its CDI
spec into ``--cdi-dir`` (:func:`tests.deviceplugins.toolkit_cdi.write_plugin_spec`; identity files
in ``--identity-dir``, default ``<cdi dir>/../gpu-identity``); the spec stays after it stops.
``--health-file``: the device IDs listed there (one a line) are reported ``Unhealthy``, re-read
when the file changes. SIGTERM or SIGINT: stop serving, remove the socket, exit 0.
Logs one line per event on stderr (``serving``, ``registered``, ``stopped``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import grpc

from dra_bridge.bridge.deviceplugin import api_pb2, api_pb2_grpc
from dra_bridge.bridge.deviceplugin.client import KUBELET_SOCKET, REGISTRATION_METHOD, VERSION
from tests.deviceplugins import strategies, toolkit_cdi
from tests.deviceplugins.plugin import DevicePluginService, parse_devices
from tests.deviceplugins.strategies import Strategy

logger = logging.getLogger("tests.deviceplugins")
POLL_SECONDS = 0.1


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino, st.st_ctime_ns)


class PluginProcess:
    """The plugin's life: serve, register, follow kubelet restarts and the health file, stop."""

    def __init__(
        self, service: DevicePluginService, plugin_dir: Path, socket_name: str, health_file: Path | None = None
    ) -> None:
        self.service = service
        self.dir = plugin_dir
        self.socket = plugin_dir / socket_name
        self.kubelet_socket = plugin_dir / KUBELET_SOCKET
        self.health_file = health_file
        self.registrations = 0
        self._server: grpc.aio.Server | None = None
        self._served: tuple[int, int, int] | None = None
        self._registered: tuple[int, int, int] | None = None
        self._health_seen: tuple[int, int, int] | None = None
        self._stop = asyncio.Event()

    async def serve(self) -> None:
        """(Re)start the gRPC server on a fresh socket."""
        await self._stop_server()
        self.socket.unlink(missing_ok=True)
        server = grpc.aio.server()
        api_pb2_grpc.add_DevicePluginServicer_to_server(self.service, server)
        server.add_insecure_port(f"unix://{self.socket}")
        await server.start()
        self._server, self._served = server, _identity(self.socket)
        logger.info("serving %s on %s", self.service.resource, self.socket)

    async def register(self) -> None:
        """One ``Register`` call to the kubelet; raises ``grpc.aio.AioRpcError`` when it fails."""
        request = api_pb2.RegisterRequest(
            version=VERSION,
            endpoint=self.socket.name,
            resource_name=self.service.resource,
            options=api_pb2.DevicePluginOptions(pre_start_required=False, get_preferred_allocation_available=True),
        )
        async with grpc.aio.insecure_channel(f"unix://{self.kubelet_socket}") as channel:
            call = channel.unary_unary(
                REGISTRATION_METHOD,
                request_serializer=api_pb2.RegisterRequest.SerializeToString,
                response_deserializer=api_pb2.Empty.FromString,
            )
            await call(request, timeout=2.0)

    async def step(self) -> None:
        """One pass: serve again if our socket went, register when kubelet.sock is new, re-read health."""
        if self._server is None or _identity(self.socket) != self._served:
            await self.serve()
            self._registered = None
        kubelet = _identity(self.kubelet_socket)
        if kubelet is not None and kubelet != self._registered:
            try:
                await self.register()
            except grpc.aio.AioRpcError as exc:
                logger.warning(
                    "register with %s failed (retrying): %s: %s", self.kubelet_socket, exc.code().name, exc.details()
                )
            else:
                self._registered = kubelet
                self.registrations += 1
                logger.info("registered %s at %s", self.service.resource, self.kubelet_socket)
        self._read_health()

    def _read_health(self) -> None:
        if self.health_file is None:
            return
        seen = _identity(self.health_file)
        if seen == self._health_seen:
            return
        self._health_seen = seen
        unhealthy = set(self.health_file.read_text().split()) if seen is not None else set()
        for device in self.service.devices:
            self.service.set_health(device.id, device.id not in unhealthy)
        logger.info("health: unhealthy %s", sorted(unhealthy & set(self.service.known)))

    async def run(self) -> None:
        """Until :meth:`stop`: serve, register, follow."""
        while not self._stop.is_set():
            await self.step()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), POLL_SECONDS)
        await self._stop_server()
        self.socket.unlink(missing_ok=True)
        logger.info("stopped, removed %s", self.socket)

    def stop(self) -> None:
        self._stop.set()

    async def _stop_server(self) -> None:
        if self._server is not None:
            server, self._server = self._server, None
            await server.stop(0.5)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.deviceplugins.serve",
        description="A test device plugin speaking the kubelet's v1beta1 API.",
    )
    parser.add_argument("--strategy", type=Strategy, choices=list(Strategy), required=True)
    parser.add_argument("--resource", required=True)
    parser.add_argument("--devices", required=True, help="GPU-uuid[@numa],...")
    parser.add_argument("--kubelet-dir", type=Path, required=True, help="the kubelet's device-plugins directory")
    parser.add_argument("--cdi-dir", type=Path, required=True)
    parser.add_argument("--identity-dir", type=Path)
    parser.add_argument("--socket-name")
    parser.add_argument("--health-file", type=Path)
    return parser.parse_args(argv)


async def amain(args: argparse.Namespace) -> int:
    devices = parse_devices(args.devices)
    service = DevicePluginService(args.resource, args.strategy, devices)
    if args.strategy is Strategy.CDI_CRI:
        identity = args.identity_dir or args.cdi_dir.parent / "gpu-identity"
        kind = f"{strategies.PLUGIN_CDI_VENDOR}/{strategies.cdi_class(args.resource)}"
        spec = toolkit_cdi.write_plugin_spec(args.cdi_dir, kind, service.known, identity)
        logger.info("wrote CDI spec %s", spec)
    process = PluginProcess(
        service, args.kubelet_dir, args.socket_name or strategies.socket_name(args.resource), args.health_file
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, process.stop)
    await process.run()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    args = parse_args(argv)
    args.kubelet_dir.mkdir(parents=True, exist_ok=True)
    try:
        return asyncio.run(amain(args))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    os.umask(0o022)
    raise SystemExit(main())
