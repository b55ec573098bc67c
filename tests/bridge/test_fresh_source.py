"""A node labelled for DRA on which no device plugin ever ran (bridge/fresh_source.py): it publishes
from the toolkit's CDI spec or from sysfs, with an Event naming the source; an index-only spec
without NVML, a partitioned AMD GPU and an Intel virtual function are refused with an Event that
says why; the other interlocks still apply; a recorded inventory always wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from dra_bridge.bridge.agent import Agent
from dra_bridge.bridge.drm_sysfs import SYSFS_ENV
from dra_bridge.bridge.fresh_source import EVENT_REASON, FreshSource, Parsed, read_cards, toolkit_spec
from dra_bridge.translate.inventory.device_facts import NvmlFacts
from dra_bridge.translate.names import NODE_MODE_LABEL
from tests.bridge.agent_fixtures import LABELS, NODE, ZERO, Clock, MakeAgent, hand_over, publish
from tests.bridge.conftest import FakeApi, KubeletServer
from tests.deviceplugins.toolkit_cdi import write_toolkit_spec

UUIDS = ["GPU-1111", "GPU-2222"]
DRA = {**LABELS, NODE_MODE_LABEL: "dra"}


def fresh_agent(make_agent: MakeAgent, tmp_path: Path, nvml: dict[str, NvmlFacts] | None = None) -> Agent:
    """An agent whose state directory is empty, its CDI directories and sysfs under ``tmp_path``."""
    agent = make_agent(tmp_path / "state", nvml)
    dirs = [str(tmp_path / "etc-cdi"), str(tmp_path / "run-cdi")]
    agent.fresh = FreshSource(NODE, dirs, agent.reporter.event, sysfs=tmp_path / "sys")
    return agent


def card(sysfs: Path, name: str, pci: str, vendor: str, driver: str, **files: str) -> None:
    """``class/drm/<name>`` of a PCI device with these sysfs files (``physfn`` a link)."""
    device = sysfs / "devices" / "pci0000:00" / pci
    device.mkdir(parents=True)
    (device / "vendor").write_text(vendor + "\n")
    (sysfs / "bus" / "pci" / "drivers" / driver).mkdir(parents=True, exist_ok=True)
    (device / "driver").symlink_to(sysfs / "bus" / "pci" / "drivers" / driver)
    for key, value in files.items():
        if key == "physfn":
            (device / key).symlink_to(sysfs / "devices" / "pci0000:00" / value)
        else:
            (device / key).write_text(value + "\n")
    for node, minor in ((name, 1), (f"renderD{128 + int(name[4:])}", 128 + int(name[4:]))):
        (sysfs / "class" / "drm" / node).mkdir(parents=True)
        (sysfs / "class" / "drm" / node / "dev").write_text(f"226:{minor}\n")
        (sysfs / "class" / "drm" / node / "device").symlink_to(device)


def events(api: FakeApi, reason: str) -> list[str]:
    return [e["message"] for e in api.events if e["reason"] == reason]


async def test_a_never_legacy_node_publishes_from_the_toolkit_spec(
    make_agent: MakeAgent, api: FakeApi, clock: Clock, tmp_path: Path
) -> None:
    spec = write_toolkit_spec(tmp_path / "etc-cdi", UUIDS, tmp_path / "id")
    api.add_node(NODE, dict(DRA), dict(ZERO))
    agent = fresh_agent(make_agent, tmp_path)
    await publish(agent, clock)
    assert agent.report.publishing and not agent.report.refusals, agent.report.refusals
    devices = api.devices()
    assert sorted(d["attributes"]["gpu.nvidia.com/uuid"]["string"] for d in devices) == UUIDS
    assert {d["attributes"]["gpu.nvidia.com/productName"]["string"] for d in devices} == {"NVIDIA-A100-SXM4-40GB"}
    [message] = events(api, EVENT_REASON)
    assert (
        message
        == f"inventory from the NVIDIA container toolkit CDI spec {spec}: 2 device(s), none recorded while legacy"
    )
    assert not (tmp_path / "state" / "inventory.json").exists()  # never recorded: read again each tick


async def test_an_index_only_spec_without_nvml_is_refused_with_an_event(
    make_agent: MakeAgent, api: FakeApi, clock: Clock, tmp_path: Path
) -> None:
    write_toolkit_spec(tmp_path / "etc-cdi", UUIDS, tmp_path / "id", strategies=("index",))
    api.add_node(NODE, dict(DRA), dict(ZERO))
    agent = fresh_agent(make_agent, tmp_path)
    await publish(agent, clock)
    assert not agent.report.publishing and api.slices == {}
    assert [r.interlock for r in agent.report.refusals] == ["inventory"]
    [refused] = events(api, "PublicationRefused")
    assert "names GPUs by index only" in refused and "NVML does not load" in refused
    assert events(api, EVENT_REASON) == []


async def test_an_index_only_spec_publishes_with_nvmls_uuids(
    make_agent: MakeAgent, api: FakeApi, clock: Clock, tmp_path: Path
) -> None:
    write_toolkit_spec(tmp_path / "etc-cdi", UUIDS, tmp_path / "id", strategies=("index",))
    nvml = {
        "GPU-1111": NvmlFacts(uuid="GPU-1111", productName="NVIDIA H100", pciBusID="0000:03:00.0"),
        "GPU-2222": NvmlFacts(uuid="GPU-2222", productName="NVIDIA H100", pciBusID="0000:41:00.0"),
    }
    api.add_node(NODE, dict(DRA), dict(ZERO))
    agent = fresh_agent(make_agent, tmp_path, nvml)
    await publish(agent, clock)
    assert agent.report.publishing, agent.report.refusals
    by_id = {d["attributes"]["dra-bridge.io/deviceID"]["string"]: d["attributes"] for d in api.devices()}
    assert {k: v["gpu.nvidia.com/uuid"]["string"] for k, v in by_id.items()} == {"0": "GPU-1111", "1": "GPU-2222"}
    assert {v["dra-bridge.io/source"]["string"] for v in by_id.values()} == {"nvml"}
    assert events(api, EVENT_REASON)[0].endswith("(UUIDs from NVML): 2 device(s), none recorded while legacy")


async def test_amd_and_intel_gpus_publish_from_sysfs(
    make_agent: MakeAgent, api: FakeApi, clock: Clock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sysfs = tmp_path / "sys"
    monkeypatch.setenv(SYSFS_ENV, str(sysfs))  # the DRM nodes the recipe's edits name, at publish and Prepare
    card(sysfs, "card0", "0000:c1:00.0", "0x1002", "amdgpu", current_compute_partition="SPX", numa_node="1")
    card(sysfs, "card1", "0000:03:00.0", "0x8086", "xe", sriov_numvfs="0")
    api.add_node(NODE, {NODE_MODE_LABEL: "dra"}, {})
    agent = fresh_agent(make_agent, tmp_path)
    await publish(agent, clock)
    assert agent.report.publishing, agent.report.refusals
    got = {
        d["attributes"]["dra-bridge.io/resourceName"]["string"]: d["attributes"]["dra-bridge.io/deviceID"]["string"]
        for d in api.devices()
    }
    assert got == {"amd.com/gpu": "0000:c1:00.0", "gpu.intel.com/xe": "0000:03:00.0"}
    assert agent.recorded.identities == {
        "amd.com/gpu": {"0000:c1:00.0": "0000:c1:00.0"},
        "gpu.intel.com/xe": {"0000:03:00.0": "0000:03:00.0"},
    }
    assert events(api, EVENT_REASON) == [
        f"inventory from sysfs {sysfs}/class/drm: 2 device(s), none recorded while legacy"
    ]


async def test_a_partitioned_amd_gpu_and_an_intel_vf_are_refused_with_an_event(
    make_agent: MakeAgent, api: FakeApi, clock: Clock, tmp_path: Path
) -> None:
    sysfs = tmp_path / "sys"
    card(sysfs, "card0", "0000:c1:00.0", "0x1002", "amdgpu", current_compute_partition="CPX")
    card(sysfs, "card1", "0000:03:00.0", "0x8086", "xe", sriov_numvfs="1")
    card(sysfs, "card2", "0000:03:00.1", "0x8086", "xe", physfn="0000:03:00.0")
    assert [c.virtual_function for c in read_cards(sysfs)] == [False, False, True]
    api.add_node(NODE, {NODE_MODE_LABEL: "dra"}, {})
    agent = fresh_agent(make_agent, tmp_path)
    await publish(agent, clock)
    assert not agent.report.publishing and api.slices == {}
    [refused] = events(api, "PublicationRefused")
    assert "AMD GPU card0 (0000:c1:00.0) is partitioned (compute CPX" in refused
    assert "card1 (0000:03:00.0) has 1 SR-IOV virtual function(s) enabled" in refused
    assert "card2 (0000:03:00.1) is an SR-IOV virtual function" in refused


async def test_no_source_at_all_says_what_was_looked_for(
    make_agent: MakeAgent, api: FakeApi, clock: Clock, tmp_path: Path
) -> None:
    api.add_node(NODE, {NODE_MODE_LABEL: "dra"}, {})
    agent = fresh_agent(make_agent, tmp_path)
    await agent.tick()
    [refusal] = agent.report.refusals
    assert refusal.interlock == "inventory" and "no NVIDIA container toolkit CDI spec" in refusal.reason
    assert "no AMD or Intel GPU" in refusal.reason


async def test_the_other_interlocks_still_apply_to_a_fresh_inventory(
    make_agent: MakeAgent, api: FakeApi, kubelet: KubeletServer, clock: Clock, tmp_path: Path
) -> None:
    write_toolkit_spec(tmp_path / "etc-cdi", UUIDS, tmp_path / "id")
    kubelet.plugin_socket("nvidia-gpu.sock")
    kubelet.fake.devices = [("nvidia.com/gpu", "GPU-1111", [0])]
    api.add_node(NODE, dict(DRA), {"nvidia.com/gpu": "1"})
    agent = fresh_agent(make_agent, tmp_path)
    await publish(agent, clock)
    assert {r.interlock for r in agent.report.refusals} == {"plugin-socket", "node-capacity", "kubelet-offers"}
    assert api.slices == {}


async def test_a_recorded_inventory_always_wins_over_a_fresh_source(
    legacy: Agent, api: FakeApi, kubelet: KubeletServer, clock: Clock, tmp_path: Path
) -> None:
    write_toolkit_spec(tmp_path / "etc-cdi", ["GPU-9999"], tmp_path / "id")
    legacy.fresh = FreshSource(NODE, [str(tmp_path / "etc-cdi")], legacy.reporter.event, sysfs=tmp_path / "sys")
    hand_over(kubelet, api)
    await publish(legacy, clock)
    assert legacy.report.publishing
    ids = {d["attributes"]["dra-bridge.io/deviceID"]["string"] for d in api.devices()}
    assert "GPU-9999" not in ids and {"GPU-aaaa", "GPU-bbbb"} <= ids
    assert events(api, EVENT_REASON) == []


async def test_a_device_plugin_that_starts_later_records_and_replaces_the_fresh_inventory(
    make_agent: MakeAgent, api: FakeApi, kubelet: KubeletServer, clock: Clock, tmp_path: Path
) -> None:
    write_toolkit_spec(tmp_path / "etc-cdi", UUIDS, tmp_path / "id")
    api.add_node(NODE, dict(DRA), dict(ZERO))
    agent = fresh_agent(make_agent, tmp_path)
    await agent.tick()
    assert agent.from_fresh and len(agent.recorded.devices) == 2
    api.nodes[NODE]["metadata"]["labels"].pop(NODE_MODE_LABEL)  # back to legacy: the plugin runs
    kubelet.fake.devices = [("nvidia.com/gpu", "GPU-3333", [0])]
    await agent.tick()
    assert not agent.from_fresh and agent.recorded.device_ids() == {"GPU-3333"}
    assert (tmp_path / "state" / "inventory.json").exists()


def test_the_toolkit_spec_is_the_runtimes_highest_priority_valid_one(tmp_path: Path) -> None:
    etc, run = tmp_path / "etc-cdi", tmp_path / "run-cdi"
    write_toolkit_spec(etc, ["GPU-1111"], tmp_path / "id")
    later = write_toolkit_spec(run, ["GPU-2222"], tmp_path / "id")
    (run / "zz-broken.yaml").write_text("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n")  # no device: invalid
    ours = run / "dra-bridge.io-claim_0b0e5a38-0000-4000-8000-000000000001.json"
    ours.write_text(
        '{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": [{"name": "GPU-9", "containerEdits": {"env": ["A=1"]}}]}'
    )
    cache: Parsed = {}
    found = toolkit_spec([str(etc), str(run)], cache)
    assert found is not None and found[0] == str(later)
    assert str(ours) not in cache  # our own per-claim specs are never read
    assert toolkit_spec([str(etc)], cache) is not None and toolkit_spec([str(tmp_path / "none")]) is None


async def test_a_spec_or_a_card_the_api_cannot_hold_is_refused_and_the_agent_keeps_ticking(
    make_agent: MakeAgent, api: FakeApi, clock: Clock, tmp_path: Path
) -> None:
    etc = tmp_path / "etc-cdi"
    etc.mkdir()
    spec = etc / "nvidia.yaml"
    devices = f"- name: GPU-{'a' * 61}\n  containerEdits:\n    env: ['A=1']\n"  # 65 bytes: too long for an ID
    spec.write_text(f"cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n{devices}")
    card(tmp_path / "sys", "card1", "0000:03:00.0", "0x8086", "xe", sriov_numvfs="1" * 5000, numa_node="9" * 5000)
    api.add_node(NODE, dict(DRA), dict(ZERO))
    agent = fresh_agent(make_agent, tmp_path)
    await publish(agent, clock)
    await agent.tick()
    assert not agent.report.publishing and api.slices == {}
    [refused] = events(api, "PublicationRefused")
    assert f"{spec} names GPU GPU-aaaa" in refused and "longer than 64 bytes" in refused
    assert "card1 (0000:03:00.0): sriov_numvfs is not a count" in refused
