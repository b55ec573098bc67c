"""The resource pools a node sees: ResourceSlices grouped, filtered and ordered as the allocator does.

Pure (no I/O). Input: ``(name, spec)`` pairs of ResourceSlices already in the v1 shape
(:func:`translate.alloc.shapes.slice_spec`) and the :class:`~translate.alloc.node_match.Node`.
Rules (k8s.io/dynamic-resource-allocation ``structured/internal/experimental``
``GatherPools`` and ``Allocator.Allocate``, 1.36+):

- a pool is identified by (driver, pool name); a slice is *relevant* for the node when it
  targets it by ``nodeName``, ``allNodes`` or ``nodeSelector`` (labels and ``metadata.name``),
  when it has ``perDeviceNodeSelection`` and one of its devices targets it (each device's own
  node fields are checked again when it is selected), or when it has ``sharedCounters``;
  a slice with none of these is ignored; a pool with no relevant slice is absent;
- of the relevant slices only those of their newest ``pool.generation`` count; when they are
  fewer (or more) than ``pool.resourceSliceCount``, every slice of the pool is consulted: a
  newer generation anywhere makes the pool obsolete (ignored), otherwise the pool is
  *incomplete* unless that generation's slices number ``resourceSliceCount``;
- a complete pool is *invalid* when a device name repeats among its relevant device slices
  (``duplicate device name``); incomplete pools are not validated;
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
    selector_results: dict[Any, bool] = field(default_factory=dict)
    """This device's selector results by expression, and by (class expressions, request
    expressions) (:mod:`translate.alloc.selectors`, :mod:`translate.alloc.engine`)."""
    attribute_values: dict[tuple[str, bool], Any] = field(default_factory=dict)
    """This device's values of constraint attributes (:mod:`translate.alloc.constraints`)."""

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


def _relevant(spec: Mapping[str, Any], node: Node, partitionable: bool) -> bool:
    """Whether a slice is relevant for ``node`` (``GatherPools``' first loop)."""
    if spec.get("sharedCounters"):
        return partitionable
    if spec.get("nodeName") or spec.get("allNodes") or spec.get("nodeSelector") is not None:
        return node_matches(node, spec.get("nodeName"), bool(spec.get("allNodes")), spec.get("nodeSelector"))
    if spec.get("perDeviceNodeSelection"):
        return partitionable and any(
            node_matches(node, d.get("nodeName"), bool(d.get("allNodes")), d.get("nodeSelector"))
            for d in spec.get("devices") or []
        )
    return False


def _content_key(driver: str, device: Mapping[str, Any]) -> str:
    return json.dumps(
        [
            driver,
            device.get("attributes") or {},
            device.get("capacity") or {},
            bool(device.get("allowMultipleAllocations")),
        ],
        sort_keys=True,
        default=str,
    )


def _counters(slices: Iterable[SliceView], label: str) -> dict[str, dict[str, Fraction]]:
    out: dict[str, dict[str, Fraction]] = {}
    for view in slices:
        for i, counter_set in enumerate(view.spec.get("sharedCounters") or []):
            where = f"ResourceSlice {view.name}: spec.sharedCounters[{i}]"
            counters = counter_set.get("counters") or {}
            out[str(counter_set.get("name"))] = {
                name: quantity(c, f"{where}.counters[{name!r}]") for name, c in counters.items()
            }
    return out


def _generation(spec: Mapping[str, Any]) -> int:
    return int(spec["pool"]["generation"])


def _duplicate_name(views: list[SliceView]) -> str:
    """Why a pool whose device slices are ``views`` is invalid: its first repeated device name ("" if none)."""
    seen: set[str] = set()
    for view in views:
        for device in view.spec.get("devices") or []:
            if device["name"] in seen:
                return f"duplicate device name {device['name']}"
            seen.add(device["name"])
    return ""


def gather_pools(slices: Iterable[tuple[str, Mapping[str, Any]]], node: Node, partitionable: bool = True) -> list[Pool]:
    """The pools ``node`` sees, in the allocator's search order (see the module docstring)."""
    every: dict[tuple[str, str], list[SliceView]] = {}
    relevant: dict[tuple[str, str], list[SliceView]] = {}
    for name, spec in slices:
        pid = (str(spec["driver"]), str(spec["pool"]["name"]))
        view = SliceView(name, spec)
        every.setdefault(pid, []).append(view)
        if not _relevant(spec, node, partitionable):
            continue
        held = relevant.get(pid)
        if not held or _generation(spec) > _generation(held[0].spec):
            relevant[pid] = [view]
        elif _generation(spec) == _generation(held[0].spec):
            held.append(view)
    pools: list[Pool] = []
    for (driver, pool_name), views in relevant.items():
        generation, wanted = _generation(views[0].spec), int(views[0].spec["pool"]["resourceSliceCount"])
        current = views
        if len(views) != wanted:
            if any(_generation(v.spec) > generation for v in every[(driver, pool_name)]):
                continue  # obsolete: the driver is replacing this generation
            current = [v for v in every[(driver, pool_name)] if _generation(v.spec) == generation]
        views = sorted(views, key=lambda v: v.name)
        pool = Pool(driver, pool_name, sorted(current, key=lambda v: v.name))
        if len(current) != wanted:
            pool.incomplete = True
            pools.append(pool)
            continue
        device_views = [v for v in views if not v.spec.get("sharedCounters")] if partitionable else views
        pool.invalid = _duplicate_name(device_views)
        if pool.invalid:
            pools.append(pool)
            continue
        pool.counters = _counters([v for v in views if v.spec.get("sharedCounters")], pool.label)
        for view in device_views:
            for device in view.spec.get("devices") or []:
                pool.devices.append(
                    Candidate((driver, pool_name, device["name"]), device, view, _content_key(driver, device))
                )
                pool.binding = pool.binding or bool(device.get("bindingConditions"))
        pools.append(pool)
    pools.sort(key=lambda p: (p.binding, p.driver.encode(), p.name.encode()))
    return pools
