"""Where container edits come from, end to end on one node (docs/design.md D10): the agent asks a
catalogued vendor plugin's Allocate over real gRPC while legacy, records what composes, Prepare
answers it in our spec, and a resource with nothing that composes is not published."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from dra_bridge.bridge.agent import Agent
from dra_bridge.bridge.deviceplugin import api_pb2_grpc
from dra_bridge.bridge.kubeletplugin.node_plugin import PluginPaths, start_plugin
from dra_bridge.bridge.state import InventoryStore
from dra_bridge.kube.resources import RESOURCE_CLAIMS
from dra_bridge.translate.catalog import Catalog, load_catalog
from dra_bridge.translate.edit_sources import lookup
from dra_bridge.translate.names import NODE_MODE_LABEL
from tests.bridge.agent_fixtures import Clock, MakeAgent
from tests.bridge.conftest import FakeApi, KubeletServer
from tests.bridge.draplugin_fixtures import Kubelet, claim
from tests.deviceplugins import strategies
from tests.deviceplugins.plugin import DevicePluginService, TestDevice
from tests.deviceplugins.strategies import Strategy

NODE = "vendor-node"
RESOURCE = "example.com/gpu"
SOCKET = "example.com-gpu.sock"
IDS = ["ex0", "ex1"]
UID = "0a1b2c3d-0000-4000-8000-0000000000e1"


def example_catalog(recipe: bool = False) -> Catalog:
    nodes = ", deviceNodes: ['/dev/example/{id}']" if recipe else ""
    return load_catalog(
        "apiVersion: catalog.dra-bridge.io/v1\nkind: Catalog\nresources:\n"
        f"  - {{name: {RESOURCE}, kind: gpu, deviceClass: example-gpu.example.com,\n"
        f"     edits: {{allocate: {{sideEffectFree: true, socket: {SOCKET}}}{nodes}}}}}\n",
        "test",
    )


class Plugin:
    """The test device plugin served in process on the catalogued socket."""

    def __init__(self, kubelet: KubeletServer, strategy: Strategy) -> None:
        self.service = DevicePluginService(RESOURCE, strategy, [TestDevice(i) for i in IDS])
        self.socket = kubelet.dir / "device-plugins" / SOCKET
        self.server: grpc.aio.Server | None = None

    async def start(self) -> None:
        self.server = grpc.aio.server()
        api_pb2_grpc.add_DevicePluginServicer_to_server(self.service, self.server)
        self.server.add_insecure_port(f"unix://{self.socket}")
        await self.server.start()

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop(None)
        self.socket.unlink(missing_ok=True)


@pytest.fixture
async def node(kubelet: KubeletServer, api: FakeApi) -> AsyncIterator[KubeletServer]:
    kubelet.fake.devices = [(RESOURCE, i, [0]) for i in IDS]
    api.add_node(NODE, {}, {RESOURCE: "2"})
    yield kubelet


async def hand_over_and_publish(
    agent: Agent, kubelet: KubeletServer, api: FakeApi, plugin: Plugin, clock: Clock
) -> None:
    api.nodes[NODE]["metadata"]["labels"][NODE_MODE_LABEL] = "dra"
    await plugin.stop()
    kubelet.fake.devices = []
    api.nodes[NODE]["status"]["capacity"] = api.nodes[NODE]["status"]["allocatable"] = {RESOURCE: "0"}
    await agent.tick()
    clock.now += 61
    report = await agent.tick()
    assert report.publishing, report.refusals
    await agent.publisher.sync()


async def test_a_vendor_plugins_answer_is_recorded_one_device_per_call_keeping_what_composes(
    make_agent: MakeAgent, node: KubeletServer, api: FakeApi, tmp_path: Path
) -> None:
    plugin = Plugin(node, Strategy.VENDOR)
    await plugin.start()
    try:
        agent = make_agent(tmp_path / "state", catalog=example_catalog(), clock=Clock(), node=NODE)
        await agent.tick()
        assert plugin.service.calls.get("Allocate") == 2 and "ListAndWatch" not in plugin.service.calls
        recorded = agent.recorded.edits[RESOURCE]
        assert recorded["devices"]["ex0"] == {
            "env": ["VENDOR_DEVICE_EX0=present"],
            "deviceNodes": [
                {"path": "/dev/vendor-ctl", "hostPath": "/dev/vendor-ctl", "permissions": "rw"},
                {"path": "/dev/vendor/ex0", "hostPath": "/dev/vendor/ex0", "permissions": "rw"},
            ],
        }
        assert recorded["dropped"] == [
            "MPS mount /run/vendor/mps/pipe (the MPS daemon leaves with the plugin)",
            "MPS variable CUDA_MPS_PIPE_DIRECTORY (the MPS daemon leaves with the plugin)",
            "list-valued variable VENDOR_VISIBLE_DEVICES (the last device's value would win)",
        ]
        assert InventoryStore(tmp_path / "state").load().edits == agent.recorded.edits  # on disk
        await agent.tick()
        assert plugin.service.calls["Allocate"] == 2, "asked again only when the devices change"
    finally:
        await plugin.stop()


async def test_prepare_answers_the_recorded_edits_in_our_spec(
    make_agent: MakeAgent, node: KubeletServer, api: FakeApi, tmp_path: Path
) -> None:
    plugin, clock, cat = Plugin(node, Strategy.VENDOR), Clock(), example_catalog()
    await plugin.start()
    agent = make_agent(tmp_path / "state", catalog=cat, clock=clock, node=NODE)
    await agent.tick()
    paths = PluginPaths.under(node.dir, tmp_path / "state", (node.dir / "etc", node.dir / "run"))
    for d in paths.cdi_dirs:
        d.mkdir()
    agent.plugin = await start_plugin(
        paths,
        api,
        NODE,
        agent,
        boot_id=lambda: "b",
        edits=lookup(agent.recorded_edits, cat),
    )
    client = Kubelet(paths.dra_socket)
    try:
        await hand_over_and_publish(agent, node, api, plugin, clock)
        (name,) = [n for n, d in agent.devices().items() if d.device_id == "ex1"]
        api.put(RESOURCE_CLAIMS, claim(UID, "c", [("gpu", cat.bridge_driver, NODE, name)]))
        assert (await client.prepare((UID, "c"))).claims[UID].error == ""
        spec: dict[str, Any] = json.loads((paths.cdi_dirs[-1] / f"dra-bridge.io-claim_{UID}.json").read_text())
        assert spec["devices"][0]["containerEdits"] == agent.recorded.edits[RESOURCE]["devices"]["ex1"]
        assert "VENDOR_VISIBLE_DEVICES" not in json.dumps(spec) and "mps" not in json.dumps(spec)
    finally:
        await client.close()
        await agent.plugin.stop()


async def test_a_resource_whose_only_recipe_is_list_valued_is_not_published_with_an_event(
    make_agent: MakeAgent, node: KubeletServer, api: FakeApi, tmp_path: Path
) -> None:
    plugin, clock = Plugin(node, Strategy.VENDOR_LIST_ONLY), Clock()
    await plugin.start()
    agent = make_agent(tmp_path / "state", catalog=example_catalog(), clock=clock, node=NODE)
    await agent.tick()
    assert agent.recorded.edits[RESOURCE]["devices"] == {"ex0": {}, "ex1": {}}
    await hand_over_and_publish(agent, node, api, plugin, clock)
    assert not [d for s in api.slices.values() for d in s["spec"].get("devices", [])]
    (event,) = [e for e in api.events if e["reason"] == "DevicesNotPublished"]
    assert event["type"] == "Warning" and RESOURCE in event["message"]
    assert "VENDOR_VISIBLE_DEVICES" in event["message"] and "no static recipe" in event["message"]
    await agent.tick()
    assert [e["reason"] for e in api.events].count("DevicesNotPublished") == 1, "once per change"


async def test_a_catalog_recipe_publishes_what_the_answer_could_not(
    make_agent: MakeAgent, node: KubeletServer, api: FakeApi, tmp_path: Path
) -> None:
    plugin, clock = Plugin(node, Strategy.VENDOR_LIST_ONLY), Clock()
    await plugin.start()
    agent = make_agent(tmp_path / "state", catalog=example_catalog(recipe=True), clock=clock, node=NODE)
    await agent.tick()
    await hand_over_and_publish(agent, node, api, plugin, clock)
    assert len([d for s in api.slices.values() for d in s["spec"].get("devices", [])]) == 2
    assert not [e for e in api.events if e["reason"] == "DevicesNotPublished"]


async def test_a_plugin_down_or_erroring_is_survived_and_asked_again_later(
    make_agent: MakeAgent,
    node: KubeletServer,
    api: FakeApi,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.WARNING)
    plugin = Plugin(node, Strategy.VENDOR)
    node.plugin_socket(SOCKET)  # a stale socket file: nothing listens
    agent = make_agent(tmp_path / "state", catalog=example_catalog(), clock=Clock(), node=NODE)
    report = await agent.tick()
    assert report.recorded == 2 and agent.recorded.edits == {}
    assert f"cannot record the Allocate answers of {RESOURCE}" in caplog.text
    await agent.tick()
    assert caplog.text.count("cannot record the Allocate answers") == 1, "logged once per reason"

    def broken(*args: object) -> Any:
        raise RuntimeError("boom")

    node.plugin_socket(SOCKET, present=False)
    await plugin.start()
    try:
        with monkeypatch.context() as patched:
            patched.setattr(strategies, "allocate", broken)
            for _ in range(40):  # gRPC backs off reconnecting to the address that refused: a later tick
                await agent.tick()
                if plugin.service.calls.get("Allocate"):
                    break
                await asyncio.sleep(0.1)
        assert agent.recorded.edits == {} and "INTERNAL: Allocate failed: RuntimeError: boom" in caplog.text
        await agent.tick()
        assert set(agent.recorded.edits[RESOURCE]["devices"]) == set(IDS)
    finally:
        await plugin.stop()


def test_an_inventory_file_written_before_edits_were_recorded_still_loads(tmp_path: Path) -> None:
    (tmp_path / "inventory.json").write_text(
        json.dumps(
            {
                "apiVersion": "state.dra-bridge.io/v1",
                "kind": "Inventory",
                "node": NODE,
                "recordedAt": 1.0,
                "devices": [{"resourceName": RESOURCE, "deviceID": "ex0", "numaNodes": [0]}],
                "labels": {},
                "nvml": {},
            }
        )
    )
    inventory = InventoryStore(tmp_path).load()
    assert inventory.edits == {} and inventory.device_ids() == {"ex0"}
    (tmp_path / "inventory.json").write_text(
        json.dumps(
            {"apiVersion": "state.dra-bridge.io/v1", "devices": [], "allocateEdits": {RESOURCE: {"devices": []}}}
        )
    )
    from dra_bridge.bridge.errors import StateError

    with pytest.raises(StateError, match=r"allocateEdits\[example.com/gpu\] is not"):
        InventoryStore(tmp_path).load()
