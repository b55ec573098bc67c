"""The agent loop: record in legacy mode, publish in DRA mode when every interlock holds.

One tick (every ``poll_interval`` seconds):

1. ask the kubelet what it offers (PodResources ``GetAllocatableResources``) and read the Node;
2. ``legacy`` (default; no ``dra-bridge.io/mode=dra`` label): record the offered inventory with
   the node's GFD labels and NVML facts in node-local state (an empty offer, e.g. while the
   kubelet restarts, never erases the record) and the catalogued device plugins' Allocate
   answers (:mod:`bridge.edits_recorder`); publish nothing;
3. ``dra``: gather the interlock observations (plugin sockets, Node capacity, ``List``, other
   drivers' slices) and publish the recorded inventory only when :func:`bridge.interlocks.evaluate`
   says so, less devices nobody could prepare (:func:`translate.edit_sources.preparable`; Warning
   Event ``DevicesNotPublished``). Each refusal is reported: a log line and an Event on the Node
   when the set of refusals changes, the ``dra_bridge_interlock_refused`` gauge, and readiness;
   the alarm (:func:`bridge.interlocks.alarm`: a device the bridge publishes or a prepared claim
   holds is offered again, or a prepared claim's device is held by a legacy container; in legacy
   mode checked while prepared claims remain) logs ERROR, counts and posts a Warning Event;
4. leaving ``dra`` withdraws the slices and reports the prepared-claim count on the Node as the
   ``DRABridgePreparedClaims`` condition (the DRA plugin's checkpointed claims, :attr:`Agent.plugin`),
   written only when it changes. Each tick also dials the plugin's registration and DRA sockets,
   whatever else is down (liveness: ``/healthz`` fails while either does not answer), and hands the
   plugin this tick's alarm per device for the kubelet's device health stream
   (:mod:`bridge.kubeletplugin.device_health`).

A kubelet or API server that is missing makes readiness false and is retried on the next tick;
nothing is lost (the record is on disk) and nothing crashes.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dra_bridge.bridge.edits_recorder import EditsRecorder
from dra_bridge.bridge.errors import NvmlError, PodResourcesError, StateError
from dra_bridge.bridge.health import NOT_CHECKED, Clocks, Health, Metrics
from dra_bridge.bridge.interlocks import INTERLOCKS, Decision, Observation, Refusal, alarm, alarmed_devices, evaluate
from dra_bridge.bridge.kubeletplugin.node_plugin import Plugin
from dra_bridge.bridge.podresources.client import PodResourcesClient
from dra_bridge.bridge.publisher import Publisher
from dra_bridge.bridge.settings import Settings
from dra_bridge.bridge.state import Inventory, InventoryStore
from dra_bridge.kube.api import KubeApi
from dra_bridge.kube.errors import KubeError
from dra_bridge.kube.events import event, post_event
from dra_bridge.kube.resources import NODES, RESOURCE_SLICES
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.edit_sources import preparable
from dra_bridge.translate.errors import InventoryError
from dra_bridge.translate.inventory.allocatable import InventoryDevice, group_allocatable
from dra_bridge.translate.inventory.api_rules import SliceDevice
from dra_bridge.translate.inventory.device_facts import NvmlFacts
from dra_bridge.translate.inventory.slices import build_devices, device_uuids
from dra_bridge.translate.names import GFD_PREFIX, NODE_MODE_LABEL

logger = logging.getLogger(__name__)

CONDITION_TYPE = "DRABridgePreparedClaims"
EVENT_NAMESPACE = "default"
COMPONENT = "dra-bridge"
GFD_PREFIXES = (GFD_PREFIX,)
NvmlProbe = Callable[[], "dict[str, NvmlFacts] | None"]


@dataclass
class TickReport:
    """What one tick concluded (for tests and ``dra-bridge inventory``)."""

    mode: str = "legacy"
    publishing: bool = False
    refusals: tuple[Refusal, ...] = ()
    recorded: int = 0
    alarm: str | None = None
    warnings: list[str] = field(default_factory=list)


class Agent:
    """One node's agent. Dependencies are injected so tests drive it tick by tick."""

    def __init__(
        self,
        settings: Settings,
        catalog: Catalog,
        kubelet: PodResourcesClient,
        store: InventoryStore,
        api: KubeApi,
        publisher: Publisher,
        nvml_probe: NvmlProbe | None = None,
        clocks: Clocks | None = None,
    ) -> None:
        self.settings, self.catalog, self.kubelet, self.store = settings, catalog, kubelet, store
        self.api, self.publisher, self.nvml_probe = api, publisher, nvml_probe
        clocks = clocks or Clocks()
        self.clock, self.wall = clocks.monotonic, clocks.wall
        self.metrics = Metrics()
        self.health = Health(clock=clocks.monotonic)
        self.node_writes = 0
        self.prepared_claims = 0
        self.plugin: Plugin | None = None
        """The DRA kubelet plugin (``dra-bridge run`` starts it; None in tests that do not)."""
        self.clear_since: float | None = None
        self.report = TickReport()
        self._refused: tuple[str, ...] = ()
        self._alarm: str | None = None
        self._withheld: list[str] = []
        self._pending_events: list[tuple[str, str, str]] = []
        self._held: dict[str, list[str]] | None = None
        """This tick's PodResources ``List`` (device ID -> legacy containers), where it was read."""
        self._state_broken = False
        self.recorder = EditsRecorder(settings.kubelet_dir, catalog)
        try:
            self.recorded = store.load()
        except StateError as exc:
            logger.error("recorded inventory unreadable, not overwriting it: %s", exc)
            self.health.state, self.recorded, self._state_broken = str(exc), Inventory(), True
        self.metrics.recorded.set(len(self.recorded.devices))

    # -- observations ---------------------------------------------------------------------

    async def _offered(self) -> list[InventoryDevice] | None:
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

    async def _node(self) -> dict[str, Any] | None:
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

    def _nvml(self) -> dict[str, NvmlFacts] | None:
        if self.nvml_probe is None:
            return None
        try:
            return self.nvml_probe()
        except NvmlError as exc:
            logger.warning("%s; using recorded facts and GFD labels", exc)
            return None

    async def _other_driver_uuids(self) -> dict[str, str]:
        slices = RESOURCE_SLICES.at(await self.publisher.version())
        out: dict[str, str] = {}
        listed = await self.api.list(slices, field_selector=f"spec.nodeName={self.settings.node_name}")
        for item in listed.get("items") or []:
            spec = item.get("spec", {})
            if spec.get("driver") == self.catalog.bridge_driver:
                continue
            for uuid in device_uuids(spec):
                out[uuid] = f"driver {spec.get('driver')} slice {item.get('metadata', {}).get('name')}"
        return out

    # -- legacy ---------------------------------------------------------------------------

    def _record(
        self, offered: list[InventoryDevice] | None, labels: dict[str, str], nvml: dict[str, NvmlFacts] | None
    ) -> None:
        if offered is None or self._state_broken:
            return
        managed = [d for d in offered if (m := self.catalog.lookup(d["resourceName"])) and m.kind != "slicing"]
        if not managed:
            return  # a restarting kubelet offers nothing for a while: keep what was recorded
        gfd = {k: v for k, v in labels.items() if k.startswith(GFD_PREFIXES)}
        uuids = {d["deviceID"].split("::")[0] for d in managed}
        facts = {u: f for u, f in (nvml or {}).items() if u in uuids}
        new = Inventory(
            self.settings.node_name,
            tuple(managed),
            gfd or dict(self.recorded.labels),
            facts,
            self.wall(),
            self.recorded.edits,
        )
        if (new.devices, new.labels, new.nvml) != (
            self.recorded.devices,
            self.recorded.labels,
            self.recorded.nvml,
        ) and self._save(new):
            logger.info("recorded inventory: %d device(s) of %s", len(managed), ", ".join(sorted(new.resources())))

    def _save(self, new: Inventory) -> bool:
        try:
            self.store.save(new)
        except StateError as exc:
            self.health.state = str(exc)
            logger.error("cannot record the inventory: %s", exc)
            return False
        self.health.state = ""
        self.recorded = new
        self.metrics.recorded.set(len(new.devices))
        return True

    # -- dra --------------------------------------------------------------------------------

    async def _decide(self, node: dict[str, Any], offered: list[InventoryDevice] | None) -> tuple[Decision, bool]:
        """The decision, and whether it rests on a dependency that did not answer (then a running
        publication is kept as it is rather than withdrawn on a blip)."""
        status = node.get("status", {})
        try:
            held = self._held = await self.kubelet.held_devices() if offered is not None else None
        except PodResourcesError as exc:
            self.health.kubelet, held = str(exc), None
        try:
            others = await self._other_driver_uuids()
        except KubeError as exc:
            self.health.api = str(exc)
            return Decision(False, (Refusal("other-driver", f"cannot list this node's slices: {exc}"),), None), True
        if offered is None or held is None:
            return Decision(
                False, (Refusal("devices-held", "the kubelet's PodResources API does not answer"),), None
            ), True
        obs = Observation(
            now=self.clock(),
            plugin_sockets=self.recorder.present_sockets(),
            node_capacity=status.get("capacity") or {},
            node_allocatable=status.get("allocatable") or {},
            offered=frozenset(d["deviceID"] for d in offered),
            held=held,
            other_driver_uuids=others,
            published=self._published(),
            prepared=self._prepared(),
        )
        return evaluate(
            self.recorded,
            obs,
            self.clear_since,
            self.settings.settle_period,
            self.recorder.catalogued_sockets(self.recorded.resources()),
        ), False

    def _published(self) -> frozenset[str]:
        """Kubelet device IDs in the publisher's desired slices (empty when it publishes none)."""
        key = self.catalog.bridge_driver + "/deviceID"
        return frozenset(
            str(d["attributes"][key]["string"]) for d in self.publisher.desired or [] if key in d.get("attributes", {})
        )

    def _prepared(self) -> frozenset[str]:
        """Kubelet device IDs that the DRA plugin's prepared claims hold."""
        return self.plugin.preparer.device_ids() if self.plugin is not None else frozenset()

    async def _legacy_alarm(self, offered: list[InventoryDevice] | None) -> str | None:
        """In legacy mode (after a rollback) only prepared claims can clash: checked while any remain."""
        prepared = self._prepared()
        if not prepared or offered is None:
            return None
        try:
            held = self._held = await self.kubelet.held_devices()
        except PodResourcesError as exc:
            self.health.kubelet, held = str(exc), {}
        return alarm(frozenset(d["deviceID"] for d in offered), held, frozenset(), prepared)

    def _devices(self, nvml: dict[str, NvmlFacts] | None, warnings: list[str]) -> list[SliceDevice]:
        devices = list(self.recorded.devices)
        facts = dict(self.recorded.nvml)
        if nvml is not None:  # re-check the recorded UUIDs: a lost GPU or a changed MIG device is withdrawn
            kept = []
            for d in devices:
                uuid = d["deviceID"].split("::")[0]
                old, now = self.recorded.nvml.get(uuid, {}), nvml.get(uuid)
                if now is None or old.get("migProfile") != now.get("migProfile"):
                    warnings.append(f"device {d['deviceID']} is gone or changed since it was recorded: withdrawn")
                    continue
                kept.append(d)
            devices, facts = kept, {u: nvml[u] for u in facts if u in nvml}
        resolve = self.plugin.preparer.index.resolves if self.plugin is not None else None
        devices, withheld = preparable(devices, self.catalog, self.recorded.edits, resolve)
        if withheld != self._withheld and withheld:
            self._event("Warning", "DevicesNotPublished", "; ".join(withheld))
        self._withheld = withheld
        built, build_warnings = build_devices(devices, self.catalog, self.recorded.labels, facts)
        for w in withheld + build_warnings:
            logger.warning("%s", w)
            warnings.append(w)
        return built

    def _report(self, decision: Decision) -> None:
        refused = tuple(r.interlock for r in decision.refusals)
        for name in INTERLOCKS:
            self.metrics.refused.labels(interlock=name).set(1 if name in refused else 0)
        self.health.interlocks = {r.interlock: r.reason for r in decision.refusals}
        if refused != self._refused:
            if refused:
                text = "; ".join(f"{r.interlock}: {r.reason}" for r in decision.refusals)
                logger.warning("not publishing: %s", text)
                self._event("Normal" if refused == ("settle",) else "Warning", "PublicationRefused", text)
            else:
                logger.info("every interlock holds: publishing the recorded inventory")
                self._event("Normal", "PublicationStarted", f"publishing {len(self.recorded.devices)} device(s)")
            self._refused = refused
        self._raise(decision.alarm)

    def _raise(self, text: str | None) -> None:
        """The alarm (log ERROR, ``dra_bridge_alarms_total``, Warning Event), once per new text."""
        if text and text != self._alarm:
            logger.error("ALARM: %s", text)
            self.metrics.alarms.inc()
            self._event("Warning", "DeviceOfferedAgain", text)
        self._alarm = text

    # -- Node writes ---------------------------------------------------------------------------

    def _event(self, kind: str, reason: str, message: str) -> None:
        self._pending_events.append((kind, reason, message[:1000]))

    async def _flush_events(self) -> None:
        events, self._pending_events = self._pending_events, []
        now = datetime.datetime.fromtimestamp(self.wall(), datetime.UTC)
        node = {"apiVersion": "v1", "kind": "Node", "name": self.settings.node_name, "uid": self.publisher.owner_uid}
        for kind, reason, message in events:
            body = event(
                node,
                reason=reason,
                message=message,
                component=COMPONENT,
                namespace=EVENT_NAMESPACE,
                type=kind,
                now=now,
                generate_name=f"{self.settings.node_name}.dra-bridge.",
            )
            try:
                await post_event(self.api, body)
                self.node_writes += 1
            except KubeError as exc:
                logger.warning("cannot create Event %s: %s", reason, exc)

    async def _plugin_status(self, offered: list[InventoryDevice] | None) -> None:
        if self.plugin is None:
            return
        ids = frozenset(d["deviceID"] for d in offered or [])
        self.plugin.report_health(alarmed_devices(ids, self._held or {}, self._published(), self._prepared()))
        self.prepared_claims = self.plugin.preparer.count
        self.metrics.prepared.set(self.prepared_claims)
        self.health.plugin = await self.plugin.alive()
        if self.health.plugin:
            logger.error("DRA plugin not answering: %s", self.health.plugin)

    async def _condition(self, node: dict[str, Any]) -> None:
        message = f"{self.prepared_claims} prepared claim(s) on this node"
        for c in node.get("status", {}).get("conditions") or []:
            if c.get("type") == CONDITION_TYPE and c.get("message") == message:
                return
        now = datetime.datetime.fromtimestamp(self.wall(), datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        condition = {
            "type": CONDITION_TYPE,
            "status": "True" if self.prepared_claims else "False",
            "reason": "ClaimsPrepared" if self.prepared_claims else "NoPreparedClaims",
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
        try:
            await self.api.patch_status(NODES, self.settings.node_name, {"status": {"conditions": [condition]}})
            self.node_writes += 1
        except KubeError as exc:
            logger.warning("cannot set the %s condition: %s", CONDITION_TYPE, exc)

    # -- loop ------------------------------------------------------------------------------------

    async def tick(self) -> TickReport:
        """One pass (see the module docstring); never raises for kubelet or API failures."""
        self._pending_events = []
        offered = await self._offered()
        node = await self._node()
        nvml = self._nvml()
        report = TickReport(mode=self.report.mode, publishing=self.report.publishing)
        self._held = None
        if node is not None:
            labels = node.get("metadata", {}).get("labels") or {}
            report.mode = "dra" if labels.get(NODE_MODE_LABEL) == "dra" else "legacy"
            if report.mode == "legacy":
                self._record(offered, labels, nvml)
                if not self._state_broken and (edits := await self.recorder.update(self.recorded)) is not None:
                    self._save(edits)
                self.clear_since, self._refused = None, ()
                report.alarm = await self._legacy_alarm(offered)
                self._raise(report.alarm)
                self.health.interlocks = {}
                for name in INTERLOCKS:
                    self.metrics.refused.labels(interlock=name).set(0)
                self.publisher.update(None)
                report.publishing = False
            else:
                decision, unknown = await self._decide(node, offered)
                keep = unknown and report.publishing  # a blip (a restarting kubelet) neither withdraws nor
                if not keep:  # restarts the settle period
                    self.clear_since = decision.clear_since
                self._report(decision)
                report.refusals, report.alarm = decision.refusals, decision.alarm
                if decision.publish:
                    self.publisher.update(self._devices(nvml, report.warnings))
                    report.publishing = True
                elif not keep:
                    self.publisher.update(None)
                    report.publishing = False
        await self._plugin_status(offered)  # liveness and device health, whatever else is down
        if node is not None:
            await self._condition(node)
        await self._flush_events()
        report.recorded = len(self.recorded.devices)
        self.metrics.dra_mode.set(1 if report.mode == "dra" else 0)
        self.metrics.publishing.set(1 if report.publishing else 0)
        stats = self.publisher.stats
        self.metrics.count_slice_writes({"creates": stats.creates, "updates": stats.updates, "deletes": stats.deletes})
        self.health.last_tick = self.clock()
        self.report = report
        return report

    async def run(self, stop: asyncio.Event) -> None:
        """Tick every ``poll_interval`` and run the publisher until ``stop`` is set."""
        publisher = asyncio.create_task(self.publisher.run(stop, self.settings.poll_interval))
        watcher = asyncio.create_task(self.publisher.watch(stop))
        try:
            while not stop.is_set():
                try:
                    await self.tick()
                except Exception:  # the loop must survive anything a tick hits; the record is on disk
                    logger.exception("tick failed; retrying in %.0fs", self.settings.poll_interval)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=self.settings.poll_interval)
        finally:
            stop.set()
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            await publisher
            await self.kubelet.close()
