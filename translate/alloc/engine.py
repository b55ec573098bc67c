"""The allocator: one node, one set of claims allocated together, as the scheduler's DRA plugin does.

Pure (no I/O). Re-typed from k8s.io/dynamic-resource-allocation
``structured/internal/incubating/allocator_incubating.go`` (``Allocate``, ``allocateOne``,
``isSelectable``, ``allocateDevice``; ``validateDeviceRequest`` is
:mod:`translate.alloc.validation`, which the allocator runs first; the
"incubating" allocator the 1.36 scheduler runs with its default gates: its plugin never passes
ListTypeAttributes, the one feature only "experimental" has; both variants are otherwise the
same code). tests/translate/test_alloc_oracle.py compares this engine with that library:

- claims in the given order, their requests in spec order, each device of a request in
  turn: depth-first, first fit, with backtracking; within one request devices are tried only
  in search order (pool, slice, device: :mod:`translate.alloc.pools`), so each combination
  is tried once;
- ``firstAvailable``: subrequests in order; the result's request is ``request/subrequest``;
- ``All``: every selectable device of every pool; an incomplete or invalid pool is an error;
  no device at all means no solution; ExactCount skips incomplete and invalid pools, and
  when no solution exists and some pool was invalid the error is
  ``invalid resource pools were encountered``;
- a device is selectable when the class's and then the request's CEL selectors match (a CEL
  error stops the allocation with it), it has no binding conditions unless the gates allow
  them, and (per-device node selection) it targets the node;
- a device is usable when not in use (an adminAccess request may share a device with other
  claims, not within its claim), counters allow it (partitionable devices), its taints
  are tolerated (effects NoSchedule and NoExecute), capacity allows it (consumable capacity)
  and the claim's constraints hold;
- at most 32 results per claim (``AllocationResultsMaxSize``).

:class:`translate.alloc.state.AllocatedState` holds the devices earlier claims hold. :meth:`NodeAllocator.allocate`
returns one ``status.allocation`` dict per claim (:mod:`translate.alloc.results`), None when
the claims do not fit together, or raises :class:`translate.errors.AllocationError` with
upstream's message.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from dra_bridge.translate.alloc.capacity import Amount, consumption
from dra_bridge.translate.alloc.constraints import add_to_all
from dra_bridge.translate.alloc.features import Features
from dra_bridge.translate.alloc.node_match import Node, node_matches
from dra_bridge.translate.alloc.pools import Candidate, DeviceID, Pool, quantity
from dra_bridge.translate.alloc.results import Picked, Request, allocation_result
from dra_bridge.translate.alloc.selectors import SelectorCache
from dra_bridge.translate.alloc.state import AllocatedState
from dra_bridge.translate.alloc.taints import untolerated
from dra_bridge.translate.alloc.validation import Validator
from dra_bridge.translate.errors import AllocationError, TranslateError
from dra_bridge.translate.inventory.api_rules import MAX_DEVICES_PER_CLAIM

__all__ = ["NodeAllocator"]


class _MaxSize(TranslateError):
    """errAllocationResultMaxSizeExceeded: more aggressive backtracking."""


class NodeAllocator:
    """Allocates sets of claims on one node; reuse it for every set tried there."""

    def __init__(
        self,
        node: Node,
        pools: list[Pool],
        classes: Mapping[str, Mapping[str, Any]],
        features: Features,
        state: AllocatedState,
        cache: SelectorCache | None = None,
    ) -> None:
        self.node, self.pools, self.classes = node, pools, classes
        self.features, self.state = features, state
        self.cache = cache or SelectorCache()
        self._search = [d for p in pools if not (p.incomplete or p.invalid) for d in p.devices]
        self._pool_of = {d.id: p for p in pools for d in p.devices}
        self._validated: dict[str, list[tuple[list[list[Request]], list[bool]]]] = {}
        self._validator = Validator(
            pools, classes, features, self._selectable, lambda r, d: self._capacity(r, d, {}) is not None
        )

    # ------------------------------------------------------------------ device checks

    def _selectable(self, claim: str, request: Request, device: Candidate) -> bool:
        spec = device.spec
        if spec.get("bindingConditions") and not self.features.binding_conditions:
            return False
        cached = request.matches.get(device.id)
        if cached is not None:
            return cached
        if request.selector_key is None:
            own = request.device_class.get("selectors") or []
            request.selector_key = (
                tuple(str(s["cel"]["expression"]) for s in own),
                tuple(str(s["cel"]["expression"]) for s in request.selectors),
            )
        result = device.selector_results.get(request.selector_key)
        if result is None:  # the class's selectors, then the request's: one dict lookup when known
            result = self.cache.matches(
                request.device_class.get("selectors") or [], device, f"class {request.class_name}"
            ) and self.cache.matches(request.selectors, device, f"claim {claim}")
            device.selector_results[request.selector_key] = result
        if result and device.slice.per_device:
            result = node_matches(self.node, spec.get("nodeName"), bool(spec.get("allNodes")), spec.get("nodeSelector"))
        request.matches[device.id] = result
        return result

    def _multiple(self, device: Candidate) -> bool:
        return self.features.consumable_capacity and bool(device.spec.get("allowMultipleAllocations"))

    def _capacity(
        self, request: Request, device: Candidate, allocating: Mapping[str, Fraction]
    ) -> dict[str, Amount] | None:
        if not self.features.consumable_capacity:
            return {}
        multiple = self._multiple(device)
        used = dict(self.state.capacity.get(device.id, {}))
        for name, amount in allocating.items():
            used[name] = used.get(name, Fraction(0)) + amount
        return consumption(device.spec, device.id[0], request.capacity, multiple, used)

    def _in_use(self, request: Request, device: Candidate, claim_index: int) -> bool:
        holders = self._allocating.get(device.id, [])
        if request.admin:
            return not self._multiple(device) and claim_index in holders
        if self._multiple(device):
            return device.id in self.state.devices
        return device.id in self.state.devices or bool(holders)

    def _counters_fit(self, device: Candidate, sign: int) -> bool:
        pool = self._pool_of[device.id]
        consumed = self._counters.setdefault(pool.label, self._allocated_counters(pool))
        for use in device.spec.get("consumesCounters") or []:
            counter_set = consumed.setdefault(str(use.get("counterSet")), {})
            for name, value in (use.get("counters") or {}).items():
                counter_set[name] = counter_set.get(name, Fraction(0)) + sign * quantity(value, f"counters[{name!r}]")
        if sign < 0:
            return True
        return all(
            consumed.get(s, {}).get(n, Fraction(0)) <= available
            for s, counters in pool.counters.items()
            for n, available in counters.items()
        )

    def _allocated_counters(self, pool: Pool) -> dict[str, dict[str, Fraction]]:
        out: dict[str, dict[str, Fraction]] = {}
        for view in pool.slices:
            for device in view.spec.get("devices") or []:
                if (pool.driver, pool.name, device["name"]) in self.state.devices:
                    for use in device.get("consumesCounters") or []:
                        counter_set = out.setdefault(str(use.get("counterSet")), {})
                        for name, value in (use.get("counters") or {}).items():
                            counter_set[name] = counter_set.get(name, Fraction(0)) + quantity(value, name)
        return out

    # ------------------------------------------------------------------ search

    def allocate(
        self, claims: Sequence[tuple[str, Mapping[str, Any]]], signature: str | None = None
    ) -> list[dict[str, Any]] | None:
        """Allocate ``(label, v1 spec)`` claims together; one allocation per claim, or None.

        ``label`` is ``namespace/name`` as upstream's messages print it. Raises AllocationError.
        ``signature``: a string equal only for equal lists of specs (:mod:`translate.alloc.
        placement`'s); the requests validated for it (with what each remembers of the node's
        devices) are reused, unless one asks for ``All`` (those depend on what is in use).
        """
        self._allocating: dict[DeviceID, list[int]] = {}
        self._capacity_in_flight: dict[DeviceID, dict[str, Fraction]] = {}
        self._counters: dict[str, dict[str, dict[str, Fraction]]] = {}
        known = self._validated.get(signature) if signature is not None else None
        self._claims = [
            self._validator.claim(i, label, spec, known[i] if known else None) for i, (label, spec) in enumerate(claims)
        ]
        if (
            signature is not None
            and known is None
            and all(r.mode != "All" for c in self._claims for entry in c.requests for r in entry)
        ):
            self._validated[signature] = [(c.requests, c.subrequests) for c in self._claims]
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20000))
        try:
            done = self._one(0, 0, 0, 0, False, 0)
        except _MaxSize:
            done = False
        finally:
            sys.setrecursionlimit(limit)
        if not done:
            if any(pool.invalid for pool in self.pools):
                raise AllocationError("invalid resource pools were encountered")
            return None
        return [
            allocation_result(
                claim.spec, claim.requests, claim.subrequests, claim.selected, claim.picked, self.node, self.features
            )
            for claim in self._claims
        ]

    def _one(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: int) -> bool:
        if ci >= len(self._claims):
            return True
        claim = self._claims[ci]
        if ri >= len(claim.requests):
            try:
                return self._one(ci + 1, 0, 0, 0, False, 0)
            except _MaxSize:
                return False
        if claim.subrequests[ri] and not in_sub:
            return self._one_subrequest(ci, ri)
        request = claim.requests[ri][si]
        if request.mode == "All" and not request.all_devices:
            return False
        if di >= request.count:
            return self._one(ci, ri + 1, 0, 0, False, 0)
        if len(claim.picked) + request.count - di > MAX_DEVICES_PER_CLAIM:
            raise _MaxSize
        if request.mode == "All":
            undo = self._take(ci, request, request.all_devices[di], must=True)
            if undo is None:
                return False
            return self._continue(undo, ci, ri, si, di, in_sub, 0)
        for position in range(start, len(self._search)):
            device = self._search[position]
            if self._in_use(request, device, ci) or not self._selectable(claim.label, request, device):
                continue
            undo = self._take(ci, request, device, must=False)
            if undo is None:
                continue
            if self._continue(undo, ci, ri, si, di, in_sub, position + 1):
                return True
        return False

    def _one_subrequest(self, ci: int, ri: int) -> bool:
        """The first of request ``ri``'s subrequests (firstAvailable) that can be allocated, in
        order; _MaxSize when every one of them exceeded the claim's size."""
        claim = self._claims[ci]
        all_exceeded = True
        for index in range(len(claim.requests[ri])):
            try:
                success = self._one(ci, ri, index, 0, True, 0)
            except _MaxSize:
                continue
            all_exceeded = False
            if success:
                claim.selected[ri] = index
                return True
        if all_exceeded:
            raise _MaxSize
        return False

    def _continue(self, undo: Any, ci: int, ri: int, si: int, di: int, in_sub: bool, start: int) -> bool:
        try:
            done = self._one(ci, ri, si, di + 1, in_sub, start)
        except BaseException:
            undo()
            raise
        if not done:
            undo()
        return done

    def _take(self, ci: int, request: Request, device: Candidate, must: bool) -> Any:
        """allocateDevice: the undo function when ``device`` is taken for ``request``, else None."""
        claim = self._claims[ci]
        if self._in_use(request, device, ci):
            return None
        uses_counters = bool(device.spec.get("consumesCounters"))
        if uses_counters and not self.features.partitionable_devices:
            return None
        skip_counters = self._multiple(device) and bool(
            self.state.capacity.get(device.id) or self._capacity_in_flight.get(device.id)
        )
        consumed = self._capacity(request, device, self._capacity_in_flight.get(device.id, {}))
        if consumed is None:
            return None
        reserved = uses_counters and not skip_counters
        if reserved and not self._counters_fit(device, +1):
            self._counters_fit(device, -1)
            return None
        if self.features.device_taints and untolerated(device.spec.get("taints") or [], request.tolerations):
            if reserved:
                self._counters_fit(device, -1)
            return None
        base, sub = (request.parent, request.name) if request.parent else (request.name, "")
        if not add_to_all(claim.constraints, base, sub, device.spec, device.id[0], device.attribute_values):
            if reserved:
                self._counters_fit(device, -1)
            if must:
                raise AllocationError(
                    f"claim {claim.label}, request {request.name}: cannot add device "
                    f"{device.label} because a claim constraint would not be satisfied"
                )
            return None
        return self._hold(ci, request, device, consumed, reserved)

    def _hold(
        self, ci: int, request: Request, device: Candidate, consumed: dict[str, Amount], reserved: bool
    ) -> Callable[[], None]:
        """Count ``device`` as taken by claim ``ci``'s ``request`` (its constraints already hold
        it, its counters are reserved when ``reserved``); returns the undo function."""
        claim = self._claims[ci]
        base, sub = (request.parent, request.name) if request.parent else (request.name, "")
        self._allocating.setdefault(device.id, []).append(ci)
        in_flight = self._capacity_in_flight.setdefault(device.id, {})
        for name, (amount, _) in consumed.items():
            in_flight[name] = in_flight.get(name, Fraction(0)) + amount
        claim.picked.append(Picked(request, device, consumed if self._multiple(device) else None))

        def undo() -> None:
            for constraint in claim.constraints:
                constraint.remove(base, sub)
            self._allocating[device.id].remove(ci)
            for name, (amount, _) in consumed.items():
                in_flight[name] -= amount
            if reserved:
                self._counters_fit(device, -1)
            claim.picked.pop()

        return undo
