"""The cyclic garbage collector's settings for one command's run (``dra-migrate`` is a batch
program: it reads, converts and writes documents one at a time).

CPython's collector walks every young container object each 700 allocations, and the whole heap
when enough objects were promoted. A document's own objects (its YAML nodes, the values built
from them, the converted copy and the nodes written out) live long enough to be walked and
promoted, then die by reference count: the collector's work grows with the input although it
frees almost nothing (the documents are trees; no cycle is made per document). Measured on
``bench/bench_convert.py``'s 10,000 pods each with a label of their own, the collector took
12-15% of ``convert``'s CPU.

:func:`batch_collection` lowers that and frees the same cycles, later:

- the objects alive when the command starts (imported modules, the catalog, the CEL
  environment) are frozen out of the collector's walks (:func:`gc.freeze`), and put back into the
  oldest generation when it ends (:func:`gc.unfreeze`): garbage among them is collected then;
- the youngest generation is collected each :data:`YOUNG_THRESHOLD` allocations (700 by
  default): most of a document's objects are gone before the collector walks them.

The process's settings are restored when the run ends (``main`` also runs in process: tests,
benchmarks): objects the caller froze itself stay frozen, and a caller's collection turned off
(threshold 0) stays off. docs/design.md D53.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Allocations between two collections of the youngest generation during a command's run.
YOUNG_THRESHOLD = 10_000


@contextmanager
def batch_collection(young: int = YOUNG_THRESHOLD) -> Iterator[None]:
    """The collector's settings for a command's run (see the module docstring), restored after."""
    threshold = gc.get_threshold()
    ours = gc.get_freeze_count() == 0  # a caller that froze objects itself keeps them frozen
    if ours:
        gc.freeze()
    if threshold[0]:  # 0: the caller turned collection off; it stays off
        gc.set_threshold(max(young, threshold[0]), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        if ours:
            gc.unfreeze()
