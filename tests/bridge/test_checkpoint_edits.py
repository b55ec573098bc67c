"""The checkpoint keeps a device's edits as an object, ``deviceEdits`` (no JSON text inside its JSON),
and still reads checkpoints that hold them as text in ``edits``; a device is a DeviceId, its adminAccess kept."""

from __future__ import annotations

import json
from pathlib import Path

from dra_bridge.bridge.kubeletplugin.checkpoint import Checkpoint, CheckpointStore, PreparedClaim
from dra_bridge.translate.catalog_edits import DeviceEdits
from dra_bridge.translate.cdi import PreparedDevice
from dra_bridge.translate.inventory.allocatable import DeviceId

UID = "0a1b2c3d-0000-4000-8000-000000000001"
EDITS = DeviceEdits(
    "recipe", {"deviceNodes": [{"path": "/dev/kfd"}]}, {"deviceNodes": [{"path": "/dev/dri/renderD128"}]}
)
DEVICE = PreparedDevice(
    ("gpu",), "n", "gpu-amd0", (f"dra-bridge.io/claim={UID}-gpu-amd0",), DeviceId("amd.com/gpu", "0000:03:00.0"), EDITS
)


def test_edits_are_written_as_an_object_and_read_back_typed(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, lambda: "b")
    store.save(Checkpoint(claims={UID: PreparedClaim("ns", "c", (DEVICE,))}))
    raw = json.loads(store.path.read_text())["claims"][UID]["devices"][0]
    assert raw["deviceEdits"] == {"source": "recipe", "spec": dict(EDITS.spec), "device": dict(EDITS.device)}
    assert "edits" not in raw, "a minor-1 reader takes edits for JSON text: the object has its own name"
    assert (raw["resourceName"], raw["deviceID"]) == ("amd.com/gpu", "0000:03:00.0") and "adminAccess" not in raw
    (device,) = store.load().claims[UID].devices
    assert device == DEVICE


def test_a_checkpoint_with_edits_as_json_text_is_still_read(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, lambda: "b")
    store.save(Checkpoint(claims={UID: PreparedClaim("ns", "c", (DEVICE,))}))
    doc = json.loads(store.path.read_text())
    entry = doc["claims"][UID]["devices"][0]
    entry["edits"] = json.dumps(entry.pop("deviceEdits"), sort_keys=True, separators=(",", ":"))  # as minor 1 wrote it
    entry["adminAccess"] = True
    store.path.write_text(json.dumps(doc))
    (device,) = store.load().claims[UID].devices
    assert device.edits == EDITS and device.device == DeviceId("amd.com/gpu", "0000:03:00.0") and device.admin
