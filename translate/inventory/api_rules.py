"""What the API server accepts in a ResourceSlice: value rules and per-device limits (pure);
and the per-claim limits every ResourceClaim we write or allocate must keep.

The rules a ResourceSlice must pass, so that :mod:`translate.inventory` can only ever produce
objects the API server accepts. Sources: the types and their limits,
https://github.com/kubernetes/api/blob/master/resource/v1/types.go, and the API server's validation,
https://github.com/kubernetes/kubernetes/blob/master/pkg/apis/resource/validation/validation.go:

- devices: an attribute value sets exactly one of ``int``, ``bool``, ``string`` (at most 64
  bytes) or ``version`` (semver 2.0.0, at most 64 bytes); ``len(attributes) + len(capacity)``
  is at most 32 per device; a device name is a DNS label; attribute names are qualified names;
- values: versions are semver without leading zeros; capacities are canonical quantities;
- ResourceClaim: at most 32 ``spec.devices.requests[]`` and at most 32
  ``status.allocation.devices.results[]``, so at most 32 devices per claim (and per request).

The device shapes (:class:`SliceDevice`, :class:`AttributeValue`, :class:`Capacity`) are the
internal (v1) form that :mod:`translate.inventory.pool` splits into slices and renders.
"""

from __future__ import annotations

import functools
import re
from typing import Final, NotRequired, TypedDict

from dra_bridge.translate.dns_names import is_dns_label, is_dns_subdomain
from dra_bridge.translate.errors import InventoryError

#: ResourceSliceMaxAttributesAndCapacitiesPerDevice (resource.k8s.io/v1 types).
MAX_ATTRIBUTES_AND_CAPACITIES = 32
#: String and version attribute values (resource.k8s.io/v1 ``DeviceAttribute``).
MAX_VALUE_BYTES = 64
#: Devices one claim can be allocated (``allocation.devices.results[]``), hence also the most
#: one request can ask for: resource.k8s.io/v1 AllocationResultsMaxSize.
MAX_DEVICES_PER_CLAIM: Final = 32
#: Requests in one claim (``spec.devices.requests[]``): resource.k8s.io/v1 DeviceRequestsMaxSize.
MAX_REQUESTS_PER_CLAIM: Final = 32
#: The API server's ``semverRe`` (resource validation): no leading zeros, no ``v`` prefix.
SEMVER_RE = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)
_QUALIFIED_RE = re.compile(r"(?:(?P<domain>[^/]+)/)?(?P<id>[A-Za-z_][A-Za-z0-9_]{0,31})")


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
    """A device in the internal (v1) form (``taints``: :mod:`translate.inventory.device_taints`)."""

    name: str
    attributes: dict[str, AttributeValue]
    capacity: dict[str, Capacity]
    taints: NotRequired[list[dict[str, str]]]


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
