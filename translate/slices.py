"""A node's device-plugin inventory -> the ResourceSlices of its pool (pure; design decisions 5, 11).

Input (dicts in, new dicts out; nothing here does I/O):

- the PodResources ``GetAllocatableResources`` answer in its protobuf JSON mapping
  (``{"devices": [{"resourceName": str, "deviceIds": [str], "topology": {"nodes": [{"ID": int}]}}]}``),
  which the kubelet sends as one entry per (resource, device ID, NUMA node)
  (node-apis.md 1.4): :func:`group_allocatable` groups it into :class:`InventoryDevice` dicts;
- optional NVML facts per UUID (:class:`NvmlFacts`), and the node's GFD labels;
- the catalog, which says whether a resource is a whole GPU, a MIG device or a shared replica.

Output: :func:`build_slices` gives the slices of one pool per node and driver (internal form,
see :mod:`translate.slice_render`), plus warnings for values that had to be left out.

Per device (vendors.md 2.4, 2.5), for resources the catalog marks ``gfd: nvidia``, the NVIDIA DRA
driver's attributes fully qualified under ``gpu.nvidia.com``: ``type`` (gpu|mig), ``uuid``,
``productName``, ``architecture`` (Title case), ``cudaComputeCapability``, ``driverVersion``,
``cudaDriverVersion`` (versions), MIG ``profile`` (``+me`` spelling) and ``parentUUID``, the
capacity ``memory`` (bytes), and ``resource.kubernetes.io/pciBusID`` / ``pcieRoot`` /
``numaNode`` where known. Values come from NVML when facts for the UUID are given, else from GFD
labels (approximate: the product name keeps GFD's dashes). Always our own attributes under the
catalog's bridge domain: ``resourceName`` (the legacy name; our DeviceClasses select on it),
``deviceID`` (the kubelet's ID), ``numaNode`` (int, lowest NUMA node), ``numaNodes`` (string,
only for devices on several NUMA nodes), ``replica`` (int, time-slicing replicas) and ``source``
(``nvml``, ``labels`` or ``kubelet`` when neither contributed).

Device names are ``<resource label>-<hash of the device ID>``: a DNS label that does not change
when other devices come or go, so allocated claims keep pointing at the same device.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from translate.catalog import Catalog, ResourceMapping
from translate.errors import InventoryError
from translate.names import digest, resource_label
from translate.slice_render import (
    AttributeValue,
    Capacity,
    SliceDevice,
    binary_quantity,
    check_attribute,
    pool_slices,
    semver,
)

NVIDIA_DOMAIN = "gpu.nvidia.com"
STANDARD_DOMAIN = "resource.kubernetes.io"
DEFAULT_DRIVER = "dra-bridge.io"
MIB = 1024 * 1024
#: GFD ``gpu.family`` (lower case, vendors.md 1.5) -> the DRA driver's ``architecture`` (2.4).
ARCHITECTURES: dict[str, str] = {
    "tesla": "Tesla", "fermi": "Fermi", "kepler": "Kepler", "maxwell": "Maxwell", "pascal": "Pascal",
    "volta": "Volta", "turing": "Turing", "ampere": "Ampere", "ada-lovelace": "Ada Lovelace",
    "hopper": "Hopper", "blackwell": "Blackwell", "rubin": "Rubin",
}
_REPLICA_RE = re.compile(r"(?P<base>.+)::(?P<n>0|[1-9][0-9]*)")
_GFD = "nvidia.com/"


class InventoryDevice(TypedDict):
    """One device as the kubelet offers it, NUMA entries grouped (also the recorded state form)."""

    resourceName: str
    deviceID: str
    numaNodes: list[int]


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


@dataclass(frozen=True)
class SliceBuild:
    """The result of :func:`build_slices`: internal-form slices and human-readable warnings."""

    slices: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)


def _int(raw: object, where: str) -> int:
    """A protobuf-JSON int64 (a number, or a decimal string as the JSON mapping writes int64)."""
    if isinstance(raw, bool):
        raise InventoryError(f"{where}: expected an integer, got {raw!r}")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and re.fullmatch(r"-?[0-9]+", raw):
        return int(raw)
    raise InventoryError(f"{where}: expected an integer, got {raw!r}")


def group_allocatable(response: Mapping[str, Any]) -> list[InventoryDevice]:
    """Group an ``AllocatableResourcesResponse`` (protobuf JSON mapping) by (resource, device ID).

    Accepts both JSON names and proto field names (``deviceIds`` / ``device_ids``), int64 as
    number or string, and a ``NUMANode`` without ``ID`` as NUMA node 0 (the JSON mapping omits
    zero values). A device without topology has no NUMA nodes. Sorted by resource name, then
    device ID (replica numbers numerically). Raises InventoryError naming the offending field.
    """
    if not isinstance(response, Mapping):
        raise InventoryError("(top level): expected an object")
    entries = response.get("devices")
    entries = [] if entries is None else entries
    if not isinstance(entries, list):
        raise InventoryError("devices: expected a list")
    grouped: dict[tuple[str, str], set[int]] = {}
    for i, entry in enumerate(entries):
        where = f"devices[{i}]"
        if not isinstance(entry, Mapping):
            raise InventoryError(f"{where}: expected an object")
        name = entry.get("resourceName", entry.get("resource_name"))
        if not isinstance(name, str) or "/" not in name:
            raise InventoryError(f"{where}.resourceName: expected an extended resource name, got {name!r}")
        ids = entry.get("deviceIds", entry.get("device_ids", [])) or []
        if not isinstance(ids, list) or not all(isinstance(d, str) and d for d in ids):
            raise InventoryError(f"{where}.deviceIds: expected a list of non-empty strings")
        topology = entry.get("topology") or {}
        nodes = topology.get("nodes", []) if isinstance(topology, Mapping) else None
        if not isinstance(nodes, list):
            raise InventoryError(f"{where}.topology.nodes: expected a list")
        numa = set()
        for j, node in enumerate(nodes):
            if not isinstance(node, Mapping):
                raise InventoryError(f"{where}.topology.nodes[{j}]: expected an object")
            numa.add(_int(node.get("ID", 0), f"{where}.topology.nodes[{j}].ID"))
        for device_id in ids:
            grouped.setdefault((name, device_id), set()).update(numa)
    out = [InventoryDevice(resourceName=r, deviceID=d, numaNodes=sorted(n)) for (r, d), n in grouped.items()]
    return sorted(out, key=lambda d: device_sort_key(d["resourceName"], d["deviceID"]))


def device_sort_key(resource_name: str, device_id: str) -> tuple[str, str, int]:
    """Sort key: resource, base ID, replica number (so ``::10`` follows ``::9``)."""
    m = _REPLICA_RE.fullmatch(device_id)
    if m:
        return (resource_name, m.group("base"), int(m.group("n")))
    return (resource_name, device_id, -1)


def split_replica(device_id: str) -> tuple[str, int | None]:
    """``GPU-x::3`` -> (``GPU-x``, 3); an ID without ``::n`` -> (ID, None) (vendors.md 1.3)."""
    m = _REPLICA_RE.fullmatch(device_id)
    return (m.group("base"), int(m.group("n"))) if m else (device_id, None)


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
    family = labels.get(_GFD + "gpu.family", "")
    if family in ARCHITECTURES:
        return ARCHITECTURES[family]
    try:
        major = int(labels.get(_GFD + "gpu.compute.major", ""))
        minor = int(labels.get(_GFD + "gpu.compute.minor", ""))
    except ValueError:
        return None
    by_major = {9: "Hopper", 10: "Blackwell", 12: "Blackwell", 13: "Rubin", 6: "Pascal", 5: "Maxwell"}
    if major == 7:
        return "Turing" if minor >= 5 else "Volta"
    if major == 8:
        return "Ada Lovelace" if minor == 9 else "Ampere"
    return by_major.get(major)


def label_facts(labels: Mapping[str, str], mapping: ResourceMapping, device_id: str) -> NvmlFacts:
    """Facts for one device derived from the node's GFD labels (vendors.md 1.5, 1.6).

    MIG devices (mixed strategy: profile from the resource name; single strategy: an ID
    ``MIG-...`` with the profile in ``gpu.product``) read ``mig-<profile>.memory`` or
    ``gpu.memory`` (MiB). Labels describe the node, so every GPU of it gets the same values.
    """
    facts = NvmlFacts()
    model, single_profile = _gfd_product(labels.get(_GFD + "gpu.product", ""))
    profile = mapping.profile
    if profile is not None:
        mixed = labels.get(f"{_GFD}mig-{profile}.product", "")
        if mixed:
            model = _gfd_product(mixed)[0]
        facts["migProfile"] = vendor_profile(profile)
        memory = labels.get(f"{_GFD}mig-{profile}.memory")
    elif device_id.startswith("MIG-") and single_profile:
        facts["migProfile"] = vendor_profile(single_profile)
        memory = labels.get(_GFD + "gpu.memory")
    else:
        memory = labels.get(_GFD + "gpu.memory")
    if model:
        facts["productName"] = model
    arch = _architecture(labels)
    if arch:
        facts["architecture"] = arch
    major, minor = labels.get(_GFD + "gpu.compute.major"), labels.get(_GFD + "gpu.compute.minor")
    if major and minor:
        facts["cudaComputeCapability"] = f"{major}.{minor}"
    driver = labels.get(_GFD + "cuda.driver-version.full") or ".".join(
        p for p in (labels.get(_GFD + f"cuda.driver-version.{k}", "") for k in ("major", "minor", "revision")) if p
    )
    if driver:
        facts["driverVersion"] = driver
    cuda = labels.get(_GFD + "cuda.runtime-version.full") or ".".join(
        p for p in (labels.get(_GFD + f"cuda.runtime-version.{k}", "") for k in ("major", "minor")) if p
    )
    if cuda:
        facts["cudaDriverVersion"] = cuda
    if memory and memory.isdigit():
        facts["memoryBytes"] = int(memory) * MIB
    return facts


class _Device:
    """Accumulates one device's attributes, dropping invalid optional values with a warning."""

    def __init__(self, name: str, warnings: list[str]) -> None:
        self.name = name
        self.attributes: dict[str, AttributeValue] = {}
        self.capacity: dict[str, Capacity] = {}
        self.warnings = warnings

    def put(self, name: str, value: AttributeValue, required: bool = False) -> None:
        why = check_attribute(name, value)
        if why is None:
            self.attributes[name] = value
        elif required:
            raise InventoryError(f"device {self.name}: {why}")
        else:
            self.warnings.append(f"device {self.name}: {why}; left out")

    def version(self, name: str, raw: str | None) -> None:
        if raw is None:
            return
        value = semver(raw)
        if value is None:
            self.warnings.append(f"device {self.name}: {name} {raw!r} is not a version; left out")
        else:
            self.put(name, {"version": value})

    def done(self) -> SliceDevice:
        return SliceDevice(name=self.name, attributes=dict(sorted(self.attributes.items())),
                           capacity=dict(sorted(self.capacity.items())))


