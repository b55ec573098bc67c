"""Feature gates of the allocator, by kube-scheduler's names, with Kubernetes 1.36's defaults.

Pure (no I/O). ``parse_gates("DRAAdminAccess=false,DRADeviceTaints=true")`` returns a
:class:`Features`; an unknown gate name or a value other than ``true``/``false`` raises
:class:`translate.errors.InputError` naming the gate and the rule.

Which gate switches which allocator feature (k8s.io/dynamic-resource-allocation
``structured/internal`` ``Features``, filled by the scheduler's DRA plugin from these gates):

- DRAAdminAccess -> ``admin_access``; DRAPrioritizedList -> ``prioritized_list``;
  DRADeviceTaints -> ``device_taints``; DRAPartitionableDevices -> ``partitionable_devices``;
  DRAConsumableCapacity -> ``consumable_capacity``; DRADeviceBindingConditions and
  DRAResourceClaimDeviceStatus (both needed) -> ``binding_conditions``;
  DRAListTypeAttributes -> ``list_type_attributes``.

1.36 defaults (https://github.com/kubernetes/kubernetes/blob/master/pkg/features/kube_features.go): all on except
DRAListTypeAttributes. :data:`RELEASE_DEFAULTS` holds each DRA gate's default per release from
the same file's ``VersionedSpecs`` (a gate is off before its first release), for
:func:`release_defaults` ``(minor)`` and DRAExtendedResource (KEP-5004's extended-resource
mapping, which the report reads); :func:`features_of` turns a gate table into :class:`Features`.
Gates the allocator does not read (DRAExtendedResource, DRASchedulerFilterTimeout, ...)
are accepted and ignored, so a scheduler's ``--feature-gates`` value can be pasted as is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from dra_bridge.translate.errors import InputError

__all__ = ["DEFAULT_GATES", "RELEASE_DEFAULTS", "Features", "features_of", "parse_gates", "release_defaults"]

DEFAULT_GATES: Final[dict[str, bool]] = {
    "DRAAdminAccess": True,
    "DRAPrioritizedList": True,
    "DRADeviceTaints": True,
    "DRAPartitionableDevices": True,
    "DRAConsumableCapacity": True,
    "DRADeviceBindingConditions": True,
    "DRAResourceClaimDeviceStatus": True,
    "DRAListTypeAttributes": False,
}
#: Gate -> ((first minor of a default, the default), ...), ascending: kube_features.go's VersionedSpecs.
RELEASE_DEFAULTS: Final[dict[str, tuple[tuple[int, bool], ...]]] = {
    "DRAAdminAccess": ((32, False), (34, True)),
    "DRAPrioritizedList": ((33, False), (34, True)),
    "DRADeviceTaints": ((33, False), (36, True)),
    "DRAPartitionableDevices": ((33, False), (36, True)),
    "DRAConsumableCapacity": ((34, False), (36, True)),
    "DRADeviceBindingConditions": ((34, False), (36, True)),
    "DRAResourceClaimDeviceStatus": ((32, False), (33, True)),
    "DRAListTypeAttributes": ((36, False),),
    "DRAExtendedResource": ((34, False), (36, True)),
}
_IGNORED: Final = frozenset(
    {
        "DynamicResourceAllocation",
        "DRAExtendedResource",
        "DRASchedulerFilterTimeout",
        "DRADeviceTaintRules",
        "DRANodeAllocatableResources",
        "DRAWorkloadResourceClaims",
        "DRAOptionalNodeOperations",
        "DRAFractionalCapacityRange",
    }
)


@dataclass(frozen=True)
class Features:
    """The allocator features on (field names follow upstream ``internal.Features``)."""

    admin_access: bool = True
    prioritized_list: bool = True
    device_taints: bool = True
    partitionable_devices: bool = True
    consumable_capacity: bool = True
    binding_conditions: bool = True
    list_type_attributes: bool = False


def _features(gates: dict[str, bool]) -> Features:
    return Features(
        admin_access=gates["DRAAdminAccess"],
        prioritized_list=gates["DRAPrioritizedList"],
        device_taints=gates["DRADeviceTaints"],
        partitionable_devices=gates["DRAPartitionableDevices"],
        consumable_capacity=gates["DRAConsumableCapacity"],
        binding_conditions=gates["DRADeviceBindingConditions"] and gates["DRAResourceClaimDeviceStatus"],
        list_type_attributes=gates["DRAListTypeAttributes"],
    )


def release_defaults(minor: int) -> dict[str, bool]:
    """Every gate of :data:`RELEASE_DEFAULTS` at its default in Kubernetes ``1.<minor>`` (off
    where the release does not have it yet)."""
    return {
        gate: next((on for first, on in reversed(steps) if first <= minor), False)
        for gate, steps in RELEASE_DEFAULTS.items()
    }


def features_of(gates: dict[str, bool]) -> Features:
    """The allocator :class:`Features` of a gate table (a gate it lacks is off)."""
    return _features({gate: gates.get(gate, False) for gate in DEFAULT_GATES})


def parse_gates(text: str | None) -> Features:
    """``NAME=true|false[,NAME=...]`` (kube-scheduler's ``--feature-gates`` syntax) over 1.36's defaults."""
    gates = dict(DEFAULT_GATES)
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip().lower()
        if not sep or value not in ("true", "false"):
            raise InputError(f"--feature-gates {item!r}: each entry must be NAME=true or NAME=false")
        if name not in gates and name not in _IGNORED:
            known = ", ".join(sorted([*gates, *_IGNORED]))
            raise InputError(f"--feature-gates {name!r}: not a DRA gate kube-scheduler knows (known: {known})")
        if name in gates:
            gates[name] = value == "true"
    return _features(gates)
