"""The observe step of a tick: read the kubelet, the API server and the node once, into a
:class:`Snapshot` (the raw answers, for recording in legacy mode) and an
:class:`bridge.observation.Observation` (for :func:`bridge.decide.decide`).

Every read that fails is None in the snapshot and its reason in :class:`bridge.health.Health`
(readiness), logged once per new reason; nothing here raises for a kubelet or API failure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dra_bridge.bridge.edits_recorder import EditsRecorder
from dra_bridge.bridge.errors import NvmlError, PodResourcesError
from dra_bridge.bridge.health import NOT_CHECKED, Health
from dra_bridge.bridge.observation import Held, Observation
from dra_bridge.bridge.podresources.client import PodResourcesClient
from dra_bridge.bridge.publisher import Publisher
from dra_bridge.bridge.settings import Settings
from dra_bridge.bridge.state import Inventory
from dra_bridge.kube.api import KubeApi
from dra_bridge.kube.errors import KubeError
from dra_bridge.kube.resources import NODES, RESOURCE_SLICES
from dra_bridge.translate.errors import InventoryError
from dra_bridge.translate.inventory.allocatable import DeviceId, InventoryDevice, group_allocatable
from dra_bridge.translate.inventory.device_facts import NvmlFacts
from dra_bridge.translate.names import NODE_MODE_LABEL

logger = logging.getLogger(__name__)

NvmlProbe = Callable[[], "dict[str, NvmlFacts] | None"]


@dataclass(frozen=True)
class Snapshot:
    """The raw answers of one tick: the Node (None: unreadable), the kubelet's offer (None: no
    answer) and NVML's facts (None: no NVML)."""

    node: dict[str, Any] | None
    offered: list[InventoryDevice] | None
    nvml: dict[str, NvmlFacts] | None

    @property
    def labels(self) -> dict[str, str]:
        """The Node's labels."""
        return dict((self.node or {}).get("metadata", {}).get("labels") or {})

    @property
    def mode(self) -> str | None:
        """``dra``, ``legacy``, or None when the Node could not be read."""
        if self.node is None:
            return None
        return "dra" if self.labels.get(NODE_MODE_LABEL) == "dra" else "legacy"


class Observer:
    """Reads the node's dependencies (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        bridge_driver: str,
        kubelet: PodResourcesClient,
        api: KubeApi,
        publisher: Publisher,
        recorder: EditsRecorder,
        health: Health,
        nvml_probe: NvmlProbe | None = None,
    ) -> None:
        self.settings, self.bridge_driver, self.kubelet, self.api = settings, bridge_driver, kubelet, api
        self.publisher, self.recorder, self.health, self.nvml_probe = publisher, recorder, health, nvml_probe

    async def offered(self) -> list[InventoryDevice] | None:
        """What the kubelet offers (``GetAllocatableResources``, grouped), None when it does not answer."""
        try:
            offered = group_allocatable(await self.kubelet.allocatable())
        except (PodResourcesError, InventoryError) as exc:
            if self.health.kubelet != str(exc):
                logger.warning("kubelet PodResources unavailable, will retry: %s", exc)
            self.health.kubelet = str(exc)
            return None
        if self.health.kubelet not in ("", NOT_CHECKED):  # after a failure, not on first contact
            logger.info("kubelet PodResources reachable again")
        self.health.kubelet = ""
        return offered

    async def held(self) -> Held | None:
        """PodResources ``List``: device ID -> containers (device-plugin devices), None without an answer."""
        try:
            return await self.kubelet.held_devices()
        except PodResourcesError as exc:
            self.health.kubelet = str(exc)
            return None

    async def node(self) -> dict[str, Any] | None:
        try:
            node = await self.api.get(NODES, self.settings.node_name)
        except KubeError as exc:
            if self.health.api != str(exc):
                logger.warning("API server unavailable, will retry: %s", exc)
            self.health.api = str(exc)
            return None
        self.health.api = ""
        self.publisher.owner_uid = str(node.get("metadata", {}).get("uid", ""))
        return node

    def nvml(self) -> dict[str, NvmlFacts] | None:
        if self.nvml_probe is None:
            return None
        try:
            return self.nvml_probe()
        except NvmlError as exc:
            logger.warning("%s; using recorded facts and GFD labels", exc)
            return None

    async def other_slices(self) -> tuple[tuple[Mapping[str, Any], ...] | None, str]:
        """Other drivers' slice specs for this node, or (None, why not)."""
        try:
            slices = RESOURCE_SLICES.at(await self.publisher.version())
            listed = await self.api.list(slices, field_selector=f"spec.nodeName={self.settings.node_name}")
        except KubeError as exc:
            self.health.api = str(exc)
            return None, str(exc)
        specs = [i.get("spec", {}) for i in listed.get("items") or []]
        return tuple(s for s in specs if s.get("driver") != self.bridge_driver), ""

    async def snapshot(self) -> Snapshot:
        """The kubelet's offer, the Node and NVML's facts."""
        offered = await self.offered()
        node = await self.node()
        return Snapshot(node, offered, self.nvml())

    async def observation(
        self,
        now: float,
        snap: Snapshot,
        recorded: Inventory,
        published: frozenset[DeviceId],
        prepared: frozenset[DeviceId],
        checkpoint_error: str = "",
    ) -> Observation:
        """The decision step's input. In legacy mode only what the alarm needs is read (``List``
        only while prepared claims remain, or may: ``checkpoint_error``, the checkpoint is
        unreadable); in DRA mode everything the interlocks need."""
        status = (snap.node or {}).get("status", {})
        mode = snap.mode
        held: Held | None = {}
        others: tuple[Mapping[str, Any], ...] | None = ()
        error = ""
        if mode == "dra":
            held = await self.held() if snap.offered is not None else None
            others, error = await self.other_slices()
        elif mode == "legacy" and (prepared or checkpoint_error) and snap.offered is not None:
            held = await self.held() or {}
        return Observation(
            now=now,
            recorded=recorded,
            mode=mode,
            node_capacity=status.get("capacity") or {},
            node_allocatable=status.get("allocatable") or {},
            plugin_sockets=self.recorder.present_sockets() if mode == "dra" else frozenset(),
            catalogued_sockets=self.recorder.catalogued_sockets(recorded.resources()),
            offered=tuple(snap.offered) if snap.offered is not None else (None if mode == "dra" else ()),
            held=held,
            other_slices=others,
            slices_error=error,
            published=published,
            prepared=prepared,
            checkpoint_readable=not checkpoint_error,
            checkpoint_error=checkpoint_error,
            settle_seconds=self.settings.settle_period,
            driver=self.bridge_driver,
        )
