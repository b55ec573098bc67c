"""The health of each device the bridge serves, from facts only (pure; KEP-4680 via the kubelet).

:func:`assess` maps every device of the recorded inventory (published name -> (legacy resource,
kubelet device ID)) to one :class:`DeviceReport` for the kubelet's ``NodeWatchResources`` stream
(:mod:`bridge.kubeletplugin.health_stream`), by these rules, in this order:

=============  ===============================================================================
UNHEALTHY      any of: NVML (where it loads) fails to find the device's UUID
               (``nvmlDeviceGetHandleByUUID``: GPU lost, not found, any other NVML error);
               the hand-over alarm names the device (:func:`bridge.interlocks.alarmed_devices`:
               PodResources shows it assigned to a legacy container while a prepared claim
               holds it, or the kubelet offers it again); an NVIDIA device whose container
               toolkit CDI device (``nvidia.com/gpu=<UUID>``) no longer resolves in the CDI
               directories. ``message`` gives every reason, ``; ``-separated.
HEALTHY        none of those, and NVML loads on this node and finds the device's UUID
UNKNOWN        everything else: no fact supports health (NVML absent or not loadable, an AMD or
               Intel device, for which the bridge reads no health source); ``message`` says why
=============  ===============================================================================

A device that merely exists, or whose CDI device resolves, is not thereby healthy: resolving
says a spec is present, not that the hardware works. Messages are cut to 1024 characters (the
kubelet's limit, https://github.com/kubernetes/kubelet/blob/master/pkg/apis/dra-health/v1alpha1/api.proto).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dra_bridge.translate.cdi import toolkit_cdi_id
from dra_bridge.translate.inventory.allocatable import DeviceId, split_replica
from dra_bridge.translate.names import NVIDIA_RESOURCE_PREFIX

HEALTHY, UNHEALTHY, UNKNOWN = "HEALTHY", "UNHEALTHY", "UNKNOWN"
"""The kubelet's ``HealthStatus`` names (dra-health v1alpha1)."""
MESSAGE_LIMIT = 1024


@dataclass(frozen=True)
class HealthFacts:
    """What the agent observed on one tick.

    ``nvml``: UUID -> "" when NVML finds it, else NVML's error; None when NVML is not loadable
    on this node. ``alarmed``: kubelet device ID -> the alarm's reason. ``cdi_resolves``: toolkit
    CDI name -> whether it resolves now (names absent here were not checked: no fact)."""

    nvml: Mapping[str, str] | None = None
    alarmed: Mapping[str, str] = field(default_factory=dict)
    cdi_resolves: Mapping[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class DeviceReport:
    """One device's health: ``pool``/``device`` name it as published, ``health`` is one of
    :data:`HEALTHY`, :data:`UNHEALTHY`, :data:`UNKNOWN`."""

    pool: str
    device: str
    health: str
    message: str


def health_of(resource: str, device_id: str, facts: HealthFacts) -> tuple[str, str]:
    """(health, message) of one device by the module's rules."""
    uuid = split_replica(device_id)[0]
    nvidia = resource.startswith(NVIDIA_RESOURCE_PREFIX)
    reasons = []
    nvml_error = facts.nvml.get(uuid) if facts.nvml is not None and nvidia else None
    if nvml_error:
        reasons.append(f"NVML: {nvml_error}")
    if device_id in facts.alarmed:
        reasons.append(f"hand-over alarm: {facts.alarmed[device_id]}")
    toolkit = toolkit_cdi_id(resource, device_id)
    if toolkit is not None and facts.cdi_resolves.get(toolkit) is False:
        reasons.append(f"the container toolkit's CDI device {toolkit} no longer resolves")
    if reasons:
        return UNHEALTHY, "; ".join(reasons)[:MESSAGE_LIMIT]
    if nvml_error == "":
        return HEALTHY, f"NVML finds {uuid}"
    if not nvidia:
        return UNKNOWN, f"no health source for {resource} devices"
    if facts.nvml is None:
        return UNKNOWN, "NVML is not loadable on this node: no health source"
    return UNKNOWN, f"NVML was not asked about {uuid}"


def toolkit_ids(inventory: Mapping[str, DeviceId]) -> list[str]:
    """The toolkit CDI names of the inventory's NVIDIA devices (to check with one directory scan)."""
    return sorted({t for d in inventory.values() if (t := toolkit_cdi_id(d.resource, d.device_id))})


def nvml_uuids(inventory: Mapping[str, DeviceId]) -> list[str]:
    """The UUIDs of the inventory's NVIDIA devices (replicas folded into their GPU; a device known by
    its index, docs/design.md D45, has none to look up)."""
    nvidia = (d.base for d in inventory.values() if d.resource.startswith(NVIDIA_RESOURCE_PREFIX))
    return sorted({u for u in nvidia if u.startswith(("GPU-", "MIG-"))})


def assess(inventory: Mapping[str, DeviceId], pool: str, facts: HealthFacts) -> tuple[DeviceReport, ...]:
    """One report per device of ``inventory``, sorted by device name."""
    return tuple(
        DeviceReport(pool, name, *health_of(d.resource, d.device_id, facts)) for name, d in sorted(inventory.items())
    )
