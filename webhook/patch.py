"""The JSON Patch of an admission: the library's diff, made fast (docs/design.md D12).

    diff(original, migrated, memo=None) -> RFC 6902 operations (a tuple of dicts)
    PatchMemo(size=512, max_key_chars=8192)   operations already computed, per pruned pair

Every path and value is ``jsonpatch.JsonPatch.from_diff``'s (resource names hold ``/``,
escaped ``~1`` by the library): never hand-built. Members equal on both sides are pruned
first, which keeps the walk short and makes replicas of one workload a memo lookup.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import jsonpatch
import jsonpointer

#: One encoder for every call (``json.dumps`` with options builds a new one each time).
_COMPACT = json.JSONEncoder(separators=(",", ":")).encode


def _pruned(src: Any, dst: Any) -> tuple[Any, Any]:
    """Copies of two values without the object members equal on both sides (same type and
    ``==``), recursively. Arrays of equal length become objects keyed by index ("0", "1",
    ...) holding only the elements that differ: a JSON Pointer names an array element and
    an object member the same way (``/spec/containers/0``), and equal lengths mean elements
    are only changed in place, never inserted or removed, so every path the library writes
    for such an object is the path of that element in the array."""
    if isinstance(src, dict) and isinstance(dst, dict):
        a, b = dict(src), dict(dst)
        for key in a.keys() & b.keys():
            x, y = a[key], b[key]
            if x is y or (type(x) is type(y) and x == y):
                del a[key], b[key]
            else:
                a[key], b[key] = _pruned(x, y)
        return a, b
    if isinstance(src, list) and isinstance(dst, list) and len(src) == len(dst):
        a, b = {}, {}
        for i, (x, y) in enumerate(zip(src, dst, strict=True)):
            if not (x is y or (type(x) is type(y) and x == y)):
                a[str(i)], b[str(i)] = _pruned(x, y)
        return a, b
    return src, dst


def _faithful(ops: Sequence[dict[str, Any]], migrated: Mapping[str, Any]) -> bool:
    """True when every value the operations write is the value at that path in ``migrated``
    (so no pruned member can leak into the patch) and no operation moves or copies."""
    for op in ops:
        if op["op"] in ("move", "copy"):
            return False
        if op["op"] in ("add", "replace") and isinstance(op["value"], dict | list):
            try:
                if jsonpointer.resolve_pointer(migrated, op["path"]) != op["value"]:
                    return False
            except jsonpointer.JsonPointerException:
                return False
    return True


class PatchMemo:
    """Operations already computed, by the exact JSON text of the pruned document pair.

    Pods of one ReplicaSet, Job or StatefulSet differ only in what is equal before and after
    the migration (name, uid, hash labels), which pruning drops, so after the first pod of a
    workload the library's diff is a lookup. At most ``size`` pairs (the oldest is forgotten
    first), each with a key of at most ``max_key_chars`` characters (larger pairs, such as an
    odd pod's thousands of tolerations, are diffed every time), so the memo holds a few MiB
    at most; the operations are shared between answers and never mutated.
    """

    def __init__(self, size: int = 512, max_key_chars: int = 8192) -> None:
        self.size = size
        self.max_key_chars = max_key_chars
        self._ops: dict[str, tuple[dict[str, Any], ...]] = {}
        self._lock = threading.Lock()  # decisions run in several worker threads (webhook/handler.py)
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> tuple[dict[str, Any], ...] | None:
        """The operations stored under ``key`` (counted as a hit), or None (a miss)."""
        with self._lock:
            found = self._ops.get(key)
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
            return found

    def __len__(self) -> int:
        """Pairs held."""
        return len(self._ops)

    def put(self, key: str, ops: tuple[dict[str, Any], ...]) -> None:
        """Store ``ops`` under ``key`` unless the key is too long; forget the oldest when full."""
        if self.size <= 0 or len(key) > self.max_key_chars:
            return
        with self._lock:
            if len(self._ops) >= self.size:
                del self._ops[next(iter(self._ops))]
            self._ops[key] = ops


def diff(
    original: Mapping[str, Any], migrated: Mapping[str, Any], memo: PatchMemo | None = None
) -> tuple[dict[str, Any], ...]:
    """RFC 6902 operations turning ``original`` into ``migrated``: ``jsonpatch.JsonPatch.from_diff``.

    Members equal on both sides are dropped from both first (``_pruned``): jsonpatch
    compares objects member by member, so a member absent from both yields no operation and
    the walk is much shorter (the pod's unchanged env, volumes, status...). Every path and
    value is still the library's. Should the library emit a composite value that pruning
    touched (``_faithful``, checked on every call, memo hit or not), the full documents are
    diffed instead. ``optimization=False``: add, remove and replace only (no move/copy
    operations to reason about). With a ``memo``, the operations for a pruned pair seen
    before are reused (they depend on the pair alone).
    """
    a, b = _pruned(original, migrated)
    key = ""
    if memo is not None:
        with contextlib.suppress(TypeError, ValueError, RecursionError):  # not JSON: no memo
            key = _COMPACT((a, b))
    ops = memo.get(key) if memo is not None and key else None
    if ops is None:
        ops = tuple(jsonpatch.JsonPatch.from_diff(a, b, optimization=False).patch)
        if memo is not None and key and _faithful(ops, migrated):
            memo.put(key, ops)
            return ops
    if not _faithful(ops, migrated):
        return tuple(jsonpatch.JsonPatch.from_diff(original, migrated, optimization=False).patch)
    return ops
