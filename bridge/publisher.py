"""ResourceSlice publisher: a desired-state reconciler for one pool per node and driver.

docs/design.md D11 and D17. The desired state is one of three (docs/design.md D43):
*unknown* (at start, and while another instance owns the slices: :meth:`forget`), when
:meth:`sync` writes nothing at all, not even a list; *withdraw* (``update(None)``: no pool); and
*publish* (``update(devices)``: the devices of the pool). :meth:`Publisher.update` replaces the
*whole* desired state; :meth:`sync` lists what is stored
(``spec.nodeName=<node>,spec.driver=<driver>``) and writes the difference:

- stored equal to desired (compared on the fields we set, so server defaults do not count):
  zero API writes;
- otherwise the pool generation is bumped (highest stored + 1) and every slice of the pool is
  written (create or replace), stale slices deleted first;
- a slice deleted or changed by someone else (the kubelet wipes a node's slices when it
  restarts) is written again at once: :meth:`watch` wakes :meth:`run` on every event on the
  pool's slices (the sync that follows lists and compares, so our own writes cost a list,
  never a write); the periodic resync remains the backstop should the watch be down.

:attr:`Publisher.may_write`, when set, is asked before every sync that would write (the owner
record in a surge rollout, :mod:`bridge.owner_record`): when it says no, the desired state
becomes unknown and nothing is written.

Slices carry an ownerReference to the Node (set :attr:`owner_uid`), so they go with it.
Counters in :attr:`stats` (``creates``, ``updates``, ``deletes``, ``errors``) let tests assert
that an identical update writes nothing. :meth:`run` and :meth:`watch` retry with exponential
backoff (:class:`kube.backoff.Backoff`). The ``resource.k8s.io`` version is the override or
the newest served (discovery). API failures are :mod:`kube.errors`.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dra_bridge.kube.api import KubeApi
from dra_bridge.kube.backoff import Backoff, Sleep
from dra_bridge.kube.discovery import GROUP, newest_served
from dra_bridge.kube.errors import KubeError, NotFound
from dra_bridge.kube.resources import RESOURCE_SLICES, Resource
from dra_bridge.translate.inventory.api_rules import SliceDevice
from dra_bridge.translate.inventory.device_taints import max_devices, taints_by_device, taints_dropped
from dra_bridge.translate.inventory.pool import internal_form, pool_slices, render_slice

logger = logging.getLogger(__name__)

Desired = Literal["unknown", "withdraw", "publish"]


@dataclass
class Stats:
    """API writes made so far, and failed syncs."""

    creates: int = 0
    updates: int = 0
    deletes: int = 0
    errors: int = 0

    @property
    def writes(self) -> int:
        """creates + updates + deletes."""
        return self.creates + self.updates + self.deletes


def is_subset(want: Any, have: Any) -> bool:
    """True when every field of ``want`` is in ``have`` with the same value (lists item by item).

    Fields the server adds (defaults, managedFields, uid) are ignored: the copyServerDefaults idea.
    An empty list or map we want matches a field the server omitted (``omitempty``).
    """
    if isinstance(want, dict):
        return isinstance(have, dict) and all(
            is_subset(v, have[k]) if k in have else v in ([], {}) for k, v in want.items()
        )
    if isinstance(want, list):
        return isinstance(have, list) and len(want) == len(have) and all(map(is_subset, want, have))
    return bool(want == have)


class Publisher:
    """Publishes the pool ``<node>`` of ``driver``; see the module docstring."""

    def __init__(
        self,
        api: KubeApi,
        node: str,
        driver: str,
        api_version: str = "",
        sleep: Sleep = asyncio.sleep,
        backoff_initial: float = 1.0,
        backoff_max: float = 60.0,
    ) -> None:
        self.api = api
        self.node = node
        self.driver = driver
        self.api_version = api_version
        self.owner_uid = ""
        self.stats = Stats()
        self.healthy = True
        self.last_error = ""
        self.taints_supported: bool | None = None
        """Whether the API server keeps device taints (None: no taint written yet)."""
        self._desired: list[SliceDevice] | None = None
        self._state: Desired = "unknown"
        self.may_write: Callable[[], bool] | None = None
        """Asked before a sync writes (None: always may); False makes the desired state unknown."""
        self._changed = asyncio.Event()
        self._sleep = sleep
        self._backoff = (backoff_initial, backoff_max)

    @property
    def desired(self) -> list[SliceDevice] | None:
        """The devices to publish, or None to publish no pool."""
        return copy.deepcopy(self._desired)

    @property
    def state(self) -> Desired:
        """``unknown`` (write nothing), ``withdraw`` or ``publish``."""
        return self._state

    def update(self, devices: Sequence[SliceDevice] | None) -> None:
        """Replace the whole desired state (None: withdraw) and wake :meth:`run`."""
        new = None if devices is None else copy.deepcopy(list(devices))
        state: Desired = "withdraw" if new is None else "publish"
        if (state, new) != (self._state, self._desired):
            self._state, self._desired = state, new
            self._changed.set()

    def forget(self) -> None:
        """Desired state unknown: write nothing until the next :meth:`update`."""
        if self._state != "unknown":
            logger.info("no longer writing the slices of pool %s", self.node)
        self._state, self._desired = "unknown", None

    async def version(self) -> str:
        """The ``resource.k8s.io`` version to write (override, else discovery, cached)."""
        if not self.api_version:
            self.api_version = newest_served(await self.api.served_versions(GROUP))
            logger.info("publishing ResourceSlices as %s", self.api_version)
        return self.api_version

    async def _slices(self) -> Resource:
        return RESOURCE_SLICES.at(await self.version())

    def _selector(self) -> str:
        return f"spec.nodeName={self.node},spec.driver={self.driver}"

    def _with_owner(self, internal: dict[str, Any]) -> dict[str, Any]:
        if self.owner_uid:
            internal["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": self.node,
                    "uid": self.owner_uid,
                    "controller": True,
                }
            ]
        return internal

    async def stored(self) -> list[dict[str, Any]]:
        """Our slices as stored, in internal form (metadata kept)."""
        listed = await self.api.list(await self._slices(), field_selector=self._selector())
        return [internal_form(s) for s in listed.get("items") or []]

    async def sync(self) -> bool:
        """One reconcile pass; True when it wrote anything. Raises KubeError."""
        if not self._allowed():
            return False
        version = await self.version()
        slices = RESOURCE_SLICES.at(version)
        stored = {s["metadata"]["name"]: s for s in await self.stored()}
        if self._desired is None:
            if stored and not self._allowed():  # asked again right before writing
                return False
            for name in sorted(stored):
                await self._delete(slices, name)
            if stored:
                logger.info("withdrew pool %s of %s: deleted %d slice(s)", self.node, self.driver, len(stored))
            return bool(stored)
        generation = max((int(s["spec"].get("pool", {}).get("generation", 0)) for s in stored.values()), default=0)
        most = max_devices(self._desired)
        want = [self._with_owner(s) for s in pool_slices(self.node, self.driver, self._desired, generation, most)]
        if set(stored) == {w["metadata"]["name"] for w in want} and all(
            is_subset(w, stored[w["metadata"]["name"]])
            and taints_by_device(w) == taints_by_device(stored[w["metadata"]["name"]])  # a removed taint
            for w in want
        ):
            return False
        if not self._allowed():  # asked again right before writing
            return False
        generation = generation + 1 if stored else 0
        want = [self._with_owner(s) for s in pool_slices(self.node, self.driver, self._desired, generation, most)]
        names = {w["metadata"]["name"] for w in want}
        for name in sorted(set(stored) - names):
            await self._delete(slices, name)
        for w in want:
            body = render_slice(w, version)
            old = stored.get(w["metadata"]["name"])
            if old is None:
                self._judge_taints(body, await self.api.create(slices, body))
                self.stats.creates += 1
                continue
            body["metadata"]["resourceVersion"] = old["metadata"].get("resourceVersion", "")
            try:
                self._judge_taints(body, await self.api.replace(slices, w["metadata"]["name"], body))
                self.stats.updates += 1
            except NotFound:
                del body["metadata"]["resourceVersion"]
                self._judge_taints(body, await self.api.create(slices, body))
                self.stats.creates += 1
        logger.info(
            "published pool %s of %s: generation %d, %d slice(s), %d device(s)",
            self.node,
            self.driver,
            generation,
            len(want),
            len(self._desired),
        )
        return True

    def _judge_taints(self, sent: dict[str, Any], returned: Any) -> None:
        """Device taints are supported where the object the API server returned kept them (never
        judged from discovery: the DRADeviceTaints gate strips the field silently)."""
        if not any(d.get("taints") or (d.get("basic") or {}).get("taints") for d in sent["spec"].get("devices", [])):
            return
        supported = isinstance(returned, dict) and not taints_dropped(sent, returned)
        if supported != self.taints_supported:
            logger.info("device taints %s by the API server", "kept" if supported else "dropped")
        self.taints_supported = supported

    def _allowed(self) -> bool:
        """False while the desired state is unknown, and when :attr:`may_write` says no (then unknown)."""
        if self._state != "unknown" and self.may_write is not None and not self.may_write():
            self.forget()
        return self._state != "unknown"

    async def _delete(self, slices: Resource, name: str) -> None:
        with contextlib.suppress(NotFound):  # already gone: what we wanted
            await self.api.delete(slices, name)
        self.stats.deletes += 1

    async def watch(self, stop: asyncio.Event, timeout: int = 300) -> None:
        """Wake :meth:`run` on every event on the pool's slices until ``stop``: watch for
        ``timeout`` seconds at a time; on errors back off (like :meth:`run`) and watch again."""
        backoff = Backoff(*self._backoff, sleep=self._sleep)
        while not stop.is_set():
            try:
                delivered = False
                async for _kind, _obj in self.api.watch(
                    await self._slices(), field_selector=self._selector(), timeout=timeout
                ):
                    self._changed.set()
                    delivered = True
                    backoff.reset()
                    if stop.is_set():
                        return
                if not delivered:  # ended at once: never a tight loop
                    await backoff.wait()
            except Exception as exc:  # KubeError, or anything odd a watch delivers: never end the loop
                logger.warning(
                    "ResourceSlice watch failed, watching again in %.1fs: %s",
                    backoff.delay,
                    str(exc) or type(exc).__name__,
                    exc_info=not isinstance(exc, KubeError),
                )
                await backoff.wait()

    async def run(self, stop: asyncio.Event, resync: float) -> None:
        """Sync on every update and every ``resync`` seconds until ``stop``; back off on errors."""
        backoff = Backoff(*self._backoff, sleep=self._sleep)
        while not stop.is_set():
            self._changed.clear()
            try:
                await self.sync()
                self.healthy, self.last_error = True, ""
                backoff.reset()
            except Exception as exc:  # KubeError, or an odd slice stored under our selector: retry
                self.stats.errors += 1
                self.healthy, self.last_error = False, str(exc) or type(exc).__name__
                logger.warning(
                    "ResourceSlice sync failed, retrying in %.1fs: %s",
                    backoff.delay,
                    self.last_error,
                    exc_info=not isinstance(exc, KubeError),
                )
                await backoff.wait()
                continue
            waiters = [asyncio.ensure_future(self._changed.wait()), asyncio.ensure_future(stop.wait())]
            _, pending = await asyncio.wait(waiters, timeout=resync, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
