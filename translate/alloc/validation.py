"""Validating a set of claims for the allocator: validateDeviceRequest and the claim's limits.

Pure (no I/O). Re-typed from k8s.io/dynamic-resource-allocation
``structured/internal/incubating/allocator_incubating.go`` (``Allocate``'s validation part and
``validateDeviceRequest``), with upstream's messages:

- each request (each ``firstAvailable`` subrequest) has CEL selectors only, a device class that
  exists, a count mode of ``ExactCount`` or ``All``; admin access, subrequests, capacity requests
  and ``distinctAttribute`` constraints only with their feature gates;
- an ``All`` request lists every selectable device with room (the caller's checks) of every
  pool, and is an error on an incomplete or invalid pool;
- a claim asks for at most 32 devices (``AllocationResultsMaxSize``), counting each
  ``firstAvailable`` request at its smallest subrequest.

:class:`Validator` turns one claim's spec into a :class:`Claim`, the search state
:class:`translate.alloc.engine.NodeAllocator` fills in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dra_bridge.translate.alloc.constraints import Constraint
from dra_bridge.translate.alloc.features import Features
from dra_bridge.translate.alloc.pools import Candidate, Pool
from dra_bridge.translate.alloc.results import Picked, Request
from dra_bridge.translate.errors import AllocationError
from dra_bridge.translate.inventory.api_rules import MAX_DEVICES_PER_CLAIM

__all__ = ["Claim", "Validator"]


@dataclass
class Claim:
    """One claim as the allocator searches it: its requests (each a list of subrequests, or one
    request), which have subrequests, its constraints, the subrequest chosen and the devices picked."""

    label: str
    spec: Mapping[str, Any]
    requests: list[list[Request]]
    subrequests: list[bool]
    constraints: list[Constraint]
    selected: list[int]
    picked: list[Picked] = field(default_factory=list)


class Validator:
    """Validates claims against one node's pools and the device classes (see the module docstring).

    ``selectable(claim, request, device)`` and ``fits(request, device)`` are the allocator's own
    device checks (selectors and node, consumable capacity), used for ``All`` requests."""

    def __init__(
        self,
        pools: list[Pool],
        classes: Mapping[str, Mapping[str, Any]],
        features: Features,
        selectable: Callable[[str, Request, Candidate], bool],
        fits: Callable[[Request, Candidate], bool],
    ) -> None:
        self.pools, self.classes, self.features = pools, classes, features
        self.selectable, self.fits = selectable, fits

    def _request(self, claim: str, spec: Mapping[str, Any], name: str, parent: str, key: tuple[int, ...]) -> Request:
        for i, selector in enumerate(spec.get("selectors") or []):
            if not isinstance(selector.get("cel"), Mapping):
                raise AllocationError(
                    f"claim {claim}, request {name}, selector #{i}: CEL expression empty (unsupported selector type?)"
                )
        if spec.get("adminAccess") is not None and not self.features.admin_access:
            raise AllocationError(
                f"claim {claim}, request {name}: admin access is requested, but the feature is disabled"
            )
        class_name = str(spec.get("deviceClassName") or "")
        if not class_name:
            raise AllocationError(
                f"claim {claim}, request {name}: missing device class name (unsupported request type?)"
            )
        device_class = self.classes.get(class_name)
        if device_class is None:
            raise AllocationError(
                f"claim {claim}, request {name}: could not retrieve device class {class_name}: "
                f'deviceclass.resource.k8s.io "{class_name}" not found'
            )
        request = Request(
            name,
            parent,
            class_name,
            device_class,
            list(spec.get("selectors") or []),
            str(spec.get("allocationMode")),
            int(spec.get("count") or 0),
            bool(spec.get("adminAccess")),
            list(spec.get("tolerations") or []),
            dict((spec.get("capacity") or {}).get("requests") or {}),
            key,
        )
        if request.mode == "All":
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {claim}, request {name}: asks for all devices, but resource pool "
                        f"{pool.label} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"claim {claim}, request {name}: asks for all devices, but resource pool "
                        f"{pool.label} is currently invalid"
                    )
                request.all_devices += [
                    d for d in pool.devices if self.selectable(claim, request, d) and self.fits(request, d)
                ]
            request.count = len(request.all_devices)
        elif request.mode != "ExactCount":
            raise AllocationError(f"claim {claim}, request {name}: unsupported count mode {request.mode}")
        return request

    def claim(
        self, index: int, label: str, spec: Mapping[str, Any], known: tuple[list[list[Request]], list[bool]] | None
    ) -> Claim:
        """Claim ``index`` (``label``, its v1 ``spec``) validated; ``known``: its requests as validated
        before for the same specs (only the constraints are built again). Raises AllocationError."""
        devices = spec.get("devices") or {}
        if known is not None:
            return Claim(label, spec, known[0], known[1], self._constraints(label, devices), [0] * len(known[0]))
        requests: list[list[Request]] = []
        subrequests: list[bool] = []
        minimum = 0
        for r, request in enumerate(devices.get("requests") or []):
            subs = request.get("firstAvailable")
            if subs:
                if not self.features.prioritized_list:
                    raise AllocationError(
                        f"claim {label}, request {request['name']}: has subrequests, "
                        "but the DRAPrioritizedList feature is disabled"
                    )
                entry = [
                    self._checked(label, sub, sub["name"], request["name"], (index, r, s)) for s, sub in enumerate(subs)
                ]
                minimum += min(req.count for req in entry)
            else:
                entry = [self._checked(label, request["exactly"], request["name"], "", (index, r, 0))]
                minimum += entry[0].count
            requests.append(entry)
            subrequests.append(bool(subs))
        if minimum > MAX_DEVICES_PER_CLAIM:
            raise AllocationError(
                f"claim {label}: number of requested devices {minimum} exceeds the claim limit "
                f"of {MAX_DEVICES_PER_CLAIM}"
            )
        return Claim(label, spec, requests, subrequests, self._constraints(label, devices), [0] * len(requests))

    def _constraints(self, label: str, devices: Mapping[str, Any]) -> list[Constraint]:
        constraints = []
        for i, constraint in enumerate(devices.get("constraints") or []):
            kind = next((k for k in ("matchAttribute", "distinctAttribute") if constraint.get(k)), None)
            if kind is None or (kind == "distinctAttribute" and not self.features.consumable_capacity):
                raise AllocationError(
                    f"claim {label}, constraint #{i}: empty constraint (unsupported constraint type?)"
                )
            constraints.append(
                Constraint(
                    kind,
                    str(constraint[kind]),
                    list(constraint.get("requests") or []),
                    self.features.list_type_attributes,
                )
            )
        return constraints

    def _checked(self, claim: str, spec: Mapping[str, Any], name: str, parent: str, key: tuple[int, ...]) -> Request:
        if spec.get("capacity") and not self.features.consumable_capacity:
            what = "subrequest" if parent else "request"
            raise AllocationError(
                f"claim {claim}, {what} {name}: has capacity requests, but the "
                "DRAConsumableCapacity feature is disabled"
            )
        return self._request(claim, spec, name, parent, key)
