"""A claim UID that is not a plain name never reaches the file system (Prepare, Unprepare)."""

from __future__ import annotations

from pathlib import Path

from dra_bridge.bridge.host_devices import is_block_device
from dra_bridge.bridge.kubeletplugin.cdi_specs import SpecIndex
from dra_bridge.bridge.kubeletplugin.checkpoint import CheckpointStore
from dra_bridge.bridge.kubeletplugin.claims import ClaimPreparer, ClaimRef
from dra_bridge.bridge.ports import StaticView
from tests.bridge.draplugin_fixtures import INVENTORY, NODE, claim, fake_api


def _preparer(tmp_path: Path, claims: list[dict[str, object]] | None = None) -> ClaimPreparer:
    cdi = tmp_path / "cdi" / "run"
    cdi.mkdir(parents=True)
    store = CheckpointStore(tmp_path / "state", boot_id=lambda: "b1")
    (tmp_path / "state").mkdir()
    preparer = ClaimPreparer(fake_api(list(claims or [])), NODE, store, cdi, SpecIndex([cdi]), StaticView(INVENTORY))
    preparer.recover()
    return preparer


async def test_unprepare_of_a_uid_with_a_path_never_deletes_outside_the_cdi_directory(tmp_path: Path) -> None:
    preparer = _preparer(tmp_path)
    (preparer.cdi_dir / "dra-bridge.io-claim_x").mkdir()  # a matching directory makes the path resolve
    victim = tmp_path / "cdi" / "victim.json"
    victim.write_text("{}")
    out = await preparer.unprepare([ClaimRef("ns", "c", "x/../../victim")])
    assert victim.exists()
    assert "not a plain name" in out["x/../../victim"].error


async def test_prepare_of_a_uid_with_a_path_writes_nothing(tmp_path: Path) -> None:
    uid = "x/../../evil"
    preparer = _preparer(tmp_path, [claim(uid, "c", [("a", "dra-bridge.io", NODE, "gpu-amd0")])])
    (preparer.cdi_dir / "dra-bridge.io-claim_x").mkdir()
    out = await preparer.prepare([ClaimRef("ns", "c", uid)])
    assert "not a plain name" in out[uid].error
    assert not (tmp_path / "cdi" / "evil.json").exists() and uid not in preparer.checkpoint.claims


def test_the_host_block_check_finds_a_block_device_and_not_a_character_device(tmp_path: Path) -> None:
    blocks = [p for p in ("/dev/loop0", "/dev/sda", "/dev/vda", "/dev/nvme0n1") if Path(p).is_block_device()]
    assert all(is_block_device(p) for p in blocks)
    assert not is_block_device("/dev/null") and not is_block_device(str(tmp_path / "missing"))
