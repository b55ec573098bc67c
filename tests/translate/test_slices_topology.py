"""The bridge publishes resource.kubernetes.io/numaNode and pcieRoot wherever the facts are known
(issue 14): the kubelet's topology, NVML's bus ID resolved through sysfs, a MIG device's parent."""

from __future__ import annotations

from typing import Any

import pytest

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.inventory.allocatable import InventoryDevice
from dra_bridge.translate.inventory.device_facts import NvmlFacts, numa_node, pcie_root
from dra_bridge.translate.inventory.slices import build_slices

NUMA, PCIE = "resource.kubernetes.io/numaNode", "resource.kubernetes.io/pcieRoot"


def _device(
    catalog: Catalog, resource: str, device_id: str, numa: list[int], nvml: dict[str, NvmlFacts] | None = None
) -> dict[str, Any]:
    inventory = [InventoryDevice(resourceName=resource, deviceID=device_id, numaNodes=numa)]
    [device] = build_slices("node-a", inventory, catalog, {}, nvml).slices[0]["spec"]["devices"]
    return dict(device["attributes"])


@pytest.mark.parametrize(
    "resource",
    ["amd.com/gpu", "gpu.intel.com/i915", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared"],
)
def test_every_device_on_one_numa_node_carries_the_standard_attribute(catalog: Catalog, resource: str) -> None:
    device_id = "GPU-a::1" if resource.endswith(".shared") else "dev-1"
    assert _device(catalog, resource, device_id, [1])[NUMA] == {"int": 1}
    assert NUMA not in _device(catalog, resource, device_id, [0, 1])
    assert NUMA not in _device(catalog, resource, device_id, [])


def test_a_mig_device_takes_its_parent_gpus_numa_node_and_pcie_root(catalog: Catalog) -> None:
    nvml: dict[str, NvmlFacts] = {
        "GPU-p": {"uuid": "GPU-p", "pciBusID": "0000:65:00.0", "pcieRoot": "pci0000:64", "numaNode": 1},
        "MIG-1": {"uuid": "MIG-1", "parentUUID": "GPU-p", "migProfile": "1g.10gb"},
    }
    attrs = _device(catalog, "nvidia.com/mig-1g.10gb", "MIG-1", [], nvml)
    assert attrs[PCIE] == {"string": "pci0000:64"} and attrs[NUMA] == {"int": 1}
    assert "resource.kubernetes.io/pciBusID" not in attrs


def test_nvml_numa_node_wins_over_the_kubelets(catalog: Catalog) -> None:
    nvml: dict[str, NvmlFacts] = {"GPU-a": {"uuid": "GPU-a", "numaNode": 1, "pcieRoot": "pci0000:80"}}
    attrs = _device(catalog, "nvidia.com/gpu", "GPU-a", [0], nvml)
    assert attrs[NUMA] == {"int": 1} and attrs[PCIE] == {"string": "pci0000:80"}


@pytest.mark.parametrize(
    "path,root",
    [
        ("/sys/devices/pci0000:64/0000:64:01.0/0000:65:00.0", "pci0000:64"),
        ("/sys/devices/pci0001:c0/0001:c0:03.1/0001:c1:00.0/0001:c2:00.0", "pci0001:c0"),
        ("/sys/devices/platform/soc/0000:01:00.0", None),
        ("", None),
    ],
    ids=["root-port", "behind-switch", "no-root-complex", "empty"],
)
def test_the_pcie_root_is_the_root_complex_directory_of_the_resolved_sysfs_path(path: str, root: str | None) -> None:
    assert pcie_root(path) == root


@pytest.mark.parametrize(
    "text,node",
    [("0\n", 0), ("3", 3), ("-1\n", None), ("", None), ("x", None)],
    ids=["zero", "three", "unknown", "empty", "garbage"],
)
def test_numa_node_file_values(text: str, node: int | None) -> None:
    assert numa_node(text) == node
