"""The fresh-node inventory: what a node with no recorded inventory publishes (docs/design.md D45).

Used only in DRA mode and only while nothing was recorded while legacy (a recorded inventory
always wins, and a device plugin that starts on the node records one). Each tick reads the
sources again (the rules are :mod:`translate.inventory.fresh`; this module reads the files):

- the NVIDIA container toolkit's CDI spec: the highest-priority ``.json`` / ``.yaml`` file of
  kind ``nvidia.com/gpu`` that passes the CDI rules in the ``--cdi-dir`` directories, with this
  tick's NVML facts (UUIDs of an index-only spec, product, memory and compute capability) and the
  Node's GFD labels (the slices' facts where NVML does not load);
- ``<sysfs>/class/drm/card<N>`` for AMD and Intel GPUs (``DRA_BRIDGE_TEST_SYSFS_ROOT`` in tests:
  :func:`bridge.drm_sysfs.sysfs_root`): the PCI device's ``vendor``, ``driver`` link, ``numa_node``,
  AMD's ``current_compute_partition`` / ``current_memory_partition``, a ``physfn`` link and
  ``sriov_numvfs``.

:class:`FreshSource` returns the inventory (the recorded form, never written to the state
directory) and why the node is refused; a Normal Event ``InventorySource`` names the source
whenever it changes (``inventory from the NVIDIA container toolkit CDI spec /etc/cdi/nvidia.yaml``).
A refusal is the ``inventory`` interlock's reason (the ``PublicationRefused`` Event says it).

A spec file is read only when it is a regular file of at most :data:`bridge.spec_files.MAX_SPEC_BYTES`
(:func:`bridge.atomic.read_state`: opened without blocking, so a FIFO is never waited on), YAML by
:func:`translate.strict_yaml.load_bounded` (duplicate keys and an alias bomb refused), in a
thread (``asyncio.to_thread``: the agent's one loop also serves the DRA plugin and health); a file
that is not is skipped with a reason naming it (logged once per version of it, and named in the
refusal when no toolkit spec is found).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dra_bridge.bridge.drm_sysfs import read_drm, sysfs_root
from dra_bridge.bridge.spec_files import load_spec_file
from dra_bridge.bridge.state import Inventory
from dra_bridge.translate.cdi import spec_file_uid
from dra_bridge.translate.cdi_rules import spec_problems
from dra_bridge.translate.edit_sources import identities
from dra_bridge.translate.inventory.device_facts import NvmlFacts, numa_node
from dra_bridge.translate.inventory.fresh import DrmCard, Fresh, from_cards, from_toolkit, shown
from dra_bridge.translate.inventory.identity import pci_address
from dra_bridge.translate.names import GFD_PREFIX, NVIDIA_TOOLKIT_CDI_KIND

logger = logging.getLogger(__name__)
SPEC_EXTENSIONS = (".json", ".yaml")
EVENT_REASON = "InventorySource"


#: The largest CDI spec file read (docs/bridge.md "Nodes that were never legacy"): the toolkit's
#: spec of an 8-GPU node is some 20 KB.

Parsed = dict[str, tuple[tuple[int, int], tuple[Any, str]]]
"""path -> ((mtime_ns, size), (the parsed file or None, why it is skipped)): a file is parsed
again only when it changed."""


def _parse(path: str, cache: Parsed) -> tuple[Any, str]:
    try:
        st = os.stat(path)
    except OSError as exc:
        return None, f"{path} is unreadable: {exc.strerror or exc}"
    stamp = (st.st_mtime_ns, st.st_size)
    if (hit := cache.get(path)) is not None and hit[0] == stamp:
        return hit[1]
    parsed = load_spec_file(path, st)
    if parsed[1]:
        logger.warning("CDI spec skipped: %s", parsed[1])
    cache[path] = (stamp, parsed)
    return parsed


def toolkit_spec(
    dirs: Sequence[str], cache: Parsed | None = None, skipped: list[str] | None = None
) -> tuple[str, dict[str, Any]] | None:
    """(path, parsed spec) of the toolkit's spec that the runtime would use: the last valid file
    of kind ``nvidia.com/gpu`` in ``dirs`` (increasing priority, files by name; our own per-claim
    specs are never read), or None; why each file that could be one is not, added to ``skipped``."""
    skipped = [] if skipped is None else skipped
    cache = {} if cache is None else cache
    found: tuple[str, dict[str, Any]] | None = None
    for directory in dirs:
        try:
            names = sorted(n for n in os.listdir(directory) if n.endswith(SPEC_EXTENSIONS) and not spec_file_uid(n))
        except OSError:
            continue
        for name in names:
            path = os.path.join(directory, name)
            doc, problem = _parse(path, cache)
            if problem:
                skipped.append(problem)
            elif isinstance(doc, dict) and doc.get("kind") == NVIDIA_TOOLKIT_CDI_KIND:
                if problems := spec_problems(doc):  # the runtime refuses all of it
                    skipped.append(f"{path} breaks the CDI rules: {'; '.join(p[:160] for p in problems[:3])}")
                else:
                    found = (path, doc)
    return found


def _text(path: Path) -> str:
    try:
        return path.read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def read_cards(sysfs: Path) -> list[DrmCard]:
    """Every ``card<N>`` of ``<sysfs>/class/drm`` whose device is a PCI device (never raises)."""
    base = sysfs / "class" / "drm"
    try:
        names = sorted(n for n in os.listdir(base) if n.startswith("card") and n[4:].isdigit())
    except OSError:
        return []
    out = []
    for name in names:
        device = base / name / "device"
        try:
            resolved = device.resolve(strict=True)
        except OSError:
            continue
        pci = pci_address(resolved.name)
        if pci is None:
            continue
        driver = (device / "driver").resolve().name if (device / "driver").exists() else ""
        vfs = _text(device / "sriov_numvfs")
        counted = vfs.isdigit() and len(vfs) <= 9  # int() refuses more than 4300 digits
        out.append(
            DrmCard(
                name=name,
                pci=pci,
                vendor=_text(device / "vendor").lower(),
                driver=driver,
                numa=numa_node(_text(device / "numa_node")),
                compute_partition=_text(device / "current_compute_partition"),
                memory_partition=_text(device / "current_memory_partition"),
                virtual_function=(device / "physfn").exists(),
                sriov_vfs=int(vfs) if counted else 0,
                problem="" if counted or not vfs else f"sriov_numvfs is not a count ({shown(vfs)})",
            )
        )
    return out


def read_fresh(
    dirs: Sequence[str], nvml: Mapping[str, NvmlFacts] | None, sysfs: Path | None = None, cache: Parsed | None = None
) -> Fresh:
    """Both sources combined: their devices, or every refusal; no source at all: a refusal
    that says what was looked for."""
    root = sysfs if sysfs is not None else sysfs_root()
    skipped: list[str] = []
    found = toolkit_spec(dirs, cache, skipped)
    parts = [from_toolkit(found[0], found[1], nvml)] if found is not None else []
    parts += [f] if (f := from_cards(str(root), read_cards(root))).source else []
    refused = [p.refusal for p in parts if p.refusal]
    if not parts:
        return Fresh(
            refusal="no device-plugin inventory was recorded while the node was legacy, and no fresh-node "
            f"source was found: no NVIDIA container toolkit CDI spec (kind {NVIDIA_TOOLKIT_CDI_KIND}) in "
            f"{', '.join(dirs)}" + (f" (skipped: {'; '.join(skipped[:4])})" if skipped else "") + ", no AMD or "
            f"Intel GPU in {root}/class/drm"
        )
    source = "; ".join(p.source for p in parts)
    if refused:
        return Fresh(source=source, refusal="; ".join(refused))
    devices = tuple(d for p in parts for d in p.devices)
    return Fresh(devices, {k: v for p in parts for k, v in p.nvml.items()}, source)


@dataclass
class FreshSource:
    """The fresh-node inventory of each tick, and the Event when its source changes."""

    node: str
    dirs: Sequence[str]
    event: Callable[[str, str, str], None]
    sysfs: Path | None = None
    source: str = ""
    """The source the last Event named ("" before the first, or while refused)."""
    parsed: Parsed = field(default_factory=dict)

    async def inventory(self, nvml: Mapping[str, NvmlFacts] | None, labels: Mapping[str, str]) -> tuple[Inventory, str]:
        """(the inventory, why the node is refused: empty when it is not); the files are read in a thread."""
        fresh = await asyncio.to_thread(read_fresh, self.dirs, nvml, self.sysfs, self.parsed)
        if fresh.refusal:
            self.source = ""
            return Inventory(), fresh.refusal
        gfd = {k: v for k, v in labels.items() if k.startswith(GFD_PREFIX)}
        devices = fresh.devices
        inventory = Inventory(self.node, devices, gfd, fresh.nvml, 0.0, {}, identities(devices, read_drm(self.sysfs)))
        if fresh.source != self.source:
            message = f"inventory from {fresh.source}: {len(devices)} device(s), none recorded while legacy"
            logger.info("%s", message)
            self.event("Normal", EVENT_REASON, message)
            self.source = fresh.source
        return inventory, ""
