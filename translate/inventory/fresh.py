"""A node's devices where no device plugin ever ran: the fresh-node sources (pure; docs/design.md D45).

A node labelled for DRA from its first boot (a node pool's label, a Karpenter NodePool, a surge
upgrade, an autoscaler scale-up) has no inventory recorded while legacy. Used only then (a recorded
inventory always wins), two sources stand in for the device plugin's:

- **NVIDIA** (:func:`toolkit_gpus`, :func:`from_toolkit`): the container toolkit's CDI spec (``nvidia-ctk
  cdi generate``, kind ``nvidia.com/gpu``). Its device names are all it says of a GPU: an index
  (``0``) and, with the default ``--device-name-strategy`` of toolkit 1.16 and later (index and
  uuid: every device written once per strategy, with the same edits), a UUID (``GPU-...``). The two
  names of one GPU are paired by their identical ``containerEdits`` (lists whose order CDI gives no
  meaning compared in any order; edits that pair two GPUs with one UUID refuse the node:
  :func:`ambiguous_pairing`, and so does an index name with no UUID twin in a spec with UUID
  names). A spec that names GPUs by index only gets its UUIDs from NVML (NVML's index order is the
  toolkit's: both enumerate NVML devices by index, which is PCI bus order), else the node is
  refused (:attr:`Fresh.refusal`): a UUID is the identity every interlock and the NVIDIA DRA
  driver's ``uuid`` attribute need. MIG devices in the spec (``0:1``, ``MIG-...``) refuse the node:
  the fresh source publishes whole GPUs only.
- **AMD and Intel** (:func:`from_cards`): sysfs ``/sys/class/drm/card<N>`` (read by
  :mod:`bridge.fresh_source` into :class:`DrmCard` rows): a card whose PCI device has vendor ID
  ``0x1002`` (``amd.com/gpu``) or ``0x8086`` with driver ``i915`` / ``xe`` (``gpu.intel.com/i915``,
  ``/xe``), the device ID its PCI address (as AMD's device plugin names devices). Whole GPUs only:
  an AMD GPU in a partitioned mode (``current_compute_partition`` other than ``SPX``,
  ``current_memory_partition`` other than ``NPS1``) and an Intel SR-IOV virtual function (a
  ``physfn`` link) or a physical function with virtual functions enabled (``sriov_numvfs`` > 0)
  refuse the node (so does an ``sriov_numvfs`` that is not a count).

A name longer than a device ID may be (:data:`MAX_VALUE_BYTES`) refuses the node, naming it: the
rules never raise for what a valid spec or sysfs holds.

Either way the result is the recorded inventory's shape (:class:`InventoryDevice` rows and NVML
facts keyed by device ID), so the slices, edits and interlocks are the recorded path's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dra_bridge.translate.inventory.allocatable import InventoryDevice
from dra_bridge.translate.inventory.api_rules import MAX_VALUE_BYTES
from dra_bridge.translate.inventory.device_facts import NvmlFacts
from dra_bridge.translate.inventory.identity import pci_address
from dra_bridge.translate.names import NVIDIA_RESOURCE_DOMAIN, NVIDIA_TOOLKIT_CDI_KIND

NVIDIA_GPU = f"{NVIDIA_RESOURCE_DOMAIN}/gpu"
AMD_GPU = "amd.com/gpu"
INTEL_GPUS = {"i915": "gpu.intel.com/i915", "xe": "gpu.intel.com/xe"}
AMD_VENDOR, INTEL_VENDOR = "0x1002", "0x8086"
WHOLE_COMPUTE, WHOLE_MEMORY = "SPX", "NPS1"
_INDEX = re.compile(r"0|[1-9][0-9]*")
_MIG_INDEX = re.compile(r"(0|[1-9][0-9]*):(0|[1-9][0-9]*)")
_UNORDERED = ("deviceNodes", "additionalGIDs", "netDevices")


@dataclass(frozen=True)
class ToolkitGpu:
    """One GPU of the toolkit's spec: its index name and its UUID name ("" when the spec has none)."""

    index: str
    uuid: str = ""


@dataclass(frozen=True)
class Fresh:
    """What a fresh-node source found: devices in the recorded form, NVML facts keyed by device
    ID, the source (for the Event), and why the node is refused (empty: it is not)."""

    devices: tuple[InventoryDevice, ...] = ()
    nvml: dict[str, NvmlFacts] = field(default_factory=dict)
    source: str = ""
    refusal: str = ""


@dataclass(frozen=True)
class DrmCard:
    """One ``/sys/class/drm/card<N>`` whose ``device`` is a PCI device, as sysfs shows it."""

    name: str
    pci: str
    vendor: str
    driver: str = ""
    numa: int | None = None
    compute_partition: str = ""
    """``current_compute_partition`` (AMD; empty where the file is absent)."""
    memory_partition: str = ""
    """``current_memory_partition`` (AMD; empty where the file is absent)."""
    virtual_function: bool = False
    """A ``physfn`` link: an SR-IOV virtual function."""
    sriov_vfs: int = 0
    """``sriov_numvfs``: virtual functions enabled on this physical function."""
    problem: str = ""
    """Why a file the rules read holds no value they can use (``sriov_numvfs is not a count``)."""


