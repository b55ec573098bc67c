"""The DevicePlugin service in process: ListAndWatch streams health changes, a crash inside an RPC
is an INTERNAL answer, device lists parse."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from dra_bridge.bridge.deviceplugin import api_pb2, api_pb2_grpc
from dra_bridge.bridge.deviceplugin.client import SERVICE, DevicePluginClient
from dra_bridge.bridge.errors import DevicePluginError
from tests.deviceplugins import strategies
from tests.deviceplugins.plugin import DevicePluginService, TestDevice, parse_devices
from tests.deviceplugins.strategies import Strategy


@pytest.fixture
async def served(short_dir: Path) -> AsyncIterator[tuple[DevicePluginService, Path]]:
    service = DevicePluginService("nvidia.com/gpu", Strategy.ENVVAR, [TestDevice("GPU-a"), TestDevice("GPU-b")])
    server = grpc.aio.server()
    api_pb2_grpc.add_DevicePluginServicer_to_server(service, server)
    socket = short_dir / "p.sock"
    server.add_insecure_port(f"unix://{socket}")
    await server.start()
    yield service, socket
    await server.stop(None)


async def test_list_and_watch_sends_the_list_again_on_each_health_change(
    served: tuple[DevicePluginService, Path],
) -> None:
    service, socket = served
    async with grpc.aio.insecure_channel(f"unix://{socket}") as channel:
        stream = channel.unary_stream(
            SERVICE + "ListAndWatch",
            request_serializer=api_pb2.Empty.SerializeToString,
            response_deserializer=api_pb2.ListAndWatchResponse.FromString,
        )(api_pb2.Empty())
        first = await stream.read()
        assert [(d.ID, d.health) for d in first.devices] == [("GPU-a", "Healthy"), ("GPU-b", "Healthy")]
        service.set_health("GPU-b", False)
        service.set_health("GPU-b", False)  # no change, no message
        second = await stream.read()
        assert [(d.ID, d.health) for d in second.devices] == [("GPU-a", "Healthy"), ("GPU-b", "Unhealthy")]
        service.set_health("GPU-b", True)
        assert [d.health for d in (await stream.read()).devices] == ["Healthy", "Healthy"]
        stream.cancel()


async def test_an_unexpected_failure_is_an_internal_answer(
    served: tuple[DevicePluginService, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> api_pb2.AllocateResponse:
        raise RuntimeError("boom")

    monkeypatch.setattr(strategies, "allocate", broken)
    client = DevicePluginClient(served[1])
    try:
        with pytest.raises(DevicePluginError, match="INTERNAL: Allocate failed: RuntimeError: boom"):
            await client.allocate(["GPU-a"])
        assert (await client.options()).get_preferred_allocation_available  # still serving
    finally:
        await client.close()


def test_set_health_of_an_unknown_device_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="GPU-z"):
        DevicePluginService("nvidia.com/gpu", Strategy.ENVVAR, [TestDevice("GPU-a")]).set_health("GPU-z", False)


def test_device_lists_parse_with_optional_numa_nodes() -> None:
    assert parse_devices("GPU-a, GPU-b@1,") == [TestDevice("GPU-a"), TestDevice("GPU-b", numa=1)]


@pytest.mark.parametrize("text", ["", "GPU-a,GPU-a"], ids=["empty", "duplicate"])
def test_bad_device_lists_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"no devices|duplicate"):
        parse_devices(text)


async def test_the_client_names_a_missing_socket(short_dir: Path) -> None:
    with pytest.raises(DevicePluginError, match=r"nvidia-gpu\.sock does not exist"):
        await DevicePluginClient(short_dir / "nvidia-gpu.sock").allocate(["GPU-a"])
