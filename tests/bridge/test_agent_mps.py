"""A node whose GPUs are served with MPS: those devices are not published, with an Event and a
``/readyz`` detail saying why; time-slicing replicas alone are published (tests/bridge/test_agent.py)."""

from __future__ import annotations

from pathlib import Path

from dra_bridge.translate.inventory.mps import SHARING_LABEL
from tests.bridge.agent_fixtures import CAPACITY, INVENTORY, LABELS, NODE, Clock, MakeAgent, hand_over, publish
from tests.bridge.conftest import FakeApi, KubeletServer


async def test_mps_devices_are_not_published_and_the_event_and_readyz_say_why(
    kubelet: KubeletServer, api: FakeApi, tmp_path: Path, make_agent: MakeAgent, clock: Clock
) -> None:
    kubelet.fake.devices = list(INVENTORY)
    kubelet.plugin_socket("nvidia-gpu.sock")
    api.add_node(NODE, {**LABELS, SHARING_LABEL: "mps"}, dict(CAPACITY))
    agent = make_agent(tmp_path / "state")
    await agent.tick()
    hand_over(kubelet, api)
    await publish(agent, clock)
    assert not [d for s in api.slices.values() for d in s["spec"].get("devices", [])]
    (event,) = [e for e in api.events if e["reason"] == "DevicesNotPublished"]
    assert "served with MPS" in event["message"] and f"{SHARING_LABEL}=mps" in event["message"]
    assert "served with MPS" in agent.health.detail()["sharing"]
