"""ResourceSlice value rules, names, splitting and per-version rendering (pure).

This module holds the API-server rules a ResourceSlice must pass, so that ``translate.slices``
can only ever produce objects the API server accepts. Sources (../shared/reference/dra-api.md):

- section 2.2: an attribute value sets exactly one of ``int``, ``bool``, ``string`` (at most 64
  bytes) or ``version`` (semver 2.0.0, at most 64 bytes); ``len(attributes) + len(capacity)``
  is at most 32 per device; a device name is a DNS label;
- section 2.1: at most 128 devices per slice (64 when a device uses taints or counters, which we
  never publish); ``pool.resourceSliceCount`` > 0; exactly one of ``nodeName`` / ``nodeSelector``
  / ``allNodes``; never ``nodeName: ""`` nor ``allNodes: false``;
- section 1.2: v1beta1 wraps every device field but ``name`` in ``basic``; v1beta2 and v1 have
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
import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NewType, TypedDict

from translate.errors import InventoryError
from translate.names import digest, is_dns_label, is_dns_subdomain, to_label

DriverName = NewType("DriverName", str)
PoolName = NewType("PoolName", str)
ApiVersion = Literal["resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"]
API_VERSIONS: tuple[str, ...] = ("resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1")

#: dra-api.md 2.1 (ResourceSliceMaxDevices); we never use taints or counters, so not 64.
MAX_DEVICES_PER_SLICE = 128
#: dra-api.md 2.2 (ResourceSliceMaxAttributesAndCapacitiesPerDevice).
MAX_ATTRIBUTES_AND_CAPACITIES = 32
#: dra-api.md 2.2: string and version attribute values.
MAX_VALUE_BYTES = 64
#: dra-api.md 2.3 (the apiserver's semverRe): no leading zeros, no ``v`` prefix.
SEMVER_RE = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)
_QUALIFIED_RE = re.compile(r"(?:(?P<domain>[^/]+)/)?(?P<id>[A-Za-z_][A-Za-z0-9_]{0,31})")
MANAGED_BY = {"app.kubernetes.io/managed-by": "dra-bridge"}


class AttributeValue(TypedDict, total=False):
    """One DeviceAttribute: exactly one key is set."""

    string: str
    version: str
    int: int
    bool: bool


class Capacity(TypedDict):
    """One DeviceCapacity: a canonical quantity string."""

    value: str


class SliceDevice(TypedDict):
    """A device in the internal (v1) form."""

    name: str
    attributes: dict[str, AttributeValue]
    capacity: dict[str, Capacity]


def semver(raw: str) -> str | None:
    """Normalise a dotted version to semver 2.0.0, or None when it cannot be.

    ``"8.0"`` -> ``"8.0.0"``, ``"550.107.02"`` -> ``"550.107.2"`` (leading zeros are invalid
    semver; the NVIDIA driver publishes the normalised form), ``"12"`` -> ``"12.0.0"``.
    More than three numeric parts, or anything non-numeric, gives None.
    """
    parts = raw.strip().split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        return None
    nums = [str(int(p)) for p in parts] + ["0"] * (3 - len(parts))
    out = ".".join(nums)
    return out if len(out) <= MAX_VALUE_BYTES else None


def binary_quantity(value: int) -> str:
    """The canonical Kubernetes quantity text for a byte count.

    The API server stores a quantity in canonical form (largest exact power-of-1024 suffix for
    binary values), so emitting that form keeps the stored object equal to the desired one and
    a re-publish writes nothing. ``42949672960`` -> ``"40Gi"``, ``1000`` -> ``"1000"``.
    """
    if value < 0:
        raise InventoryError(f"capacity must not be negative: {value}")
    if value < 1024:
        return str(value)
    suffixes = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
    exp = 0
    while exp < len(suffixes) - 1 and value % 1024 == 0:
        value //= 1024
        exp += 1
    return f"{value}{suffixes[exp]}"


@functools.lru_cache(maxsize=1024)
def is_qualified_name(name: str) -> bool:
    """A QualifiedName: C identifier <= 32 chars, optionally ``<DNS subdomain <= 63>/`` before it."""
    m = _QUALIFIED_RE.fullmatch(name)
    domain = m.group("domain") if m else None
    return m is not None and (domain is None or (len(domain) <= 63 and is_dns_subdomain(domain)))


def check_attribute(name: str, value: AttributeValue) -> str | None:
    """Why an attribute would be rejected by the API server, or None when it is valid.

    Rules: the qualified name (C identifier <= 32 chars, optional DNS-subdomain domain <= 63),
    exactly one value kind, strings/versions <= 64 bytes, versions valid semver.
    """
    if not is_qualified_name(name):
        return f"attribute name {name!r} is not a qualified name"
    if len(value) != 1:
        return f"attribute {name} must set exactly one value kind, has {sorted(value)}"
    if "string" in value or "version" in value:
        text = value.get("string", value.get("version", ""))
        if not isinstance(text, str) or len(text.encode("utf-8")) > MAX_VALUE_BYTES:
            return f"attribute {name} is longer than {MAX_VALUE_BYTES} bytes"
        if "version" in value and SEMVER_RE.fullmatch(text) is None:
            return f"attribute {name} is not a semantic version: {text!r}"
    return None


def check_device(device: SliceDevice) -> None:
    """Raise InventoryError when a device breaks a per-device rule (name, limits, values)."""
    if not is_dns_label(device["name"]):
        raise InventoryError(f"device name {device['name']!r} is not a DNS label")
    count = len(device["attributes"]) + len(device["capacity"])
    if count > MAX_ATTRIBUTES_AND_CAPACITIES:
        raise InventoryError(
            f"device {device['name']}: {count} attributes and capacities, the limit is {MAX_ATTRIBUTES_AND_CAPACITIES}"
        )
    for name, value in device["attributes"].items():
        why = check_attribute(name, value)
        if why:
            raise InventoryError(f"device {device['name']}: {why}")


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


def pool_slices(node: str, driver: str, devices: Sequence[SliceDevice], generation: int = 0,
                max_devices: int = MAX_DEVICES_PER_SLICE) -> list[dict[str, Any]]:
    """Split a node's devices into the slices of one pool (internal form).

    Devices keep their order (the scheduler tries slices in name order, first fit). An empty
    device list still gives one slice: an empty pool is not the same as no pool
    (node-apis.md 6.2). ``spec.nodeName`` is always the node; ``allNodes`` is never emitted.
    """
    if not is_dns_subdomain(node):
        raise InventoryError(f"node name {node!r} is not a DNS subdomain")
    if not is_dns_subdomain(driver) or len(driver) > 63:
        raise InventoryError(f"driver name {driver!r} is not a DNS subdomain of at most 63 characters")
    names = [d["name"] for d in devices]
    if len(set(names)) != len(names):
        raise InventoryError("device names in a pool must be unique")
    chunks = [list(devices[i:i + max_devices]) for i in range(0, len(devices), max_devices)] or [[]]
    out = []
    for index, chunk in enumerate(chunks):
        for device in chunk:
            check_device(device)
        out.append({
            "metadata": {"name": slice_name(node, driver, index), "labels": dict(MANAGED_BY)},
            "spec": {
                "driver": driver,
                "nodeName": node,
                "pool": {"name": node, "generation": generation, "resourceSliceCount": len(chunks)},
                "devices": [_copy_device(d) for d in chunk],
            },
        })
    return out


def _copy_device(device: SliceDevice) -> SliceDevice:
    """A new device dict (the value dicts are one level deep, so this is a full copy)."""
    return SliceDevice(name=device["name"],
                       attributes={k: AttributeValue(**v) for k, v in device["attributes"].items()},
                       capacity={k: Capacity(value=v["value"]) for k, v in device["capacity"].items()})


def render_slice(internal: Mapping[str, Any], api_version: str) -> dict[str, Any]:
    """Render one internal-form slice for ``api_version`` (a new dict).

    v1 and v1beta2 are identical apart from ``apiVersion``; v1beta1 moves every device field
    except ``name`` under ``basic`` (dra-api.md 1.2).
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
