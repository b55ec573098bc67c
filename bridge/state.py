"""Node-local inventory state: what the device plugin offered while the node was legacy.

One versioned JSON file (docs/design.md D20), ``<state dir>/inventory.json``::

    {"apiVersion": "state.dra-bridge.io/v1", "kind": "Inventory", "node": str,
     "recordedAt": float (unix seconds),
     "devices": [{"resourceName": str, "deviceID": str, "numaNodes": [int]}],
     "labels": {GFD label: value},            # the node's nvidia.com/* labels when recorded
     "nvml": {uuid: NvmlFacts},               # empty without NVML
     "allocateEdits": {resourceName: {"devices": {deviceID: CDI containerEdits}, "dropped": [str]}}}
                                              # optional (older files lack it): the composing part
                                              # of the device plugins' Allocate answers
     "pciAddresses": {resourceName: {deviceID: PCI address}}}
                                              # optional: each device's stable identity, read from
                                              # sysfs when recorded (docs/design.md D40)

Only what cannot be re-derived once the device plugin is gone is kept; the slices are
recomputed by ``translate.inventory``. Writes are atomic (temp file in the same directory,
fsync, rename, fsync of the directory), so a crash or reboot leaves the old or the new file,
never a torn one. A missing file means an empty inventory; an unreadable one raises
:class:`~bridge.errors.StateError` and is never overwritten silently (the agent keeps running
and reports it).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from dra_bridge.bridge.atomic import read_state, write_atomic
from dra_bridge.bridge.errors import StateError
from dra_bridge.translate.allocate_edits import ResourceEdits
from dra_bridge.translate.inventory.allocatable import InventoryDevice
from dra_bridge.translate.inventory.device_facts import NvmlFacts

logger = logging.getLogger(__name__)

STATE_API_VERSION = "state.dra-bridge.io/v1"
STATE_FILE = "inventory.json"


@dataclass(frozen=True)
class Inventory:
    """A recorded inventory (immutable; build a new one to change it)."""

    node: str = ""
    devices: tuple[InventoryDevice, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    nvml: dict[str, NvmlFacts] = field(default_factory=dict)
    recorded_at: float = 0.0
    edits: dict[str, ResourceEdits] = field(default_factory=dict)
    identities: dict[str, dict[str, str]] = field(default_factory=dict)
    """resource -> device ID -> PCI address, as sysfs said when the inventory was recorded (the
    device plugin's IDs then named this boot's cards: Intel's ``card0-0`` follows probe order)."""

    @property
    def empty(self) -> bool:
        """True when no device is recorded."""
        return not self.devices

    def device_ids(self) -> set[str]:
        """Every recorded kubelet device ID."""
        return {d["deviceID"] for d in self.devices}

    def resources(self) -> set[str]:
        """Every recorded legacy resource name."""
        return {d["resourceName"] for d in self.devices}

    def to_json(self) -> dict[str, Any]:
        """The versioned JSON document."""
        return {
            "apiVersion": STATE_API_VERSION,
            "kind": "Inventory",
            "node": self.node,
            "recordedAt": self.recorded_at,
            "devices": [dict(d) for d in self.devices],
            "labels": dict(sorted(self.labels.items())),
            "nvml": {k: dict(v) for k, v in sorted(self.nvml.items())},
            "allocateEdits": {
                k: {"devices": dict(v["devices"]), "dropped": list(v["dropped"])} for k, v in sorted(self.edits.items())
            },
            "pciAddresses": {k: dict(sorted(v.items())) for k, v in sorted(self.identities.items())},
        }


def _edits(raw: object, path: Path) -> dict[str, ResourceEdits]:
    if not isinstance(raw, dict):
        raise StateError(f"{path}: allocateEdits must be an object keyed by resource name")
    out: dict[str, ResourceEdits] = {}
    for resource, entry in raw.items():
        devices = entry.get("devices") if isinstance(entry, dict) else None
        dropped = entry.get("dropped", []) if isinstance(entry, dict) else None
        if (
            not isinstance(devices, dict)
            or not all(isinstance(e, dict) for e in devices.values())
            or not isinstance(dropped, list)
            or not all(isinstance(x, str) for x in dropped)
        ):
            raise StateError(
                f"{path}: allocateEdits[{resource}] is not {{devices: {{deviceID: edits}}, dropped: [str]}}"
            )
        out[str(resource)] = ResourceEdits(devices={str(k): dict(v) for k, v in devices.items()}, dropped=list(dropped))
    return out


def _parse(doc: object, path: Path) -> Inventory:
    if not isinstance(doc, dict):
        raise StateError(f"{path}: expected a JSON object")
    if doc.get("apiVersion") != STATE_API_VERSION:
        raise StateError(f"{path}: apiVersion {doc.get('apiVersion')!r} is not {STATE_API_VERSION}")
    devices = []
    for i, raw in enumerate(doc.get("devices") or []):
        if (
            not isinstance(raw, dict)
            or not isinstance(raw.get("resourceName"), str)
            or not isinstance(raw.get("deviceID"), str)
            or not all(isinstance(n, int) for n in raw.get("numaNodes", []))
        ):
            raise StateError(f"{path}: devices[{i}] is not {{resourceName, deviceID, numaNodes}}")
        devices.append(
            InventoryDevice(
                resourceName=raw["resourceName"], deviceID=raw["deviceID"], numaNodes=list(raw.get("numaNodes", []))
            )
        )
    labels = doc.get("labels") or {}
    nvml = doc.get("nvml") or {}
    if not isinstance(labels, dict) or not isinstance(nvml, dict):
        raise StateError(f"{path}: labels and nvml must be objects")
    return Inventory(
        node=str(doc.get("node", "")),
        devices=tuple(devices),
        labels={str(k): str(v) for k, v in labels.items()},
        nvml={str(k): cast(NvmlFacts, dict(v)) for k, v in nvml.items() if isinstance(v, dict)},
        recorded_at=float(doc.get("recordedAt", 0.0)),
        edits=_edits(doc.get("allocateEdits") or {}, path),
        identities=_identities(doc.get("pciAddresses") or {}, path),
    )


def _identities(raw: object, path: Path) -> dict[str, dict[str, str]]:
    if not isinstance(raw, dict) or not all(
        isinstance(v, dict) and all(isinstance(a, str) for a in v.values()) for v in raw.values()
    ):
        raise StateError(f"{path}: pciAddresses is not {{resourceName: {{deviceID: PCI address}}}}")
    return {str(k): {str(i): a for i, a in v.items()} for k, v in raw.items()}


class InventoryStore:
    """Reads and atomically writes the inventory file under ``state_dir``."""

    def __init__(self, state_dir: str | Path) -> None:
        self.path = Path(state_dir) / STATE_FILE

    def load(self) -> Inventory:
        """The recorded inventory; empty when the file does not exist. Raises StateError."""
        try:
            text = read_state(self.path)  # bounded: a regular file of at most MAX_STATE_FILE_BYTES
        except OSError as exc:
            raise StateError(f"cannot read {self.path}: {exc}") from exc
        if text is None:
            return Inventory()
        try:
            doc = json.loads(text)
        except ValueError as exc:  # JSONDecodeError, or an integer too long to convert
            raise StateError(f"{self.path}: not valid JSON: {exc}") from exc
        return _parse(doc, self.path)

    def save(self, inventory: Inventory) -> None:
        """Write atomically: temp file, fsync, rename, fsync the directory. Raises StateError."""
        data = json.dumps(inventory.to_json(), indent=1, sort_keys=True).encode("utf-8")
        try:
            write_atomic(self.path, data)
        except OSError as exc:
            raise StateError(f"cannot write {self.path}: {exc}") from exc
        logger.debug("inventory written to %s (%d devices)", self.path, len(inventory.devices))
