"""The agent loop: each tick observes, decides, then acts and reports.

One tick (every ``poll_interval`` seconds):

1. **observe** (:mod:`bridge.observe`): the kubelet's offer (PodResources
   ``GetAllocatableResources``), the Node, NVML's facts; then one
   :class:`bridge.observation.Observation` (plugin sockets, Node capacity, ``List``, other
   drivers' slices, the published and prepared devices, the recorded inventory);
2. **decide** (:func:`bridge.decide.decide`, pure): publish, withdraw or keep, every refusal of
   the interlock table (:data:`bridge.interlocks.INTERLOCKS`), the alarm, the gate Prepare reads;
3. **act**: in ``legacy`` (no ``dra-bridge.io/mode=dra`` label) record the offered inventory with
   the node's GFD labels and NVML facts in node-local state (an empty offer, e.g. while the
   kubelet restarts, never erases the record) and the catalogued device plugins' Allocate answers
   (:mod:`bridge.edits_recorder`); in ``dra`` hand the publisher the recorded inventory (none
   recorded: the fresh-node source's, :mod:`bridge.fresh_source`), less devices nobody could
   prepare (:func:`translate.edit_sources.preparable`), or nothing;
4. **report** (:mod:`bridge.report`): Events, the ``DRABridgePreparedClaims`` condition (the DRA
   plugin's checkpointed claims; :mod:`bridge.node_condition`: Unknown while the checkpoint is
   unreadable, when every recorded device counts as held and the ``checkpoint`` interlock
   refuses; written on change and as a 5-minute heartbeat), metrics and readiness; each tick also
   dials the plugin's sockets, whatever else is down (liveness), and hands the plugin this tick's
   alarm per device for the kubelet's device health stream. While the Node is readable, the
   plugin first collects checkpoint entries whose claim is gone
   (:mod:`bridge.kubeletplugin.claim_collector`, an Event ``PreparedClaimCollected`` each).

An unreadable checkpoint is read again at the start of every tick (rolled forward or repaired);
with ``--pod-uid`` (two instances may overlap) every tick reads it again, so both report the
count on disk, not one in memory.

Restarts and rolling updates (docs/design.md D43, D44): the publisher writes nothing before the
first decision; a decision to publish writes the publishing record
(:mod:`bridge.publishing_record`), a decision to withdraw removes it, and the first tick after a
start that finds it (for the inventory recorded now) resumes without a settle period. With
``--pod-uid`` each tick reads the owner record (:mod:`bridge.owner_record`): the newest instance
writes it and publishes, an older one stands by and its publisher (which asks the record before
every write) writes no slice.

The agent is the plugin's :class:`bridge.ports.HandoverView` and reads the plugin only through
:class:`bridge.ports.PluginView` (:attr:`Agent.plugin`). A kubelet or API server that is missing
makes readiness false and is retried on the next tick; nothing is lost (the record is on disk)
and nothing crashes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from dra_bridge.bridge.decide import Decision, decide
from dra_bridge.bridge.dra_devices import DeviceTaints, servable
from dra_bridge.bridge.drm_sysfs import read_drm
from dra_bridge.bridge.edits_recorder import EditsRecorder
from dra_bridge.bridge.errors import StateError
from dra_bridge.bridge.fresh_source import FreshSource
from dra_bridge.bridge.health import Clocks, Health, Metrics
from dra_bridge.bridge.interlocks import Refusal, held, offered
from dra_bridge.bridge.observation import Memory, Observation
from dra_bridge.bridge.observe import NvmlProbe, Observer, Snapshot
from dra_bridge.bridge.owner_record import Instance, OwnerStore
from dra_bridge.bridge.podresources.client import PodResourcesClient
from dra_bridge.bridge.ports import DeviceUse, PluginView, PrepareGate
from dra_bridge.bridge.publisher import Publisher
from dra_bridge.bridge.publishing_record import PublishingRecord, PublishingStore, inventory_digest
from dra_bridge.bridge.report import CONDITION_TYPE, Reporter
from dra_bridge.bridge.settings import Settings
from dra_bridge.bridge.state import Inventory, InventoryStore
from dra_bridge.kube.api import KubeApi
from dra_bridge.translate.allocate_edits import ResourceEdits
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.edit_sources import identities, remembering
from dra_bridge.translate.inventory.allocatable import DeviceId, InventoryDevice
from dra_bridge.translate.inventory.api_rules import SliceDevice
from dra_bridge.translate.inventory.device_facts import NvmlFacts
from dra_bridge.translate.inventory.slices import build_devices, published_names
from dra_bridge.translate.names import GFD_PREFIX

logger = logging.getLogger(__name__)

GFD_PREFIXES = (GFD_PREFIX,)
__all__ = ["CONDITION_TYPE", "Agent", "NvmlProbe", "TickReport"]


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
        self.publisher = publisher
        clocks = clocks or Clocks()
        self.clock, self.wall = clocks.monotonic, clocks.wall
        self.metrics = Metrics()
        self.health = Health(clock=clocks.monotonic)
        self.plugin: PluginView | None = None
        """The DRA kubelet plugin (``dra-bridge run`` starts it; None in tests that do not)."""
        self.report = TickReport()
        self.memory = Memory()
        self.decision: Decision | None = None
        """The last decision (None before the first one after a start)."""
        self.published: frozenset[DeviceId] = frozenset()
        """The devices handed to the publisher (empty while it publishes none)."""
        self._state_broken = False
        self._resolved: set[str] = set()  # toolkit CDI IDs that resolved at a publish since the start
        self.publishing = PublishingStore(settings.state_dir)
        self.owners = OwnerStore(settings.state_dir)
        self.instance = Instance(self.wall(), settings.pod_uid) if settings.pod_uid else None
        """This instance, with ``--pod-uid`` (a rolling update may overlap two); None without."""
        if self.instance is not None:
            me = self.instance
            publisher.may_write = lambda: self.owners.names(me)  # asked before every slice write
        self.recorder = EditsRecorder(settings.kubelet_dir, catalog)
        self.observer = Observer(settings, catalog.bridge_driver, kubelet, api, publisher, self.recorder, self.health)
        self.observer.nvml_probe = nvml_probe
        self.reporter = Reporter(api, settings.node_name, self.metrics, self.health, self.wall)
        self.device_taints = DeviceTaints(settings, self.metrics, self.reporter.event)
        self.fresh = FreshSource(settings.node_name, settings.cdi_dirs, self.reporter.event)
        self.from_fresh, self.fresh_refusal = False, ""
        """Whether :attr:`recorded` is the fresh-node source's (:mod:`bridge.fresh_source`), and its refusal."""
        try:
            self.recorded = store.load()
        except StateError as exc:
            logger.error("recorded inventory unreadable, not overwriting it: %s", exc)
            self.health.state, self.recorded, self._state_broken = str(exc), Inventory(), True
        self.metrics.recorded.set(len(self.recorded.devices))

    @property
    def node_writes(self) -> int:
        """Node writes so far (Events and the condition)."""
        return self.reporter.node_writes

    @property
    def heartbeats(self) -> int:
        """Of :attr:`node_writes`: the condition writes that only refreshed its heartbeat."""
        return self.reporter.heartbeats

    @property
    def prepared_claims(self) -> int | None:
        """The plugin's prepared-claim count (0 without a plugin; None while its checkpoint is
        unreadable: unknown, not zero)."""
        return self.plugin.prepared_count if self.plugin is not None else 0

    @property
    def checkpoint_error(self) -> str:
        """Why the plugin's checkpoint is unreadable; empty while readable (or without a plugin)."""
        return self.plugin.checkpoint_error if self.plugin is not None else ""

    # -- what the plugin reads (bridge.ports.HandoverView) -----------------------------------

    def devices(self) -> Mapping[str, DeviceId]:
        """Published device name -> the recorded device it stands for."""
        return published_names(self.recorded.devices, self.catalog)

    async def claim_version(self) -> str:
        """The ``resource.k8s.io`` version claims are read at (the publisher's)."""
        return await self.publisher.version()

    def prepare_gate(self) -> PrepareGate:
        """The last decision's gate; closed with a retryable reason before the first one."""
        return self.decision.gate if self.decision is not None else PrepareGate()

    async def device_use(self) -> DeviceUse:
        """What the kubelet's device plugins offer and hold now, mapped to recorded devices."""
        snap = await self.observer.offered()
        holders = await self.observer.held() if snap is not None else None
        if snap is None or holders is None:
            return DeviceUse(error=f"the kubelet's PodResources API does not answer: {self.health.kubelet}")
        obs = Observation(now=self.clock(), recorded=self.recorded, offered=tuple(snap), held=holders)
        return DeviceUse(offered(obs), held(obs))

    def recorded_edits(self) -> Mapping[str, ResourceEdits]:
        """The device plugins' Allocate answers recorded while legacy (the plugin's edit source)."""
        return self.recorded.edits

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
            identities(managed, read_drm()),  # the plugin's IDs name this boot's cards: re-checked at every record
        )
        if (new.devices, new.labels, new.nvml, new.identities) != (
            self.recorded.devices,
            self.recorded.labels,
            self.recorded.nvml,
            self.recorded.identities,
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
        self.recorded, self.from_fresh = new, False
        self.metrics.recorded.set(len(new.devices))
        return True

    # -- dra --------------------------------------------------------------------------------

    def _prepared(self) -> frozenset[DeviceId]:
        """The devices that the DRA plugin's prepared claims hold."""
        return self.plugin.prepared_devices() if self.plugin is not None else frozenset()

    def _devices(self, nvml: dict[str, NvmlFacts] | None, warnings: list[str]) -> list[SliceDevice]:
        resolve = remembering(self.plugin.resolves, self._resolved) if self.plugin is not None else None
        devices, facts, mps, withheld = servable(
            self.recorded, self.catalog, nvml, self.from_fresh, resolve, self._resolved, warnings
        )
        self.health.sharing = "; ".join(mps)
        withheld = mps + withheld
        self.reporter.withheld(withheld)
        built, build_warnings = build_devices(devices, self.catalog, self.recorded.labels, facts)
        built = self._taints(built)
        self.published = frozenset(published_names(devices, self.catalog).values())
        for w in withheld + build_warnings:
            logger.warning("%s", w)
            warnings.append(w)
        return built

    def _taints(self, devices: list[SliceDevice]) -> list[SliceDevice]:
        """Devices unhealthy long enough tainted (or left out where the API server drops taints);
        an Event and a metric per change (:class:`bridge.dra_devices.DeviceTaints`)."""
        bad = self.plugin.unhealthy_devices() if self.plugin is not None else frozenset()
        return self.device_taints.apply(devices, bad, self.wall(), self.publisher.taints_supported is not False)

    def _act(self, snap: Snapshot, decision: Decision, record: PublishingRecord | None, report: TickReport) -> None:
        if decision.take_over and self.instance is not None:
            try:
                self.owners.save(self.instance)
                logger.info("this instance (pod %s) now publishes the node's slices", self.instance.pod_uid)
            except StateError as exc:  # the publisher asks the record: without ours it writes nothing
                logger.error("cannot take over the slices: %s", exc)
        if decision.action == "publish":
            if decision.resumed and record is not None:
                logger.info("resuming publication (publishing since %.0f): no settle period", record.since)
            self.publisher.update(self._devices(snap.nvml, report.warnings))
            if record is None:
                self._save_record(PublishingRecord(self.wall(), inventory_digest(self.recorded)))
        elif decision.action == "withdraw":
            self.publisher.update(None)
            self.published = frozenset()
            self._save_record(None)
        elif decision.action == "standby":
            self.publisher.forget()

    def _save_record(self, record: PublishingRecord | None) -> None:
        try:
            if record is None:
                self.publishing.clear()
            else:
                self.publishing.save(record)
        except StateError as exc:
            logger.error("%s", exc)

    async def _plugin_status(self) -> None:
        if self.plugin is None:
            return
        self.reporter.checkpoint(self.prepared_claims, self.checkpoint_error)
        self.health.plugin = await self.plugin.alive()
        if self.health.plugin:
            logger.error("DRA plugin not answering: %s", self.health.plugin)

    async def _collect(self) -> None:
        """Checkpoint entries whose claim is gone, collected by the plugin (an Event each)."""
        if self.plugin is None:
            return
        collected = await self.plugin.collect(self.wall())
        for label in collected:
            self.reporter.event(
                "Normal", "PreparedClaimCollected", f"{label}: gone from the API server, no container uses it"
            )
        if collected:
            self.reporter.checkpoint(self.prepared_claims, self.checkpoint_error)

    # -- loop ------------------------------------------------------------------------------------

    async def tick(self) -> TickReport:
        """One pass (see the module docstring); never raises for kubelet or API failures."""
        if self.plugin is not None:
            self.plugin.reread_checkpoint()  # rolled forward or repaired: readable again
        snap = await self.observer.snapshot()
        report = TickReport(mode=self.report.mode, publishing=self.report.publishing)
        if snap.mode == "legacy":
            self._record(snap.offered, snap.labels, snap.nvml)
            fresh_or_broken = self._state_broken or self.from_fresh  # a fresh inventory is never recorded
            if not fresh_or_broken and (edits := await self.recorder.update(self.recorded)) is not None:
                self._save(edits)
        elif snap.mode == "dra" and not self._state_broken and (self.from_fresh or self.recorded.empty):
            self.recorded, self.fresh_refusal = await self.fresh.inventory(snap.nvml, snap.labels)  # docs/design.md D45
            self.from_fresh = True
        obs = await self.observer.observation(
            self.clock(), snap, self.recorded, self.published, self._prepared(), self.checkpoint_error
        )
        record = self.publishing.load()
        if record is not None and not record.matches(self.recorded):
            record = None  # published another inventory: settle again
        owner = self.owners.load() if self.instance is not None else None
        since = record.since if record else None
        obs = replace(
            obs, publishing_since=since, instance=self.instance, owner=owner, fresh_refusal=self.fresh_refusal
        )
        decision = decide(obs, self.memory)
        if decision.reported or self.decision is None:
            self.decision = decision
        self.memory = decision.memory
        if self.plugin is not None:  # health before the publish: the taints see this tick's assessment
            self.plugin.report_health({d.device_id: why for d, why in decision.alarmed.items()})
        self._act(snap, decision, record, report)
        if snap.mode is not None:
            report.mode = snap.mode
            report.publishing = decision.publish
            report.refusals, report.alarm = decision.refusals, decision.alarm
            self.reporter.node_uid = self.publisher.owner_uid
            if snap.mode == "legacy":
                self.reporter.legacy()
                self.reporter.alarm(decision.alarm)
            else:
                self.reporter.decision(decision, len(self.recorded.devices))
        await self._plugin_status()  # liveness, whatever else is down
        if snap.node is not None:
            await self._collect()
            await self.reporter.condition(snap.node, self.prepared_claims, self.checkpoint_error)
        await self.reporter.flush()
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
