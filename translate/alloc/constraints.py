"""Claim constraints: ``matchAttribute`` and ``distinctAttribute``, checked as devices are added.

Pure (no I/O). Rules (k8s.io/dynamic-resource-allocation ``structured/internal/experimental``
``matchAttributeConstraint``, ``distinctAttributeConstraint``, ``lookupAttribute``):

- a constraint with ``requests`` applies to devices of those requests (a name matches a
  request, or one of its subrequests as ``request/sub``); without, to every device of the claim;
- the attribute is looked up by its full name; when the name's domain is the device's driver,
  the bare id is looked up too (``gpu.nvidia.com/uuid`` finds ``uuid`` on that driver's devices);
- a device without the attribute never satisfies the constraint;
- ``matchAttribute``: every device has the same value (same type and value; versions compare
  as strings, semver being minimal); with DRAListTypeAttributes, list values must share at
  least one element with every other device's value;
- ``distinctAttribute``: a device's value must differ from the one value remembered per
  request: upstream (``incubating``, the scheduler's default) remembers, for each request
  name, the value of that request's latest device, and removing any device of a request
  forgets the request's entry; so two devices of one request may share a value with a device
  added in between (a counterexample row in tests/data/alloc/oracle.yaml).

Constraints are monotonic, so the search can stop at the first device that breaks one;
every successful :meth:`add` is undone by exactly one :meth:`remove` on backtracking.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["Constraint", "attribute_values"]

_SCALARS = ("int", "bool", "string", "version")


def attribute_values(device: Mapping[str, Any], driver: str, name: str, lists: bool) -> frozenset[Any] | None:
    """The attribute's values as a set of ``(type, value)`` pairs, or None when absent or unusable."""
    attributes = device.get("attributes") or {}
    attribute = attributes.get(name)
    if attribute is None:
        domain, sep, ident = name.partition("/")
        if not sep or domain != driver:
            return None
        attribute = attributes.get(ident)
    if not isinstance(attribute, Mapping):
        return None
    for kind in _SCALARS:
        if attribute.get(kind) is not None:
            return frozenset({(kind, attribute[kind])})
    if lists:
        for kind in _SCALARS:
            items = attribute.get(kind + "s")
            if items:
                return frozenset((kind, item) for item in items)
    return None


class Constraint:
    """One claim constraint; ``kind`` is ``matchAttribute`` or ``distinctAttribute``."""

    def __init__(self, kind: str, attribute: str, requests: list[str], lists: bool) -> None:
        self.kind = kind
        self.attribute = attribute
        self.requests = set(requests)
        self.lists = lists
        self._stack: list[frozenset[Any]] = []
        self._distinct: dict[str, frozenset[Any]] = {}
        self._count = 0

    def _applies(self, request: str, sub: str) -> bool:
        if not self.requests:
            return True
        return request in self.requests or (bool(sub) and f"{request}/{sub}" in self.requests)

    def add(
        self,
        request: str,
        sub: str,
        device: Mapping[str, Any],
        driver: str,
        memo: dict[tuple[str, bool], frozenset[Any] | None] | None = None,
    ) -> bool:
        """Whether the device may join; if so it is counted until :meth:`remove`.

        ``memo``: the device's attribute values by (name, lists), kept between calls.
        """
        if not self._applies(request, sub):
            return True
        if memo is None:
            values = attribute_values(device, driver, self.attribute, self.lists)
        else:
            key = (self.attribute, self.lists)
            if key not in memo:
                memo[key] = attribute_values(device, driver, self.attribute, self.lists)
            values = memo[key]
        if values is None:
            return False
        if self.kind == "distinctAttribute":
            if self._count and any(values & seen for seen in self._distinct.values()):
                return False
            self._distinct[request] = values
            self._count += 1
            return True
        if self._stack:
            values = self._stack[-1] & values
            if not values:
                return False
        self._stack.append(values)
        return True

    def remove(self, request: str, sub: str) -> None:
        """Undo the last successful :meth:`add` of a device of this request."""
        if not self._applies(request, sub):
            return
        if self.kind == "distinctAttribute":
            self._distinct.pop(request, None)
            self._count -= 1
        else:
            self._stack.pop()


def add_to_all(
    constraints: list[Constraint],
    request: str,
    sub: str,
    device: Mapping[str, Any],
    driver: str,
    memo: dict[tuple[str, bool], frozenset[Any] | None] | None = None,
) -> bool:
    """Whether the device may join every one of a claim's ``constraints`` (:meth:`Constraint.add`
    to each in turn); when one refuses it, the earlier ones forget it again."""
    for i, constraint in enumerate(constraints):
        if not constraint.add(request, sub, device, driver, memo):
            for earlier in constraints[:i]:
                earlier.remove(request, sub)
            return False
    return True
