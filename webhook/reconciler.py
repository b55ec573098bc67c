"""The template reconciler: one active replica (a Lease) collects and repairs managed templates.

    Reconciler(api, api_version, catalog_source, identity, namespace, grace=600, lease_seconds=30)
    await Reconciler.run_once() -> Report(deleted, recreated, leader)
    await Reconciler.run(stop, interval=30)

Each pass, only while this replica holds the Lease ``dra-bridge-webhook-reconciler`` in
``namespace``: list converted pods (server-side filter ``dra-bridge.io/converted=true``) and
managed templates; delete templates unused past ``grace`` (webhook.reconcile_rules.garbage,
with a resourceVersion precondition); re-create, from each live pod's
conversion record, the templates it names that are missing, but only when the plan
recomputed with the record's options names exactly those templates
(webhook.reconcile_rules.repair).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dra_bridge.kube.api import KubeApi
from dra_bridge.kube.errors import AlreadyExists, Conflict, KubeError, NotFound
from dra_bridge.kube.resources import LEASES, PODS, RESOURCE_CLAIM_TEMPLATES
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.names import CONVERTED_LABEL, MANAGED_BY, MANAGED_BY_WEBHOOK
from dra_bridge.webhook.reconcile_rules import Key, garbage, missing, repair

logger = logging.getLogger(__name__)
LEASE_NAME = "dra-bridge-webhook-reconciler"


@dataclass
class Report:
    """One pass: templates ``deleted`` and ``recreated``; ``leader`` when this replica acted."""

    leader: bool = False
    deleted: list[Key] = field(default_factory=list)
    recreated: list[Key] = field(default_factory=list)


def _now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Reconciler:
    """See the module docstring. ``clock`` gives wall-clock seconds (tests)."""

    def __init__(
        self,
        api: KubeApi,
        api_version: str,
        catalog: Callable[[], Catalog],
        identity: str,
        namespace: str,
        *,
        grace: float = 600.0,
        lease_seconds: int = 30,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._api = api
        self._templates = RESOURCE_CLAIM_TEMPLATES.at(api_version)
        self.api_version = api_version
        self.version = self._templates.version
        self._catalog = catalog
        self.identity = identity
        self.namespace = namespace
        self.grace = grace
        self.lease_seconds = lease_seconds
        self._clock = clock
        self._first_unused: dict[Key, float] = {}

    async def _lead(self) -> bool:
        """Acquire or renew the Lease; False while another live holder has it."""
        spec = {"holderIdentity": self.identity, "leaseDurationSeconds": self.lease_seconds, "renewTime": _now_iso()}
        try:
            current = await self._api.get(LEASES, LEASE_NAME, self.namespace)
        except NotFound:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": LEASE_NAME, "namespace": self.namespace},
                "spec": {**spec, "acquireTime": _now_iso()},
            }
            try:
                await self._api.create(LEASES, body, self.namespace)
            except AlreadyExists:
                return False
            return True
        held = current.get("spec") or {}
        if held.get("holderIdentity") not in (self.identity, None, ""):
            renewed = str(held.get("renewTime") or "1970-01-01T00:00:00Z").replace("Z", "+00:00")
            expiry = datetime.datetime.fromisoformat(renewed).timestamp() + int(held.get("leaseDurationSeconds") or 0)
            if expiry > self._clock():
                return False
            spec["acquireTime"] = _now_iso()
        current["spec"] = {**held, **spec}
        try:  # the resourceVersion in metadata makes this a compare-and-swap
            await self._api.replace(LEASES, LEASE_NAME, current, self.namespace)
        except Conflict:
            return False
        return True

    async def run_once(self) -> Report:
        """One pass (see the module docstring); API errors propagate."""
        report = Report(leader=await self._lead())
        if not report.leader:
            return report
        pods = (await self._api.list(PODS, label_selector=f"{CONVERTED_LABEL}=true")).get("items") or []
        tpls = (await self._api.list(self._templates, label_selector=f"{MANAGED_BY}={MANAGED_BY_WEBHOOK}")).get(
            "items"
        ) or []
        for ns, name in garbage(tpls, pods, self._clock(), self.grace, self._first_unused):
            rv = next(
                t["metadata"].get("resourceVersion")
                for t in tpls
                if t["metadata"]["namespace"] == ns and t["metadata"]["name"] == name
            )
            try:
                await self._api.delete(self._templates, name, ns, resource_version=rv)
                report.deleted.append((ns, name))
                logger.info("deleted unused ResourceClaimTemplate %s/%s", ns, name)
            except (NotFound, Conflict):
                pass
        for pod, names in missing(tpls, pods):
            report.recreated += await self._recreate(pod, names)
        return report

    async def _recreate(self, pod: dict[str, Any] | Any, names: list[str]) -> list[Key]:
        ns = pod["metadata"]["namespace"]
        fix = repair(pod, names, self._catalog(), self.api_version)
        for problem in fix.problems:
            logger.warning("%s", problem)
        done: list[Key] = []
        for template in fix.create:
            name = template["metadata"]["name"]
            try:
                await self._api.create(self._templates, dict(template), ns)
                done.append((ns, name))
                logger.info("re-created ResourceClaimTemplate %s/%s for pod %s", ns, name, pod["metadata"].get("name"))
            except AlreadyExists:
                pass
        return done

    async def run(self, stop: asyncio.Event, interval: float = 30.0) -> None:
        """Pass every ``interval`` seconds until ``stop`` is set; errors are logged, not fatal."""
        while not stop.is_set():
            try:
                await self.run_once()
            except (KubeError, ValueError) as exc:
                logger.warning("template reconciler: %s", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)
