"""The diagnosis of a pod that fits nowhere, in time independent of the cluster's size, where it can be.

Pure (no I/O). :func:`translate.capacity.diagnose.diagnose` counts every eligible node's
matching and free devices for every request: linear in the nodes for each pod that fits
nowhere, so quadratic over a full cluster. :class:`Shortage` gives the same answer (code and
reason, word for word) without that scan for the common shape: every request of the pod's
claims is one ``ExactCount`` request (no ``firstAvailable``, no ``All``) and all ask for the same
class and selectors. Then, over one named list of eligible nodes (``group``):

- which devices of a node match is fixed (``diagnose``'s :data:`~translate.capacity.diagnose.
  MatchCache`, filled by one full diagnosis of the group and key first), so
  ``no-matching-device`` is known once per group and key;
- a node's free matching devices only go down (allocation only takes devices), so the node
  with the most (the first of equals) is the top of a heap of counts checked lazily: a stale
  entry is pushed back with its count;
- when that most is short of what the pod needs, the verdict is ``not-enough-devices`` and the
  reason names that node; otherwise (some node has enough: ``constraint``, naming the first
  such node) :meth:`Shortage.diagnose` answers None and the full diagnosis runs.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Sequence

from dra_bridge.translate.alloc import AllocatedState
from dra_bridge.translate.capacity.diagnose import MatchCache, Option, options
from dra_bridge.translate.capacity.model import ClaimDemand, Code

__all__ = ["Shortage"]


class Shortage:
    """Heaps of free matching devices per ``(group, option key)``, over ``names`` (node names by
    index) and the cluster's ``state``; ``known``: the full diagnosis's match cache."""

    def __init__(self, names: Sequence[str], state: AllocatedState, known: MatchCache) -> None:
        self.names, self.state, self.known = names, state, known
        self._heaps: dict[tuple[Hashable, str], list[tuple[int, int]]] = {}
        self._matching: dict[tuple[Hashable, str], bool] = {}

    def _free(self, index: int, key: str) -> int:
        taken = self.state.devices
        return sum(1 for i in self.known[(self.names[index], key)] if i not in taken)

    @staticmethod
    def _shape(claims: Sequence[ClaimDemand]) -> list[Option] | None:
        """The requests, one option each, all of one key; None for another shape."""
        entries = [entry for claim in claims for entry in options(claim)]
        if not entries or any(len(e) != 1 or e[0].all_devices for e in entries):
            return None
        flat = [e[0] for e in entries]
        return flat if len({o.key for o in flat}) == 1 else None

    def learned(self, group: Hashable, claims: Sequence[ClaimDemand], candidates: Sequence[int]) -> None:
        """A full diagnosis of ``claims`` over the group's ``candidates`` ran without error: the
        match cache holds every node's devices for its key (the heap is built now)."""
        flat = self._shape(claims)
        if flat is None or (group, flat[0].key) in self._heaps:
            return
        key = flat[0].key
        self._matching[(group, key)] = any(self.known[(self.names[i], key)] for i in candidates)
        heap = [(-self._free(index, key), p) for p, index in enumerate(candidates)]
        heapq.heapify(heap)
        self._heaps[(group, key)] = heap

    def diagnose(
        self, group: Hashable, claims: Sequence[ClaimDemand], candidates: Sequence[int]
    ) -> tuple[Code, str] | None:
        """``diagnose``'s answer for ``claims`` that fit on none of the group's ``candidates``, or
        None when this shape or group was not learned or some node has enough free devices."""
        flat = self._shape(claims)
        if flat is None:
            return None
        first = flat[0]
        heap = self._heaps.get((group, first.key))
        if heap is None:
            return None
        if not self._matching[(group, first.key)]:
            return "no-matching-device", (
                f"claim {first.claim}, request {first.request}: no device of the "
                f"{len(candidates)} eligible nodes matches {first.what()}"
            )
        while True:
            recorded, position = heap[0]
            free = self._free(candidates[position], first.key)
            if free == -recorded:
                break
            heapq.heapreplace(heap, (-free, position))
        if free >= sum(o.count for o in flat):
            return None
        name = self.names[candidates[position]]
        matching = len(self.known[(name, first.key)])
        return "not-enough-devices", (
            f"claim {first.claim}, request {first.request} needs {first.count} devices of "
            f"{first.what()}: at most {free} free on one eligible node "
            f"({name}: {matching} match there)"
        )
