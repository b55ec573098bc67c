"""Sample devices, as the bridge and as the vendor DRA drivers publish them, and whether a plan's
claims could allocate on them (a CEL match plus a count check; the scheduler's simulator later).

The fleet is one node per shape the device plugins produce (NVIDIA/k8s-device-plugin README.md): whole A100s, T4s
time-sliced without and with renaming, a MIG mixed-strategy node with every catalog profile, a
MIG single-strategy node, AMD and Intel GPUs. Each node has enough devices of each type for the
counts the tests ask (``COPIES``; time-sliced nodes their replicas).

- bridge shape: :func:`build_slices` from the node's GFD labels (what ``dra-bridge`` publishes);
- vendor shape: the vendor driver's attributes only (NVIDIA/k8s-dra-driver-gpu ``deviceinfo.go``,
  ROCm/k8s-gpu-dra-driver, intel/intel-resource-drivers-for-kubernetes), one device per
  physical GPU or MIG device (the vendor drivers have no replicas), NVIDIA's from NVML facts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.cel import evaluate_selectors
from dra_bridge.translate.inventory import InventoryDevice, NvmlFacts, build_devices, split_replica
from dra_bridge.translate.inventory.device_facts import vendor_profile
from dra_bridge.translate.plan.claim_templates import internal_from_template

COPIES = 8
#: MIG devices per profile on the mixed node (the tests ask for at most 2 of a profile).
MIG_COPIES = 2
NV = "gpu.nvidia.com"

#: The vendor drivers' own DeviceClasses (the charts of the NVIDIA, AMD and Intel DRA drivers).
VENDOR_CLASSES: dict[str, tuple[str, ...]] = {
    "gpu.nvidia.com": ('device.driver == "gpu.nvidia.com"', 'device.attributes["gpu.nvidia.com"].type == "gpu"'),
    "mig.nvidia.com": ('device.driver == "gpu.nvidia.com"', 'device.attributes["gpu.nvidia.com"].type == "mig"'),
    "gpu.amd.com": ('device.driver == "gpu.amd.com"',),
    "gpu.intel.com": ('device.driver == "gpu.intel.com"',),
}

_A100 = NvmlFacts(
    productName="NVIDIA A100-SXM4-40GB",
    architecture="Ampere",
    cudaComputeCapability="8.0",
    driverVersion="535.104.05",
    cudaDriverVersion="12.2",
    memoryBytes=40 << 30,
)
_T4 = NvmlFacts(
    productName="Tesla T4",
    architecture="Turing",
    cudaComputeCapability="7.5",
    driverVersion="535.104.05",
    cudaDriverVersion="12.2",
    memoryBytes=15 << 30,
)


def _labels(product: str, family: str, major: str, minor: str, memory: str, **extra: str) -> dict[str, str]:
    return {
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.family": family,
        "nvidia.com/gpu.compute.major": major,
        "nvidia.com/gpu.compute.minor": minor,
        "nvidia.com/cuda.driver-version.full": "535.104.05",
        "nvidia.com/cuda.runtime-version.full": "12.2",
        "nvidia.com/gpu.memory": memory,
        **{f"nvidia.com/{k.replace('_', '.')}": v for k, v in extra.items()},
    }


@dataclass
class Node:
    """One sample node: its GFD ``labels``, the kubelet's inventory, NVML facts per UUID and the
    non-NVIDIA vendor devices (``(driver, attributes)``)."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    inventory: list[InventoryDevice] = field(default_factory=list)
    nvml: dict[str, NvmlFacts] = field(default_factory=dict)
    others: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    def add(self, resource: str, device_id: str, facts: NvmlFacts | None = None) -> None:
        self.inventory.append(InventoryDevice(resourceName=resource, deviceID=device_id, numaNodes=[0]))
        uuid = split_replica(device_id)[0]
        if facts is not None:
            self.nvml[uuid] = NvmlFacts(uuid=uuid, **facts)


