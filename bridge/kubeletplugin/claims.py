"""Prepare and unprepare claims on this node: the DRA plugin's state, under one asyncio.Lock.

    preparer = ClaimPreparer(api, node, store, cdi_dir, index, view)   view: bridge.ports.HandoverView
    preparer.recover()                                   at start, before serving
    await preparer.prepare([ClaimRef(ns, name, uid)])   -> {uid: Outcome(devices, error)}
    await preparer.unprepare([ClaimRef(...)])           -> {uid: Outcome((), error)}

Prepare (docs/design.md D10; the DRAPlugin contract, docs/design.md D16), per claim:

1. already checkpointed: answer what the checkpoint holds (idempotent, without the API
   server), after checking its toolkit CDI devices still resolve and rewriting our spec if it
   is missing (``/var/run/cdi`` is tmpfs: a reboot empties it);
2. otherwise, only while the last publication decision was to publish (``prepare_gate()``: a
   decision to keep the slices through a kubelet blip counts; "prepare nothing new" once the
   node withdraws or leaves DRA mode; before the first decision after a start, a retryable
   error), GET the ResourceClaim (``resource.k8s.io`` at ``claim_version()``),
   check its UID and take the allocation results of our driver in this node's pool
   (:func:`translate.cdi.our_results`), map them to recorded devices and CDI IDs
   (:func:`translate.cdi.answer`: the NVIDIA toolkit's device, checked to resolve, else the
   device plugin's Allocate answer recorded while legacy, else the catalog's static recipe,
   in our spec: ``edits``, :mod:`translate.edit_sources`), write our spec when one is needed,
   then the checkpoint (which keeps each device's edits, so the spec is rewritten identically);
3. the last line (docs/design.md D34), under the lock, before anything is written: refuse,
   naming the device and its holder, a device that another checkpointed claim holds (unless one
   of the two results has ``adminAccess``), one that PodResources ``List`` shows assigned to a
   container through a device plugin, and one the kubelet offers through a device plugin
   (``device_use()``, read fresh; our own DRA devices are not a conflict).

Every failure is that claim's error (naming it and the rule), never another claim's and never
a crash. Unprepare removes the spec and the checkpoint entry; an unknown claim succeeds; it
needs only the checkpoint (not the claim, not the mode).

Crash safety: the spec is written before the checkpoint, so a crash leaves at most a spec
without an entry; :meth:`recover` removes such stray specs of ours (never one whose claim is
checkpointed) and, after a reboot (the boot ID changed), rewrites checkpointed claims' missing
specs. ``DRA_BRIDGE_TEST_CRASH_POINT`` (``before-spec``, ``after-spec``, ``after-checkpoint``)
kills the process with SIGKILL at that step: a test hook, inert unless set.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from dra_bridge.bridge.drm_sysfs import read_drm
from dra_bridge.bridge.errors import CdiError, CheckpointError
from dra_bridge.bridge.kubeletplugin.cdi_specs import SpecIndex, own_spec_uids, remove_spec, write_spec
from dra_bridge.bridge.kubeletplugin.checkpoint import Checkpoint, CheckpointStore, PreparedClaim
from dra_bridge.bridge.ports import DeviceUse, HandoverView
from dra_bridge.kube.api import KubeApi
from dra_bridge.kube.errors import KubeError
from dra_bridge.kube.resources import RESOURCE_CLAIMS
from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.cdi import (
    EditsLookup,
    PreparedDevice,
    answer,
    check_uid,
    claim_label,
    our_results,
    own_spec,
    spec_file_name,
    toolkit_cdi_id,
)
from dra_bridge.translate.edit_sources import lookup
from dra_bridge.translate.errors import ClaimError
from dra_bridge.translate.inventory.allocatable import DeviceId
from dra_bridge.translate.inventory.drm import DrmNode
from dra_bridge.translate.names import BRIDGE_DRIVER

logger = logging.getLogger(__name__)

CRASH_POINT_ENV = "DRA_BRIDGE_TEST_CRASH_POINT"
CRASH_POINTS = ("before-spec", "after-spec", "after-checkpoint")


def crash_point(name: str) -> None:
    """Kill this process with SIGKILL when ``DRA_BRIDGE_TEST_CRASH_POINT`` is ``name`` (tests only)."""
    if os.environ.get(CRASH_POINT_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True)
class ClaimRef:
    """A claim as the kubelet names it."""

    namespace: str
    name: str
    uid: str


@dataclass(frozen=True)
class Outcome:
    """One claim's result: its devices, or a non-empty ``error``."""

    devices: tuple[PreparedDevice, ...] = ()
    error: str = ""


