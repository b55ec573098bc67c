"""CEL device selectors for the allocator: compiled once per expression, results cached per relevant values.

Pure (no I/O). Built on :mod:`translate.cel` (the DRA CEL environment). Caching (issue 12):

- an expression is compiled once (``compile_selector``; a compile error is cached too and
  raised each time it is used, as upstream's ``cel.Cache.GetOrCompile`` keeps it);
- its reads are found once in its syntax tree (:func:`translate.cel.reads.selector_reads`:
  the driver, the attributes and capacities it names, or the whole device when unsure);
- a result is cached per (expression, the values of what it reads): every device has a unique
  uuid, so a cache on whole devices would evaluate each device anew, while this one evaluates
  ``device.attributes["gpu.nvidia.com"].productName == "H100"`` once per product name. The
  number of CEL evaluations grows with distinct (selector, relevant values), not pods x devices
  (:attr:`SelectorCache.evaluations` counts them);
- each device also remembers its results by expression, so a claim re-checking a device costs a
  dict lookup. A runtime error is not cached; it fails the allocation.

Errors (k8s.io/dynamic-resource-allocation ``structured/internal/incubating``
``selectorsMatch``, word for word), raised as :class:`translate.errors.AllocationError`:

- ``class <name>: selector #<i>: CEL compile error: <detail>`` /
  ``claim <ns>/<name>: selector #<i>: CEL compile error: <detail>``;
- ``class <name>: selector #<i>: CEL runtime error: <detail>`` (``claim <ns>/<name>: ...`` for a
  request's selector), ``detail`` being cel-go's text (``no such key: model``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from dra_bridge.translate.alloc.pools import Candidate
from dra_bridge.translate.cel import CompiledSelector, compile_selector, device_to_cel
from dra_bridge.translate.cel.reads import WHOLE_DEVICE, Read, selector_reads
from dra_bridge.translate.errors import AllocationError, SelectorError

__all__ = ["SelectorCache", "relevant_values"]

_HINT = " (hint: "


_SCALARS = (str, int, float, bool, type(None))
_SCALAR_TYPES = frozenset(_SCALARS)


def _value_key(value: Any) -> Any:
    """A hashable key equal only for equal values: ``{"string": "H100"}`` as its sorted items with
    their types (``1``, ``1.0`` and ``True`` stay apart; the common case, no serialising),
    anything nested as canonical JSON."""
    if type(value) is dict and len(value) == 1:  # {"int": 3}: the shape of every attribute
        ((name, one),) = value.items()
        if type(one) in _SCALAR_TYPES:
            return name, one, type(one)
    if isinstance(value, Mapping):
        items = tuple((k, v, type(v)) for k, v in sorted(value.items()))
        if all(isinstance(v, _SCALARS) for _, v, _ in items):
            return items
    return json.dumps(value, sort_keys=True, default=str)


def _entries(entries: Mapping[str, Any], driver: str, domain: str, ident: str) -> tuple[tuple[str, Any], ...]:
    """The ``(name, value key)`` of the entries a read names, sorted by name: a bare name counts
    for the device's driver, a qualified one for its domain; ``ident`` ``*``: every one of the
    domain. A named ident is looked up directly (a device's attributes are not scanned)."""
    if ident != "*":
        qualified = domain + "/" + ident
        found = entries.get(qualified)
        bare = entries.get(ident) if domain == driver else None
        if bare is None:
            return () if found is None else ((qualified, _value_key(found)),)
        if found is None:
            return ((ident, _value_key(bare)),)
        return tuple(sorted(((ident, _value_key(bare)), (qualified, _value_key(found)))))
    out = []
    for name, value in entries.items():
        have_domain, _, _ = str(name).rpartition("/")
        if (have_domain or driver) == domain:
            out.append((str(name), _value_key(value)))
    return tuple(sorted(out))


def _ordered(reads: frozenset[Read]) -> tuple[Read, ...]:
    return tuple(sorted(reads, key=repr))


def _relevant(reads: frozenset[Read], ordered: tuple[Read, ...], device: Candidate) -> Any:
    if reads == WHOLE_DEVICE:
        return device.content_key
    driver, spec = device.id[0], device.spec
    key: list[Any] = []
    for read in ordered:
        if read[0] == "driver":
            key.append(driver)
        elif read[0] == "allowMultipleAllocations":
            key.append(bool(spec.get("allowMultipleAllocations")))
        else:
            kind, domain, ident = read
            key.append(_entries(spec.get(kind) or {}, driver, domain or driver, ident))
    return tuple(key)


def relevant_values(reads: frozenset[Read], device: Candidate) -> Any:
    """The values of ``device`` that ``reads`` names, as a hashable key (the content key when unsure)."""
    return _relevant(reads, _ordered(reads), device)


class SelectorCache:
    """Compiled selectors and their results; one instance may serve many nodes and runs."""

    def __init__(self) -> None:
        self._compiled: dict[str, tuple[CompiledSelector, frozenset[Read], tuple[Read, ...]] | SelectorError] = {}
        self._results: dict[tuple[str, Any], bool] = {}
        self.evaluations = 0

    def _compile(self, expression: str) -> tuple[CompiledSelector, frozenset[Read], tuple[Read, ...]]:
        compiled = self._compiled.get(expression)
        if compiled is None:
            try:
                reads = selector_reads(expression)
                compiled = (compile_selector(expression), reads, _ordered(reads))
            except SelectorError as exc:
                compiled = exc
            self._compiled[expression] = compiled
        if isinstance(compiled, SelectorError):
            raise compiled
        return compiled

    def matches(self, selectors: Sequence[Mapping[str, Any]], device: Candidate, owner: str) -> bool:
        """Whether every selector matches ``device``; ``owner`` is ``class X`` or ``claim ns/name``.

        A selector without ``cel`` was rejected earlier (engine validation).
        """
        memo = device.selector_results
        for i, selector in enumerate(selectors):
            expression = str(selector["cel"]["expression"])
            result = memo.get(expression)
            if result is None:
                result = self._evaluate(expression, i, device, owner)
                memo[expression] = result
            if not result:
                return False
        return True

    def _evaluate(self, expression: str, index: int, device: Candidate, owner: str) -> bool:
        try:
            compiled, reads, ordered = self._compile(expression)
        except SelectorError as exc:
            raise AllocationError(f"{owner}: selector #{index}: CEL compile error: {exc}") from exc
        key = (expression, _relevant(reads, ordered, device))
        result = self._results.get(key)
        if result is not None:
            return result
        try:
            self.evaluations += 1
            result = compiled.evaluate(device_to_cel(device.spec, device.id[0]), device.label)
        except SelectorError as exc:
            detail = str(exc).split("CEL runtime error: ", 1)[-1].split(_HINT, 1)[0]
            raise AllocationError(f"{owner}: selector #{index}: CEL runtime error: {detail}") from exc
        self._results[key] = result
        return result
