"""On NVIDIA without NVML, a GPU whose container-toolkit CDI device no longer resolves (the
toolkit's spec was regenerated without it) is unhealthy like any other (docs/design.md D42): it
stays in the slice, gets the ``dra-bridge.io/unhealthy`` taint after 60 s, loses it after 300 s
resolving again, and is left out only where the API server drops taints. A device whose toolkit
device has not resolved since the agent started has no edit source and is not published at all."""

from __future__ import annotations

import pytest

from dra_bridge.bridge.agent import Agent
from dra_bridge.translate.inventory.device_taints import TAINT_KEY
from tests.bridge.agent_fixtures import Clock, hand_over, plugin_of, publish, start_dra_plugin
from tests.bridge.conftest import FakeApi, KubeletServer
from tests.bridge.draplugin_fixtures import toolkit_spec
from tests.bridge.test_agent_taints import slice_devices, tick
from tests.bridge.test_agent_taints_dropped import DroppingApi

LOST = "GPU-aaaa"


async def test_a_toolkit_device_that_no_longer_resolves_is_tainted_not_dropped(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    paths, index = await start_dra_plugin(legacy, kubelet, api)
    try:
        (name,) = [n for n, d in index.items() if d.device_id == LOST]
        everything = sorted(d.device_id for d in index.values())
        hand_over(kubelet, api)
        await publish(legacy, clock)
        assert name in slice_devices(api)
        toolkit_spec(paths, [i for i in everything if i != LOST])  # regenerated without the GPU
        await tick(legacy, clock, 1)  # observed unhealthy from here
        await tick(legacy, clock, 30)
        assert name in slice_devices(api), "not dropped at once"
        assert "taints" not in slice_devices(api)[name]
        await tick(legacy, clock, 30)
        [taint] = slice_devices(api)[name]["taints"]
        assert (taint["key"], taint["effect"]) == (TAINT_KEY, "NoSchedule")
        (event,) = [e for e in api.events if e["reason"] == "DeviceTainted"]
        assert name in event["message"]
        assert b'dra_bridge_device_taint_changes_total{change="tainted"} 1.0' in legacy.metrics.text()
        toolkit_spec(paths, everything)  # resolves again
        await tick(legacy, clock, 1)  # observed healthy from here
        await tick(legacy, clock, 299)
        assert slice_devices(api)[name].get("taints")
        await tick(legacy, clock, 1)
        assert "taints" not in slice_devices(api)[name]
        assert [e["reason"] for e in api.events].count("DeviceUntainted") == 1
    finally:
        await plugin_of(legacy).stop()


async def test_a_toolkit_device_that_never_resolved_is_not_published(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    paths, index = await start_dra_plugin(legacy, kubelet, api)
    try:
        (name,) = [n for n, d in index.items() if d.device_id == LOST]
        toolkit_spec(paths, sorted(d.device_id for d in index.values() if d.device_id != LOST))
        hand_over(kubelet, api)
        await publish(legacy, clock)
        assert slice_devices(api) and name not in slice_devices(api)
        assert any(e["reason"] == "DevicesNotPublished" and LOST in e["message"] for e in api.events)
    finally:
        await plugin_of(legacy).stop()


class TestWhereTaintsAreDropped:
    @pytest.fixture
    def api(self) -> FakeApi:
        return DroppingApi()

    async def test_it_is_left_out_after_60s(
        self, legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
    ) -> None:
        paths, index = await start_dra_plugin(legacy, kubelet, api)
        try:
            (name,) = [n for n, d in index.items() if d.device_id == LOST]
            everything = sorted(d.device_id for d in index.values())
            hand_over(kubelet, api)
            await publish(legacy, clock)
            published = set(slice_devices(api))
            toolkit_spec(paths, [i for i in everything if i != LOST])
            await tick(legacy, clock, 1)
            await tick(legacy, clock, 30)
            assert set(slice_devices(api)) == published, "not dropped at once"
            await tick(legacy, clock, 30)
            await tick(legacy, clock, 1)
            assert legacy.publisher.taints_supported is False
            assert set(slice_devices(api)) == published - {name}
        finally:
            await plugin_of(legacy).stop()