def _fleet(catalog: Catalog) -> list[Node]:
    a100 = Node("a100", _labels("NVIDIA-A100-SXM4-40GB", "ampere", "8", "0", "40960"))
    for i in range(COPIES):
        a100.add("nvidia.com/gpu", f"GPU-a100-{i}", _A100)
    t4 = Node("t4-time-sliced", _labels("Tesla-T4-SHARED", "turing", "7", "5", "15360", gpu_replicas="8"))
    t4_renamed = Node("t4-renamed", _labels("Tesla-T4", "turing", "7", "5", "15360", gpu_replicas="10"))
    for g in range(4):
        for r in range(10):
            t4.add("nvidia.com/gpu", f"GPU-t4-{g}::{r}", _T4)
            t4_renamed.add("nvidia.com/gpu.shared", f"GPU-t4s-{g}::{r}", _T4)
    mixed = Node("mig-mixed", _labels("NVIDIA-A100-SXM4-80GB", "ampere", "8", "0", "81920", mig_strategy="mixed"))
    for p in catalog.mig_profiles:
        facts: NvmlFacts = {
            **_A100,
            "productName": "NVIDIA A100-SXM4-80GB",
            "migProfile": vendor_profile(p),
            "parentUUID": "GPU-parent",
        }
        for i in range(MIG_COPIES):
            mixed.add(f"nvidia.com/mig-{p}", f"MIG-{p}-{i}", facts)
        for r in range(MIG_COPIES):
            mixed.add(f"nvidia.com/mig-{p}.shared", f"MIG-{p}-shared::{r}", facts)
    single = Node(
        "mig-single", _labels("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "ampere", "8", "0", "4864", mig_strategy="single")
    )
    for i in range(COPIES):
        facts = {**_A100, "migProfile": "1g.5gb", "parentUUID": f"GPU-a100-{i // 7}"}
        single.add("nvidia.com/gpu", f"MIG-single-{i}", facts)
    amd = Node("amd", others=[("gpu.amd.com", {"type": "amdgpu"})] * COPIES)
    intel = Node("intel", others=[("gpu.intel.com", {"driver": d}) for d in ("i915", "xe") for _ in range(COPIES)])
    for i in range(COPIES):
        amd.add("amd.com/gpu", f"0000:0{i}:00.0")
        intel.add("gpu.intel.com/i915", f"card{i}")
        intel.add("gpu.intel.com/xe", f"card{i + COPIES}")
    return [a100, t4, t4_renamed, mixed, single, amd, intel]


Device = tuple[str, dict[str, Any]]


def bridge_devices(node: Node, catalog: Catalog) -> list[Device]:
    """``node``'s devices as the bridge publishes them (from its labels: no NVML on the agent here)."""
    devices, _ = build_devices(node.inventory, catalog, node.labels)
    return [(catalog.bridge_driver, dict(d)) for d in devices]


def vendor_devices(node: Node, catalog: Catalog) -> list[Device]:
    """``node``'s devices as the vendor DRA drivers publish them: one per physical device."""
    devices, _ = build_devices(node.inventory, catalog, None, node.nvml)
    out: list[Device] = []
    seen: set[str] = set()
    for d in devices:
        attrs = {k: v for k, v in d["attributes"].items() if k.startswith((f"{NV}/", "resource.kubernetes.io/"))}
        uuid = attrs.get(f"{NV}/uuid", {}).get("string")
        if not uuid or uuid in seen:
            continue
        seen.add(uuid)
        out.append((NV, {"name": d["name"], "attributes": attrs, "capacity": d["capacity"]}))
    for i, (driver, labels) in enumerate(node.others):
        out.append(
            (
                driver,
                {
                    "name": f"dev-{i}",
                    "capacity": {},
                    "attributes": {f"{driver}/{k}": {"string": v} for k, v in labels.items()},
                },
            )
        )
    return out


def class_selectors(catalog: Catalog, nodes: Iterable[Node]) -> dict[str, tuple[str, ...]]:
    """DeviceClass name -> its selectors: the vendors' classes and ours (every resource of ``nodes``)."""
    out = dict(VENDOR_CLASSES)
    for node in nodes:
        for item in node.inventory:
            m = catalog.with_target("bridge").lookup(item["resourceName"])
            if m is not None and m.class_selector:
                out[m.device_class] = (m.class_selector,)
    return out


def _enough(request: Mapping[str, Any], classes: Mapping[str, tuple[str, ...]], devices: list[Device]) -> bool:
    selectors = [*classes[request["deviceClassName"]], *request["selectors"]]
    found = 0
    for driver, device in devices:
        if evaluate_selectors(selectors, device, driver):
            found += 1
            if found >= request["count"]:
                return True
    return False


@dataclass(frozen=True)
class Fleet:
    """The sample nodes of one catalog and their devices as the bridge and as the vendors publish them."""

    nodes: tuple[Node, ...]
    bridge_shape: dict[str, list[Device]]
    vendor_shape: dict[str, list[Device]]

    def allocatable(
        self, templates: Iterable[Mapping[str, Any]], shape: Mapping[str, list[Device]], catalog: Catalog
    ) -> bool:
        """True when one node of ``shape`` has, for every request of ``templates``, as many devices
        as it counts that its class (in ``catalog``) and its selectors select (requests one by one)."""
        classes = class_selectors(catalog, self.nodes)
        requests = [r for t in templates for r in internal_from_template(t)["requests"]]
        return any(all(_enough(r, classes, devices) for r in requests) for devices in shape.values())


def build_fleet(catalog: Catalog) -> Fleet:
    """The fleet of ``catalog``: one node per shape, and its devices in both shapes."""
    nodes = tuple(_fleet(catalog))
    return Fleet(
        nodes,
        {n.name: bridge_devices(n, catalog) for n in nodes},
        {n.name: vendor_devices(n, catalog) for n in nodes},
    )
