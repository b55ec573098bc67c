"""The agent against a fake kubelet (real PodResources protocol on a unix socket) and a fake API.

Time is an injectable clock: the settle period passes without sleeping.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from dra_bridge.bridge.agent import CONDITION_TYPE, Agent
from dra_bridge.bridge.node_plugin import PluginPaths
from dra_bridge.bridge.podresources.client import PodResourcesClient
from dra_bridge.bridge.publisher import Publisher
from dra_bridge.bridge.settings import Settings
from dra_bridge.bridge.state import InventoryStore
from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.cel.environment import evaluate_selectors
from dra_bridge.translate.inventory import internal_form
from dra_bridge.translate.inventory.device_facts import NvmlFacts
from dra_bridge.translate.names import NODE_MODE_LABEL as MODE_LABEL
from dra_bridge.translate.plan.claim_templates import internal_from_template
from dra_bridge.translate.plan.workloads import convert_object
from tests.bridge.conftest import FakeApi, KubeletServer
from tests.factories import gpu, make_container, make_pod

CATALOG = load_catalog()
NODE = "gpu-node-1"
LABELS = {
    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.family": "ampere",
    "nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "0",
    "nvidia.com/cuda.driver-version.full": "550.107.02", "nvidia.com/cuda.runtime-version.full": "12.4",
    "nvidia.com/gpu.memory": "40960", "nvidia.com/mig-1g.5gb.memory": "4864",
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


def make_agent(kubelet: KubeletServer, api: FakeApi, state_dir: Path, clock: Clock,
               nvml: dict[str, NvmlFacts] | None = None) -> Agent:
    settings = Settings(node_name=NODE, kubelet_dir=str(kubelet.dir), state_dir=str(state_dir),
                        settle_period=60, poll_interval=1)
    probe = (lambda: nvml) if nvml is not None else None
    return Agent(settings, CATALOG, PodResourcesClient(kubelet.socket, timeout=1), InventoryStore(state_dir), api,
                 Publisher(api, NODE, CATALOG.bridge_driver), nvml_probe=probe, clock=clock, wall=clock)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def legacy(kubelet: KubeletServer, api: FakeApi, tmp_path: Path, clock: Clock) -> Agent:
    """An agent that recorded INVENTORY in legacy mode, with the plugin still serving."""
    kubelet.fake.devices = list(INVENTORY)
    kubelet.plugin_socket("nvidia-gpu.sock")
    api.add_node(NODE, dict(LABELS), dict(CAPACITY))
    agent = make_agent(kubelet, api, tmp_path / "state", clock)
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


async def test_legacy_mode_records_grouped_inventory_and_publishes_nothing(
        legacy: Agent, api: FakeApi, tmp_path: Path) -> None:
    doc = json.loads((tmp_path / "state" / "inventory.json").read_text())
    assert doc["apiVersion"] == "state.dra-bridge.io/v1"
    assert {d["deviceID"]: d["numaNodes"] for d in doc["devices"]}["GPU-bbbb"] == [0, 1]
    assert doc["labels"]["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
    await legacy.publisher.sync()
    assert api.slices == {}


async def test_hand_over_publishes_after_the_settle_period(
        legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock) -> None:
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


async def test_steady_state_makes_zero_writes(legacy: Agent, kubelet: KubeletServer, api: FakeApi,
                                              clock: Clock) -> None:
    hand_over(kubelet, api)
    await publish(legacy, clock)
    writes, events = len(api.writes), len(api.events)
    for _ in range(5):
        clock.now += 30
        await legacy.tick()
        await legacy.publisher.sync()
    assert (len(api.writes), len(api.events)) == (writes, events)


@pytest.mark.parametrize("interlock", ["plugin-socket", "node-capacity", "devices-held", "other-driver"])
async def test_each_interlock_refuses_to_publish(legacy: Agent, kubelet: KubeletServer, api: FakeApi,
                                                 clock: Clock, interlock: str) -> None:
    hand_over(kubelet, api)
    if interlock == "plugin-socket":
        kubelet.plugin_socket("nvidia-gpu.sock")
    elif interlock == "node-capacity":
        api.nodes[NODE]["status"]["capacity"]["nvidia.com/gpu"] = "2"  # kept 5 minutes after the plugin left
    elif interlock == "devices-held":
        kubelet.fake.held = {"kube-system/dcgm-exporter-x": {"exporter": [("nvidia.com/gpu", "GPU-aaaa")]}}
    else:
        api.slices["vendor-slice"] = {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "vendor-slice"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": NODE, "pool": {"name": NODE},
                     "devices": [{"name": "gpu-0", "attributes": {"uuid": {"string": "GPU-aaaa"}}}]}}
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
        legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock, tmp_path: Path) -> None:
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


async def test_device_offered_again_is_withdrawn_with_an_alarm(legacy: Agent, kubelet: KubeletServer,
                                                                api: FakeApi, clock: Clock) -> None:
    hand_over(kubelet, api)
    await publish(legacy, clock)
    assert api.slices
    kubelet.fake.devices = [("nvidia.com/gpu", "GPU-aaaa", [0])]  # the device plugin came back
    report = await legacy.tick()
    await legacy.publisher.sync()
    assert report.alarm and "GPU-aaaa" in report.alarm
    assert api.slices == {}
    assert any(e["reason"] == "DeviceOfferedAgain" for e in api.events)


async def test_inventory_changes_in_legacy_mode_are_recorded(legacy: Agent, kubelet: KubeletServer,
                                                             tmp_path: Path) -> None:
    kubelet.fake.devices = [*INVENTORY, ("nvidia.com/gpu", "GPU-eeee", [1])]
    await legacy.tick()
    assert "GPU-eeee" in InventoryStore(tmp_path / "state").load().device_ids()
    kubelet.fake.devices = INVENTORY[:1]
    await legacy.tick()
    assert InventoryStore(tmp_path / "state").load().device_ids() == {"GPU-aaaa"}


async def test_leaving_dra_mode_withdraws_and_reports_prepared_claims(legacy: Agent, kubelet: KubeletServer,
                                                                     api: FakeApi, clock: Clock) -> None:
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


async def test_restarted_agent_publishes_from_the_recorded_state(legacy: Agent, kubelet: KubeletServer,
                                                                api: FakeApi, clock: Clock, tmp_path: Path) -> None:
    hand_over(kubelet, api)
    fresh = make_agent(kubelet, api, tmp_path / "state", clock)
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


async def test_nvml_facts_are_recorded_and_a_lost_gpu_is_withdrawn(kubelet: KubeletServer, api: FakeApi,
                                                                   tmp_path: Path, clock: Clock) -> None:
    nvml: dict[str, NvmlFacts] = {
        "GPU-aaaa": {"productName": "NVIDIA H100 80GB HBM3", "architecture": "Hopper",
                     "cudaComputeCapability": "9.0", "memoryBytes": 80 << 30},
        "GPU-bbbb": {"productName": "NVIDIA L4", "architecture": "Ada Lovelace", "cudaComputeCapability": "8.9"},
    }
    kubelet.fake.devices = [("nvidia.com/gpu", "GPU-aaaa", [0]), ("nvidia.com/gpu", "GPU-bbbb", [1])]
    api.add_node(NODE, {}, {"nvidia.com/gpu": "2"})
    agent = make_agent(kubelet, api, tmp_path / "state", clock, nvml)
    await agent.tick()
    hand_over(kubelet, api)
    del nvml["GPU-bbbb"]  # fell off the bus
    await publish(agent, clock)
    (device,) = api.devices()
    assert device["attributes"]["gpu.nvidia.com/productName"] == {"string": "NVIDIA H100 80GB HBM3"}
    assert device["attributes"]["dra-bridge.io/source"] == {"string": "nvml"}
    assert device["capacity"]["gpu.nvidia.com/memory"] == {"value": "80Gi"}


def _devices_matching(template: dict[str, object], slices: dict[str, dict[str, object]]) -> set[str]:
    """deviceIDs of the published devices that the template's one request (class selectors and
    its own) selects, evaluated in our DRA CEL environment."""
    (request,) = internal_from_template(template)["requests"]  # type: ignore[arg-type]
    (device_class,) = [c for c in CATALOG.device_classes(list(CATALOG.mig_profiles))
                       if c["metadata"]["name"] == request["deviceClassName"]]
    expressions = [s["cel"]["expression"] for s in device_class["spec"].get("selectors", [])]
    expressions += list(request["selectors"])
    out = set()
    for rendered in slices.values():
        spec = internal_form(rendered)["spec"]
        for device in spec["devices"]:
            if evaluate_selectors(expressions, device, spec["driver"]):
                out.add(device["attributes"]["dra-bridge.io/deviceID"]["string"])
    return out


@pytest.mark.parametrize(("resource", "ids"), [
    ("nvidia.com/gpu", {"GPU-aaaa", "GPU-bbbb"}), ("nvidia.com/mig-1g.5gb", {"MIG-cccc"}),
], ids=["whole-gpu", "mig"])
async def test_a_converted_claim_matches_the_devices_the_bridge_publishes(
        legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock, resource: str, ids: set[str]) -> None:
    hand_over(kubelet, api)
    await publish(legacy, clock)
    assert {internal_form(s)["spec"]["driver"] for s in api.slices.values()} == {CATALOG.bridge_driver}
    converted = convert_object(make_pod([make_container("main", gpu(1, resource))]), CATALOG)
    (template,) = converted.templates
    assert _devices_matching(template, api.slices) == ids


async def test_kubelet_reachable_again_is_logged_only_after_a_failure(
        kubelet: KubeletServer, api: FakeApi, tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    api.add_node(NODE, dict(LABELS), {})
    agent = make_agent(kubelet, api, tmp_path / "state", clock)
    caplog.set_level(logging.INFO, logger="dra_bridge.bridge.agent")
    await agent.tick()
    assert "reachable again" not in caplog.text, "first contact is not a recovery"
    await kubelet.stop()
    await agent.tick()
    assert "unavailable" in caplog.text and "reachable again" not in caplog.text
    await kubelet.start()
    await agent.tick()
    assert caplog.text.count("reachable again") == 1


async def start_dra_plugin(legacy: Agent, kubelet: KubeletServer, api: FakeApi) -> tuple[PluginPaths, dict[str, tuple[str, str]]]:
    """The agent's DRA plugin in the fake kubelet's directory, as ``dra-bridge run`` starts it;
    returns its paths and the device index (published name -> (resource, device ID))."""
    from dra_bridge.bridge.node_plugin import device_index, start_plugin
    from tests.bridge.draplugin_fixtures import toolkit_spec

    paths = PluginPaths.under(kubelet.dir, kubelet.dir / "state", (kubelet.dir / "etc", kubelet.dir / "run"))
    for d in paths.cdi_dirs:
        d.mkdir(parents=True)
    index = device_index(legacy.recorded, CATALOG)
    toolkit_spec(paths, sorted(i for _, i in index.values()))
    legacy.plugin = await start_plugin(paths, api, NODE, lambda: device_index(legacy.recorded, CATALOG),
                                       legacy.publisher.version, accepting=lambda: legacy.report.mode == "dra",
                                       metrics=legacy.metrics, boot_id=lambda: "b")
    return paths, index


async def test_the_prepared_claim_count_on_the_node_is_the_plugins(legacy: Agent, kubelet: KubeletServer,
                                                                   api: FakeApi, clock: Clock) -> None:
    from dra_bridge.kube.resources import RESOURCE_CLAIMS
    from tests.bridge.draplugin_fixtures import Kubelet, claim

    paths, index = await start_dra_plugin(legacy, kubelet, api)
    uid = "0a1b2c3d-0000-4000-8000-000000000001"
    api.put(RESOURCE_CLAIMS, claim(uid, "c", [("gpu", CATALOG.bridge_driver, NODE, sorted(index)[0])]))
    hand_over(kubelet, api)
    await publish(legacy, clock)
    client = Kubelet(paths.dra_socket)
    try:
        assert (await client.prepare((uid, "c"))).claims[uid].error == ""
        api.nodes[NODE]["metadata"]["labels"][MODE_LABEL] = "legacy"
        await legacy.tick()
        (condition,) = [c for c in api.nodes[NODE]["status"]["conditions"] if c["type"] == CONDITION_TYPE]
        assert condition["status"] == "True" and condition["message"].startswith("1 prepared claim")
        assert legacy.health.alive(60) and "dra_bridge_prepared_claims 1.0" in legacy.metrics.text().decode()
        assert (await client.unprepare((uid, "c"))).claims[uid].error == ""  # after the node left DRA mode
        await legacy.tick()
        (condition,) = [c for c in api.nodes[NODE]["status"]["conditions"] if c["type"] == CONDITION_TYPE]
        assert condition["message"].startswith("0 prepared claim")
        await legacy.plugin.stop()
        await legacy.tick()
        assert not legacy.health.alive(60) and "registration socket" in legacy.health.plugin
    finally:
        await client.close()


async def test_labelling_before_the_plugin_is_off_refuses_without_an_alarm(legacy: Agent, api: FakeApi,
                                                                          clock: Clock) -> None:
    # the operator labels first: the device plugin still serves and the kubelet still offers its
    # devices, but nothing was published or prepared, so this is a refusal, not an alarm
    api.nodes[NODE]["metadata"]["labels"][MODE_LABEL] = "dra"
    for _ in range(2):
        report = await legacy.tick()
        clock.now += 61
    assert "kubelet-offers" in [r.interlock for r in report.refusals]
    assert report.alarm is None
    assert not any(e["reason"] == "DeviceOfferedAgain" for e in api.events)
    assert "dra_bridge_alarms_total 0.0" in legacy.metrics.text().decode()


async def test_a_prepared_claims_device_held_by_a_legacy_container_raises_the_alarm(
        legacy: Agent, kubelet: KubeletServer, api: FakeApi, clock: Clock) -> None:
    from dra_bridge.kube.resources import RESOURCE_CLAIMS
    from tests.bridge.draplugin_fixtures import Kubelet, claim

    paths, index = await start_dra_plugin(legacy, kubelet, api)
    uid = "0a1b2c3d-0000-4000-8000-000000000002"
    (name,) = [n for n, (_, i) in index.items() if i == "GPU-aaaa"]
    api.put(RESOURCE_CLAIMS, claim(uid, "c", [("gpu", CATALOG.bridge_driver, NODE, name)]))
    hand_over(kubelet, api)
    await publish(legacy, clock)
    client = Kubelet(paths.dra_socket)
    try:
        assert (await client.prepare((uid, "c"))).claims[uid].error == ""
        report = await legacy.tick()
        assert report.publishing and report.alarm is None
        kubelet.fake.held = {"team-a/legacy-pod": {"main": [("nvidia.com/gpu", "GPU-aaaa")]}}
        report = await legacy.tick()
        await legacy.publisher.sync()
        assert report.alarm and "GPU-aaaa" in report.alarm and "legacy-pod" in report.alarm
        assert not report.publishing and api.slices == {}  # the device (with the pool) is no longer published
        assert [e["reason"] for e in api.events].count("DeviceOfferedAgain") == 1
        assert "dra_bridge_alarms_total 1.0" in legacy.metrics.text().decode()
        # rolled back while the claim is still prepared, and the device plugin returns: the alarm again
        kubelet.fake.held = {}
        api.nodes[NODE]["metadata"]["labels"][MODE_LABEL] = "legacy"
        kubelet.fake.devices = [("nvidia.com/gpu", "GPU-aaaa", [0])]
        report = await legacy.tick()
        assert report.alarm and "offers device(s) again" in report.alarm and "GPU-aaaa" in report.alarm
        assert "dra_bridge_alarms_total 2.0" in legacy.metrics.text().decode()
        assert (await client.unprepare((uid, "c"))).claims[uid].error == ""
        report = await legacy.tick()
        assert report.alarm is None
    finally:
        await client.close()
        await legacy.plugin.stop()
