"""The cluster's devices for the capacity check: given ResourceSlices, inventory dumps, or node capacity.

Pure (no I/O). Per node, the first source that applies (issue 12, "Capacity"):

1. ``inventory``: a ``dra-bridge inventory --json`` dump for the node (grouped by
   :func:`translate.inventory.allocatable.group_allocatable`): the slices the bridge would
   publish from it and the node's GFD labels (:func:`translate.inventory.slices.build_slices`);
2. ``slices``: ResourceSlices given with ``spec.nodeName`` of the node stand as they are;
3. ``node``: what the bridge would publish from the node's ``status.allocatable`` extended
   resources and GFD labels: one device per allocatable unit of every catalogued resource,
   with made-up device IDs (``GPU-<i>``, ``MIG-<i>`` on MIG resources and single-strategy
   nodes, ``dev-<i>`` for other vendors). The kubelet's NUMA topology and NVML's PCIe root
   are unknown there, so such devices carry no ``numaNode`` or ``pcieRoot``: a converted pod
   with alignment does not fit on them (give inventory dumps or slices to check alignment).

Given slices that target no node by name (``nodeSelector``, ``allNodes``, per-device node
selection: network-attached devices) are always kept. A slice of a node that has an
inventory dump is dropped when it is the bridge's own (its driver is the catalog's bridge
driver), since the dump rebuilds it. Errors: :class:`translate.errors.InputError` naming the
object, the field and the rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from dra_bridge.translate.alloc.shapes import object_label, slice_spec
from dra_bridge.translate.capacity.model import ClusterNode
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.errors import InputError, TranslateError
from dra_bridge.translate.inventory.allocatable import InventoryDevice
from dra_bridge.translate.inventory.pool import render_slice
from dra_bridge.translate.inventory.slices import build_slices
from dra_bridge.translate.names import GFD_PRODUCT_LABEL
from dra_bridge.translate.plan.demand import is_extended
from dra_bridge.translate.plan.device_counts import parse_count

__all__ = ["ClusterDevices", "Source", "cluster_devices", "cluster_node", "synthetic_inventory"]

Source = Literal["inventory", "slices", "node"]
_V1: Final = "resource.k8s.io/v1"


@dataclass(frozen=True)
class ClusterDevices:
    """ResourceSlices as ``(name, v1 spec)``, where each node's devices came from, and warnings
    (resources the bridge would not publish)."""

    slices: list[tuple[str, dict[str, Any]]]
    sources: dict[str, Source]
    warnings: list[str] = field(default_factory=list)


def _map(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: must be an object")
    return dict(value)


def cluster_node(obj: Mapping[str, Any]) -> ClusterNode:
    """A :class:`ClusterNode` from a Node object (``metadata.name``, ``metadata.labels``,
    ``spec.taints``, ``spec.unschedulable``, the extended resources of ``status.allocatable``)."""
    meta = _map(obj.get("metadata"), "Node (no name): metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError("Node (no name): metadata.name: must be a non-empty string")
    label = f"Node {name}"
    labels = _map(meta.get("labels"), f"{label}: metadata.labels")
    spec = _map(obj.get("spec"), f"{label}: spec")
    taints = spec.get("taints") or []
    if not isinstance(taints, list) or not all(isinstance(t, Mapping) for t in taints):
        raise InputError(f"{label}: spec.taints: must be a list of objects")
    allocatable: dict[str, int] = {}
    for key, value in _map(
        _map(obj.get("status"), f"{label}: status").get("allocatable"), f"{label}: status.allocatable"
    ).items():
        if is_extended(str(key)):
            try:
                allocatable[str(key)] = parse_count(value)
            except ValueError as exc:
                raise InputError(f"{label}: status.allocatable[{key}]: {exc}") from exc
    return ClusterNode(
        name, {str(k): str(v) for k, v in labels.items()}, tuple(taints), bool(spec.get("unschedulable")), allocatable
    )


def synthetic_inventory(node: ClusterNode, catalog: Catalog) -> list[InventoryDevice]:
    """One device per allocatable unit of each catalogued resource of ``node`` (see rule 3)."""
    out: list[InventoryDevice] = []
    single_mig = "-MIG-" in node.labels.get(GFD_PRODUCT_LABEL, "")
    for resource, count in sorted(node.allocatable.items()):
        mapping = catalog.lookup(resource)
        if mapping is None:
            continue
        if mapping.kind == "mig" or (single_mig and mapping.gfd == "nvidia"):
            prefix = "MIG"
        else:
            prefix = "GPU" if mapping.gfd == "nvidia" else "dev"
        tag = resource.rsplit("/", 1)[-1]
        for i in range(count):
            out.append(InventoryDevice(resourceName=resource, deviceID=f"{prefix}-{tag}-{i}", numaNodes=[]))
    return out


def _bridge(
    node: ClusterNode, inventory: Sequence[InventoryDevice], catalog: Catalog, warnings: list[str]
) -> list[tuple[str, dict[str, Any]]]:
    try:
        build = build_slices(node.name, inventory, catalog, node.labels, driver=catalog.bridge_driver)
    except TranslateError as exc:
        raise InputError(f"Node {node.name}: the bridge's slices: {exc}") from exc
    warnings += [f"Node {node.name}: {w}" for w in build.warnings]
    out = []
    for internal in build.slices:
        rendered = render_slice(internal, _V1)
        out.append((str(rendered["metadata"]["name"]), slice_spec(rendered)))
    return out


def cluster_devices(
    nodes: Sequence[ClusterNode],
    slices: Sequence[Mapping[str, Any]],
    catalog: Catalog,
    inventories: Mapping[str, Sequence[InventoryDevice]] | None = None,
) -> ClusterDevices:
    """The devices of the cluster, per the rules of the module docstring.

    ``slices``: ResourceSlice objects (any served version); ``inventories``: grouped inventory
    dumps by node name (a name without a Node raises InputError).
    """
    inventories = inventories or {}
    names = {n.name for n in nodes}
    for name in inventories:
        if name not in names:
            raise InputError(f"inventory dump for node {name}: no Node object of that name in the input")
    parsed: list[tuple[str, dict[str, Any]]] = []
    for obj in slices:
        meta = _map(obj.get("metadata"), f"{object_label(obj)}: metadata")
        if not isinstance(meta.get("name"), str) or not meta["name"]:
            raise InputError(f"{object_label(obj)}: metadata.name: must be a non-empty string")
        parsed.append((str(meta["name"]), slice_spec(obj)))
    out: list[tuple[str, dict[str, Any]]] = []
    sources: dict[str, Source] = {}
    warnings: list[str] = []
    named = {spec.get("nodeName") for _, spec in parsed}
    for name, spec in parsed:
        node_name = spec.get("nodeName")
        if node_name in inventories and spec["driver"] == catalog.bridge_driver:
            continue
        out.append((name, spec))
    for node in nodes:
        if node.name in inventories:
            sources[node.name] = "inventory"
            out += _bridge(node, inventories[node.name], catalog, warnings)
        elif node.name in named:
            sources[node.name] = "slices"
        else:
            sources[node.name] = "node"
            inventory = synthetic_inventory(node, catalog)
            if inventory:
                out += _bridge(node, inventory, catalog, warnings)
    return ClusterDevices(out, sources, warnings)
