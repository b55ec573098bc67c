"""The hand-over interlocks as a table, and the alarm (pure; docs/design.md D6).

One allocator per node. The kubelet hands device-plugin devices out on its own and nothing it
offers can reserve a device for DRA, so the bridge publishes only when every interlock holds.
:data:`INTERLOCKS` maps each name to its check, one signature (:data:`Check`: the
:class:`bridge.observation.Observation`, the previous :class:`bridge.observation.Memory` with
``clear_since`` as of this tick -> why it refuses, or None); docs/bridge.md's table is tested
against it:

=================  =========================================================================
interlock          holds when
=================  =========================================================================
``inventory``      something was recorded while the node was legacy, or else the fresh-node
                   source (:mod:`bridge.fresh_source`) found devices and refused none
``checkpoint``     the DRA plugin's prepared-claim checkpoint is readable (unreadable: which
                   devices prepared claims hold is unknown, so every recorded device may be
                   held; docs/design.md D29)
``plugin-socket``  no device-plugin socket of a recorded resource is in ``device-plugins/``
                   (the catalog's socket name for the resource, whatever its suffix: AMD's
                   is ``amd.com_gpu``; NVIDIA: ``nvidia-<name after nvidia.com/>.sock``,
                   ``getPluginSocketPath`` in NVIDIA/k8s-device-plugin
                   ``internal/plugin/server.go``; other vendors: any ``.sock`` whose name contains the
                   resource's short name: a conservative guess, since sockets do not say
                   what they serve)
``node-capacity``  the Node's capacity and allocatable for every recorded resource are 0 or
                   absent (the kubelet keeps a departed plugin's capacity for 5 minutes)
``kubelet-offers`` ``GetAllocatableResources`` offers none of the recorded devices (by ID, PCI
                   address or NVIDIA index: :mod:`translate.inventory.identity`)
``devices-held``   no container holds a recorded device (PodResources ``List``)
``other-driver``   no other driver's slice for this node lists a recorded device (by ``uuid``,
                   ``pciAddr`` or ``resource.kubernetes.io/pciBusID``)
``settle``         all of the above held continuously for the settle period
=================  =========================================================================

:func:`alarm` is the hazard itself, apart from the refusals: a device the bridge publishes or a
prepared claim holds (every recorded device while the checkpoint is unreadable:
:attr:`bridge.observation.Observation.claimed`) that the kubelet offers again, that another
driver's slice lists, or (a prepared claim's) that a legacy container holds.

"Offers none right now" alone proves nothing (a restarting kubelet offers nothing for a
while), hence the socket, capacity and settle interlocks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from dra_bridge.bridge.observation import Memory, Observation
from dra_bridge.translate.inventory.allocatable import DeviceId
from dra_bridge.translate.inventory.identity import keys, matches, slice_keys
from dra_bridge.translate.names import NVIDIA_RESOURCE_DOMAIN

Check = Callable[[Observation, Memory], "str | None"]
"""One interlock: why it refuses, or None when it holds."""


@dataclass(frozen=True)
class Refusal:
    """One interlock that does not hold, and why (a sentence for logs, Events and readiness)."""

    interlock: str
    reason: str


def socket_serves(resource_name: str, socket_name: str, catalogued: str = "") -> bool:
    """Whether a file in ``device-plugins/`` may be the socket of the plugin of a resource:
    ``catalogued`` (the catalog's socket name for it, any suffix), or by the naming rules in
    the module table (``.sock`` names only)."""
    if catalogued and socket_name == catalogued:
        return True
    if socket_name in ("kubelet.sock",) or not socket_name.endswith(".sock"):
        return False
    vendor, _, short = resource_name.partition("/")
    if vendor == NVIDIA_RESOURCE_DOMAIN:
        return socket_name == f"nvidia-{short}.sock"
    stem = socket_name[: -len(".sock")].lower()
    tokens = {t for t in re.split(r"[^a-z0-9]+", short.lower()) if len(t) >= 3}
    return any(t in stem for t in tokens) or vendor.split(".")[0].lower() in stem


def _quantity_is_zero(value: str | None) -> bool:
    return value is None or value.strip() in ("", "0")


def offered(obs: Observation) -> dict[DeviceId, str]:
    """Recorded devices the kubelet offers now -> the ID it offers them under."""
    out: dict[DeviceId, str] = {}
    for d in obs.offered or ():
        for device in matches(d["deviceID"], obs.recorded.devices, obs.recorded.nvml, d["resourceName"]):
            out.setdefault(device, f"{d['resourceName']} {d['deviceID']}")
    return out


def held(obs: Observation) -> dict[DeviceId, list[str]]:
    """Recorded devices that containers hold through a device plugin -> the containers."""
    out: dict[DeviceId, set[str]] = {}
    for raw, containers in (obs.held or {}).items():
        if containers:
            for device in matches(raw, obs.recorded.devices, obs.recorded.nvml):
                out.setdefault(device, set()).update(containers)
    return {d: sorted(c) for d, c in out.items()}


def listed_elsewhere(obs: Observation) -> dict[DeviceId, str]:
    """Recorded devices another driver's slice for this node lists -> which slice."""
    out: dict[DeviceId, str] = {}
    recorded = [DeviceId.of(d) for d in obs.recorded.devices]
    for spec in obs.other_slices or ():
        published = slice_keys(spec)
        where = f"driver {spec.get('driver')}"
        for device in recorded:
            if keys(device, obs.recorded.nvml) & published:
                out.setdefault(device, where)
    return out


def check_inventory(obs: Observation, memory: Memory) -> str | None:
    if obs.recorded.empty:
        return obs.fresh_refusal or "no device-plugin inventory was recorded while the node was legacy"
    return None


def check_checkpoint(obs: Observation, memory: Memory) -> str | None:
    if not obs.checkpoint_readable:
        return f"the prepared-claim checkpoint is unreadable, every recorded device may be held: {obs.checkpoint_error}"
    return None


def check_plugin_socket(obs: Observation, memory: Memory) -> str | None:
    resources = sorted(obs.recorded.resources())
    known = obs.catalogued_sockets
    sockets = sorted(s for s in obs.plugin_sockets if any(socket_serves(r, s, known.get(r, "")) for r in resources))
    return f"device plugin socket(s) still present: {', '.join(sockets)}" if sockets else None


def check_node_capacity(obs: Observation, memory: Memory) -> str | None:
    nonzero = [
        f"{r}={obs.node_capacity.get(r) or obs.node_allocatable.get(r)}"
        for r in sorted(obs.recorded.resources())
        if not (_quantity_is_zero(obs.node_capacity.get(r)) and _quantity_is_zero(obs.node_allocatable.get(r)))
    ]
    return f"node still reports device-plugin capacity: {', '.join(nonzero)}" if nonzero else None


def check_kubelet_offers(obs: Observation, memory: Memory) -> str | None:
    if obs.offered is None:
        return None  # devices-held names the kubelet that does not answer
    found = offered(obs)
    if not found:
        return None
    return f"the kubelet offers recorded device(s): {', '.join(sorted(set(found.values()))[:5])}"


def check_devices_held(obs: Observation, memory: Memory) -> str | None:
    if obs.offered is None or obs.held is None:
        return "the kubelet's PodResources API does not answer"
    found = held(obs)
    if not found:
        return None
    holders = sorted({h for hs in found.values() for h in hs})
    return f"{len(found)} device(s) held by container(s): {', '.join(holders[:5])}"


def check_other_driver(obs: Observation, memory: Memory) -> str | None:
    if obs.other_slices is None:
        return f"cannot list this node's slices: {obs.slices_error}"
    found = listed_elsewhere(obs)
    if not found:
        return None
    return (
        f"device(s) {', '.join(sorted({d.base for d in found})[:5])} listed by {', '.join(sorted(set(found.values())))}"
    )


def check_settle(obs: Observation, memory: Memory) -> str | None:
    since = obs.now if memory.clear_since is None else memory.clear_since
    waited = obs.now - since
    if not math.isfinite(obs.settle_seconds) or not waited >= obs.settle_seconds:  # nan, inf: never settled
        return f"interlocks hold for {waited:.0f}s of {obs.settle_seconds:.0f}s"
    return None


INTERLOCKS: Mapping[str, Check] = {
    "inventory": check_inventory,
    "checkpoint": check_checkpoint,
    "plugin-socket": check_plugin_socket,
    "node-capacity": check_node_capacity,
    "kubelet-offers": check_kubelet_offers,
    "devices-held": check_devices_held,
    "other-driver": check_other_driver,
    "settle": check_settle,
}
"""Every interlock in the order it is reported; ``settle`` is checked only when all others hold."""


def alarmed_devices(obs: Observation) -> dict[DeviceId, str]:
    """The devices :func:`alarm` names, each with its reason (device health too)."""
    claimed = obs.claimed
    ours = obs.published | claimed
    out: dict[DeviceId, list[str]] = {}
    for device, how in offered(obs).items():
        if device in ours:
            out.setdefault(device, []).append(f"the kubelet offers it again (a device plugin serves it as {how})")
    for device, where in listed_elsewhere(obs).items():
        if device in ours:
            out.setdefault(device, []).append(f"another DRA driver lists it ({where})")
    for device, holders in held(obs).items():
        if device in claimed:
            reason = f"assigned to legacy container(s) {', '.join(holders[:5])} while a prepared claim holds it"
            out.setdefault(device, []).append(reason)
    return {d: "; ".join(r) for d, r in sorted(out.items())}


def alarm(obs: Observation) -> str | None:
    """Why two allocators may hand out one device, or None (see the module docstring). Offered
    devices that neither the bridge publishes nor a prepared claim holds are no alarm (labelling
    the node before turning the device plugin off is the usual order, and then only a refusal)."""
    found = alarmed_devices(obs)
    if not found:
        return None
    return "; ".join(f"device {d}: {why}" for d, why in list(found.items())[:5])
