"""What claims allocated earlier hold, as the scheduler's allocated-devices state (pure).

``AllocatedState().add_allocation(claim["status"]["allocation"])`` per allocated claim;
:class:`translate.alloc.engine.NodeAllocator` reads it: a device in ``devices`` is taken
(except for adminAccess requests), ``capacity`` holds what shared devices (consumable
capacity, ``shareID``) already gave out. Source: k8s.io/dynamic-resource-allocation
``structured`` ``AllocatedState`` (AllocatedDevices, AggregatedCapacity).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dra_bridge.translate.alloc.pools import DeviceID, quantity

__all__ = ["AllocatedState"]


@dataclass
class AllocatedState:
    """What claims allocated earlier hold: exclusive devices, shared capacity, consumed counters."""

    devices: set[DeviceID] = field(default_factory=set)
    capacity: dict[DeviceID, dict[str, Fraction]] = field(default_factory=dict)

    def add_allocation(self, allocation: Mapping[str, Any]) -> None:
        """Record a claim's ``status.allocation`` (adminAccess results hold nothing)."""
        for result in (allocation.get("devices") or {}).get("results") or []:
            device = (str(result.get("driver")), str(result.get("pool")), str(result.get("device")))
            if result.get("adminAccess"):
                continue
            consumed = result.get("consumedCapacity")
            if result.get("shareID") or consumed:
                used = self.capacity.setdefault(device, {})
                for name, value in (consumed or {}).items():
                    used[name] = used.get(name, Fraction(0)) + quantity(value, f"consumedCapacity[{name!r}]")
            else:
                self.devices.add(device)
