"""The prepared-claim checkpoint: which claims this node has prepared, kept across restarts.

One versioned JSON file (docs/design.md D20), ``<state dir>/prepared-claims.json``::

    {"apiVersion": "checkpoint.dra-bridge.io/v1", "kind": "PreparedClaims",
     "bootID": str,                              # /proc/sys/kernel/random/boot_id when written
     "claims": {<claim UID>: {"namespace": str, "name": str,
                              "devices": [{"requestNames": [str], "poolName": str, "deviceName": str,
                                           "cdiDeviceIDs": [str], "resourceName": str, "deviceID": str,
                                           "adminAccess": bool,   # optional: the result's adminAccess
                                           "edits": {"source": str, "spec": {...}, "device": {...}}}]}}}
                                           # optional: the edits our spec gives it

Kept: the answer the kubelet got (so a repeated Prepare answers the same, and Unprepare works
from this file alone, after the claim is deleted and after the node left DRA mode) and each
device's legacy resource and device ID (so a CDI spec lost with a tmpfs ``/var/run/cdi`` at a
reboot is rewritten without the API server, identically: ``edits`` holds the device's edits,
recorded Allocate answer or static recipe, as an object; entries written before, which hold them
as a JSON string, are still read; older entries without it fall back to looking them up).
Written atomically (:mod:`bridge.atomic`); a missing file is an empty checkpoint; an unreadable
one raises :class:`CheckpointError` and is never overwritten.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dra_bridge.bridge.atomic import write_atomic
from dra_bridge.bridge.errors import CheckpointError
from dra_bridge.translate.catalog_edits import DeviceEdits
from dra_bridge.translate.cdi import PreparedDevice
from dra_bridge.translate.inventory.allocatable import DeviceId

CHECKPOINT_API_VERSION = "checkpoint.dra-bridge.io/v1"
CHECKPOINT_FILE = "prepared-claims.json"
BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"


def read_boot_id(path: str = BOOT_ID_FILE) -> str:
    """The kernel's boot ID (changes at every boot); empty when unreadable (not Linux)."""
    try:
        return Path(path).read_text("ascii").strip()
    except OSError:
        return ""


@dataclass(frozen=True)
class PreparedClaim:
    """One checkpointed claim."""

    namespace: str
    name: str
    devices: tuple[PreparedDevice, ...]


@dataclass
class Checkpoint:
    """The file's content: ``boot_id`` when written, ``claims`` by UID."""

    boot_id: str = ""
    claims: dict[str, PreparedClaim] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The versioned JSON document."""
        return {
            "apiVersion": CHECKPOINT_API_VERSION,
            "kind": "PreparedClaims",
            "bootID": self.boot_id,
            "claims": {
                uid: {"namespace": c.namespace, "name": c.name, "devices": [_device_json(d) for d in c.devices]}
                for uid, c in sorted(self.claims.items())
            },
        }


def _device_json(d: PreparedDevice) -> dict[str, Any]:
    out: dict[str, Any] = {
        "requestNames": list(d.request_names),
        "poolName": d.pool_name,
        "deviceName": d.device_name,
        "cdiDeviceIDs": list(d.cdi_device_ids),
        "resourceName": d.device.resource,
        "deviceID": d.device.device_id,
    }
    if d.admin:
        out["adminAccess"] = True
    if d.edits is not None:
        out["edits"] = {"source": d.edits.source, "spec": dict(d.edits.spec), "device": dict(d.edits.device)}
    return out


def _edits(raw: Any) -> DeviceEdits | None:
    """A device's kept edits: an object, or (entries written before) the same as JSON text."""
    if raw is None or raw == "":
        return None
    doc = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(doc, dict) or not isinstance(doc.get("spec"), dict) or not isinstance(doc.get("device"), dict):
        raise ValueError("edits must be {source, spec, device}")
    return DeviceEdits(str(doc["source"]), dict(doc["spec"]), dict(doc["device"]))


def _strings(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise ValueError("expected a list of strings")
    return tuple(raw)


def parse(doc: Any, source: str) -> Checkpoint:
    """A checkpoint from its JSON document; CheckpointError naming ``source`` and the rule."""
    if not isinstance(doc, dict) or doc.get("apiVersion") != CHECKPOINT_API_VERSION:
        raise CheckpointError(f"{source}: not a {CHECKPOINT_API_VERSION} checkpoint")
    claims: dict[str, PreparedClaim] = {}
    raw_claims = doc.get("claims") or {}
    if not isinstance(raw_claims, dict):
        raise CheckpointError(f"{source}: claims must be an object keyed by claim UID")
    for uid, raw in raw_claims.items():
        try:
            devices = tuple(
                PreparedDevice(
                    _strings(d["requestNames"]),
                    str(d["poolName"]),
                    str(d["deviceName"]),
                    _strings(d["cdiDeviceIDs"]),
                    DeviceId(str(d.get("resourceName", "")), str(d.get("deviceID", ""))),
                    _edits(d.get("edits")),
                    d.get("adminAccess") is True,
                )
                for d in raw["devices"]
            )
            claims[uid] = PreparedClaim(str(raw["namespace"]), str(raw["name"]), devices)
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"{source}: claims[{uid}] is malformed ({exc!r})") from exc
    return Checkpoint(str(doc.get("bootID", "")), claims)


class CheckpointStore:
    """Reads and atomically writes ``<state dir>/prepared-claims.json``; ``boot_id`` is injectable."""

    def __init__(self, state_dir: str | Path, boot_id: Callable[[], str] = read_boot_id) -> None:
        self.path = Path(state_dir) / CHECKPOINT_FILE
        self.boot_id = boot_id

    def load(self) -> Checkpoint:
        """The checkpoint; empty when the file does not exist. Raises CheckpointError."""
        try:
            text = self.path.read_text("utf-8")
        except FileNotFoundError:
            return Checkpoint()
        except OSError as exc:
            raise CheckpointError(f"cannot read {self.path}: {exc}") from exc
        try:
            return parse(json.loads(text), str(self.path))
        except json.JSONDecodeError as exc:
            raise CheckpointError(f"{self.path}: not valid JSON: {exc}") from exc

    def save(self, checkpoint: Checkpoint) -> None:
        """Stamp the current boot ID and write atomically. Raises CheckpointError."""
        checkpoint.boot_id = self.boot_id()
        data = json.dumps(checkpoint.to_json(), indent=1, sort_keys=True).encode("utf-8")
        try:
            write_atomic(self.path, data, 0o600)
        except OSError as exc:
            raise CheckpointError(f"cannot write {self.path}: {exc}") from exc
