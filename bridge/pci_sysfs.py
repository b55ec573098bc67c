"""A PCI device's PCIe root and NUMA node, read from sysfs by its bus ID.

    pci_topology("0000:65:00.0") -> ("pci0000:64", 1)     (pcieRoot or None, numaNode or None)

``/sys/bus/pci/devices/<bus ID>`` is a link to the device's directory under its root complex
(``/sys/devices/pci0000:64/...``), whose ``numa_node`` file holds the node (``-1``: unknown).
The rules that read the values are :func:`translate.inventory.device_facts.pcie_root` and
``numa_node``; this module only reads the files. Never raises: what cannot be read is None.
"""

from __future__ import annotations

import logging
from pathlib import Path

from dra_bridge.translate.inventory.device_facts import numa_node, pcie_root

logger = logging.getLogger(__name__)
SYSFS = Path("/sys")


def pci_topology(bus_id: str, sysfs: Path = SYSFS) -> tuple[str | None, int | None]:
    """(pcieRoot, numaNode) of the PCI device ``bus_id`` (``0000:65:00.0``, lower case), each
    None when sysfs does not say (no such device, no root complex in its path, ``-1``)."""
    if not bus_id or "/" in bus_id:
        return None, None
    link = sysfs / "bus" / "pci" / "devices" / bus_id
    try:
        resolved = link.resolve(strict=True)
    except OSError as exc:
        logger.debug("no sysfs entry for PCI device %s: %s", bus_id, exc)
        return None, None
    try:
        node = numa_node((resolved / "numa_node").read_text(encoding="ascii"))
    except (OSError, UnicodeDecodeError):
        node = None
    return pcie_root(str(resolved)), node
