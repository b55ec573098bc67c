"""The capacity check: every workload placed under DRA and under the legacy model, and per node pool usage.

Pure (no I/O). :func:`check_capacity` takes workloads (:mod:`translate.capacity.demand`),
nodes, the cluster's devices (:mod:`translate.capacity.inventory`) and DeviceClasses, and:

- orders the workloads by priority (highest first), then namespace, then name
  (:func:`translate.capacity.model.placement_order`); pods of a workload in their order;
- places each pod under DRA (:class:`translate.capacity.dra.DraModel`: cumulatively, first
  fit over the nodes in name order, byte order) and under the legacy
  model (:class:`translate.capacity.legacy.LegacyModel`), each on its own copy of the cluster;
  a pod without converted claims but with legacy requests is ``not-converted`` under DRA
  (``fits`` None) and holds nothing there;
- sums per node pool (the nodes' value of ``pool_label``, by default GFD's
  ``nvidia.com/gpu.product``; ``""`` for nodes without it): DRA devices on the pool's nodes
  and how many are allocated before and after, legacy allocatable and held before and after.

Held before: ``held`` (:class:`~translate.capacity.model.Held`: ``status.allocation`` of claims
already allocated for DRA, ``{node: {resource: devices}}`` of running pods for legacy); pods
given as workloads must not also be given as held. Returns a :class:`~translate.capacity.model.
CapacityResult`; malformed input raises :class:`translate.errors.InputError`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

from dra_bridge.translate.alloc import Features, SelectorCache
from dra_bridge.translate.alloc.shapes import class_spec, object_label
from dra_bridge.translate.capacity.dra import DraModel, Placed
from dra_bridge.translate.capacity.legacy import LegacyModel
from dra_bridge.translate.capacity.model import (
    CapacityResult,
    ClusterNode,
    Held,
    PodFit,
    PoolUsage,
    WorkloadDemand,
    WorkloadFit,
    placement_order,
)
from dra_bridge.translate.errors import InputError
from dra_bridge.translate.names import GFD_PRODUCT_LABEL

__all__ = ["DEFAULT_POOL_LABEL", "check_capacity", "device_classes"]

DEFAULT_POOL_LABEL: Final = GFD_PRODUCT_LABEL


def device_classes(objects: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """DeviceClass objects (any served version) as ``{name: v1 spec}``."""
    out = {}
    for obj in objects:
        name = (obj.get("metadata") or {}).get("name")
        if not isinstance(name, str) or not name:
            raise InputError(f"{object_label(obj)}: metadata.name: must be a non-empty string")
        out[name] = class_spec(obj)
    return out


def _pools(
    nodes: Sequence[ClusterNode], dra: DraModel, before: set[tuple[str, str, str]], legacy: LegacyModel, label: str
) -> tuple[PoolUsage, ...]:
    after = dra.state.devices | set(dra.state.capacity)
    grouped: dict[str, list[ClusterNode]] = {}
    for node in nodes:
        grouped.setdefault(node.labels.get(label, ""), []).append(node)
    out = []
    for pool, members in sorted(grouped.items()):
        local: set[tuple[str, str, str]] = set()
        allocatable: Counter[str] = Counter()
        used_before: Counter[str] = Counter()
        used_after: Counter[str] = Counter()
        for node in members:
            local |= dra.local_devices(node)
            allocatable.update(node.allocatable)
            used_before.update(legacy.before[node.name])
            used_after.update(legacy.used[node.name])
        out.append(
            PoolUsage(
                pool,
                len(members),
                len(local),
                len(local & before),
                len(local & after),
                dict(allocatable),
                dict(used_before),
                dict(used_after),
            )
        )
    return tuple(out)


def check_capacity(
    workloads: Sequence[WorkloadDemand],
    nodes: Sequence[ClusterNode],
    slices: Sequence[tuple[str, Mapping[str, Any]]],
    classes: Mapping[str, Mapping[str, Any]],
    features: Features,
    *,
    held: Held | None = None,
    pool_label: str = DEFAULT_POOL_LABEL,
    cache: SelectorCache | None = None,
) -> CapacityResult:
    """Place every workload under both models (see the module docstring)."""
    nodes = sorted(nodes, key=lambda n: n.name.encode())
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        duplicate = next(n for n in names if names.count(n) > 1)
        raise InputError(f"Node {duplicate}: given twice")
    held = held or Held()
    dra = DraModel(nodes, slices, classes, features, held.allocations, cache)
    before = dra.state.devices | set(dra.state.capacity)
    legacy = LegacyModel(nodes, held.legacy)
    fits = []
    for workload in placement_order(list(workloads)):
        pods = []
        for pod in workload.pods:
            placed: Placed = (None, "not-converted", "no converted claims: stays on the device plugin", ())
            if pod.claims or not pod.legacy_requests:
                placed = dra.place(workload.namespace, pod)
            node, code, reason, devices = placed
            verdict = None if code == "not-converted" else code == "fits"
            legacy_node, legacy_code, legacy_reason = legacy.place(pod.legacy_requests, pod.legacy)
            pods.append(
                PodFit(
                    workload.namespace,
                    workload.name,
                    pod.name,
                    verdict,
                    node,
                    code,
                    reason,
                    devices,
                    legacy_code == "fits",
                    legacy_node,
                    legacy_code,
                    legacy_reason,
                )
            )
        fits.append(WorkloadFit(workload.namespace, workload.name, workload.kind, workload.priority, tuple(pods)))
    return CapacityResult(pool_label, tuple(fits), _pools(nodes, dra, before, legacy, pool_label))
