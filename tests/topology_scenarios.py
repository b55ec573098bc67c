"""Topology scenarios as data (issue 14), shared by the real-scheduler e2e test
(``tests/e2e/test_topology_e2e.py``) and the allocation engine's table test
(``tests/translate/test_topology_alloc.py``): :func:`engine_placement` runs a case through
``translate/alloc`` as the e2e test runs it through the real scheduler.

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

from dra_bridge.translate.alloc import parse_gates, simulate
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.inventory.allocatable import InventoryDevice
from dra_bridge.translate.inventory.device_facts import NvmlFacts
from dra_bridge.translate.inventory.pool import render_slice
from dra_bridge.translate.inventory.slices import build_slices
from dra_bridge.translate.plan.alignment import Alignment
from dra_bridge.translate.plan.pod_plan import Options, Plan, plan_pod

Outcome = Literal["aligned", "unaligned", "unschedulable"]
V1 = "resource.k8s.io/v1"
GPU_CLASS = "nvidia-gpu.dra-bridge.io"


@dataclass(frozen=True)
class TopologyNode:
    """A node's device-plugin inventory (with the kubelet's NUMA topology), its NVML facts (PCIe
    root, NUMA node) and the device IDs already allocated when a case starts."""

    inventory: tuple[InventoryDevice, ...]
    nvml: dict[str, NvmlFacts]
    allocated: tuple[str, ...]

    def slices(self, catalog: Catalog, node: str) -> list[dict[str, Any]]:
        """The bridge's slices for this node (internal form, as ``build_slices`` gives them)."""
        return build_slices(node, self.inventory, catalog, {}, self.nvml).slices

    def held_claim(self) -> dict[str, Any]:
        """The claim ``held`` that takes the already allocated devices (all devices whose
        ``deviceID`` is listed), as another pod holds them."""
        ids = ", ".join(f'"{d}"' for d in self.allocated)
        return {
            "apiVersion": V1,
            "kind": "ResourceClaim",
            "metadata": {"name": "held"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "held",
                            "exactly": {
                                "deviceClassName": GPU_CLASS,
                                "allocationMode": "All",
                                "selectors": [
                                    {"cel": {"expression": f'device.attributes["dra-bridge.io"].deviceID in [{ids}]'}}
                                ],
                            },
                        }
                    ]
                }
            },
        }

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
        nvml[uuid] = NvmlFacts(
            uuid=uuid,
            productName="NVIDIA H100 80GB HBM3",
            pciBusID=f"0000:{0x10 + i:02x}:00.0",
            pcieRoot=root,
            numaNode=numa,
        )
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

    def plan(self, catalog: Catalog, namespace: str, name: str) -> Plan:
        """The converted pod (one container ``main``) and its templates."""
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"limits": {"nvidia.com/gpu": self.gpus}},
                    }
                ]
            },
        }
        return plan_pod(
            pod, catalog, Options(alignment=self.alignment.policy, alignment_scope=self.alignment.scope), namespace
        )


NUMA, PCIE, NONE = Alignment("numa"), Alignment("pcie"), Alignment()
CASES = (
    TopologyCase("numa-2-gpus", 2, NUMA, "aligned"),
    TopologyCase("numa-4-gpus", 4, NUMA, "aligned"),  # only NUMA node 1 has 4 free
    TopologyCase("pcie-2-gpus", 2, PCIE, "aligned"),
    TopologyCase("numa-5-gpus", 5, NUMA, "unschedulable"),  # no NUMA node has 5 free
    TopologyCase("none-2-gpus", 2, NONE, "unaligned"),
    TopologyCase("none-4-gpus", 4, NONE, "unaligned"),
    TopologyCase("none-5-gpus", 5, NONE, "unaligned"),
)


@dataclass(frozen=True)
class Placement:
    """Where a case's pod went: ``outcome``, the allocated device names in result order (empty
    when unschedulable) and the reason when it is not allocated."""

    outcome: Outcome
    devices: tuple[str, ...]
    reason: str = ""


def outcome_of(case: TopologyCase, catalog: Catalog, node: str, devices: list[str]) -> Outcome:
    """``aligned`` when every device has the same value of the case's attribute (NUMA node
    for ``none``), else ``unaligned``."""
    attribute = case.alignment.attribute or "resource.kubernetes.io/numaNode"
    published = {
        d["name"]: d["attributes"][attribute] for s in case.node.slices(catalog, node) for d in s["spec"]["devices"]
    }
    return "aligned" if len({str(published[d]) for d in devices}) == 1 else "unaligned"


def engine_placement(case: TopologyCase, catalog: Catalog, node: str = "numa") -> Placement:
    """The case through ``translate/alloc`` (``simulate``): the Node, our DeviceClasses, the
    bridge's slices, the held claim (allocated first, as the e2e test's holder pod is bound
    first), then the converted pod's claims."""
    plan = case.plan(catalog, "default", "pod")
    documents: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}}},
        *({"apiVersion": V1, **c} for c in catalog.device_classes()),
        *(render_slice(s, V1) for s in case.node.slices(catalog, node)),
        {**case.node.held_claim(), "metadata": {"name": "held", "namespace": "default"}},
        *plan.templates,
        plan.pod,
    ]
    result = simulate(documents, parse_gates(None), node)
    claims = [c for c in result.claims if c.name != "held"]
    if not all(c.outcome == "allocated" for c in claims):
        return Placement("unschedulable", (), "; ".join(c.reason for c in claims if c.reason))
    devices = [r["device"] for c in claims for r in (c.allocation or {})["devices"]["results"]]
    return Placement(outcome_of(case, catalog, node, devices), tuple(devices))
