"""The devices a ``dra`` node hands its publisher (the act step of :class:`bridge.agent.Agent`).

:func:`servable`: the recorded inventory (or the fresh-node source's), re-checked against this
tick's NVML facts (a lost GPU or a changed MIG device is withdrawn, with a warning; not for a
fresh inventory, whose facts are this tick's), less the devices served with MPS
(:func:`translate.inventory.mps.refuse_mps`) and those nobody could prepare
(:func:`translate.edit_sources.preparable`, over the node's block devices and DRM nodes).

:class:`DeviceTaints`: devices unhealthy long enough tainted, or left out of the slice where the
API server drops taints (:mod:`translate.inventory.device_taints`); an Event
(``DeviceTainted`` / ``DeviceUntainted``) and a metric per change.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import cast

from dra_bridge.bridge.drm_sysfs import read_drm
from dra_bridge.bridge.health import Metrics
from dra_bridge.bridge.host_devices import is_block_device
from dra_bridge.bridge.settings import Settings
from dra_bridge.bridge.state import Inventory
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.edit_sources import Resolve, preparable
from dra_bridge.translate.inventory.allocatable import InventoryDevice
from dra_bridge.translate.inventory.api_rules import SliceDevice
from dra_bridge.translate.inventory.device_facts import NvmlFacts
from dra_bridge.translate.inventory.device_taints import TAINT_KEY, TaintState, step, with_taints
from dra_bridge.translate.inventory.mps import refuse_mps

__all__ = ["DeviceTaints", "Servable", "servable"]

Servable = tuple[list[InventoryDevice], dict[str, NvmlFacts], list[str], list[str]]
"""The devices to publish, their NVML facts, the MPS refusals and the other withheld devices' warnings."""


def servable(
    recorded: Inventory,
    catalog: Catalog,
    nvml: dict[str, NvmlFacts] | None,
    from_fresh: bool,
    resolve: Resolve | None,
    resolved: set[str],
    warnings: list[str],
) -> Servable:
    """What of ``recorded`` may be published (see the module docstring); a withdrawn device's
    warning goes to ``warnings``. ``resolved``: the toolkit CDI IDs that resolved before."""
    devices = list(recorded.devices)
    facts = dict(recorded.nvml)
    if (
        nvml is not None and not from_fresh
    ):  # re-check the recorded UUIDs: a lost GPU or a changed MIG device is withdrawn
        kept = []
        for d in devices:
            uuid = d["deviceID"].split("::")[0]
            old, now = recorded.nvml.get(uuid, {}), nvml.get(uuid)
            if now is None or old.get("migProfile") != now.get("migProfile"):
                warnings.append(f"device {d['deviceID']} is gone or changed since it was recorded: withdrawn")
                continue
            kept.append(d)
        devices, facts = kept, {u: nvml[u] for u in facts if u in nvml}
    devices, mps = refuse_mps(devices, recorded.edits, recorded.labels)
    drm = read_drm()
    devices, withheld = preparable(
        devices,
        catalog,
        recorded.edits,
        resolve,
        is_block_device,
        drm,
        recorded.identities,
        resolved,
    )
    return devices, facts, mps, withheld


class DeviceTaints:
    """The taint state of every published device, stepped once a publish (see the module docstring)."""

    def __init__(self, settings: Settings, metrics: Metrics, event: Callable[[str, str, str], None]) -> None:
        self.settings, self.metrics, self.event = settings, metrics, event
        self.states: dict[str, TaintState] = {}

    def apply(self, devices: list[SliceDevice], bad: frozenset[str], now: float, supported: bool) -> list[SliceDevice]:
        """``devices`` with the taints of those unhealthy (``bad``) long enough by ``now``; where
        taints are not ``supported``, the tainted devices are left out instead."""
        stamp = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.states, changes = step(
            self.states,
            {d["name"]: d["name"] in bad for d in devices},
            now,
            stamp,
            self.settings.unhealthy_taint_after,
            self.settings.healthy_untaint_after,
        )
        for name, change in changes:
            self.metrics.taint_changes.labels(change).inc()
            if change == "tainted":
                where = f"tainted {TAINT_KEY}:NoSchedule" if supported else "left out of the slice (taints dropped)"
                self.event("Warning", "DeviceTainted", f"device {name} unhealthy: {where}")
            else:
                self.event("Normal", "DeviceUntainted", f"device {name} healthy again: taint removed")
        return cast(list[SliceDevice], with_taints(devices, self.states, supported))
