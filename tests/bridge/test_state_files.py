"""The node agent's state files (the inventory, the prepared-claims checkpoint) are read bounded:
a regular file of at most MAX_STATE_FILE_BYTES; a device, a FIFO, a directory or a larger file is
unreadable (for the checkpoint: Unknown, as any unreadable one), never read into memory.
``dra-bridge inventory`` reports the checkpoint too."""

from __future__ import annotations

import json
import os
import resource
from pathlib import Path

import pytest

from dra_bridge.bridge.atomic import MAX_STATE_FILE_BYTES
from dra_bridge.bridge.cli import EXIT_CHECKPOINT_UNREADABLE, inventory
from dra_bridge.bridge.errors import CheckpointError, StateError
from dra_bridge.bridge.kubeletplugin.checkpoint import CHECKPOINT_FILE, Checkpoint, CheckpointStore
from dra_bridge.bridge.settings import Settings
from dra_bridge.bridge.state import STATE_FILE, InventoryStore
from tests.bridge.conftest import KubeletServer

ROOT = Path(__file__).resolve().parents[2]


def _make(kind: str, path: Path) -> None:
    if kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:  # over the limit: sparse, so the test writes nothing
        with path.open("wb") as f:
            f.truncate(MAX_STATE_FILE_BYTES + 1)


KINDS = ["dev-zero", "fifo", "directory", "too-large"]


def _max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("kind", KINDS)
def test_an_inventory_that_is_not_a_bounded_regular_file_is_unreadable(kind: str, tmp_path: Path) -> None:
    _make(kind, tmp_path / STATE_FILE)
    before = _max_rss_mib()
    with pytest.raises(StateError, match=STATE_FILE) as err:
        InventoryStore(tmp_path).load()
    assert _max_rss_mib() - before < 64
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("kind", KINDS)
def test_a_checkpoint_that_is_not_a_bounded_regular_file_is_unreadable(kind: str, tmp_path: Path) -> None:
    _make(kind, tmp_path / CHECKPOINT_FILE)
    before = _max_rss_mib()
    with pytest.raises(CheckpointError, match=CHECKPOINT_FILE):
        CheckpointStore(tmp_path, boot_id=lambda: "b").load()
    assert _max_rss_mib() - before < 64


def test_a_state_file_that_is_not_utf8_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / STATE_FILE).write_bytes(b'{"node": "\xff"}')
    (tmp_path / CHECKPOINT_FILE).write_bytes(b'{"bootID": "\xff"}')
    with pytest.raises(StateError, match="UTF-8"):
        InventoryStore(tmp_path).load()
    with pytest.raises(CheckpointError, match="UTF-8"):
        CheckpointStore(tmp_path, boot_id=lambda: "b").load()


def test_the_limit_is_stated_in_the_docs() -> None:
    text = (ROOT / "docs" / "bridge.md").read_text("utf-8")
    assert f"{MAX_STATE_FILE_BYTES >> 20} MiB" in text


def _settings(kubelet: KubeletServer, state: Path) -> Settings:
    return Settings.from_args(["--kubelet-dir", str(kubelet.dir), "--state-dir", str(state)], {})


async def test_inventory_reports_a_readable_checkpoint_with_its_count(kubelet: KubeletServer, tmp_path: Path) -> None:
    import io

    CheckpointStore(tmp_path, boot_id=lambda: "b").save(Checkpoint())
    out = io.StringIO()
    assert await inventory(_settings(kubelet, tmp_path), False, out) == 0
    assert f"checkpoint ({tmp_path / CHECKPOINT_FILE}): 0 prepared claim(s)" in out.getvalue(), out.getvalue()


async def test_inventory_without_a_checkpoint_says_so(kubelet: KubeletServer, tmp_path: Path) -> None:
    import io

    out = io.StringIO()
    assert await inventory(_settings(kubelet, tmp_path), False, out) == 0
    assert f"checkpoint ({tmp_path / CHECKPOINT_FILE}): none, 0 prepared claim(s)" in out.getvalue(), out.getvalue()


@pytest.mark.parametrize(
    "content",
    ["garbage{", "[]", json.dumps({"apiVersion": "checkpoint.dra-bridge.io/v2", "claims": {}})],
    ids=["not-json", "a-list", "another-version"],
)
async def test_inventory_reports_an_unreadable_checkpoint_and_exits_non_zero(
    content: str, kubelet: KubeletServer, tmp_path: Path
) -> None:
    import io

    (tmp_path / CHECKPOINT_FILE).write_text(content, encoding="utf-8")
    out = io.StringIO()
    assert await inventory(_settings(kubelet, tmp_path), False, out) == EXIT_CHECKPOINT_UNREADABLE
    lines = [line for line in out.getvalue().splitlines() if line.startswith("checkpoint (")]
    assert len(lines) == 1 and ": unreadable: " in lines[0], out.getvalue()
    assert EXIT_CHECKPOINT_UNREADABLE not in (0, 1)
