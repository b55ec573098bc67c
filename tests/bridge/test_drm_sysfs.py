"""The host's DRM nodes read from a sysfs root: card and render nodes with their PCI address."""

from __future__ import annotations

from pathlib import Path

import pytest

from dra_bridge.bridge.drm_sysfs import SYSFS_ENV, read_drm, sysfs_root
from dra_bridge.translate.inventory.drm import DrmNode, identity
from tests.bridge.draplugin_fixtures import fake_sysfs


def test_read_drm_finds_card_and_render_nodes_by_pci_address(tmp_path: Path) -> None:
    sysfs = fake_sysfs(tmp_path, {"0000:65:00.0": (("card2", 226, 2), ("renderD130", 226, 130))})
    (sysfs / "class" / "drm" / "card2-DP-1").mkdir()  # a connector: not a node
    (sysfs / "class" / "drm" / "version").write_text("drm 1.1.0\n")
    table = read_drm(sysfs)
    assert table == (DrmNode("card2", "0000:65:00.0", 226, 2), DrmNode("renderD130", "0000:65:00.0", 226, 130))
    assert identity("card2-0", table) == "0000:65:00.0" and identity("card9-0", table) == ""
    assert read_drm(tmp_path / "missing") == ()


def test_a_test_sysfs_root_is_the_default_only_where_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_sysfs(tmp_path, {"0000:0a:00.0": (("card0", 1, 3),)})
    monkeypatch.delenv(SYSFS_ENV, raising=False)
    assert sysfs_root() == Path("/sys")
    monkeypatch.setenv(SYSFS_ENV, str(tmp_path))
    assert read_drm() == (DrmNode("card0", "0000:0a:00.0", 1, 3),)