class ClaimPreparer:
    """Prepared claims of one node (see the module docstring), reading the agent through
    ``view``; ``edits`` finds a non-NVIDIA device's edits (default: the shipped catalog's static
    recipes)."""

    def __init__(
        self,
        api: KubeApi,
        node: str,
        store: CheckpointStore,
        cdi_dir: Path,
        index: SpecIndex,
        view: HandoverView,
        driver: str = BRIDGE_DRIVER,
        edits: EditsLookup | None = None,
    ) -> None:
        self.api, self.node, self.store, self.cdi_dir, self.index = api, node, store, cdi_dir, index
        self.view = view
        self.driver = driver
        self.drm: Callable[[], Sequence[DrmNode]] = read_drm
        """The host's DRM nodes now (:mod:`bridge.drm_sysfs`): a device's DRM nodes are derived
        from its PCI address whenever a spec is written, never replayed from before a reboot."""
        self.edits = edits if edits is not None else lookup(dict, load_catalog(), lambda: self.drm())
        self.lock = asyncio.Lock()
        self.checkpoint = Checkpoint()
        self.broken = ""
        """Why the checkpoint is unusable (every call then fails with it); empty when fine."""

    @property
    def count(self) -> int:
        """How many claims are prepared (the Node condition's number)."""
        return len(self.checkpoint.claims)

    def devices(self) -> frozenset[DeviceId]:
        """The devices that prepared claims hold (for the agent's alarm)."""
        return frozenset(d.device for c in self.checkpoint.claims.values() for d in c.devices if d.device.device_id)

    def recover(self) -> None:
        """Load the checkpoint, remove stray specs of ours, rewrite missing ones after a reboot."""
        try:
            self.checkpoint = self.store.load()
        except CheckpointError as exc:
            self.broken = str(exc)
            logger.error("prepared-claim checkpoint unusable, preparing nothing: %s", exc)
            return
        for uid in own_spec_uids(self.cdi_dir) - set(self.checkpoint.claims):
            logger.info("removing CDI spec of claim %s: it is not checkpointed (a crash during prepare)", uid)
            try:
                remove_spec(self.cdi_dir, uid)
            except CdiError as exc:
                logger.warning("%s", exc)
        rebooted = self.checkpoint.boot_id != self.store.boot_id()
        for uid, claim in self.checkpoint.claims.items():
            try:
                self._ensure_spec(uid, claim, rebooted)
            except (CdiError, ClaimError) as exc:
                logger.warning("claim %s: %s", uid, exc)
        if rebooted and self.checkpoint.claims:
            try:
                self.store.save(self.checkpoint)
            except CheckpointError as exc:
                logger.warning("%s", exc)

    def reload(self) -> None:
        """Read the checkpoint again: another instance of the agent may have written it (rolling
        updates, :mod:`bridge.file_lock`)."""
        try:
            self.checkpoint, self.broken = self.store.load(), ""
        except CheckpointError as exc:
            self.broken = str(exc)

    def _ensure_spec(self, uid: str, claim: PreparedClaim, rebooted: bool = False) -> None:
        """Write the claim's spec when it is missing, or after a reboot (device nodes derived again)."""
        path = self.cdi_dir / spec_file_name(uid)
        if not rebooted and path.exists():
            return
        spec = own_spec(uid, claim.devices, self.edits, self.drm())
        if spec is not None:
            write_spec(self.cdi_dir, uid, spec)
            logger.info(
                "wrote the CDI spec of prepared claim %s (%s)", uid, "after a reboot" if rebooted else "missing"
            )

    def _check_toolkit(self, ref: ClaimRef, devices: Sequence[PreparedDevice]) -> None:
        wanted = [
            t for d in devices if (t := toolkit_cdi_id(d.device.resource, d.device.device_id)) in d.cdi_device_ids
        ]
        missing = sorted(i for i, ok in self.index.resolves(wanted).items() if not ok)
        if missing:
            dirs = ", ".join(map(str, self.index.dirs))
            raise ClaimError(
                f"{claim_label(ref.namespace, ref.name, ref.uid)}: the container toolkit's CDI "
                f"device(s) {', '.join(missing)} no longer resolve in {dirs}"
            )

    async def _read(self, ref: ClaimRef) -> Outcome | tuple[ClaimRef, list[PreparedDevice], dict[str, object] | None]:
        label = claim_label(ref.namespace, ref.name, ref.uid)
        closed = self._gate_error(label)
        if closed:
            return Outcome(error=closed)
        try:
            check_uid(ref.uid)  # before anything: it may become part of a path
            version = await self.view.claim_version()
            claim = await self.api.get(RESOURCE_CLAIMS.at(version), ref.name, ref.namespace)
            results = our_results(claim, ref.namespace, ref.name, ref.uid, self.driver, self.node)
            inventory = self.view.devices()
            toolkit = [
                t for r in results if (k := inventory.get(r.device)) and (t := toolkit_cdi_id(k.resource, k.device_id))
            ]
            prepared = answer(ref.uid, results, inventory, self.index.resolves(toolkit), label, self.edits)
        except KubeError as exc:
            return Outcome(error=f"{label}: cannot read the ResourceClaim: {exc}")
        except ClaimError as exc:
            return Outcome(error=str(exc))
        return ref, prepared.devices, prepared.spec

    async def prepare(self, refs: Sequence[ClaimRef]) -> dict[str, Outcome]:
        """One outcome per claim UID (see the module docstring); never raises for one claim."""
        out: dict[str, Outcome] = {}
        if self.broken:
            return {r.uid: Outcome(error=f"prepared-claim checkpoint unusable: {self.broken}") for r in refs}
        fresh = [r for r in refs if r.uid not in self.checkpoint.claims]
        read = dict(zip([r.uid for r in fresh], await asyncio.gather(*(self._read(r) for r in fresh)), strict=True))
        async with self.lock:
            use = await self.view.device_use() if any(not isinstance(o, Outcome) for o in read.values()) else None
            for ref in refs:
                out[ref.uid] = self._prepare_locked(ref, read.get(ref.uid), use)
        return out

    def _gate_error(self, label: str) -> str:
        """Why fresh claims may not be prepared now (empty: they may)."""
        gate = self.view.prepare_gate()
        if not gate.decided:
            return f"{label}: {gate.reason}; not preparing it yet, the kubelet will ask again"
        if not gate.publishing:
            return f"{label}: this node does not publish its devices now ({gate.reason}): preparing nothing new"
        return ""

    def _conflicts(self, uid: str, devices: Sequence[PreparedDevice], use: DeviceUse) -> list[str]:
        """The last-line check (module docstring, step 3): each device another owner may have."""
        problems = []
        for d in devices:
            what = f"device {d.device_name} ({d.device})"
            for other_uid, other in sorted(self.checkpoint.claims.items()):
                if other_uid != uid and any(o.device == d.device and not (o.admin or d.admin) for o in other.devices):
                    problems.append(f"{what} is held by prepared {claim_label(other.namespace, other.name, other_uid)}")
            holders = use.held.get(d.device)
            if holders:
                problems.append(
                    f"{what} is assigned to container(s) {', '.join(sorted(holders)[:5])} through a device plugin"
                )
            offered = use.offered.get(d.device)
            if offered:
                problems.append(f"{what} is offered by the kubelet through a device plugin ({offered})")
        return problems

    def _prepare_locked(
        self,
        ref: ClaimRef,
        read: Outcome | tuple[ClaimRef, list[PreparedDevice], dict[str, object] | None] | None,
        use: DeviceUse | None,
    ) -> Outcome:
        label = claim_label(ref.namespace, ref.name, ref.uid)
        try:
            known = self.checkpoint.claims.get(ref.uid)
            if known is not None:  # already prepared (by us or an earlier process): same answer
                self._check_toolkit(ref, known.devices)
                self._ensure_spec(ref.uid, known)
                return Outcome(known.devices)
            if read is None:  # checkpointed when read, unprepared since by a concurrent call
                return Outcome(error=f"{label}: unprepared while being prepared; the kubelet will ask again")
            if isinstance(read, Outcome):
                return read
            _, devices, spec = read
            closed = self._gate_error(label)  # again under the lock: the decision may have changed
            if closed:
                return Outcome(error=closed)
            if use is None or use.error:
                why = use.error if use is not None else "not read"
                return Outcome(error=f"{label}: cannot check who holds its devices ({why}); the kubelet will ask again")
            conflicts = self._conflicts(ref.uid, devices, use)
            if conflicts:
                logger.error("refusing to prepare %s: %s", label, "; ".join(conflicts))
                return Outcome(error=f"{label}: refused, another owner may have its device(s): " + "; ".join(conflicts))
            crash_point("before-spec")
            if spec is not None:
                write_spec(self.cdi_dir, ref.uid, dict(spec))
            crash_point("after-spec")
            self.checkpoint.claims[ref.uid] = PreparedClaim(ref.namespace, ref.name, tuple(devices))
            try:
                self.store.save(self.checkpoint)
            except CheckpointError:
                del self.checkpoint.claims[ref.uid]
                remove_spec(self.cdi_dir, ref.uid)
                raise
            crash_point("after-checkpoint")
            logger.info("prepared %s: %d device(s)", label, len(devices))
            return Outcome(tuple(devices))
        except (CdiError, CheckpointError, ClaimError) as exc:
            return Outcome(error=f"{label}: {exc}" if label not in str(exc) else str(exc))

    async def unprepare(self, refs: Sequence[ClaimRef]) -> dict[str, Outcome]:
        """One outcome per claim UID: spec and entry removed; an unknown claim succeeds."""
        if self.broken:
            return {r.uid: Outcome(error=f"prepared-claim checkpoint unusable: {self.broken}") for r in refs}
        out: dict[str, Outcome] = {}
        async with self.lock:
            for ref in refs:
                label = claim_label(ref.namespace, ref.name, ref.uid)
                try:
                    removed = self.checkpoint.claims.pop(ref.uid, None)
                    if removed is not None:
                        try:
                            self.store.save(self.checkpoint)
                        except CheckpointError:
                            self.checkpoint.claims[ref.uid] = removed
                            raise
                    remove_spec(self.cdi_dir, ref.uid)  # after the entry: never a checkpointed claim's spec
                    if removed is not None:
                        logger.info("unprepared %s", label)
                    out[ref.uid] = Outcome()
                except (CdiError, CheckpointError) as exc:
                    out[ref.uid] = Outcome(error=f"{label}: {exc}")
        return out
