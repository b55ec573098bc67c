"""A GPU's DRM device nodes by its stable identity, its PCI address (pure; docs/design.md D40).

DRM minor numbers (``/dev/dri/cardN``, ``renderDN``) follow probe order, not the PCI address, and
may swap at a reboot; Intel's device-plugin IDs (``card0-0``) follow them too. So the bridge keeps a
device's PCI address (from ``/sys/class/drm/cardN/device``, read by :mod:`bridge.drm_sysfs` into
:class:`DrmNode` rows) and derives its nodes again from sysfs at each Prepare:

- :func:`identity`: the PCI address of a device ID (AMD's IDs are PCI addresses; Intel's
  ``card<N>-<i>`` names a card, looked up in the table);
- :func:`nodes_for`: the CDI device nodes of a PCI address's card and render nodes at their
  canonical container paths (``/dev/dri/card<N>``, ``/dev/dri/renderD<N>``), minimally specified
  (``type: c``, major and minor from sysfs: the CDI library then does not stat the host path, and
  never meets a ``by-path`` symlink, which it refuses as "not a device node");
- :func:`refresh`: a device's kept edits with every DRM node (``/dev/dri/card*``, ``renderD*``,
  ``by-path/*``) replaced by the nodes its PCI address has now (host paths from before a reboot are
  never replayed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dra_bridge.translate.inventory.identity import pci_address

DRM_KINDS = ("card", "render")
_NAME_RE = re.compile(r"(card|renderD)(\d+)")
_DRM_PATH_RE = re.compile(r"/dev/dri/(card\d+|renderD\d+|by-path/.*)")
_DEV_RE = re.compile(r"(\d+):(\d+)")


@dataclass(frozen=True)
class DrmNode:
    """One ``/sys/class/drm`` entry: ``name`` (``card0``, ``renderD128``), the PCI address of its
    device, and its ``dev`` numbers."""

    name: str
    pci: str
    major: int
    minor: int

    @property
    def kind(self) -> str:
        """``card`` or ``render``."""
        return "card" if self.name.startswith("card") else "render"


def drm_name(name: str) -> bool:
    """Whether a ``/sys/class/drm`` entry is a card or render node (not a connector ``card0-DP-1``)."""
    return bool(_NAME_RE.fullmatch(name))


def parse_dev(text: str) -> tuple[int, int] | None:
    """``226:128`` -> (226, 128); None for anything else."""
    m = _DEV_RE.fullmatch(text.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def identity(device_id: str, table: Sequence[DrmNode]) -> str:
    """The PCI address a device ID names now ("" when unknown): the ID itself when it is one,
    else the card of ``card<N>-<i>`` in ``table``."""
    addr = pci_address(device_id)
    if addr:
        return addr
    card = device_id.split("-", 1)[0]
    return next((n.pci for n in table if n.name == card), "")


def nodes_for(pci: str, table: Sequence[DrmNode], kinds: Sequence[str] = DRM_KINDS) -> list[dict[str, Any]]:
    """The CDI device nodes of ``pci``'s DRM nodes of ``kinds`` (sorted by path); empty when it
    has none of them."""
    found = sorted((n for n in table if n.pci == pci and n.kind in kinds), key=lambda n: n.name)
    return [{"path": f"/dev/dri/{n.name}", "type": "c", "major": n.major, "minor": n.minor} for n in found]


def missing_kinds(pci: str, table: Sequence[DrmNode], kinds: Sequence[str] = DRM_KINDS) -> list[str]:
    """The kinds of ``kinds`` that ``pci`` has no node of."""
    have = {n.kind for n in table if n.pci == pci}
    return [k for k in kinds if k not in have]


def is_drm_path(path: str) -> bool:
    """Whether a container or host path is a DRM card or render node (or a ``by-path`` link)."""
    return bool(_DRM_PATH_RE.fullmatch(path))


def refresh(edits: Mapping[str, Any], pci: str, table: Sequence[DrmNode]) -> dict[str, Any]:
    """``edits`` with its DRM nodes replaced by ``pci``'s nodes now (same kinds), other edits kept."""
    nodes = list(edits.get("deviceNodes") or [])
    drm = [n for n in nodes if is_drm_path(str(n.get("hostPath") or n.get("path", "")))]
    if not drm or not pci:
        return dict(edits)
    kinds = {"render" if "render" in str(n.get("hostPath") or n.get("path")) else "card" for n in drm}
    kept = [n for n in nodes if n not in drm] + nodes_for(pci, table, sorted(kinds))
    return {**edits, "deviceNodes": sorted(kept, key=lambda n: str(n["path"]))}
