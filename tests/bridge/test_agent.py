"""The agent against a fake kubelet (real PodResources protocol on a unix socket) and a fake API.

Time is an injectable clock: the settle period passes without sleeping.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dra_bridge.bridge.agent import CONDITION_TYPE, Agent
from dra_bridge.bridge.state import InventoryStore
from dra_bridge.translate.inventory.device_facts import NvmlFacts
from dra_bridge.translate.names import NODE_MODE_LABEL as MODE_LABEL
from tests.bridge.agent_fixtures import (
    INVENTORY,
    NODE,
    Clock,
    MakeAgent,
    hand_over,
    publish,
)
from tests.bridge.conftest import FakeApi, KubeletServer


async def test_legacy_mode_records_grouped_inventory_and_publishes_nothing(
    legacy: Agent, api: FakeApi, tmp_path: Path
) -> None:
    doc = json.loads((tmp_path / "state" / "inventory.json").read_text())
    assert doc["apiVersion"] == "state.dra-bridge.io/v1"
    assert {d["deviceID"]: d["numaNodes"] for d in doc["devices"]}["GPU-bbbb"] == [0, 1]
    assert doc["labels"]["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
    await legacy.publisher.sync()
    assert api.slices == {}


async def test_hand_over_publishes_after_the_settle_period(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    hand_over(kubelet, api)
    report = await legacy.tick()
    assert [r.interlock for r in report.refusals] == ["settle"]
    await legacy.publisher.sync()
    assert api.slices == {}
    clock.now += 61
    report = await legacy.tick()
    assert report.publishing and report.refusals == ()
    await legacy.publisher.sync()
    devices = {d["attributes"]["dra-bridge.io/deviceID"]["string"]: d for d in api.devices()}
    assert sorted(devices) == ["GPU-aaaa", "GPU-bbbb", "GPU-dddd::0", "GPU-dddd::1", "MIG-cccc"]
    assert devices["MIG-cccc"]["attributes"]["gpu.nvidia.com/profile"] == {"string": "1g.5gb"}
    assert devices["GPU-dddd::1"]["attributes"]["gpu.nvidia.com/uuid"] == {"string": "GPU-dddd"}
    assert devices["GPU-bbbb"]["attributes"]["dra-bridge.io/numaNodes"] == {"string": "0,1"}
    assert any(e["reason"] == "PublicationStarted" for e in api.events)


async def test_steady_state_makes_zero_writes(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    hand_over(kubelet, api)
    await publish(legacy, clock)
    writes, events = len(api.writes), len(api.events)
    for _ in range(5):
        clock.now += 30
        await legacy.tick()
        await legacy.publisher.sync()
    assert (len(api.writes), len(api.events)) == (writes, events)


@pytest.mark.parametrize("interlock", ["plugin-socket", "node-capacity", "devices-held", "other-driver"])
async def test_each_interlock_refuses_to_publish(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock, interlock: str
) -> None:
    hand_over(kubelet, api)
    if interlock == "plugin-socket":
        kubelet.plugin_socket("nvidia-gpu.sock")
    elif interlock == "node-capacity":
        api.nodes[NODE]["status"]["capacity"]["nvidia.com/gpu"] = "2"  # kept 5 minutes after the plugin left
    elif interlock == "devices-held":
        kubelet.fake.held = {"kube-system/dcgm-exporter-x": {"exporter": [("nvidia.com/gpu", "GPU-aaaa")]}}
    else:
        api.slices["vendor-slice"] = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "vendor-slice"},
            "spec": {
                "driver": "gpu.nvidia.com",
                "nodeName": NODE,
                "pool": {"name": NODE},
                "devices": [{"name": "gpu-0", "attributes": {"uuid": {"string": "GPU-aaaa"}}}],
            },
        }
    await legacy.tick()
    clock.now += 600
    report = await legacy.tick()
    await legacy.publisher.sync()
    assert not report.publishing
    assert [r.interlock for r in report.refusals] == [interlock]
    assert not any(s["spec"]["driver"] == "dra-bridge.io" for s in api.slices.values())
    assert legacy.health.interlocks[interlock]
    assert any(e["reason"] == "PublicationRefused" and interlock in e["message"] for e in api.events)
    metrics = legacy.metrics.text().decode()
    assert f'dra_bridge_interlock_refused{{interlock="{interlock}"}} 1.0' in metrics


async def test_kubelet_restart_that_offers_nothing_does_not_publish_or_erase_the_record(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock, tmp_path: Path
) -> None:
    # the kubelet restarts: it deletes plugin sockets and offers nothing for a while, but the
    # node still reports the capacity, and the operator has labelled the node already
    api.nodes[NODE]["metadata"]["labels"][MODE_LABEL] = "dra"
    kubelet.plugin_socket("nvidia-gpu.sock", present=False)
    kubelet.fake.devices = []
    await kubelet.stop()
    report = await legacy.tick()
    assert not legacy.health.ready and "does not exist" in legacy.health.kubelet
    await kubelet.start()
    clock.now += 600
    report = await legacy.tick()
    assert [r.interlock for r in report.refusals] == ["node-capacity"]
    assert legacy.health.ready
    await legacy.publisher.sync()
    assert api.slices == {}
    assert len(InventoryStore(tmp_path / "state").load().devices) == 5


async def test_device_offered_again_is_withdrawn_with_an_alarm(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    hand_over(kubelet, api)
    await publish(legacy, clock)
    assert api.slices
    kubelet.fake.devices = [("nvidia.com/gpu", "GPU-aaaa", [0])]  # the device plugin came back
    report = await legacy.tick()
    await legacy.publisher.sync()
    assert report.alarm and "GPU-aaaa" in report.alarm
    assert api.slices == {}
    assert any(e["reason"] == "DeviceOfferedAgain" for e in api.events)


async def test_inventory_changes_in_legacy_mode_are_recorded(
    legacy: Agent, kubelet: KubeletServer, tmp_path: Path
) -> None:
    kubelet.fake.devices = [*INVENTORY, ("nvidia.com/gpu", "GPU-eeee", [1])]
    await legacy.tick()
    assert "GPU-eeee" in InventoryStore(tmp_path / "state").load().device_ids()
    kubelet.fake.devices = INVENTORY[:1]
    await legacy.tick()
    assert InventoryStore(tmp_path / "state").load().device_ids() == {"GPU-aaaa"}


async def test_leaving_dra_mode_withdraws_and_reports_prepared_claims(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    hand_over(kubelet, api)
    await publish(legacy, clock)
    api.nodes[NODE]["metadata"]["labels"][MODE_LABEL] = "legacy"
    report = await legacy.tick()
    await legacy.publisher.sync()
    assert not report.publishing and api.slices == {}
    (condition,) = [c for c in api.nodes[NODE]["status"]["conditions"] if c["type"] == CONDITION_TYPE]
    assert condition["status"] == "False" and condition["message"].startswith("0 prepared claim")
    assert [e["reason"] for e in api.events].count("PublicationStarted") == 1
    assert legacy.health.interlocks == {}


async def test_restarted_agent_publishes_from_the_recorded_state(
    make_agent: MakeAgent, legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock, tmp_path: Path
) -> None:
    hand_over(kubelet, api)
    fresh = make_agent(tmp_path / "state")
    await publish(fresh, clock)
    assert len(api.devices()) == 5


async def test_api_server_down_is_unready_and_keeps_the_record(legacy: Agent, api: FakeApi, tmp_path: Path) -> None:
    api.fail = "connection refused"
    report = await legacy.tick()
    assert not legacy.health.ready and "connection refused" in legacy.health.api
    assert report.recorded == 5
    api.fail = ""
    await legacy.tick()
    assert legacy.health.ready


async def test_nvml_facts_are_recorded_and_a_lost_gpu_is_withdrawn(
    make_agent: MakeAgent, kubelet: KubeletServer, api: FakeApi, tmp_path: Path, clock: Clock
) -> None:
    nvml: dict[str, NvmlFacts] = {
        "GPU-aaaa": {
            "productName": "NVIDIA H100 80GB HBM3",
            "architecture": "Hopper",
            "cudaComputeCapability": "9.0",
            "memoryBytes": 80 << 30,
        },
        "GPU-bbbb": {"productName": "NVIDIA L4", "architecture": "Ada Lovelace", "cudaComputeCapability": "8.9"},
    }
    kubelet.fake.devices = [("nvidia.com/gpu", "GPU-aaaa", [0]), ("nvidia.com/gpu", "GPU-bbbb", [1])]
    api.add_node(NODE, {}, {"nvidia.com/gpu": "2"})
    agent = make_agent(tmp_path / "state", nvml)
    await agent.tick()
    hand_over(kubelet, api)
    del nvml["GPU-bbbb"]  # fell off the bus
    await publish(agent, clock)
    (device,) = api.devices()
    assert device["attributes"]["gpu.nvidia.com/productName"] == {"string": "NVIDIA H100 80GB HBM3"}
    assert device["attributes"]["dra-bridge.io/source"] == {"string": "nvml"}
    assert device["capacity"]["gpu.nvidia.com/memory"] == {"value": "80Gi"}


async def test_a_kubelet_restart_while_publishing_keeps_the_slices(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    # publishing; the kubelet restarts: PodResources does not answer for a tick, then answers with
    # every interlock holding as before. Not knowing for a tick is no reason to settle again.
    hand_over(kubelet, api)
    await publish(legacy, clock)
    assert legacy.report.publishing and api.slices
    await kubelet.stop()
    clock.now += 1
    report = await legacy.tick()
    assert report.publishing
    await kubelet.start()
    clock.now += 1
    report = await legacy.tick()
    await legacy.publisher.sync()
    assert report.publishing and not report.refusals and api.slices, report.refusals


async def test_an_amd_plugin_socket_without_sock_suffix_refuses_publication(
    make_agent: MakeAgent, kubelet: KubeletServer, api: FakeApi, tmp_path: Path, clock: Clock
) -> None:
    # ROCm's device plugin serves on device-plugins/amd.com_gpu (no .sock): the catalog names it
    kubelet.fake.devices = [("amd.com/gpu", "0000:03:00.0", [0])]
    kubelet.plugin_socket("amd.com_gpu")
    api.add_node(NODE, {}, {"amd.com/gpu": "1"})
    agent = make_agent(tmp_path / "state")
    assert (await agent.tick()).recorded == 1
    api.nodes[NODE]["metadata"]["labels"][MODE_LABEL] = "dra"
    kubelet.fake.devices = []
    api.nodes[NODE]["status"]["capacity"] = api.nodes[NODE]["status"]["allocatable"] = {"amd.com/gpu": "0"}
    await agent.tick()
    clock.now += 600
    report = await agent.tick()
    assert [(r.interlock, r.reason) for r in report.refusals] == [
        ("plugin-socket", "device plugin socket(s) still present: amd.com_gpu")
    ]
    kubelet.plugin_socket("amd.com_gpu", present=False)
    await agent.tick()
    clock.now += 61
    assert (await agent.tick()).publishing


async def test_the_recorded_devices_gauge_follows_the_recorded_inventory(
    make_agent: MakeAgent, kubelet: KubeletServer, api: FakeApi, tmp_path: Path, clock: Clock
) -> None:
    kubelet.fake.devices = [("nvidia.com/gpu", "GPU-aaaa", [0])]
    api.add_node(NODE, {}, {"nvidia.com/gpu": "1"})
    agent = make_agent(tmp_path / "state")
    await agent.tick()
    assert "dra_bridge_recorded_devices 1.0" in agent.metrics.text().decode()
    kubelet.fake.devices = list(INVENTORY)  # the plugin offers more: recorded again
    await agent.tick()
    assert "dra_bridge_recorded_devices 5.0" in agent.metrics.text().decode()
