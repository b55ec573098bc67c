"""The agent under test and its fake node, shared by tests/bridge/test_agent*.py: an inventory
recorded in legacy mode, a clock, the operator's hand-over, a publish."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pytest

from dra_bridge.bridge.agent import Agent
from dra_bridge.bridge.health import Clocks
from dra_bridge.bridge.kubeletplugin.node_plugin import Plugin, PluginPaths
from dra_bridge.bridge.podresources.client import PodResourcesClient
from dra_bridge.bridge.publisher import Publisher
from dra_bridge.bridge.settings import Settings
from dra_bridge.bridge.state import InventoryStore
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.inventory.allocatable import DeviceId
from dra_bridge.translate.inventory.device_facts import NvmlFacts
from dra_bridge.translate.names import NODE_MODE_LABEL as MODE_LABEL

if TYPE_CHECKING:  # tests/bridge/conftest.py imports this module for its fixtures
    from tests.bridge.conftest import FakeApi, KubeletServer

NODE = "gpu-node-1"
LABELS = {
    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
    "nvidia.com/gpu.family": "ampere",
    "nvidia.com/gpu.compute.major": "8",
    "nvidia.com/gpu.compute.minor": "0",
    "nvidia.com/cuda.driver-version.full": "550.107.02",
    "nvidia.com/cuda.runtime-version.full": "12.4",
    "nvidia.com/gpu.memory": "40960",
    "nvidia.com/mig-1g.5gb.memory": "4864",
}
INVENTORY = [
    ("nvidia.com/gpu", "GPU-aaaa", [0]),
    ("nvidia.com/gpu", "GPU-bbbb", [0, 1]),  # NUMA duplicate: two kubelet entries
    ("nvidia.com/mig-1g.5gb", "MIG-cccc", [1]),
    ("nvidia.com/gpu.shared", "GPU-dddd::0", [1]),
    ("nvidia.com/gpu.shared", "GPU-dddd::1", [1]),
]
CAPACITY = {"nvidia.com/gpu": "2", "nvidia.com/mig-1g.5gb": "1", "nvidia.com/gpu.shared": "2"}
ZERO = dict.fromkeys(CAPACITY, "0")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class MakeAgent(Protocol):
    def __call__(
        self,
        state_dir: Path,
        nvml: dict[str, NvmlFacts] | None = None,
        *,
        catalog: Catalog | None = None,
        clock: Clock | None = None,
        node: str = NODE,
        pod_uid: str = "",
        settle_period: float = 60,
    ) -> Agent: ...


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_agent(kubelet: KubeletServer, api: FakeApi, clock: Clock, catalog: Catalog) -> MakeAgent:
    """Makes an agent of ``node`` on the fake kubelet and API server with its state in ``state_dir``:
    the shipped catalog and the test's clock unless given, NVML facts from ``nvml`` if given, a
    60 s settle period unless given, ``--pod-uid`` if given (a rolling update's instance)."""
    shipped, test_clock = catalog, clock

    def make(
        state_dir: Path,
        nvml: dict[str, NvmlFacts] | None = None,
        *,
        catalog: Catalog | None = None,
        clock: Clock | None = None,
        node: str = NODE,
        pod_uid: str = "",
        settle_period: float = 60,
    ) -> Agent:
        settings = Settings(
            node_name=node,
            kubelet_dir=str(kubelet.dir),
            state_dir=str(state_dir),
            settle_period=settle_period,
            poll_interval=1,
            pod_uid=pod_uid,
        )
        cat = shipped if catalog is None else catalog
        tick = test_clock if clock is None else clock
        return Agent(
            settings,
            cat,
            PodResourcesClient(kubelet.socket, timeout=1),
            InventoryStore(state_dir),
            api,
            Publisher(api, node, cat.bridge_driver),
            nvml_probe=(lambda: nvml) if nvml is not None else None,
            clocks=Clocks(tick, tick),
        )

    return make


@pytest.fixture
async def legacy(kubelet: KubeletServer, api: FakeApi, tmp_path: Path, make_agent: MakeAgent) -> Agent:
    """An agent that recorded INVENTORY in legacy mode, with the plugin still serving."""
    kubelet.fake.devices = list(INVENTORY)
    kubelet.plugin_socket("nvidia-gpu.sock")
    api.add_node(NODE, dict(LABELS), dict(CAPACITY))
    agent = make_agent(tmp_path / "state")
    report = await agent.tick()
    assert report.mode == "legacy" and report.recorded == 5
    return agent


def hand_over(kubelet: KubeletServer, api: FakeApi) -> None:
    """What the operator and the kubelet do: label the node, turn the plugin off, capacity drops to 0."""
    api.nodes[NODE]["metadata"]["labels"][MODE_LABEL] = "dra"
    kubelet.plugin_socket("nvidia-gpu.sock", present=False)
    kubelet.fake.devices = []
    api.nodes[NODE]["status"]["capacity"] = dict(ZERO)
    api.nodes[NODE]["status"]["allocatable"] = dict(ZERO)


async def publish(agent: Agent, clock: Clock) -> None:
    await agent.tick()
    clock.now += 61
    await agent.tick()
    await agent.publisher.sync()


def plugin_of(agent: Agent) -> Plugin:
    """The agent's plugin as started by :func:`start_dra_plugin`."""
    assert isinstance(agent.plugin, Plugin)
    return agent.plugin


async def start_dra_plugin(
    legacy: Agent, kubelet: KubeletServer, api: FakeApi
) -> tuple[PluginPaths, dict[str, DeviceId]]:
    """The agent's DRA plugin in the fake kubelet's directory, as ``dra-bridge run`` starts it
    (the agent is its view); returns its paths and the device index (published name -> device)."""
    from dra_bridge.bridge.kubeletplugin.node_plugin import Collection, start_plugin
    from tests.bridge.draplugin_fixtures import toolkit_spec

    paths = PluginPaths.under(kubelet.dir, kubelet.dir / "state", (kubelet.dir / "etc", kubelet.dir / "run"))
    for d in paths.cdi_dirs:
        d.mkdir(parents=True)
    index = dict(legacy.devices())
    toolkit_spec(paths, sorted(d.device_id for d in index.values()))
    plugin = await start_plugin(paths, api, NODE, legacy, metrics=legacy.metrics, boot_id=lambda: "b")
    plugin.collection = Collection(legacy.kubelet, legacy.settings.claim_grace_period)
    legacy.plugin = plugin
    return paths, index
