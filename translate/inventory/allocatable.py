"""The kubelet's device-plugin inventory, grouped per device (pure).

The PodResources ``GetAllocatableResources`` answer in its protobuf JSON mapping
(``{"devices": [{"resourceName": str, "deviceIds": [str], "topology": {"nodes": [{"ID": int}]}}]}``)
lists one entry per (resource, device ID, NUMA node) (the kubelet's
``containerDevicesFromResourceDeviceInstances``, kubernetes/kubernetes ``pkg/kubelet/cm``):
:func:`group_allocatable` groups it into :class:`InventoryDevice` dicts, the form the bridge records
while a node is legacy; :class:`DeviceId` names one device (legacy resource, kubelet device ID)
wherever the bridge refers to it. Time-slicing replicas carry IDs like ``GPU-x::3`` (``NewAnnotatedID`` in
https://github.com/NVIDIA/k8s-device-plugin/blob/main/internal/rm/devices.go): :func:`split_replica`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from dra_bridge.translate.errors import InventoryError

_REPLICA_RE = re.compile(r"(?P<base>.+)::(?P<n>0|[1-9][0-9]*)")


class InventoryDevice(TypedDict):
    """One device as the kubelet offers it, NUMA entries grouped (also the recorded state form)."""

    resourceName: str
    deviceID: str
    numaNodes: list[int]


@dataclass(frozen=True, order=True)
class DeviceId:
    """One device as the kubelet's device plugin named it: its legacy resource and device ID
    (a replica ``GPU-x::3`` is its own device; :attr:`base` is ``GPU-x``)."""

    resource: str
    device_id: str

    @property
    def base(self) -> str:
        """The device ID without a replica suffix (the GPU's UUID for an NVIDIA replica)."""
        return split_replica(self.device_id)[0]

    @classmethod
    def of(cls, device: InventoryDevice) -> DeviceId:
        """The identity of a recorded or offered device."""
        return cls(device["resourceName"], device["deviceID"])

    def __str__(self) -> str:
        return f"{self.resource} {self.device_id}"


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
    """``GPU-x::3`` -> (``GPU-x``, 3); an ID without ``::n`` -> (ID, None) (NVIDIA's ``AnnotatedID``)."""
    m = _REPLICA_RE.fullmatch(device_id)
    return (m.group("base"), int(m.group("n"))) if m else (device_id, None)