def _nvidia(dev: _Device, facts: NvmlFacts, uuid: str, mig: bool) -> None:
    n = NVIDIA_DOMAIN + "/"
    dev.put(n + "type", {"string": "mig" if mig else "gpu"})
    dev.put(n + "uuid", {"string": uuid})
    for key in ("productName", "architecture"):
        if key in facts:
            dev.put(n + key, {"string": str(facts[key])})
    dev.version(n + "cudaComputeCapability", facts.get("cudaComputeCapability"))
    dev.version(n + "driverVersion", facts.get("driverVersion"))
    dev.version(n + "cudaDriverVersion", facts.get("cudaDriverVersion"))
    if mig:
        if "migProfile" in facts:
            dev.put(n + "profile", {"string": facts["migProfile"]})
        if "parentUUID" in facts:
            dev.put(n + "parentUUID", {"string": facts["parentUUID"]})
    if "memoryBytes" in facts:
        dev.capacity[n + "memory"] = {"value": binary_quantity(facts["memoryBytes"])}
    s = STANDARD_DOMAIN + "/"
    for key in ("pciBusID", "pcieRoot"):
        if key in facts:
            dev.put(s + key, {"string": str(facts[key])})  # type: ignore[literal-required]


def build_devices(inventory: Sequence[InventoryDevice], catalog: Catalog, labels: Mapping[str, str] | None = None,
                  nvml: Mapping[str, NvmlFacts] | None = None) -> tuple[list[SliceDevice], list[str]]:
    """The slice devices for a grouped inventory, in inventory order, plus warnings.

    Resources the catalog lacks, or marks ``slicing``, are left out with a warning. Raises
    InventoryError when a required value (device ID, resource name) breaks an API rule.
    """
    labels, nvml = labels or {}, nvml or {}
    domain = catalog.bridge_driver + "/"
    warnings: list[str] = []
    out: list[SliceDevice] = []
    skipped: set[str] = set()
    for item in sorted(inventory, key=lambda d: device_sort_key(d["resourceName"], d["deviceID"])):
        resource, device_id = item["resourceName"], item["deviceID"]
        mapping = catalog.lookup(resource)
        if mapping is None or mapping.kind == "slicing":
            if resource not in skipped:
                skipped.add(resource)
                why = "not in the catalog" if mapping is None else "memory/compute slicing has no DRA form"
                warnings.append(f"resource {resource}: {why}; its devices are not published")
            continue
        dev = _Device(f"{resource_label(resource)}-{digest(device_id, 10)}", warnings)
        dev.put(domain + "resourceName", {"string": resource}, required=True)
        dev.put(domain + "deviceID", {"string": device_id}, required=True)
        numa = sorted(item["numaNodes"])
        if numa:
            dev.put(domain + "numaNode", {"int": numa[0]})
            if len(numa) > 1:
                dev.put(domain + "numaNodes", {"string": ",".join(str(n) for n in numa)})
        uuid, replica = split_replica(device_id)
        if replica is not None:
            dev.put(domain + "replica", {"int": replica})
        source = "kubelet"
        if mapping.gfd == "nvidia":
            mig = mapping.kind == "mig" or uuid.startswith("MIG-") or mapping.profile is not None
            if uuid in nvml:
                facts, source = nvml[uuid], "nvml"
                if "numaNode" in facts:
                    dev.put(STANDARD_DOMAIN + "/numaNode", {"int": facts["numaNode"]})
            else:
                facts = label_facts(labels, mapping, uuid)
                source = "labels" if facts else "kubelet"
            if len(numa) == 1 and STANDARD_DOMAIN + "/numaNode" not in dev.attributes:
                dev.put(STANDARD_DOMAIN + "/numaNode", {"int": numa[0]})
            _nvidia(dev, facts, uuid, mig)
        dev.put(domain + "source", {"string": source})
        out.append(dev.done())
    return out, warnings


