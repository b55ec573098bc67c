"""The prepared-claim checkpoint's versioning: ``checkpoint.dra-bridge.io/v1`` of any ``minor`` is
read, fields this reader does not know (top level, per claim, per device) are written back
unchanged, and any other apiVersion is unreadable, never an empty checkpoint (docs/design.md D29)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dra_bridge.bridge.errors import CheckpointError
from dra_bridge.bridge.kubeletplugin.checkpoint import CHECKPOINT_API_VERSION, CHECKPOINT_MINOR, CheckpointStore, parse

DEVICE = {
    "requestNames": ["gpu"],
    "poolName": "node-1",
    "deviceName": "gpu-1",
    "cdiDeviceIDs": ["nvidia.com/gpu=GPU-1"],
    "resourceName": "nvidia.com/gpu",
    "deviceID": "GPU-1",
}


def doc(**top: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": CHECKPOINT_API_VERSION,
        "kind": "PreparedClaims",
        "bootID": "boot-1",
        "claims": {"uid-1": {"namespace": "ns", "name": "c", "devices": [dict(DEVICE)]}},
    }
    return base | top


@pytest.mark.parametrize(
    ("document", "why"),
    [
        (doc(apiVersion="checkpoint.dra-bridge.io/v2"), "checkpoint.dra-bridge.io/v1"),
        (doc(apiVersion="checkpoint.dra-bridge.io/v1beta1"), "checkpoint.dra-bridge.io/v1"),
        ({"kind": "PreparedClaims", "claims": {}}, "checkpoint.dra-bridge.io/v1"),
        (doc(minor="2"), "minor"),
        (doc(minor=-1), "minor"),
        (doc(minor=True), "minor"),
        (doc(claims=[]), "claims"),
        (doc(claims={"uid-1": {"namespace": "ns"}}), "uid-1"),
    ],
    ids=["newer-major", "other-version", "no-version", "minor-string", "minor-negative", "minor-bool", "claims-list",
         "entry-malformed"],
)  # fmt: skip
def test_anything_but_v1_of_an_integer_minor_is_unreadable(document: dict[str, Any], why: str) -> None:
    with pytest.raises(CheckpointError, match=why):
        parse(document, "prepared-claims.json")


@pytest.mark.parametrize("minor", [None, 0, CHECKPOINT_MINOR, CHECKPOINT_MINOR + 7])
def test_v1_of_any_minor_is_read(minor: int | None) -> None:
    document = doc() if minor is None else doc(minor=minor)
    checkpoint = parse(document, "f")
    assert list(checkpoint.claims) == ["uid-1"]
    (device,) = checkpoint.claims["uid-1"].devices
    assert (device.device.device_id, device.cdi_device_ids) == ("GPU-1", ("nvidia.com/gpu=GPU-1",))


def test_fields_a_newer_writer_added_are_written_back_unchanged(tmp_path: Path) -> None:
    newer = doc(minor=CHECKPOINT_MINOR + 3, sharing={"mode": "mps", "n": 4})
    newer["claims"]["uid-1"]["adminAccess"] = True
    newer["claims"]["uid-1"]["devices"][0]["healthProbe"] = {"kind": "nvml"}
    newer["claims"]["uid-2"] = {"namespace": "ns", "name": "d", "devices": [], "owner": "x"}
    store = CheckpointStore(tmp_path, boot_id=lambda: "boot-2")
    store.path.write_text(json.dumps(newer))
    checkpoint = store.load()
    del checkpoint.claims["uid-2"]  # an unprepare by this (older) reader: the rest stays as it was
    store.save(checkpoint)
    written = json.loads(store.path.read_text())
    del newer["claims"]["uid-2"]
    assert written == newer | {"bootID": "boot-2"}, "unknown fields kept, the newer minor kept"


def test_a_fresh_checkpoint_carries_this_writers_minor(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, boot_id=lambda: "b")
    store.save(store.load())
    written = json.loads(store.path.read_text())
    assert (written["apiVersion"], written["minor"]) == (CHECKPOINT_API_VERSION, CHECKPOINT_MINOR)
    assert CHECKPOINT_MINOR >= 1


def test_an_unreadable_file_raises_and_is_not_an_empty_checkpoint(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    store.path.write_text(json.dumps(doc(apiVersion="checkpoint.dra-bridge.io/v2")))
    with pytest.raises(CheckpointError, match="v1"):
        store.load()
    store.path.unlink()
    store.path.mkdir()  # an I/O error (EISDIR), as a permission error would be
    with pytest.raises(CheckpointError, match="cannot read"):
        store.load()
