"""The prepared-claim checkpoint: which claims this node has prepared, kept across restarts.

One versioned JSON file (docs/design.md D20), ``<state dir>/prepared-claims.json``::

    {"apiVersion": "checkpoint.dra-bridge.io/v1", "kind": "PreparedClaims",
     "minor": int,                               # optional (0): the newest minor whose fields it may hold
     "bootID": str,                              # /proc/sys/kernel/random/boot_id when written
     "claims": {<claim UID>: {"namespace": str, "name": str,
                              "devices": [{"requestNames": [str], "poolName": str, "deviceName": str,
                                           "cdiDeviceIDs": [str], "resourceName": str, "deviceID": str,
                                           "adminAccess": bool,   # optional: the result's adminAccess
                                           "deviceEdits": {"source": str, "spec": {...}, "device": {...}}}]}}}
                                           # optional: the edits our spec gives it (minor 2; before
                                           # it, "edits": the same as JSON text)
                                           "pciAddress": str}]}}}  # optional (minor 3): the device's
                                           # identity, its DRM nodes derived from it again

Kept: the answer the kubelet got (so a repeated Prepare answers the same, and Unprepare works
from this file alone, after the claim is deleted and after the node left DRA mode) and each
device's legacy resource and device ID (so a CDI spec lost with a tmpfs ``/var/run/cdi`` at a
reboot is rewritten without the API server, identically: ``deviceEdits`` holds the device's
edits, recorded Allocate answer or static recipe, as an object; entries written before, which hold
them as JSON text in ``edits``, are still read; older entries without either fall back to looking
them up). Written atomically (:mod:`bridge.atomic`); a missing file is an empty checkpoint; an
unreadable one raises :class:`CheckpointError` and is never overwritten.

Versions (docs/design.md D29): a reader accepts ``v1`` of any ``minor`` (a minor only adds
optional fields) and keeps every field it does not know, at the top level, per claim and per
device, writing them back unchanged, with the larger of its own minor and the file's: an agent
rolled back to an older image never strips what a newer one recorded. Any other apiVersion is
unreadable (:class:`CheckpointError`): the caller then knows nothing about prepared claims, which
is not the same as knowing there are none. Minor 2 added ``adminAccess`` and ``deviceEdits``: a
field never changes its type, so the edits as an object got a new name (a minor-1 reader keeps
``deviceEdits`` unknown and unchanged, and finds no ``edits`` text it would misread). Minor 3 added
``pciAddress``: the stable identity of a device whose edits hold DRM nodes; the nodes in
``deviceEdits`` are never replayed as they are, but derived again from it (docs/design.md D40).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dra_bridge.bridge.atomic import read_state, write_atomic
from dra_bridge.bridge.errors import CheckpointError
from dra_bridge.translate.catalog_edits import DeviceEdits
from dra_bridge.translate.cdi import PreparedDevice
from dra_bridge.translate.inventory.allocatable import DeviceId

CHECKPOINT_API_VERSION = "checkpoint.dra-bridge.io/v1"
CHECKPOINT_MINOR = 3
"""The minor this writer writes: 1 added ``minor`` itself and the keeping of unknown fields; 2
added ``adminAccess`` and ``deviceEdits`` (the edits as an object); 3 ``pciAddress``."""
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
    """One checkpointed claim; ``extra`` and ``device_extra`` (one mapping per device, or empty) are
    the fields a newer writer recorded that this reader does not know, written back as they were."""

    namespace: str
    name: str
    devices: tuple[PreparedDevice, ...]
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    device_extra: tuple[dict[str, Any], ...] = field(default=(), compare=False)

    def to_json(self) -> dict[str, Any]:
        """The claim's entry in the document."""
        extras = self.device_extra or tuple({} for _ in self.devices)
        devices = [e | _device_json(d) for d, e in zip(self.devices, extras, strict=True)]
        return self.extra | {"namespace": self.namespace, "name": self.name, "devices": devices}


