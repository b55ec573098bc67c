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
DRAListTypeAttributes.
Gates the allocator does not read (DRAExtendedResource, DRASchedulerFilterTimeout, ...)
are accepted and ignored, so a scheduler's ``--feature-gates`` value can be pasted as is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from dra_bridge.translate.errors import InputError

__all__ = ["DEFAULT_GATES", "Features", "parse_gates"]

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
