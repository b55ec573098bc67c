"""The device health stream on the DRA socket (``v1alpha1.DRAResourceHealth/NodeWatchResources``),
read as the kubelet reads it: our generated stubs over the unix socket. The complete list first,
then on change, again before the timeout, and UNKNOWN once the assessment is stale; the agent's
alarm makes the device it names UNHEALTHY."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from dra_bridge.bridge.agent import Agent
from dra_bridge.bridge.kubeletapi import dra_health_v1alpha1_pb2 as pb2
from dra_bridge.bridge.kubeletapi import dra_health_v1alpha1_pb2_grpc as pb2_grpc
from dra_bridge.bridge.kubeletplugin.device_health import DeviceReport
from dra_bridge.bridge.kubeletplugin.health_stream import HealthStream
from dra_bridge.bridge.kubeletplugin.node_plugin import Plugin, start_plugin
from dra_bridge.bridge.ports import StaticView
from dra_bridge.kube.resources import RESOURCE_CLAIMS
from dra_bridge.translate.catalog import Catalog
from tests.bridge.agent_fixtures import NODE, Clock, hand_over, plugin_of, publish, start_dra_plugin
from tests.bridge.conftest import FakeApi, KubeletServer
from tests.bridge.draplugin_fixtures import (
    INVENTORY,
    NVIDIA_UUID,
    Kubelet,
    claim,
    fake_api,
    layout,
    remove_tree,
    short_dir,
    toolkit_spec,
)
from tests.bridge.draplugin_fixtures import NODE as PLUGIN_NODE


async def v1() -> str:
    return "resource.k8s.io/v1"


class Watcher:
    """The kubelet's side of the stream."""

    def __init__(self, plugin: Plugin) -> None:
        self.channel = grpc.aio.insecure_channel(f"unix://{plugin.paths.dra_socket}")
        stub = pb2_grpc.DRAResourceHealthStub(self.channel)
        self.stream = stub.NodeWatchResources(pb2.NodeWatchResourcesRequest())

    async def next(self, timeout: float = 5) -> dict[str, tuple[str, str, Any]]:
        """device name -> (health, message, the DeviceHealth) of the next message."""
        message = await asyncio.wait_for(self.stream.read(), timeout)
        return {d.device.device_name: (pb2.HealthStatus.Name(d.health), d.message, d) for d in message.devices}

    async def close(self) -> None:
        self.stream.cancel()
        await self.channel.close()


@pytest.fixture
async def plugin() -> AsyncIterator[Plugin]:
    root = short_dir()
    paths = layout(root)
    toolkit_spec(paths, [NVIDIA_UUID])
    p = await start_plugin(paths, fake_api([]), PLUGIN_NODE, StaticView(INVENTORY), boot_id=lambda: "b")
    yield p
    await p.stop()
    remove_tree(root)


async def test_the_stream_sends_the_whole_list_then_changes_then_again_before_the_timeout(plugin: Plugin) -> None:
    plugin.health.timeout = 3  # seconds: sent again every second
    watcher = Watcher(plugin)
    try:
        first = await watcher.next()
        assert set(first) == set(INVENTORY)
        assert first["gpu-nv0"][:1] == ("UNKNOWN",) and "NVML is not loadable" in first["gpu-nv0"][1]
        assert (
            first["gpu-nv1"][0] == "UNHEALTHY"
            and "nvidia.com/gpu=GPU-missing no longer resolves" in first["gpu-nv1"][1]
        )
        assert first["gpu-amd0"][:2] == ("UNKNOWN", "no health source for amd.com/gpu devices")
        device = first["gpu-nv0"][2]
        assert (device.device.pool_name, device.health_check_timeout_seconds) == (PLUGIN_NODE, plugin.health.timeout)
        assert plugin.health.opened == 1
        # a change goes out at once: the toolkit's spec disappears
        for spec in plugin.paths.cdi_dirs[0].iterdir():
            spec.unlink()
        plugin.report_health({})
        changed = await watcher.next(timeout=0.5)
        assert changed["gpu-nv0"][0] == "UNHEALTHY" and "no longer resolves" in changed["gpu-nv0"][1]
        # nothing changes: sent again within timeout / 3
        plugin.report_health({})
        again = await watcher.next(timeout=1.5)
        assert again["gpu-nv0"][0] == "UNHEALTHY"
        # the agent stopped observing: UNKNOWN, never a stale verdict
        plugin.health.observed_at -= 10
        stale = await watcher.next(timeout=1.5)
        assert {h for h, _, _ in stale.values()} == {"UNKNOWN"} and "not observed within" in stale["gpu-nv0"][1]
    finally:
        await watcher.close()


async def test_the_alarm_makes_the_prepared_device_unhealthy(
    catalog: Catalog, legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    paths, index = await start_dra_plugin(legacy, kubelet, api)
    assert legacy.plugin is not None
    uid = "0a1b2c3d-0000-4000-8000-000000000003"
    (name,) = [n for n, d in index.items() if d.device_id == "GPU-aaaa"]
    api.put(RESOURCE_CLAIMS, claim(uid, "c", [("gpu", catalog.bridge_driver, NODE, name)]))
    hand_over(kubelet, api)
    await publish(legacy, clock)
    client, watcher = Kubelet(paths.dra_socket), Watcher(plugin_of(legacy))
    try:
        assert (await client.prepare((uid, "c"))).claims[uid].error == ""
        assert (await watcher.next())[name][0] == "UNKNOWN"  # no NVML in the test: no fact either way
        kubelet.fake.held = {"team-a/legacy-pod": {"main": [("nvidia.com/gpu", "GPU-aaaa")]}}
        await legacy.tick()
        health, message, _ = (await watcher.next(timeout=2))[name]
        assert health == "UNHEALTHY" and "hand-over alarm" in message and "team-a/legacy-pod" in message
    finally:
        await watcher.close()
        await client.close()
        await plugin_of(legacy).stop()


def test_a_stale_status_sends_the_same_message_every_time() -> None:
    """The kubelet counts every message change as a status change (a checkpoint write and a pod
    update per device): an unchanged status never carries a changing number."""
    now = [1000.0]
    stream = HealthStream(timeout=30, clock=lambda: now[0])
    stream.update((DeviceReport(PLUGIN_NODE, "gpu-nv0", "HEALTHY", "NVML finds GPU-x"),))
    now[0] += 31
    first = stream.message()
    now[0] += 17
    later = stream.message()
    assert first.devices[0].health == pb2.HealthStatus.Value("UNKNOWN")
    assert first == later
    assert "30s" in first.devices[0].message
