"""Which recorded devices a device ID or another driver's slice device stands for (pure).

A device is known by more than one name: NVIDIA's by its UUID (``GPU-...``, ``MIG-...``; a
time-slicing replica ``GPU-x::n`` is GPU ``GPU-x``) and its PCI address, AMD's and Intel's by
their PCI address (AMD's device plugin uses it as the device ID; their DRA drivers publish it as
``pciAddr`` or ``resource.kubernetes.io/pciBusID``, not a ``uuid``). A returning NVIDIA device
plugin may name GPUs by index (``--device-id-strategy index``: ``0``, MIG ``0:1``): NVML's index
order is PCI bus order, so an index maps through the recorded NVML facts' ``pciBusID``; where
they do not tell, to every recorded device of the vendor (a hazard is assumed, never ruled out).

:func:`matches` maps one raw ID to the recorded devices it may be; :func:`slice_keys` reads the
identities another driver's slice publishes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dra_bridge.translate.inventory.allocatable import DeviceId, InventoryDevice, split_replica
from dra_bridge.translate.inventory.device_facts import NvmlFacts
from dra_bridge.translate.names import NVIDIA_RESOURCE_PREFIX

_PCI = re.compile(r"(?:(?P<domain>[0-9a-f]{4,8}):)?(?P<bdf>[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])")
_INDEX = re.compile(r"(?P<gpu>0|[1-9][0-9]*)(?::(?P<mig>0|[1-9][0-9]*))?")
IDENTITY_ATTRIBUTES = ("uuid", "pciAddr", "pciBusID")
"""Attribute names (bare or after any domain) that name a device in another driver's slice."""


def pci_address(text: str) -> str | None:
    """``0000:03:00.0`` (lower case, four-digit domain) for a PCI address in any common spelling
    (``03:00.0``, NVML's ``00000000:03:00.0``), else None."""
    m = _PCI.fullmatch(text.strip().lower())
    if m is None:
        return None
    domain = (m.group("domain") or "0000")[-4:]
    return f"{domain}:{m.group('bdf')}"


def keys(device: DeviceId, nvml: Mapping[str, NvmlFacts]) -> set[str]:
    """Every identity of a recorded device: its base ID, its UUID and its PCI address where known."""
    out = {device.base}
    facts = nvml.get(device.base, NvmlFacts())
    if facts.get("uuid"):
        out.add(facts["uuid"])  # a device known by index (the fresh-node source's): its UUID too
    for raw in (device.base, facts.get("pciBusID", "")):
        if addr := pci_address(raw):
            out.add(addr)
    return out


def _index_map(devices: Sequence[DeviceId], nvml: Mapping[str, NvmlFacts]) -> list[str] | None:
    """NVIDIA GPU UUIDs in NVML index order (PCI bus order), or None when the facts do not say."""
    gpus = sorted({d.base for d in devices if d.base.startswith("GPU-")})
    buses = {u: pci_address(nvml.get(u, NvmlFacts()).get("pciBusID", "")) for u in gpus}
    if not gpus or any(b is None for b in buses.values()):
        return None
    return sorted(gpus, key=lambda u: buses[u] or "")


def matches(
    raw_id: str,
    recorded: Iterable[InventoryDevice],
    nvml: Mapping[str, NvmlFacts],
    resource: str | None = None,
) -> list[DeviceId]:
    """The recorded devices that ``raw_id`` (a device plugin's device ID, of ``resource`` where
    known) may be, sorted: the same base ID or PCI address; an index ID of an NVIDIA resource maps
    as the module says (only where the resource is known: PodResources ``List`` names devices
    without it here, and another vendor's plugin may number its devices too; the kubelet offers
    every device it assigns, so the offer catches a returning NVIDIA plugin's index IDs)."""
    devices = [DeviceId.of(d) for d in recorded]
    base = split_replica(raw_id)[0]
    addr = pci_address(base)
    found = {d for d in devices if base in keys(d, nvml) or (addr is not None and addr in keys(d, nvml))}
    index = _INDEX.fullmatch(base)
    nvidia = resource is not None and resource.startswith(NVIDIA_RESOURCE_PREFIX)
    if not found and index is not None and nvidia:
        ours = [d for d in devices if d.resource.startswith(NVIDIA_RESOURCE_PREFIX)]
        order = _index_map(ours, nvml)
        gpu = int(index.group("gpu"))
        if order is None:
            found = set(ours)
        elif gpu < len(order):
            uuid = order[gpu]
            mig = index.group("mig") is not None
            found = {
                d
                for d in ours
                if (not mig and d.base == uuid) or (mig and nvml.get(d.base, NvmlFacts()).get("parentUUID") == uuid)
            }
            if mig and not found:  # the MIG devices' parents are not recorded: any MIG device of the GPU's node
                found = {d for d in ours if d.base.startswith("MIG-")}
    return sorted(found)


def slice_keys(slice_spec: Mapping[str, Any]) -> set[str]:
    """Every identity a slice spec publishes (any served version): ``uuid``, ``pciAddr`` and
    ``pciBusID`` string attributes, bare or after a domain; PCI addresses normalised."""
    out: set[str] = set()
    for device in slice_spec.get("devices") or []:
        attrs = (device.get("basic") or device).get("attributes") or {}
        for name, value in attrs.items():
            if name.rsplit("/", 1)[-1] in IDENTITY_ATTRIBUTES and isinstance(value, Mapping):
                text = value.get("string")
                if isinstance(text, str) and text:
                    out.add(pci_address(text) or text)
    return out