def shown(name: str) -> str:
    """A name for a message: a long one cut, with its length."""
    return name if len(name) <= 40 else f"{name[:32]}... ({len(name)} characters)"


def _edits_key(device: Mapping[str, Any]) -> str:
    """A device's ``containerEdits`` as one text, its lists in an order of their own where CDI gives
    their order no meaning (device nodes, groups, network devices; variables set once each):
    mounts and hooks keep theirs (a mount stacks on the one before)."""
    edits = device.get("containerEdits") or {}
    if not isinstance(edits, Mapping):
        return json.dumps(edits, sort_keys=True)
    keyed = dict(edits)
    for name, items in edits.items():
        if not isinstance(items, list):
            continue
        variables = [str(i).split("=", 1)[0] for i in items] if name == "env" else []
        if name in _UNORDERED or len(set(variables)) == len(items):
            keyed[name] = sorted(json.dumps(i, sort_keys=True) for i in items)
    return json.dumps(keyed, sort_keys=True)


def _named(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [d for d in spec.get("devices") or [] if isinstance(d, Mapping) and isinstance(d.get("name"), str)]


def ambiguous_pairing(spec: Mapping[str, Any]) -> list[str]:
    """The whole-GPU names of the first set with one ``containerEdits`` that pairs two GPUs with one
    UUID (two index names and a UUID name, or two UUID names), in the spec's order; empty: none."""
    by_edits: dict[str, list[str]] = {}
    for d in _named(spec):
        if _INDEX.fullmatch(d["name"]) or d["name"].startswith("GPU-"):
            by_edits.setdefault(_edits_key(d), []).append(d["name"])
    for names in by_edits.values():
        uuids = sum(n.startswith("GPU-") for n in names)
        if uuids > 1 or (uuids and len(names) - uuids > 1):
            return names
    return []


def toolkit_gpus(spec: Mapping[str, Any]) -> tuple[list[ToolkitGpu], list[str]]:
    """The whole GPUs a toolkit spec names, in index order, and its MIG device names (a spec of
    another kind: none). An index name and a UUID name with the same edits are one GPU; a UUID
    name with no index twin (``--device-name-strategy uuid``) is a GPU of its own."""
    if spec.get("kind") != NVIDIA_TOOLKIT_CDI_KIND:
        return [], []
    devices = _named(spec)
    mig = [str(d["name"]) for d in devices if _MIG_INDEX.fullmatch(d["name"]) or d["name"].startswith("MIG-")]
    uuids: dict[str, str] = {}
    for d in devices:
        if d["name"].startswith("GPU-"):
            uuids.setdefault(_edits_key(d), d["name"])
    gpus: list[ToolkitGpu] = []
    paired: set[str] = set()
    for d in sorted((d for d in devices if _INDEX.fullmatch(d["name"])), key=lambda d: (len(d["name"]), d["name"])):
        uuid = uuids.get(_edits_key(d), "")
        paired.add(uuid)
        gpus.append(ToolkitGpu(d["name"], uuid))
    gpus += [ToolkitGpu("", u) for u in uuids.values() if u not in paired]
    return gpus, mig


def _whole_gpus_by_index(nvml: Mapping[str, NvmlFacts]) -> list[tuple[str, NvmlFacts]]:
    """NVML's whole GPUs in index order (PCI bus order), each (UUID, facts)."""
    gpus = [(u, f) for u, f in nvml.items() if u.startswith("GPU-") and not f.get("parentUUID")]
    return sorted(gpus, key=lambda g: pci_address(g[1].get("pciBusID", "")) or g[1].get("pciBusID", "") or g[0])


def _numa(facts: NvmlFacts) -> list[int]:
    return [facts["numaNode"]] if "numaNode" in facts else []


def from_toolkit(path: str, spec: Mapping[str, Any], nvml: Mapping[str, NvmlFacts] | None) -> Fresh:
    """The NVIDIA GPUs of the toolkit's spec at ``path`` (see the module docstring); ``nvml``
    None: NVML does not load."""
    source = f"the NVIDIA container toolkit CDI spec {path}"
    gpus, mig = toolkit_gpus(spec)
    if mig:
        return Fresh(
            source=source,
            refusal=f"{source} lists MIG devices ({', '.join(shown(m) for m in sorted(mig)[:4])}): a node with no "
            "recorded inventory is published from whole GPUs only",
        )
    if not gpus:
        return Fresh(source=source, refusal=f"{source} defines no GPU")
    if same := ambiguous_pairing(spec):
        return Fresh(
            source=source,
            refusal=f"{source}: GPUs {', '.join(shown(n) for n in same[:4])} have the same containerEdits, so "
            "which index name is which UUID name is ambiguous (two GPUs would get one UUID)",
        )
    if long := [n for g in gpus for n in (g.index, g.uuid) if len(n.encode()) > MAX_VALUE_BYTES]:
        return Fresh(
            source=source,
            refusal=f"{source} names GPU {shown(long[0])}, longer than {MAX_VALUE_BYTES} bytes (the most a "
            "device ID, a ResourceSlice attribute, may have)",
        )
    if all(g.uuid for g in gpus):
        devices = [
            InventoryDevice(
                resourceName=NVIDIA_GPU, deviceID=g.uuid, numaNodes=_numa((nvml or {}).get(g.uuid, NvmlFacts()))
            )
            for g in gpus
        ]
        facts = {g.uuid: (nvml or {})[g.uuid] for g in gpus if g.uuid in (nvml or {})}
        return Fresh(tuple(devices), facts, source)
    if any(g.uuid for g in gpus):
        alone = [shown(g.index) for g in gpus if not g.uuid]
        uuids = [shown(g.uuid) for g in gpus if not g.index]
        return Fresh(
            source=source,
            refusal=f"{source}: index name{'s' if len(alone) > 1 else ''} {', '.join(alone[:4])} "
            f"ha{'ve' if len(alone) > 1 else 's'} no UUID name with the same containerEdits"
            + (f" (UUID names with no index name: {', '.join(uuids[:4])})" if uuids else "")
            + ": the toolkit writes a GPU's index and UUID names with the same edits, so which is which is unknown",
        )
    if nvml is None:
        return Fresh(
            source=source,
            refusal=f"{source} names GPUs by index only (toolkit before 1.16, or --device-name-strategy=index) "
            "and NVML does not load here, so the GPUs' UUIDs are unknown: generate the spec with toolkit "
            "1.16 or later (its default names each GPU by index and by UUID), or let the agent load NVML",
        )
    by_index = _whole_gpus_by_index(nvml)
    if len(by_index) != len(gpus):
        return Fresh(
            source=source,
            refusal=f"{source} names {len(gpus)} GPU(s) by index only and NVML sees {len(by_index)}: "
            "which index is which UUID is unknown",
        )
    devices, facts = [], {}
    for g in gpus:
        uuid, found = by_index[int(g.index)] if int(g.index) < len(by_index) else ("", NvmlFacts())
        if not uuid:
            return Fresh(source=source, refusal=f"{source} names GPU index {g.index}, which NVML does not see")
        devices.append(InventoryDevice(resourceName=NVIDIA_GPU, deviceID=g.index, numaNodes=_numa(found)))
        facts[g.index] = NvmlFacts(**found)
        facts[g.index]["uuid"] = uuid
    return Fresh(tuple(devices), facts, f"{source} (UUIDs from NVML)")


def _card_resource(card: DrmCard) -> str:
    if card.vendor == AMD_VENDOR:
        return AMD_GPU
    if card.vendor == INTEL_VENDOR:
        return INTEL_GPUS.get(card.driver, "")
    return ""


def _card_refusal(card: DrmCard) -> str:
    where = f"{card.name} ({card.pci})"
    if card.vendor == AMD_VENDOR:
        if card.compute_partition not in ("", WHOLE_COMPUTE) or card.memory_partition not in ("", WHOLE_MEMORY):
            return (
                f"AMD GPU {where} is partitioned (compute {card.compute_partition or '-'}, memory "
                f"{card.memory_partition or '-'}; whole GPUs are {WHOLE_COMPUTE}/{WHOLE_MEMORY})"
            )
    elif card.problem:
        return f"Intel GPU {where}: {card.problem}"
    elif card.virtual_function:
        return f"Intel GPU {where} is an SR-IOV virtual function"
    elif card.sriov_vfs > 0:
        return f"Intel GPU {where} has {card.sriov_vfs} SR-IOV virtual function(s) enabled"
    return ""


def from_cards(sysfs: str, cards: Sequence[DrmCard]) -> Fresh:
    """The AMD and Intel GPUs of the DRM cards (see the module docstring); an empty result
    (no source) when there are none."""
    source = f"sysfs {sysfs}/class/drm"
    ours = sorted((c for c in cards if _card_resource(c)), key=lambda c: c.pci)
    if not ours:
        return Fresh()
    refusals = [r for c in ours if (r := _card_refusal(c))]
    if refusals:
        return Fresh(
            source=source,
            refusal=f"{source}: " + "; ".join(refusals[:4]) + ": a node with no recorded inventory is "
            "published from whole GPUs only",
        )
    devices = tuple(
        InventoryDevice(resourceName=_card_resource(c), deviceID=c.pci, numaNodes=[] if c.numa is None else [c.numa])
        for c in dict((c.pci, c) for c in ours).values()
    )
    return Fresh(devices, {}, source)
