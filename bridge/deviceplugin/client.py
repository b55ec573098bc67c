"""Async client for one device plugin's ``v1beta1.DevicePlugin`` service over its unix socket.

Sockets live in ``<kubelet dir>/device-plugins/`` (``DevicePluginPath`` in
https://github.com/kubernetes/kubelet/blob/master/pkg/apis/deviceplugin/v1beta1/constants.go); NVIDIA's are
``nvidia-<part after "nvidia.com/">.sock`` (``getPluginSocketPath`` in
https://github.com/NVIDIA/k8s-device-plugin/blob/main/internal/plugin/server.go). No RPC names the
resource a socket serves, so callers match device IDs against PodResources.

The method paths are built from the wire contract (``/v1beta1.DevicePlugin/<RPC>``) with the
generated message classes, as the PodResources client does. What a third process may call:
``GetDevicePluginOptions``, ``GetPreferredAllocation`` and ``Allocate`` are stateless in NVIDIA's
plugin (``Allocate`` only returns a recipe, it reserves nothing); ``ListAndWatch`` on a live NVIDIA
plugin steals health events from the kubelet's stream (all its streams read one unbuffered
``health`` channel: https://github.com/NVIDIA/k8s-device-plugin/blob/main/internal/plugin/server.go), so
:meth:`DevicePluginClient.devices` is for our test plugins and diagnostics only.

Every failure (socket missing, plugin restarting, an error answer, deadline) raises
:class:`~bridge.errors.DevicePluginError` naming the socket, the RPC and the gRPC status.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format

from dra_bridge.bridge.deviceplugin import api_pb2
from dra_bridge.bridge.errors import DevicePluginError
from dra_bridge.bridge.unixgrpc import UnixSocketClient

SERVICE = "/v1beta1.DevicePlugin/"
REGISTRATION_METHOD = "/v1beta1.Registration/Register"
VERSION = "v1beta1"
HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"
PLUGIN_DIR_RELATIVE = "device-plugins"
KUBELET_SOCKET = "kubelet.sock"


def plugin_dir(kubelet_dir: str | Path) -> Path:
    """The device-plugin directory under a kubelet root directory."""
    return Path(kubelet_dir) / PLUGIN_DIR_RELATIVE


def to_json(message: Any) -> dict[str, Any]:
    """The protobuf JSON mapping of a message (zero values omitted, the proto's field names)."""
    return dict(json_format.MessageToDict(message, preserving_proto_field_name=True))


class DevicePluginClient(UnixSocketClient):
    """Calls one plugin's RPCs; one channel, reopened after a failure. ``timeout``: seconds per call."""

    def _check_socket(self) -> None:
        if not self.path.exists():
            raise DevicePluginError(f"device plugin socket {self.path} does not exist (plugin down or restarting?)")

    async def _failed(self, method: str, exc: grpc.aio.AioRpcError) -> DevicePluginError:
        await self.close()
        return DevicePluginError(f"device plugin {method} on {self.path} failed: {exc.code().name}: {exc.details()}")

    async def _call(self, method: str, request: Any, response_type: Any) -> Any:
        self._check_socket()
        try:
            return await self._unary(SERVICE + method, request, response_type)
        except grpc.aio.AioRpcError as exc:
            raise await self._failed(method, exc) from exc

    async def options(self) -> api_pb2.DevicePluginOptions:
        """``GetDevicePluginOptions``."""
        result: api_pb2.DevicePluginOptions = await self._call(
            "GetDevicePluginOptions", api_pb2.Empty(), api_pb2.DevicePluginOptions
        )
        return result

    async def devices(self) -> list[api_pb2.Device]:
        """The first ``ListAndWatch`` answer (the plugin's device list), then the stream is cancelled."""
        self._check_socket()
        stream = self._ensure().unary_stream(
            SERVICE + "ListAndWatch",
            request_serializer=api_pb2.Empty.SerializeToString,
            response_deserializer=api_pb2.ListAndWatchResponse.FromString,
        )
        call = stream(api_pb2.Empty(), timeout=self.timeout)
        try:
            async for response in call:
                return list(response.devices)
        except grpc.aio.AioRpcError as exc:
            raise await self._failed("ListAndWatch", exc) from exc
        finally:
            call.cancel()
        raise DevicePluginError(f"device plugin ListAndWatch on {self.path} ended without a device list")

    async def preferred_allocation(self, available: list[str], must_include: list[str], size: int) -> list[str]:
        """``GetPreferredAllocation`` for one container: the device IDs the plugin prefers."""
        request = api_pb2.PreferredAllocationRequest(
            container_requests=[
                api_pb2.ContainerPreferredAllocationRequest(
                    available_deviceIDs=available, must_include_deviceIDs=must_include, allocation_size=size
                )
            ]
        )
        response: api_pb2.PreferredAllocationResponse = await self._call(
            "GetPreferredAllocation", request, api_pb2.PreferredAllocationResponse
        )
        if len(response.container_responses) != 1:
            raise DevicePluginError(
                f"device plugin GetPreferredAllocation on {self.path} answered "
                f"{len(response.container_responses)} containers for 1"
            )
        return list(response.container_responses[0].deviceIDs)

    async def allocate(self, device_ids: list[str]) -> api_pb2.ContainerAllocateResponse:
        """``Allocate`` for one container, as the kubelet calls it: the container edits the plugin answers."""
        request = api_pb2.AllocateRequest(container_requests=[api_pb2.ContainerAllocateRequest(devices_ids=device_ids)])
        response: api_pb2.AllocateResponse = await self._call("Allocate", request, api_pb2.AllocateResponse)
        if len(response.container_responses) != 1:
            raise DevicePluginError(
                f"device plugin Allocate on {self.path} answered {len(response.container_responses)} containers for 1"
            )
        container: api_pb2.ContainerAllocateResponse = response.container_responses[0]
        return container
