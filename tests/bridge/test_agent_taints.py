"""Health that withdraws, on one node: a device the health rule finds unhealthy for 60 s gets the
``dra-bridge.io/unhealthy`` NoSchedule taint in its slice (an Event and a metric), loses it after
300 s healthy; where the API server drops the field (the DRADeviceTaints gate off, judged from the
object it returned), the device is left out of the slice instead, without a write loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dra_bridge.bridge.agent import Agent
from dra_bridge.bridge.kubeletplugin.node_plugin import UNHEALTHY_FILE_ENV, marked_unhealthy
from dra_bridge.translate.inventory.device_taints import TAINT_KEY
from tests.bridge.agent_fixtures import Clock, hand_over, plugin_of, publish, start_dra_plugin
from tests.bridge.conftest import FakeApi, KubeletServer


def slice_devices(api: FakeApi) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for s in api.slices.values() for d in s["spec"].get("devices", [])}


async def tick(agent: Agent, clock: Clock, seconds: float) -> None:
    clock.now += seconds
    await agent.tick()
    await agent.publisher.sync()


async def test_an_unhealthy_device_is_tainted_after_60s_and_untainted_after_300s_healthy(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, index = await start_dra_plugin(legacy, kubelet, api)
    try:
        (name,) = [n for n, d in index.items() if d.device_id == "GPU-aaaa"]
        hand_over(kubelet, api)
        await publish(legacy, clock)
        bad: set[str] = {name}
        monkeypatch.setattr(plugin_of(legacy), "unhealthy_devices", lambda: frozenset(bad))
        await tick(legacy, clock, 1)
        await tick(legacy, clock, 30)
        assert "taints" not in slice_devices(api)[name]
        await tick(legacy, clock, 30)
        [taint] = slice_devices(api)[name]["taints"]
        assert (taint["key"], taint["effect"]) == (TAINT_KEY, "NoSchedule")
        assert len([d for d in slice_devices(api).values() if d.get("taints")]) == 1
        assert [e["reason"] for e in api.events].count("DeviceTainted") == 1
        assert b'dra_bridge_device_taint_changes_total{change="tainted"} 1.0' in legacy.metrics.text()
        assert legacy.publisher.taints_supported is True
        bad.clear()
        await tick(legacy, clock, 1)  # observed healthy from here
        await tick(legacy, clock, 299)
        assert slice_devices(api)[name].get("taints")
        await tick(legacy, clock, 1)
        assert "taints" not in slice_devices(api)[name]
        assert [e["reason"] for e in api.events].count("DeviceUntainted") == 1
    finally:
        await plugin_of(legacy).stop()


def test_the_unhealthy_test_hook_is_inert_unless_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(UNHEALTHY_FILE_ENV, raising=False)
    assert marked_unhealthy() == {}
    listed = tmp_path / "unhealthy"
    monkeypatch.setenv(UNHEALTHY_FILE_ENV, str(listed))
    assert marked_unhealthy() == {}  # no file yet
    listed.write_text("GPU-aaaa\n")
    assert list(marked_unhealthy()) == ["GPU-aaaa"]
