"""The last-line check at Prepare (docs/design.md D34): under the preparer's lock, a fresh claim
is refused, with its own error naming the device and the holder, when another checkpointed claim
holds one of its devices (unless one of the two has adminAccess), a device plugin assigned it to
a container, or the kubelet offers it through a device plugin; fresh claims only while the last
decision was to publish, a retryable error before the first one; prepared claims stay idempotent."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dra_bridge.bridge.agent import Agent
from dra_bridge.bridge.kubeletplugin.node_plugin import Plugin, start_plugin
from dra_bridge.bridge.ports import DeviceUse, PrepareGate, StaticView
from dra_bridge.kube.resources import RESOURCE_CLAIMS
from dra_bridge.translate.catalog import Catalog
from tests.bridge.agent_fixtures import NODE as AGENT_NODE
from tests.bridge.agent_fixtures import Clock, MakeAgent, hand_over, plugin_of, publish, start_dra_plugin
from tests.bridge.conftest import FakeApi, KubeletServer
from tests.bridge.draplugin_fixtures import (
    AMD_PCI,
    DRIVER,
    INVENTORY,
    NODE,
    UID,
    Kubelet,
    claim,
    fake_api,
    layout,
    remove_tree,
    short_dir,
)

AMD0 = INVENTORY["gpu-amd0"]


def admin(c: dict[str, Any]) -> dict[str, Any]:
    for r in c["status"]["allocation"]["devices"]["results"]:
        r["adminAccess"] = True
    return c


class Node:
    def __init__(self) -> None:
        self.root = short_dir()
        self.paths = layout(self.root)
        self.view = StaticView(INVENTORY)
        self.api = fake_api(
            [
                claim(UID[0], "first", [("a", DRIVER, NODE, "gpu-amd0")]),
                claim(UID[1], "second", [("a", DRIVER, NODE, "gpu-amd0")]),
                admin(claim(UID[2], "monitor", [("a", DRIVER, NODE, "gpu-amd0")])),
                claim(UID[3], "other", [("a", DRIVER, NODE, "gpu-amd1")]),
            ]
        )
        self.plugin: Plugin | None = None
        self.kubelet = Kubelet(self.paths.dra_socket)

    async def error(self, uid: str, name: str) -> str:
        return str((await self.kubelet.prepare((uid, name))).claims[uid].error)

    def checkpointed(self) -> set[str]:
        return set(json.loads((self.paths.state_dir / "prepared-claims.json").read_text())["claims"])


@pytest.fixture
async def node() -> AsyncIterator[Node]:
    n = Node()
    n.plugin = await start_plugin(n.paths, n.api, NODE, n.view, boot_id=lambda: "b")
    yield n
    await n.kubelet.close()
    await n.plugin.stop()
    remove_tree(n.root)


async def test_a_device_another_prepared_claim_holds_is_refused_naming_it(node: Node) -> None:
    assert await node.error(UID[0], "first") == ""
    error = await node.error(UID[1], "second")
    assert "gpu-amd0" in error and AMD_PCI in error and f"ns/first ({UID[0]})" in error, error
    assert node.checkpointed() == {UID[0]}
    assert await node.error(UID[0], "first") == ""  # the prepared claim stays idempotent
    assert await node.error(UID[3], "other") == ""  # another device is no conflict


async def test_admin_access_on_either_claim_shares_the_device(node: Node) -> None:
    assert await node.error(UID[0], "first") == ""
    assert await node.error(UID[2], "monitor") == ""
    assert node.checkpointed() == {UID[0], UID[2]}
    stored = json.loads((node.paths.state_dir / "prepared-claims.json").read_text())["claims"]
    assert stored[UID[2]]["devices"][0]["adminAccess"] is True


async def test_a_device_a_device_plugin_assigned_to_a_container_is_refused(node: Node) -> None:
    node.view.use = DeviceUse(held={AMD0: ["team-a/legacy/main"]})
    error = await node.error(UID[0], "first")
    assert "gpu-amd0" in error and "team-a/legacy/main" in error and "device plugin" in error, error
    assert not (node.paths.state_dir / "prepared-claims.json").exists()


async def test_a_device_the_kubelet_offers_through_a_device_plugin_is_refused(node: Node) -> None:
    node.view.use = DeviceUse(offered={AMD0: f"amd.com/gpu {AMD_PCI}"})
    error = await node.error(UID[0], "first")
    assert "gpu-amd0" in error and "offered by the kubelet" in error, error


async def test_pod_resources_that_do_not_answer_are_a_retryable_error(node: Node) -> None:
    node.view.use = DeviceUse(error="the kubelet's PodResources API does not answer")
    assert "will ask again" in await node.error(UID[0], "first")


async def test_fresh_claims_only_while_publishing_and_a_retryable_error_before_the_first_decision(
    node: Node,
) -> None:
    assert await node.error(UID[0], "first") == ""
    node.view.gate = PrepareGate()  # just started: nothing decided yet
    error = await node.error(UID[3], "other")
    assert "not decided yet" in error and "will ask again" in error, error
    node.view.gate = PrepareGate(True, False, "kubelet-offers: the kubelet offers recorded device(s)")
    assert "does not publish its devices now" in await node.error(UID[3], "other")
    assert await node.error(UID[0], "first") == ""  # already prepared: still answered
    node.view.gate = PrepareGate(True, True, "")
    assert await node.error(UID[3], "other") == ""


async def test_the_device_plugin_back_while_claims_are_prepared_refuses_alarms_and_posts_an_event(
    catalog: Catalog, legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock
) -> None:
    paths, index = await start_dra_plugin(legacy, kubelet, api)
    first, second = "0a1b2c3d-0000-4000-8000-00000000000a", "0a1b2c3d-0000-4000-8000-00000000000b"
    (aaaa,) = [n for n, d in index.items() if d.device_id == "GPU-aaaa"]
    (bbbb,) = [n for n, d in index.items() if d.device_id == "GPU-bbbb"]
    api.put(RESOURCE_CLAIMS, claim(first, "c1", [("gpu", catalog.bridge_driver, AGENT_NODE, aaaa)]))
    api.put(RESOURCE_CLAIMS, claim(second, "c2", [("gpu", catalog.bridge_driver, AGENT_NODE, bbbb)]))
    client = Kubelet(paths.dra_socket)
    try:
        assert "not in DRA mode" in (await client.prepare((first, "c1"))).claims[first].error  # legacy
        hand_over(kubelet, api)
        await publish(legacy, clock)
        assert (await client.prepare((first, "c1"))).claims[first].error == ""
        # the device plugin comes back, with index IDs, and a legacy pod gets GPU-bbbb
        kubelet.fake.devices = [("nvidia.com/gpu", "0", [0]), ("nvidia.com/gpu", "1", [0])]
        kubelet.fake.held = {"team-a/legacy": {"main": [("nvidia.com/gpu", "GPU-bbbb")]}}
        error = (await client.prepare((second, "c2"))).claims[second].error
        assert "refused" in error and "GPU-bbbb" in error and "team-a/legacy/main" in error, error
        assert (await client.prepare((first, "c1"))).claims[first].error == ""  # idempotent
        report = await legacy.tick()
        assert report.alarm and "GPU-aaaa" in report.alarm, report.alarm
        assert not report.publishing
        assert any(e["reason"] == "DeviceOfferedAgain" for e in api.events)
        assert "does not publish" in (await client.prepare((second, "c2"))).claims[second].error
    finally:
        await client.close()
        await plugin_of(legacy).stop()


def test_a_fresh_agent_has_not_decided(make_agent: MakeAgent, tmp_path: Path) -> None:
    gate = make_agent(tmp_path / "state").prepare_gate()
    assert not gate.decided and not gate.publishing
