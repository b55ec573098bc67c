"""The host's DRM card and render nodes, read from ``/sys/class/drm`` (never raises).

    read_drm(Path("/sys")) -> (DrmNode("card1", "0000:03:00.0", 226, 1), ...)

Each ``/sys/class/drm/card<N>`` and ``renderD<N>`` entry has a ``dev`` file (``226:1``) and a
``device`` link to its PCI device's directory, whose name is the PCI address. The rules that use
them are :mod:`translate.inventory.drm`; this module only reads the files. ``sysfs`` is a
parameter so tests can give a sysfs root of their own; ``DRA_BRIDGE_TEST_SYSFS_ROOT`` sets the
default for a whole agent process (:func:`sysfs_root`: a test hook, inert unless set).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from dra_bridge.translate.inventory.drm import DrmNode, drm_name, parse_dev
from dra_bridge.translate.inventory.identity import pci_address

logger = logging.getLogger(__name__)
SYSFS = Path("/sys")
SYSFS_ENV = "DRA_BRIDGE_TEST_SYSFS_ROOT"


def sysfs_root() -> Path:
    """``/sys``, or ``DRA_BRIDGE_TEST_SYSFS_ROOT`` where set (tests only)."""
    return Path(os.environ.get(SYSFS_ENV) or SYSFS)


def read_drm(sysfs: Path | None = None) -> tuple[DrmNode, ...]:
    """Every card and render node of ``<sysfs>/class/drm`` with a PCI device, sorted by name
    (``sysfs`` None: :func:`sysfs_root`)."""
    base = (sysfs if sysfs is not None else sysfs_root()) / "class" / "drm"
    try:
        names = sorted(n for n in os.listdir(base) if drm_name(n))
    except OSError:
        return ()
    out = []
    for name in names:
        try:
            dev = parse_dev((base / name / "dev").read_text("ascii"))
            pci = pci_address((base / name / "device").resolve(strict=True).name)
        except (OSError, UnicodeDecodeError) as exc:
            logger.debug("skipping DRM node %s: %s", name, exc)
            continue
        if dev is not None and pci is not None:
            out.append(DrmNode(name, pci, *dev))
    return tuple(out)
