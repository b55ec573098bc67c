"""A node's device-plugin inventory -> the ResourceSlices of its pool (pure; docs/design.md D5, D11).

Input (dicts in, new dicts out; nothing here does I/O):

- the kubelet's device-plugin inventory grouped per device (:class:`InventoryDevice`, see
  :mod:`translate.inventory.allocatable`);
- optional NVML facts per UUID (:class:`NvmlFacts`), and the node's GFD labels (see
  :mod:`translate.inventory.device_facts`);
- the catalog, which says whether a resource is a whole GPU, a MIG device or a shared replica.

Output: :func:`build_slices` gives the slices of one pool per node and driver (internal form,
see :mod:`translate.inventory.pool`), plus warnings for values that had to be left out.

Per device (docs/design.md D5;
https://github.com/NVIDIA/k8s-dra-driver-gpu/blob/main/cmd/gpu-kubelet-plugin/deviceinfo.go), for
resources the catalog marks ``gfd: nvidia``, the NVIDIA DRA driver's attributes fully qualified under
``gpu.nvidia.com``: ``type`` (gpu|mig), ``uuid``, ``productName``, ``architecture`` (Title case),
``cudaComputeCapability``, ``driverVersion``, ``cudaDriverVersion`` (versions), MIG ``profile`` (``+me``
spelling) and ``parentUUID``, the capacity ``memory`` (bytes), and ``resource.kubernetes.io/pciBusID`` /
``pcieRoot`` where known (a MIG device takes its parent GPU's PCIe root and NUMA node). Every device, of any vendor, on
one NUMA node carries ``resource.kubernetes.io/numaNode`` (NVML's value, else the kubelet's), so
topology alignment (:mod:`translate.plan.alignment`) can match it. Values come from NVML when
facts for the UUID are given, else from GFD labels (approximate: the product name keeps GFD's
dashes). Always our own attributes under the catalog's bridge domain: ``resourceName`` (the
legacy name; our DeviceClasses select on it), ``deviceID`` (the kubelet's ID), ``numaNode``
(int, lowest NUMA node), ``numaNodes`` (string, only for devices on several NUMA nodes),
``replica`` (int, time-slicing replicas) and ``source`` (``nvml``, ``labels`` or ``kubelet``
when neither contributed).

Device names are ``<resource label>-<hash of the device ID>``: a DNS label that does not change
when other devices come or go, so allocated claims keep pointing at the same device.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.dns_names import digest, resource_label
from dra_bridge.translate.errors import InventoryError
from dra_bridge.translate.inventory.allocatable import DeviceId, InventoryDevice, device_sort_key, split_replica
from dra_bridge.translate.inventory.api_rules import (
    AttributeValue,
    Capacity,
    SliceDevice,
    binary_quantity,
    check_attribute,
    semver,
)
from dra_bridge.translate.inventory.device_facts import NvmlFacts, label_facts
from dra_bridge.translate.inventory.pool import pool_slices
from dra_bridge.translate.names import BRIDGE_DRIVER, NVIDIA_DRIVER, STANDARD_DOMAIN


@dataclass(frozen=True)
class SliceBuild:
    """The result of :func:`build_slices`: internal-form slices and human-readable warnings."""

    slices: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)


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
        return SliceDevice(
            name=self.name,
            attributes=dict(sorted(self.attributes.items())),
            capacity=dict(sorted(self.capacity.items())),
        )


def _nvidia(dev: _Device, facts: NvmlFacts, uuid: str, mig: bool) -> None:
    n = NVIDIA_DRIVER + "/"
    dev.put(n + "type", {"string": "mig" if mig else "gpu"})
    dev.put(n + "uuid", {"string": facts.get("uuid") or uuid})  # an index ID's facts name its UUID
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


def device_name(resource: str, device_id: str) -> str:
    """The published name of a device: ``<resource label>-<hash of the device ID>`` (stable when
    other devices come and go)."""
    return f"{resource_label(resource)}-{digest(device_id, 10)}"


def published_names(inventory: Sequence[InventoryDevice], catalog: Catalog) -> dict[str, DeviceId]:
    """Published device name -> the device it stands for, for the devices :func:`build_devices`
    publishes (those of catalogued resources that are not ``slicing``): the one map from names
    to devices, so nothing reads a device back out of rendered attributes."""
    out: dict[str, DeviceId] = {}
    for item in inventory:
        mapping = catalog.lookup(item["resourceName"])
        if mapping is not None and mapping.kind != "slicing":
            out[device_name(item["resourceName"], item["deviceID"])] = DeviceId.of(item)
    return out


def build_devices(
    inventory: Sequence[InventoryDevice],
    catalog: Catalog,
    labels: Mapping[str, str] | None = None,
    nvml: Mapping[str, NvmlFacts] | None = None,
) -> tuple[list[SliceDevice], list[str]]:
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
        dev = _Device(device_name(resource, device_id), warnings)
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
                facts, source = _with_parent_topology(nvml[uuid], nvml), "nvml"
                if "numaNode" in facts:
                    dev.put(STANDARD_DOMAIN + "/numaNode", {"int": facts["numaNode"]})
            else:
                facts = label_facts(labels, mapping, uuid)
                source = "labels" if facts else "kubelet"
            _nvidia(dev, facts, uuid, mig)
        if len(numa) == 1 and STANDARD_DOMAIN + "/numaNode" not in dev.attributes:
            dev.put(STANDARD_DOMAIN + "/numaNode", {"int": numa[0]})
        dev.put(domain + "source", {"string": source})
        out.append(dev.done())
    return out, warnings


def _with_parent_topology(facts: NvmlFacts, nvml: Mapping[str, NvmlFacts]) -> NvmlFacts:
    """A MIG device's facts with its parent GPU's PCIe root and NUMA node where it lacks them
    (the MIG devices of one GPU sit on that GPU's PCIe link)."""
    parent = nvml.get(facts.get("parentUUID", ""), NvmlFacts())
    out = NvmlFacts(**facts)
    for key in ("pcieRoot", "numaNode"):
        if key not in out and key in parent:
            out[key] = parent[key]
    return out


def build_slices(
    node: str,
    inventory: Sequence[InventoryDevice],
    catalog: Catalog,
    labels: Mapping[str, str] | None = None,
    nvml: Mapping[str, NvmlFacts] | None = None,
    driver: str = BRIDGE_DRIVER,
    generation: int = 0,
) -> SliceBuild:
    """The desired ResourceSlices (internal form) of ``node``'s pool for ``driver``.

    One pool named after the node, split every 128 devices, each slice with ``spec.nodeName``;
    names ``<node>-<driver label>-<index>``. Deterministic: the same input gives equal output.
    Raises InventoryError for an invalid node or driver name or a device that breaks a rule.
    """
    devices, warnings = build_devices(inventory, catalog, labels, nvml)
    return SliceBuild(pool_slices(node, driver, devices, generation), warnings)


def device_uuids(slice_spec: Mapping[str, Any]) -> set[str]:
    """Every ``<domain>/uuid`` or bare ``uuid`` string value in a slice spec (any served version).

    Used to find another driver's pool that lists one of our devices (docs/design.md D6).
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
