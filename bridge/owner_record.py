"""Which instance of the agent publishes a node's slices while two overlap in a surge rollout
(``--pod-uid``; docs/design.md D44): the owner record and its rule.

One JSON file, ``<state dir>/owner.json``, written atomically (:mod:`bridge.atomic`)::

    {"apiVersion": "state.dra-bridge.io/v1", "kind": "Owner",
     "podUID": str, "startedAt": float (unix seconds: when that instance started)}

:func:`ownership` is the rule (pure): the newest instance owns the slices, as the kubelet sends
NodePrepareResources to the newest registered plugin. An instance is ``owner`` when the record
names it, ``take-over`` when the record is missing, unreadable or names an older instance (or
this pod's previous container: the same pod UID started earlier; it
then writes its own record before it writes a slice), and ``standby`` when the record names a
newer instance: it writes no slice from then on. The publisher reads the record again before
every write (:meth:`OwnerStore.names`), so an instance that lost the record between two ticks
writes nothing either. Raises :class:`bridge.errors.StateError` when it cannot be written.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from dra_bridge.bridge.atomic import write_atomic
from dra_bridge.bridge.errors import StateError
from dra_bridge.bridge.state import STATE_API_VERSION

logger = logging.getLogger(__name__)

OWNER_FILE = "owner.json"
Ownership = Literal["owner", "take-over", "standby"]


@dataclass(frozen=True, order=True)
class Instance:
    """One instance of the agent: when it started (unix seconds) and its pod's UID (ordered by
    start time, then UID: the greater one is the newer)."""

    started_at: float
    pod_uid: str


def ownership(record: Instance | None, me: Instance) -> Ownership:
    """This instance's part (see the module docstring)."""
    if record == me:
        return "owner"
    if record is None or record.pod_uid == me.pod_uid or record < me:
        return "take-over"  # no owner, an older one, or this pod's previous container
    return "standby"


class OwnerStore:
    """``<state dir>/owner.json`` (see the module docstring)."""

    def __init__(self, state_dir: str | Path) -> None:
        self.path = Path(state_dir) / OWNER_FILE

    def load(self) -> Instance | None:
        """The instance the record names; None without a readable record (logged)."""
        try:
            doc = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("ignoring the owner record %s: %s", self.path, exc)
            return None
        try:
            if doc.get("apiVersion") != STATE_API_VERSION or doc.get("kind") != "Owner":
                raise ValueError(f"not a {STATE_API_VERSION} Owner record")
            return Instance(float(doc["startedAt"]), str(doc["podUID"]))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            logger.warning("ignoring the owner record %s: %s", self.path, exc)
            return None

    def names(self, me: Instance) -> bool:
        """Whether the record on disk names ``me`` now (the publisher asks before every write)."""
        return self.load() == me

    def save(self, me: Instance) -> None:
        """Name ``me`` the owner, atomically. Raises StateError."""
        doc = {"apiVersion": STATE_API_VERSION, "kind": "Owner", "podUID": me.pod_uid, "startedAt": me.started_at}
        try:
            write_atomic(self.path, (json.dumps(doc, sort_keys=True) + "\n").encode(), 0o600)
        except OSError as exc:
            raise StateError(f"cannot write {self.path}: {exc}") from exc
