"""What is known about one GPU: NVML facts, or facts derived from the node's GFD labels (pure).

:class:`NvmlFacts` is what NVML says about one UUID; where the bridge has no NVML,
:func:`label_facts` derives the same fields from GPU Feature Discovery labels
(https://github.com/NVIDIA/k8s-device-plugin/blob/main/docs/gpu-feature-discovery/README.md):
approximate, the product name keeps GFD's dashes, and every GPU of a node gets the same values. MIG
profiles are spelled as NVML and the DRA driver spell them (:func:`vendor_profile`).
A device's PCIe root and NUMA node come from sysfs (:func:`pcie_root`, :func:`numa_node`; the
bridge reads the files).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TypedDict

from dra_bridge.translate.catalog import ResourceMapping
from dra_bridge.translate.names import GFD_PREFIX

MIB = 1024 * 1024
#: GFD ``gpu.family`` (lower case, ``getArchFamily`` in NVIDIA/k8s-device-plugin ``internal/lm/resource.go``)
#: -> the DRA driver's ``architecture`` (NVIDIA/k8s-dra-driver-gpu ``deviceinfo.go``).
ARCHITECTURES: dict[str, str] = {
    "tesla": "Tesla",
    "fermi": "Fermi",
    "kepler": "Kepler",
    "maxwell": "Maxwell",
    "pascal": "Pascal",
    "volta": "Volta",
    "turing": "Turing",
    "ampere": "Ampere",
    "ada-lovelace": "Ada Lovelace",
    "hopper": "Hopper",
    "blackwell": "Blackwell",
    "rubin": "Rubin",
}


class NvmlFacts(TypedDict, total=False):
    """What NVML says about one UUID (all optional). ``cudaComputeCapability`` like ``"8.0"``,
    ``cudaDriverVersion`` like ``"12.5"``, ``memoryBytes`` in bytes, ``migProfile`` as NVML spells
    it (``1g.10gb+me``); for a MIG device the product/architecture/versions are the parent's."""

    uuid: str
    productName: str
    architecture: str
    cudaComputeCapability: str
    driverVersion: str
    cudaDriverVersion: str
    memoryBytes: int
    pciBusID: str
    pcieRoot: str
    numaNode: int
    migProfile: str
    parentUUID: str


#: A PCI root complex directory under /sys/devices: ``pci<domain>:<bus>`` (hex).
_ROOT_COMPLEX = re.compile(r"pci[0-9a-f]{4}:[0-9a-f]{2}")


def pcie_root(device_path: str) -> str | None:
    """The ``resource.kubernetes.io/pcieRoot`` value of a PCI device: the root complex directory
    (``pci0000:64``) in the resolved path of ``/sys/bus/pci/devices/<bus ID>``
    (``/sys/devices/pci0000:64/0000:64:01.0/0000:65:00.0``), as the upstream deviceattribute
    library names it (https://github.com/kubernetes/dynamic-resource-allocation/tree/master/deviceattribute);
    None when the path has none."""
    for part in device_path.split("/"):
        if _ROOT_COMPLEX.fullmatch(part):
            return part
    return None


def numa_node(text: str) -> int | None:
    """A sysfs ``numa_node`` file's content -> the NUMA node; None for ``-1`` (the kernel does
    not know it) or anything that is not a non-negative integer of at most 9 digits (never raises)."""
    value = text.strip()
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 9 else None


def vendor_profile(profile: str) -> str:
    """A MIG profile as the device plugin names resources (``1g.10gb.me``) -> as NVML and the DRA
    driver spell it (``1g.10gb+me``)."""
    for suffix in (".me", ".gfx"):
        if profile.endswith(suffix):
            return profile[: -len(suffix)] + "+" + suffix[1:]
    return profile


def _gfd_product(value: str) -> tuple[str, str | None]:
    """Split a GFD ``gpu.product`` into (model, MIG profile or None); drops ``-SHARED``."""
    if value.endswith("-SHARED"):
        value = value[: -len("-SHARED")]
    model, sep, profile = value.partition("-MIG-")
    if not sep or profile == "INVALID":
        return model, None
    return model, profile


def _architecture(labels: Mapping[str, str]) -> str | None:
    family = labels.get(GFD_PREFIX + "gpu.family", "")
    if family in ARCHITECTURES:
        return ARCHITECTURES[family]
    try:
        major = int(labels.get(GFD_PREFIX + "gpu.compute.major", ""))
        minor = int(labels.get(GFD_PREFIX + "gpu.compute.minor", ""))
    except ValueError:
        return None
    by_major = {9: "Hopper", 10: "Blackwell", 12: "Blackwell", 13: "Rubin", 6: "Pascal", 5: "Maxwell"}
    if major == 7:
        return "Turing" if minor >= 5 else "Volta"
    if major == 8:
        return "Ada Lovelace" if minor == 9 else "Ampere"
    return by_major.get(major)


def label_facts(labels: Mapping[str, str], mapping: ResourceMapping, device_id: str) -> NvmlFacts:
    """Facts for one device derived from the node's GFD labels (GFD's README, ``internal/lm/resource.go``).

    MIG devices (mixed strategy: profile from the resource name; single strategy: an ID
    ``MIG-...`` with the profile in ``gpu.product``) read ``mig-<profile>.memory`` or
    ``gpu.memory`` (MiB). Labels describe the node, so every GPU of it gets the same values.
    """
    facts = NvmlFacts()
    model, single_profile = _gfd_product(labels.get(GFD_PREFIX + "gpu.product", ""))
    profile = mapping.profile
    if profile is not None:
        mixed = labels.get(f"{GFD_PREFIX}mig-{profile}.product", "")
        if mixed:
            model = _gfd_product(mixed)[0]
        facts["migProfile"] = vendor_profile(profile)
        memory = labels.get(f"{GFD_PREFIX}mig-{profile}.memory")
    elif device_id.startswith("MIG-") and single_profile:
        facts["migProfile"] = vendor_profile(single_profile)
        memory = labels.get(GFD_PREFIX + "gpu.memory")
    else:
        memory = labels.get(GFD_PREFIX + "gpu.memory")
    if model:
        facts["productName"] = model
    arch = _architecture(labels)
    if arch:
        facts["architecture"] = arch
    major, minor = labels.get(GFD_PREFIX + "gpu.compute.major"), labels.get(GFD_PREFIX + "gpu.compute.minor")
    if major and minor:
        facts["cudaComputeCapability"] = f"{major}.{minor}"
    driver = labels.get(GFD_PREFIX + "cuda.driver-version.full") or ".".join(
        p for p in (labels.get(f"{GFD_PREFIX}cuda.driver-version.{k}", "") for k in ("major", "minor", "revision")) if p
    )
    if driver:
        facts["driverVersion"] = driver
    cuda = labels.get(GFD_PREFIX + "cuda.runtime-version.full") or ".".join(
        p for p in (labels.get(GFD_PREFIX + f"cuda.runtime-version.{k}", "") for k in ("major", "minor")) if p
    )
    if cuda:
        facts["cudaDriverVersion"] = cuda
    if memory and memory.isdigit():
        facts["memoryBytes"] = int(memory) * MIB
    return facts
