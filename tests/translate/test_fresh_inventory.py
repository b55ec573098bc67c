"""The fresh-node sources' rules (translate/inventory/fresh.py): the toolkit's spec by its names,
UUIDs from NVML for an index-only spec, AMD and Intel cards from sysfs, whole GPUs only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.inventory.device_facts import NvmlFacts
from dra_bridge.translate.inventory.fresh import DrmCard, ToolkitGpu, from_cards, from_toolkit, toolkit_gpus
from dra_bridge.translate.inventory.slices import build_devices
from tests.deviceplugins.toolkit_cdi import toolkit_spec

UUIDS = ["GPU-1111", "GPU-2222"]
SPEC = "/etc/cdi/nvidia.yaml"
# NVML's facts; bus order is index order (GPU-2222 sits on the lower bus)
NVML = {
    "GPU-2222": NvmlFacts(uuid="GPU-2222", productName="NVIDIA H100", pciBusID="0000:03:00.0", numaNode=0),
    "GPU-1111": NvmlFacts(uuid="GPU-1111", productName="NVIDIA H100", pciBusID="0000:41:00.0", numaNode=1),
}


def test_index_and_uuid_names_of_one_gpu_are_paired_by_their_edits(tmp_path: Path) -> None:
    gpus, mig = toolkit_gpus(toolkit_spec(UUIDS, tmp_path))
    assert gpus == [ToolkitGpu("0", "GPU-1111"), ToolkitGpu("1", "GPU-2222")] and mig == []
    only_uuid, _ = toolkit_gpus(toolkit_spec(UUIDS, tmp_path, strategies=("uuid",)))
    assert only_uuid == [ToolkitGpu("", "GPU-1111"), ToolkitGpu("", "GPU-2222")]
    assert toolkit_gpus({**toolkit_spec(UUIDS, tmp_path), "kind": "example.com/gpu"}) == ([], [])


def test_a_uuid_spec_gives_uuid_device_ids_and_the_recorded_paths_attributes(tmp_path: Path) -> None:
    fresh = from_toolkit(SPEC, toolkit_spec(UUIDS, tmp_path), None)
    assert not fresh.refusal and fresh.source == f"the NVIDIA container toolkit CDI spec {SPEC}"
    assert [(d["resourceName"], d["deviceID"]) for d in fresh.devices] == [
        ("nvidia.com/gpu", "GPU-1111"),
        ("nvidia.com/gpu", "GPU-2222"),
    ]
    labels = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81559"}
    built, _ = build_devices(list(fresh.devices), load_catalog(), labels, fresh.nvml)
    attrs = built[0]["attributes"]
    assert attrs["gpu.nvidia.com/uuid"] == {"string": "GPU-1111"}
    assert attrs["gpu.nvidia.com/productName"] == {"string": "NVIDIA-H100-80GB-HBM3"}  # GFD labels without NVML
    assert built[0]["capacity"]["gpu.nvidia.com/memory"] == {"value": "81559Mi"}
    with_nvml = from_toolkit(SPEC, toolkit_spec(UUIDS, tmp_path), NVML)
    assert with_nvml.nvml["GPU-1111"]["productName"] == "NVIDIA H100" and with_nvml.devices[0]["numaNodes"] == [1]


def test_an_index_only_spec_without_nvml_is_refused_saying_why(tmp_path: Path) -> None:
    fresh = from_toolkit(SPEC, toolkit_spec(UUIDS, tmp_path, strategies=("index",)), None)
    assert fresh.devices == ()
    assert "names GPUs by index only" in fresh.refusal and "NVML does not load" in fresh.refusal
    assert "toolkit 1.16" in fresh.refusal and SPEC in fresh.refusal


def test_an_index_only_spec_takes_the_uuids_from_nvml_in_bus_order(tmp_path: Path) -> None:
    fresh = from_toolkit(SPEC, toolkit_spec(UUIDS, tmp_path, strategies=("index",)), NVML)
    assert not fresh.refusal and fresh.source.endswith("(UUIDs from NVML)")
    assert [d["deviceID"] for d in fresh.devices] == ["0", "1"]  # the toolkit's own names: they resolve
    assert fresh.nvml["0"]["uuid"] == "GPU-2222" and fresh.nvml["1"]["uuid"] == "GPU-1111"
    built, _ = build_devices(list(fresh.devices), load_catalog(), {}, fresh.nvml)
    assert [d["attributes"]["gpu.nvidia.com/uuid"] for d in built] == [{"string": "GPU-2222"}, {"string": "GPU-1111"}]
    fewer = from_toolkit(SPEC, toolkit_spec(UUIDS, tmp_path, strategies=("index",)), {"GPU-2222": NVML["GPU-2222"]})
    assert fewer.devices == () and "NVML sees 1" in fewer.refusal


def test_mig_devices_in_the_spec_refuse_the_node(tmp_path: Path) -> None:
    spec = toolkit_spec(UUIDS, tmp_path)
    spec["devices"] += [{"name": "0:0", "containerEdits": {"env": ["A=1"]}}, {"name": "MIG-3333", "containerEdits": {}}]
    fresh = from_toolkit(SPEC, spec, None)
    assert fresh.devices == () and "MIG devices (0:0, MIG-3333)" in fresh.refusal and "whole GPUs only" in fresh.refusal


def test_amd_and_intel_cards_are_whole_gpus_by_pci_address() -> None:
    cards = [
        DrmCard("card1", "0000:c1:00.0", "0x1002", "amdgpu", 1, "SPX", "NPS1"),
        DrmCard("card0", "0000:03:00.0", "0x8086", "xe"),
        DrmCard("card2", "0000:05:00.0", "0x8086", "i915"),
        DrmCard("card3", "0000:07:00.0", "0x10de", "nvidia"),  # NVIDIA comes from the toolkit's spec
        DrmCard("card4", "0000:09:00.0", "0x8086", "vfio-pci"),  # no GPU driver: not a GPU we serve
    ]
    fresh = from_cards("/sys", cards)
    assert not fresh.refusal and fresh.source == "sysfs /sys/class/drm"
    assert [(d["resourceName"], d["deviceID"], d["numaNodes"]) for d in fresh.devices] == [
        ("gpu.intel.com/xe", "0000:03:00.0", []),
        ("gpu.intel.com/i915", "0000:05:00.0", []),
        ("amd.com/gpu", "0000:c1:00.0", [1]),
    ]
    assert from_cards("/sys", cards[3:]).source == ""  # no AMD or Intel GPU: no source at all


def test_a_partitioned_amd_gpu_refuses_the_node() -> None:
    for compute, memory in (("CPX", "NPS1"), ("SPX", "NPS4")):
        fresh = from_cards("/sys", [DrmCard("card1", "0000:c1:00.0", "0x1002", "amdgpu", None, compute, memory)])
        assert fresh.devices == () and "AMD GPU card1 (0000:c1:00.0) is partitioned" in fresh.refusal
        assert f"compute {compute}, memory {memory}" in fresh.refusal


def test_intel_sriov_functions_refuse_the_node() -> None:
    vf = from_cards("/sys", [DrmCard("card1", "0000:03:00.1", "0x8086", "xe", virtual_function=True)])
    assert vf.devices == () and "card1 (0000:03:00.1) is an SR-IOV virtual function" in vf.refusal
    pf = from_cards("/sys", [DrmCard("card0", "0000:03:00.0", "0x8086", "xe", sriov_vfs=2)])
    assert pf.devices == () and "has 2 SR-IOV virtual function(s) enabled" in pf.refusal


def named(*names: str, edits: dict[str, list[str]] | None = None) -> dict[str, object]:
    """A toolkit spec of these device names, each with edits of its own (``edits``: by name)."""
    devices = [{"name": n, "containerEdits": {"env": (edits or {}).get(n, [f"GPU={i}"])}} for i, n in enumerate(names)]
    return {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": devices}


def test_a_device_name_too_long_for_a_device_id_refuses_the_node_naming_it() -> None:
    digits, uuid = "1" * 5000, "GPU-" + "a" * 61  # 5000 digits: more than int() reads; 65 bytes
    for names, shown in (((digits, "0"), "1111"), (("0", uuid), "GPU-aaaa"), ((uuid,), "GPU-aaaa")):
        for nvml in (None, NVML):
            fresh = from_toolkit(SPEC, named(*names), nvml)
            assert fresh.devices == () and SPEC in fresh.refusal and "longer than 64 bytes" in fresh.refusal
            assert f"GPU {shown}" in fresh.refusal and len(fresh.refusal) < 400, fresh.refusal


def test_edits_that_pair_two_gpus_with_one_uuid_refuse_the_spec() -> None:
    same = ["A=1"]
    two_indexes = named("0", "1", "GPU-aaaa", edits={"0": same, "1": same, "GPU-aaaa": same})
    two_uuids = named("0", "GPU-aaaa", "GPU-bbbb", edits={"0": same, "GPU-aaaa": same, "GPU-bbbb": same})
    for spec, names in ((two_indexes, "0, 1, GPU-aaaa"), (two_uuids, "0, GPU-aaaa, GPU-bbbb")):
        for nvml in (None, NVML):
            fresh = from_toolkit(SPEC, spec, nvml)
            assert fresh.devices == () and SPEC in fresh.refusal, fresh.refusal
            assert f"GPUs {names} have the same containerEdits" in fresh.refusal and "ambiguous" in fresh.refusal


def test_index_and_uuid_names_whose_edits_differ_only_in_order_pair_or_are_refused_saying_so() -> None:
    nodes = [{"path": "/dev/nvidia0"}, {"path": "/dev/nvidiactl"}]
    mounts = [{"hostPath": f"/h{i}", "containerPath": f"/c{i}"} for i in range(2)]
    spec: dict[str, Any] = {
        "cdiVersion": "0.5.0",
        "kind": "nvidia.com/gpu",
        "devices": [
            {"name": "0", "containerEdits": {"deviceNodes": nodes, "env": ["A=1", "B=2"], "mounts": mounts}},
            {
                "name": "GPU-aaaa",
                "containerEdits": {"deviceNodes": nodes[::-1], "env": ["B=2", "A=1"], "mounts": mounts},
            },
        ],
    }
    fresh = from_toolkit(SPEC, spec, None)  # device nodes and distinct variables: their order means nothing
    assert not fresh.refusal and [d["deviceID"] for d in fresh.devices] == ["GPU-aaaa"], fresh.refusal
    spec["devices"][1]["containerEdits"]["mounts"] = mounts[::-1]  # mounts stack in order: another GPU's edits
    refused = from_toolkit(SPEC, spec, None)
    assert refused.devices == () and "by index only" not in refused.refusal
    assert f"{SPEC}: index name 0 has no UUID name with the same containerEdits" in refused.refusal
    assert "UUID names with no index name: GPU-aaaa" in refused.refusal