@dataclass
class Checkpoint:
    """The file's content: ``boot_id`` when written, ``claims`` by UID; ``minor`` and ``extra`` as
    read (the newest minor the document may hold, and the top-level fields this reader does not know)."""

    boot_id: str = ""
    claims: dict[str, PreparedClaim] = field(default_factory=dict)
    minor: int = CHECKPOINT_MINOR
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The versioned JSON document."""
        return self.extra | {
            "apiVersion": CHECKPOINT_API_VERSION,
            "kind": "PreparedClaims",
            "minor": max(self.minor, CHECKPOINT_MINOR),
            "bootID": self.boot_id,
            "claims": {uid: c.to_json() for uid, c in sorted(self.claims.items())},
        }


_TOP_FIELDS = frozenset({"apiVersion", "kind", "minor", "bootID", "claims"})
_CLAIM_FIELDS = frozenset({"namespace", "name", "devices"})
_DEVICE_FIELDS = frozenset(
    {
        "requestNames",
        "poolName",
        "deviceName",
        "cdiDeviceIDs",
        "resourceName",
        "deviceID",
        "adminAccess",
        "edits",
        "deviceEdits",
        "pciAddress",
    }
)


def _unknown(raw: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in raw.items() if k not in known}


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
        out["deviceEdits"] = {"source": d.edits.source, "spec": dict(d.edits.spec), "device": dict(d.edits.device)}
        if d.edits.identity:
            out["pciAddress"] = d.edits.identity
    return out


def _edits(raw: Any, identity: Any = "") -> DeviceEdits | None:
    """A device's kept edits: an object, or (entries written before) the same as JSON text."""
    if raw is None or raw == "":
        return None
    if not isinstance(identity, str):
        raise ValueError("pciAddress must be a string")
    doc = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(doc, dict) or not isinstance(doc.get("spec"), dict) or not isinstance(doc.get("device"), dict):
        raise ValueError("edits must be {source, spec, device}")
    return DeviceEdits(str(doc["source"]), dict(doc["spec"]), dict(doc["device"]), identity)


def _strings(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise ValueError("expected a list of strings")
    return tuple(raw)


def parse(doc: Any, source: str) -> Checkpoint:
    """A checkpoint from its JSON document; CheckpointError naming ``source`` and the rule."""
    if not isinstance(doc, dict) or doc.get("apiVersion") != CHECKPOINT_API_VERSION:
        found = doc.get("apiVersion") if isinstance(doc, dict) else None
        raise CheckpointError(f"{source}: not a {CHECKPOINT_API_VERSION} checkpoint (apiVersion {found!r})")
    minor = doc.get("minor", 0)
    if not isinstance(minor, int) or isinstance(minor, bool) or minor < 0:
        raise CheckpointError(f"{source}: minor must be an integer >= 0, got {minor!r}")
    claims: dict[str, PreparedClaim] = {}
    raw_claims = doc.get("claims", {}) if doc.get("claims") is not None else {}
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
                    _edits(d.get("deviceEdits", d.get("edits")), d.get("pciAddress", "")),
                    d.get("adminAccess") is True,
                )
                for d in raw["devices"]
            )
            device_extra = tuple(_unknown(d, _DEVICE_FIELDS) for d in raw["devices"])
            claims[uid] = PreparedClaim(
                str(raw["namespace"]),
                str(raw["name"]),
                devices,
                _unknown(raw, _CLAIM_FIELDS),
                device_extra if any(device_extra) else (),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CheckpointError(f"{source}: claims[{uid}] is malformed ({exc!r})") from exc
    return Checkpoint(str(doc.get("bootID", "")), claims, minor, _unknown(doc, _TOP_FIELDS))


class CheckpointStore:
    """Reads and atomically writes ``<state dir>/prepared-claims.json``; ``boot_id`` is injectable."""

    def __init__(self, state_dir: str | Path, boot_id: Callable[[], str] = read_boot_id) -> None:
        self.path = Path(state_dir) / CHECKPOINT_FILE
        self.boot_id = boot_id

    def load(self) -> Checkpoint:
        """The checkpoint; empty when the file does not exist. Raises CheckpointError."""
        try:
            text = read_state(self.path)  # bounded: a regular file of at most MAX_STATE_FILE_BYTES
        except OSError as exc:
            raise CheckpointError(f"cannot read {self.path}: {exc}") from exc
        if text is None:
            return Checkpoint()
        try:
            doc = json.loads(text)
        except ValueError as exc:  # JSONDecodeError, or an integer too long to convert
            raise CheckpointError(f"{self.path}: not valid JSON: {exc}") from exc
        return parse(doc, str(self.path))

    def save(self, checkpoint: Checkpoint) -> None:
        """Stamp the current boot ID and write atomically. Raises CheckpointError."""
        checkpoint.boot_id = self.boot_id()
        data = json.dumps(checkpoint.to_json(), indent=1, sort_keys=True).encode("utf-8")
        try:
            write_atomic(self.path, data, 0o600)
        except OSError as exc:
            raise CheckpointError(f"cannot write {self.path}: {exc}") from exc
