""" "Publishing since T, with this inventory": the record that lets a restarted agent resume its
slices at once instead of settling again (docs/design.md D43).

One JSON file, ``<state dir>/publishing.json``, written atomically (:mod:`bridge.atomic`)::

    {"apiVersion": "state.dra-bridge.io/v1", "kind": "Publishing",
     "since": float (unix seconds: when the interlocks last started to hold and publication began),
     "inventory": str (sha256 of the recorded inventory it publishes, :func:`inventory_digest`)}

The agent writes it when it decides to publish and removes it when it decides to withdraw, so
the file exists exactly while the node's slices are ours to keep. A restart that finds it, for
the inventory recorded now, skips the settle period (the interlocks still have to hold on the
first tick). A missing, unreadable or foreign file reads as "no record" (settle again: the safe
side). Raises :class:`bridge.errors.StateError` when it cannot be written or removed.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from dra_bridge.bridge.atomic import remove_durably, write_atomic
from dra_bridge.bridge.errors import StateError
from dra_bridge.bridge.state import STATE_API_VERSION, Inventory

logger = logging.getLogger(__name__)

PUBLISHING_FILE = "publishing.json"


def inventory_digest(inventory: Inventory) -> str:
    """A stable digest of what the slices are built from: the devices, GFD labels and NVML facts."""
    doc = inventory.to_json()
    body = {k: doc[k] for k in ("node", "devices", "labels", "nvml")}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class PublishingRecord:
    """Publishing since ``since`` (unix seconds), the inventory of digest ``inventory``."""

    since: float
    inventory: str

    def matches(self, inventory: Inventory) -> bool:
        """Whether this record is for ``inventory`` (an inventory recorded anew settles again)."""
        return self.inventory == inventory_digest(inventory)


class PublishingStore:
    """``<state dir>/publishing.json`` (see the module docstring)."""

    def __init__(self, state_dir: str | Path) -> None:
        self.path = Path(state_dir) / PUBLISHING_FILE

    def load(self) -> PublishingRecord | None:
        """The record, or None when there is none (or it cannot be read: logged)."""
        try:
            doc = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("ignoring the publishing record %s: %s", self.path, exc)
            return None
        try:
            if doc.get("apiVersion") != STATE_API_VERSION or doc.get("kind") != "Publishing":
                raise ValueError(f"not a {STATE_API_VERSION} Publishing record")
            return PublishingRecord(float(doc["since"]), str(doc["inventory"]))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            logger.warning("ignoring the publishing record %s: %s", self.path, exc)
            return None

    def save(self, record: PublishingRecord) -> None:
        """Write the record atomically. Raises StateError."""
        doc = {"apiVersion": STATE_API_VERSION, "kind": "Publishing", "since": record.since}
        doc["inventory"] = record.inventory
        try:
            write_atomic(self.path, (json.dumps(doc, sort_keys=True) + "\n").encode(), 0o600)
        except OSError as exc:
            raise StateError(f"cannot write {self.path}: {exc}") from exc

    def clear(self) -> bool:
        """Remove the record; False when there was none. Raises StateError."""
        try:
            return remove_durably(self.path)
        except OSError as exc:
            raise StateError(f"cannot remove {self.path}: {exc}") from exc
