"""CEL device selectors for the allocator: compiled once per expression, results cached per device content.

Pure (no I/O). Built on :mod:`translate.cel` (the DRA CEL environment). Caching:

- an expression is compiled once (``compile_selector``; a compile error is cached too and
  raised each time it is used, as upstream's ``cel.Cache.GetOrCompile`` keeps it);
- a device is converted to its CEL value once per distinct content (driver, attributes,
  capacity, allowMultipleAllocations: :attr:`translate.alloc.pools.Candidate.content_key`);
- a selector's result is cached per (expression, device content): identical devices on
  many nodes are evaluated once. A runtime error is not cached; it fails the allocation.

Errors (k8s.io/dynamic-resource-allocation ``structured/internal/experimental``
``selectorsMatch``), raised as :class:`translate.errors.AllocationError`:

- ``class <name>: selector #<i>: CEL compile error: <detail>`` /
  ``claim <ns>/<name>: selector #<i>: CEL compile error: <detail>``;
- ``class <name>: selector #<i> on device <driver>/<pool>/<device>: CEL runtime error: <detail>``
  (``claim <ns>/<name>: ...`` for a request's selector).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dra_bridge.translate.alloc.pools import Candidate
from dra_bridge.translate.cel import CompiledSelector, compile_selector, device_to_cel
from dra_bridge.translate.errors import AllocationError, SelectorError

__all__ = ["SelectorCache"]


class SelectorCache:
    """Compiled selectors and their results; one instance may serve many nodes and runs."""

    def __init__(self) -> None:
        self._compiled: dict[str, CompiledSelector | SelectorError] = {}
        self._values: dict[str, Any] = {}
        self._results: dict[tuple[str, str], bool] = {}
        self.evaluations = 0

    def _compile(self, expression: str) -> CompiledSelector:
        compiled = self._compiled.get(expression)
        if compiled is None:
            try:
                compiled = compile_selector(expression)
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
        for i, selector in enumerate(selectors):
            expression = str(selector["cel"]["expression"])
            key = (expression, device.content_key)
            result = self._results.get(key)
            if result is None:
                try:
                    compiled = self._compile(expression)
                except SelectorError as exc:
                    raise AllocationError(f"{owner}: selector #{i}: CEL compile error: {exc}") from exc
                try:
                    value = self._values.get(device.content_key)
                    if value is None:
                        value = device_to_cel(device.spec, device.id[0])
                        self._values[device.content_key] = value
                    self.evaluations += 1
                    result = compiled.evaluate(value, device.label)
                except SelectorError as exc:
                    detail = str(exc).split("CEL runtime error: ", 1)[-1]
                    raise AllocationError(f"{owner}: selector #{i} on device {device.label}: "
                                          f"CEL runtime error: {detail}") from exc
                self._results[key] = result
            if not result:
                return False
        return True
