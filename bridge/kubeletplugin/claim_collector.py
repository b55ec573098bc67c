"""Collecting checkpoint entries whose claim is gone: the reads and the unprepare around the pure
rule of :mod:`bridge.kubeletplugin.checkpoint_gc` (docs/design.md D30).

    collector = ClaimCollector(grace, lock)
    collected = await collector.tick(preparer, kubelet, api, claim_version, now)   -> labels of collected claims

Each tick with checkpoint entries: PodResources ``List`` (no answer: nothing read, nothing
collected), a GET of each claim that no container uses (namespace and name from the entry, by
UID), then :func:`bridge.kubeletplugin.checkpoint_gc.collect`; each entry it returns is unprepared through the
preparer (spec and entry removed under its lock, and under the rolling-update file ``lock`` with
the checkpoint read again first, as a kubelet call would).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from dra_bridge.bridge.errors import PodResourcesError
from dra_bridge.bridge.file_lock import file_lock
from dra_bridge.bridge.kubeletplugin.checkpoint_gc import (
    Entry,
    Seen,
    claim_seen,
    collect,
    pod_resources_usage,
    to_check,
)
from dra_bridge.bridge.kubeletplugin.claims import ClaimPreparer, ClaimRef
from dra_bridge.bridge.podresources.client import PodResourcesClient
from dra_bridge.kube.api import KubeApi
from dra_bridge.kube.errors import KubeError, NotFound
from dra_bridge.kube.resources import RESOURCE_CLAIMS
from dra_bridge.translate.cdi import claim_label

logger = logging.getLogger(__name__)


def entries(preparer: ClaimPreparer) -> list[Entry]:
    """The preparer's checkpointed claims as :class:`bridge.kubeletplugin.checkpoint_gc.Entry` facts."""
    return [
        Entry(
            uid,
            c.namespace,
            c.name,
            frozenset((preparer.driver, d.pool_name, d.device_name) for d in c.devices),
            frozenset(d.device.device_id for d in c.devices if d.device.device_id),
        )
        for uid, c in sorted(preparer.checkpoint.claims.items())
    ]


class ClaimCollector:
    """Carries, between ticks, since when each checkpointed claim has been seen gone."""

    def __init__(self, grace: float, lock: Path | None = None) -> None:
        self.grace, self.lock = grace, lock
        self.gone_since: dict[str, float] = {}

    @contextlib.asynccontextmanager
    async def _serialized(self, preparer: ClaimPreparer) -> AsyncIterator[None]:
        if self.lock is None:
            yield
            return
        async with file_lock(self.lock):
            preparer.reload()
            yield

    async def tick(
        self,
        preparer: ClaimPreparer,
        kubelet: PodResourcesClient,
        api: KubeApi,
        claim_version: Callable[[], Awaitable[str]],
        now: float,
    ) -> list[str]:
        """One pass (see the module docstring); the labels of the claims collected."""
        if preparer.broken or not preparer.checkpoint.claims:
            self.gone_since = {}
            return []
        known = entries(preparer)
        try:
            usage = pod_resources_usage(await kubelet.listed())
        except PodResourcesError:
            usage = None
        seen: dict[str, Seen] = {}
        for e in to_check(known, usage):
            try:
                claim = await api.get(RESOURCE_CLAIMS.at(await claim_version()), e.name, e.namespace)
            except NotFound:
                claim = None
            except KubeError:
                continue  # unknown: no news
            seen[e.uid] = claim_seen(claim, e.uid)
        decision = collect(known, seen, usage, self.gone_since, now, self.grace)
        self.gone_since = decision.gone_since
        if not decision.collect:
            return []
        by_uid = {e.uid: e for e in known}
        refs = [ClaimRef(by_uid[u].namespace, by_uid[u].name, u) for u in decision.collect]
        try:
            async with self._serialized(preparer):
                outcomes = await preparer.unprepare(refs)
        except OSError as exc:
            logger.warning("cannot lock %s to collect checkpoint entries: %s", self.lock, exc)
            return []
        done = []
        for ref in refs:
            label = claim_label(ref.namespace, ref.name, ref.uid)
            if error := outcomes[ref.uid].error:
                logger.warning("cannot collect the checkpoint entry of %s: %s", label, error)
                continue
            logger.info(
                "collected the checkpoint entry of %s: gone from the API server for %.0fs and no container "
                "on this node uses its devices",
                label,
                now - decision.gone_since[ref.uid],
            )
            self.gone_since.pop(ref.uid, None)
            done.append(label)
        return done
