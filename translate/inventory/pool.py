"""A node's slice devices -> the ResourceSlices of its pool, and their per-version rendering (pure).

Rules (the types, https://github.com/kubernetes/api/blob/master/resource/v1/types.go, and the validation,
https://github.com/kubernetes/kubernetes/blob/master/pkg/apis/resource/validation/validation.go):

- slices: at most 128 devices per slice (64 when a device carries taints or counters: the caller
  passes ``max_devices``, :func:`translate.inventory.device_taints.max_devices`);
  ``pool.resourceSliceCount`` > 0; exactly one of ``nodeName`` / ``nodeSelector`` / ``allNodes``;
  never ``nodeName: ""`` nor ``allNodes: false``;
- versions (docs/design.md D7): v1beta1 wraps every device field but ``name`` in ``basic``; v1beta2 and v1 have
  the same shape.

Shapes: the *internal form* of a slice is the v1 shape without ``apiVersion``/``kind``::

    {"metadata": {"name": str, "labels": {str: str}},
     "spec": {"driver": str, "nodeName": str,
              "pool": {"name": str, "generation": int, "resourceSliceCount": int},
              "devices": [{"name": str,
                           "attributes": {qualified name: {"string"|"version"|"int"|"bool": v}},
                           "capacity": {qualified name: {"value": quantity str}}}]}}
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from dra_bridge.translate.dns_names import digest, is_dns_subdomain, to_label
from dra_bridge.translate.errors import InventoryError
from dra_bridge.translate.inventory.api_rules import AttributeValue, Capacity, SliceDevice, check_device
from dra_bridge.translate.names import API_VERSIONS, MANAGED_BY, MANAGED_BY_BRIDGE

#: ResourceSliceMaxDevices (resource.k8s.io/v1 types); 64 with taints (translate.inventory.device_taints).
MAX_DEVICES_PER_SLICE = 128


def slice_name(node: str, driver: str, index: int) -> str:
    """The deterministic name of slice ``index`` of a node's pool: ``<node>-<driver label>-<index>``.

    A DNS subdomain (<= 253). Long node names keep a prefix plus a hash of the full name so two
    nodes never collide by truncation.
    """
    tail = f"-{to_label(driver)}-{index}"
    name = f"{node}{tail}"
    if len(name) <= 253:
        return name
    head = node[: 253 - len(tail) - 11].rstrip(".-")
    return f"{head}-{digest(node, 10)}{tail}"


def pool_slices(
    node: str,
    driver: str,
    devices: Sequence[SliceDevice],
    generation: int = 0,
    max_devices: int = MAX_DEVICES_PER_SLICE,
) -> list[dict[str, Any]]:
    """Split a node's devices into the slices of one pool (internal form).

    Devices keep their order (the scheduler tries slices in name order, first fit). An empty
    device list still gives one slice: an empty pool is not the same as no pool
    (the upstream publisher, ``resourceslice/resourceslicecontroller.go``). ``spec.nodeName`` is
    always the node; ``allNodes`` is never emitted.
    """
    if not is_dns_subdomain(node):
        raise InventoryError(f"node name {node!r} is not a DNS subdomain")
    if not is_dns_subdomain(driver) or len(driver) > 63:
        raise InventoryError(f"driver name {driver!r} is not a DNS subdomain of at most 63 characters")
    names = [d["name"] for d in devices]
    if len(set(names)) != len(names):
        raise InventoryError("device names in a pool must be unique")
    chunks = [list(devices[i : i + max_devices]) for i in range(0, len(devices), max_devices)] or [[]]
    out = []
    for index, chunk in enumerate(chunks):
        for device in chunk:
            check_device(device)
        out.append(
            {
                "metadata": {"name": slice_name(node, driver, index), "labels": {MANAGED_BY: MANAGED_BY_BRIDGE}},
                "spec": {
                    "driver": driver,
                    "nodeName": node,
                    "pool": {"name": node, "generation": generation, "resourceSliceCount": len(chunks)},
                    "devices": [_copy_device(d) for d in chunk],
                },
            }
        )
    return out


def _copy_device(device: SliceDevice) -> SliceDevice:
    """A new device dict (the value dicts are one level deep, so this is a full copy)."""
    out = SliceDevice(
        name=device["name"],
        attributes={k: AttributeValue(**v) for k, v in device["attributes"].items()},
        capacity={k: Capacity(value=v["value"]) for k, v in device["capacity"].items()},
    )
    if device.get("taints"):
        out["taints"] = [dict(t) for t in device["taints"]]
    return out


def render_slice(internal: Mapping[str, Any], api_version: str) -> dict[str, Any]:
    """Render one internal-form slice for ``api_version`` (a new dict).

    v1 and v1beta2 are identical apart from ``apiVersion``; v1beta1 moves every device field
    except ``name`` under ``basic`` (resource.k8s.io/v1beta1 ``BasicDevice``).
    """
    if api_version not in API_VERSIONS:
        raise InventoryError(f"unsupported API version {api_version!r} (one of {', '.join(API_VERSIONS)})")
    out: dict[str, Any] = {"apiVersion": api_version, "kind": "ResourceSlice"}
    out.update(copy.deepcopy(dict(internal)))
    if api_version == "resource.k8s.io/v1beta1":
        out["spec"]["devices"] = [
            {"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}}
            for d in out["spec"].get("devices", [])
        ]
    return out


def internal_form(rendered: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`render_slice`: any served version back to the internal form."""
    out = copy.deepcopy(dict(rendered))
    out.pop("apiVersion", None)
    out.pop("kind", None)
    devices = out.get("spec", {}).get("devices") or []
    flat = []
    for d in devices:
        if "basic" in d:
            merged = {"name": d["name"]}
            merged.update(d["basic"] or {})
            flat.append(merged)
        else:
            flat.append(d)
    if "spec" in out:
        out["spec"]["devices"] = flat
    return out
