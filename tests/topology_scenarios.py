"""Topology scenarios as data (issue 14), shared by the real-scheduler e2e test
(``tests/e2e/test_topology_e2e.py``) and, later, the placement simulator's tests (issue 12).

One node, ``TWO_NUMA_X4``: 8 NVIDIA GPUs as the bridge publishes them, NUMA node 0 and 1 with 4
each, two GPUs per PCIe root complex. The kubelet lists them by device ID, so the slice holds
them in ID order, which alternates NUMA nodes (``GPU-0`` on 0, ``GPU-1`` on 1, ...): a first-fit
allocation without a constraint takes GPUs of both nodes. ``GPU-0`` is already allocated (to
another pod) before each case, leaving 3 free GPUs on NUMA node 0 and 4 on node 1.

Each :class:`TopologyCase` is one pod (one container asking for ``gpus`` ``nvidia.com/gpu``),
converted with ``alignment``, placed on that node alone, with the outcome the real scheduler
gives: ``aligned`` (all its devices share the alignment attribute), ``unaligned`` (they do not)
or ``unschedulable`` (the pod stays Pending, the scheduler saying why).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.inventory.allocatable import InventoryDevice
from dra_bridge.translate.inventory.device_facts import NvmlFacts
from dra_bridge.translate.inventory.slices import build_slices
from dra_bridge.translate.plan.alignment import Alignment
from dra_bridge.translate.plan.pod_plan import Options, Plan, plan_pod

Outcome = Literal["aligned", "unaligned", "unschedulable"]
CATALOG = load_catalog()


@dataclass(frozen=True)
class TopologyNode:
    """A node's device-plugin inventory (with the kubelet's NUMA topology), its NVML facts (PCIe
    root, NUMA node) and the device IDs already allocated when a case starts."""

    inventory: tuple[InventoryDevice, ...]
    nvml: dict[str, NvmlFacts]
    allocated: tuple[str, ...]

    def slices(self, node: str) -> list[dict[str, Any]]:
        """The bridge's slices for this node (internal form, as ``build_slices`` gives them)."""
        return build_slices(node, self.inventory, CATALOG, {}, self.nvml).slices

    def numa_of(self, device_id: str) -> int:
        """The NUMA node of a device ID."""
        return next(d["numaNodes"][0] for d in self.inventory if d["deviceID"] == device_id)


def _two_numa_x4() -> TopologyNode:
    inventory, nvml = [], {}
    for i in range(8):
        numa = i % 2
        uuid = f"GPU-{i}"
        inventory.append(InventoryDevice(resourceName="nvidia.com/gpu", deviceID=uuid, numaNodes=[numa]))
        root = f"pci0000:{(numa * 2 + (i // 4)) * 0x40:02x}"  # two GPUs per root complex
        nvml[uuid] = NvmlFacts(uuid=uuid, productName="NVIDIA H100 80GB HBM3", pciBusID=f"0000:{0x10 + i:02x}:00.0",
                               pcieRoot=root, numaNode=numa)
    return TopologyNode(tuple(inventory), nvml, allocated=("GPU-0",))


TWO_NUMA_X4 = _two_numa_x4()


@dataclass(frozen=True)
class TopologyCase:
    """One pod of ``gpus`` GPUs converted with ``alignment`` and what placing it on ``node`` gives."""

    id: str
    gpus: int
    alignment: Alignment
    outcome: Outcome
    node: TopologyNode = TWO_NUMA_X4

    def plan(self, namespace: str, name: str) -> Plan:
        """The converted pod (one container ``main``) and its templates."""
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
               "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                        "resources": {"limits": {"nvidia.com/gpu": self.gpus}}}]}}
        return plan_pod(pod, CATALOG, Options(alignment=self.alignment), namespace)


NUMA, PCIE, NONE = Alignment("numa"), Alignment("pcie"), Alignment()
CASES = (
    TopologyCase("numa-2-gpus", 2, NUMA, "aligned"),
    TopologyCase("numa-4-gpus", 4, NUMA, "aligned"),           # only NUMA node 1 has 4 free
    TopologyCase("pcie-2-gpus", 2, PCIE, "aligned"),
    TopologyCase("numa-5-gpus", 5, NUMA, "unschedulable"),     # no NUMA node has 5 free
    TopologyCase("none-2-gpus", 2, NONE, "unaligned"),
    TopologyCase("none-4-gpus", 4, NONE, "unaligned"),
    TopologyCase("none-5-gpus", 5, NONE, "unaligned"),
)