def build_slices(node: str, inventory: Sequence[InventoryDevice], catalog: Catalog,
                 labels: Mapping[str, str] | None = None, nvml: Mapping[str, NvmlFacts] | None = None,
                 driver: str = DEFAULT_DRIVER, generation: int = 0) -> SliceBuild:
    """The desired ResourceSlices (internal form) of ``node``'s pool for ``driver``.

    One pool named after the node, split every 128 devices, each slice with ``spec.nodeName``;
    names ``<node>-<driver label>-<index>``. Deterministic: the same input gives equal output.
    Raises InventoryError for an invalid node or driver name or a device that breaks a rule.
    """
    devices, warnings = build_devices(inventory, catalog, labels, nvml)
    return SliceBuild(pool_slices(node, driver, devices, generation), warnings)


def device_uuids(slice_spec: Mapping[str, Any]) -> set[str]:
    """Every ``<domain>/uuid`` or bare ``uuid`` string value in a slice spec (any served version).

    Used to find another driver's pool that lists one of our devices (design decision 6).
    """
    out: set[str] = set()
    for device in slice_spec.get("devices") or []:
        attrs = (device.get("basic") or device).get("attributes") or {}
        for name, value in attrs.items():
            if (name == "uuid" or name.endswith("/uuid")) and isinstance(value, Mapping):
                text = value.get("string")
                if isinstance(text, str):
                    out.add(text)
    return out
