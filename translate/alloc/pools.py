"""The resource pools a node sees: ResourceSlices grouped, filtered and ordered as the allocator does.

Pure (no I/O). Input: ``(name, spec)`` pairs of ResourceSlices already in the v1 shape
(:func:`translate.alloc.shapes.slice_spec`) and the :class:`~translate.alloc.node_match.Node`.
Rules (k8s.io/dynamic-resource-allocation ``structured/internal/experimental``
``GatherPools`` and ``Allocator.Allocate``, 1.36+):

- a pool is identified by (driver, pool name); only slices of the pool's newest
  ``pool.generation`` count; the pool is *incomplete* when it has fewer (or more) such slices
  than ``pool.resourceSliceCount``;
- a slice targets the node by ``nodeName``, ``allNodes``, ``nodeSelector`` (labels and
  ``metadata.name``) or ``perDeviceNodeSelection`` (then each device's own node fields are
  checked when it is selected); a pool with no slice targeting the node is absent;
- a pool is *invalid* when a device name repeats within it (``duplicate device name``);
- order: pools by (driver, pool) in byte order, pools whose devices have binding conditions
  last; slices by name; devices in listed order. ExactCount searches skip incomplete and
  invalid pools; "All" requests fail on them (see :mod:`translate.alloc.engine`).
- shared counters (partitionable devices) come from every slice of the pool's newest
  generation, whichever node it targets (counter sets are per pool since 1.35).

The :class:`Candidate` of each device carries a content key (driver, attributes, capacity,
allowMultipleAllocations) under which selector results are cached across nodes and runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dra_bridge.translate.alloc.node_match import Node, node_matches
from dra_bridge.translate.cel.quantity_semver import Quantity
from dra_bridge.translate.errors import InputError, ValueFormatError

__all__ = ["Candidate", "Pool", "SliceView", "gather_pools", "quantity"]

DeviceID = tuple[str, str, str]


def quantity(value: Any, where: str) -> Fraction:
    """A Kubernetes quantity (``"8Gi"``, ``4``, or ``{"value": "8Gi"}``) as an exact number."""
    raw = value.get("value") if isinstance(value, Mapping) else value
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        raw = str(raw)
    if not isinstance(raw, str):
        raise InputError(f"{where}: must be a quantity string")
    try:
        return Quantity.parse(raw).value
    except ValueFormatError as exc:
        raise InputError(f"{where}: {exc}") from exc


@dataclass(eq=False)
class SliceView:
    """One ResourceSlice of a pool (v1 spec)."""

    name: str
    spec: Mapping[str, Any]

    @property
    def per_device(self) -> bool:
        return bool(self.spec.get("perDeviceNodeSelection"))


@dataclass(eq=False)
class Candidate:
    """One device of a pool, ready to be tried: its id (driver, pool, device), spec and slice."""

    id: DeviceID
    spec: Mapping[str, Any]
    slice: SliceView
    content_key: str

    @property
    def label(self) -> str:
        return "/".join(self.id)


@dataclass(eq=False)
class Pool:
    """A pool as the node sees it."""

    driver: str
    name: str
    slices: list[SliceView]
    incomplete: bool = False
    invalid: str = ""
    binding: bool = False
    counters: dict[str, dict[str, Fraction]] = field(default_factory=dict)
    devices: list[Candidate] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.driver}/{self.name}"


def _targets(spec: Mapping[str, Any], node: Node) -> bool:
    if spec.get("perDeviceNodeSelection"):
        return True
    return node_matches(node, spec.get("nodeName"), bool(spec.get("allNodes")), spec.get("nodeSelector"))


def _content_key(driver: str, device: Mapping[str, Any]) -> str:
    return json.dumps([driver, device.get("attributes") or {}, device.get("capacity") or {},
                       bool(device.get("allowMultipleAllocations"))], sort_keys=True, default=str)


def _counters(slices: Iterable[SliceView], label: str) -> dict[str, dict[str, Fraction]]:
    out: dict[str, dict[str, Fraction]] = {}
    for view in slices:
        for i, counter_set in enumerate(view.spec.get("sharedCounters") or []):
            where = f"ResourceSlice {view.name}: spec.sharedCounters[{i}]"
            counters = counter_set.get("counters") or {}
            out[str(counter_set.get("name"))] = {name: quantity(c, f"{where}.counters[{name!r}]")
                                                 for name, c in counters.items()}
    return out


def gather_pools(slices: Iterable[tuple[str, Mapping[str, Any]]], node: Node) -> list[Pool]:
    """The pools ``node`` sees, in the allocator's search order (see the module docstring)."""
    grouped: dict[tuple[str, str], list[SliceView]] = {}
    for name, spec in slices:
        grouped.setdefault((str(spec["driver"]), str(spec["pool"]["name"])), []).append(SliceView(name, spec))
    pools: list[Pool] = []
    for (driver, pool_name), views in grouped.items():
        newest = max(int(v.spec["pool"]["generation"]) for v in views)
        current = sorted((v for v in views if int(v.spec["pool"]["generation"]) == newest), key=lambda v: v.name)
        targeting = [v for v in current if _targets(v.spec, node)]
        if not targeting:
            continue
        pool = Pool(driver, pool_name, targeting)
        pool.incomplete = len(current) != int(current[0].spec["pool"]["resourceSliceCount"])
        seen: set[str] = set()
        for view in current:
            for device in view.spec.get("devices") or []:
                if device["name"] in seen and not pool.invalid:
                    pool.invalid = f"duplicate device name {device['name']}"
                seen.add(device["name"])
        pool.counters = _counters(current, pool.label)
        for view in targeting:
            for device in view.spec.get("devices") or []:
                pool.devices.append(Candidate((driver, pool_name, device["name"]), device, view,
                                              _content_key(driver, device)))
                pool.binding = pool.binding or bool(device.get("bindingConditions"))
        pools.append(pool)
    pools.sort(key=lambda p: (p.binding, p.driver.encode(), p.name.encode()))
    return pools
