"""Async client for the kubelet's PodResources v1 API over its unix socket.

Socket: ``<kubelet dir>/pod-resources/kubelet.sock`` (``Socket`` in
https://github.com/kubernetes/kubernetes/blob/master/pkg/kubelet/apis/podresources/constants.go). The method
paths are built from the wire contract (``/v1.PodResourcesLister/<Method>``) with the
generated message classes, so the client does not depend on the generated ``_grpc`` module.

Answers are returned as the protobuf JSON mapping (plain dicts), which is also what
``dra-bridge inventory --json`` prints and what ``translate.inventory.allocatable.group_allocatable`` reads.
Every failure (socket missing, kubelet restarting, rate limit, deadline) raises
:class:`~bridge.errors.PodResourcesError` naming the socket and the gRPC status.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format

from dra_bridge.bridge.errors import PodResourcesError
from dra_bridge.bridge.podresources import api_pb2
from dra_bridge.bridge.unixgrpc import UnixSocketClient

logger = logging.getLogger(__name__)

SERVICE = "/v1.PodResourcesLister/"
SOCKET_RELATIVE = "pod-resources/kubelet.sock"


def socket_path(kubelet_dir: str | Path) -> Path:
    """The PodResources socket under a kubelet root directory."""
    return Path(kubelet_dir) / SOCKET_RELATIVE


def to_json(message: Any) -> dict[str, Any]:
    """The protobuf JSON mapping of a message (int64 as strings, zero values omitted)."""
    return dict(json_format.MessageToDict(message))


class PodResourcesClient(UnixSocketClient):
    """Calls ``GetAllocatableResources`` and ``List``; one channel, reconnecting on its own.

    ``timeout`` is the per-call deadline in seconds.
    """

    async def _call(self, method: str, request: Any, response_type: Any) -> Any:
        if not self.path.exists():
            raise PodResourcesError(f"PodResources socket {self.path} does not exist (kubelet down or restarting?)")
        try:
            return await self._unary(SERVICE + method, request, response_type)
        except grpc.aio.AioRpcError as exc:
            await self.close()
            raise PodResourcesError(
                f"PodResources {method} on {self.path} failed: {exc.code().name}: {exc.details()}"
            ) from exc

    async def allocatable_message(self) -> api_pb2.AllocatableResourcesResponse:
        """The raw ``AllocatableResourcesResponse`` (healthy device-plugin devices of the node)."""
        result: api_pb2.AllocatableResourcesResponse = await self._call(
            "GetAllocatableResources", api_pb2.AllocatableResourcesRequest(), api_pb2.AllocatableResourcesResponse
        )
        return result

    async def allocatable(self) -> dict[str, Any]:
        """``GetAllocatableResources`` as its protobuf JSON mapping."""
        return to_json(await self.allocatable_message())

    async def listed(self) -> dict[str, Any]:
        """``List`` as its protobuf JSON mapping (every container's devices and DRA claims)."""
        return to_json(await self._call("List", api_pb2.ListPodResourcesRequest(), api_pb2.ListPodResourcesResponse))

    async def held_devices(self) -> dict[str, list[str]]:
        """``List``: device ID -> the containers holding it (``namespace/pod/container``), sorted."""
        response: api_pb2.ListPodResourcesResponse = await self._call(
            "List", api_pb2.ListPodResourcesRequest(), api_pb2.ListPodResourcesResponse
        )
        held: dict[str, list[str]] = {}
        for pod in response.pod_resources:
            for container in pod.containers:
                for devices in container.devices:
                    for device_id in devices.device_ids:
                        held.setdefault(device_id, []).append(f"{pod.namespace}/{pod.name}/{container.name}")
        return {k: sorted(set(v)) for k, v in sorted(held.items())}
