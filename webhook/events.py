"""Audit must reach people: an Event on the pod's owner describing the plan.

    class AuditSink(Protocol):
        def emit(namespace, owner_ref, message) -> None    # fire and forget, never raises

Warnings go to the client that created the pod (for a Deployment's pods that is the
controller-manager, which nobody reads), so audit mode also records a core/v1 Event
(``reason: DRAMigrationPlan``, type Normal, built by :func:`kube.events.event`) on the owner
named by the pod's controller ownerReference. :class:`KubeAuditSink` posts it in a
background task; failures are logged and counted, never surfaced to the admission.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from dra_bridge.kube.api import KubeApi
from dra_bridge.kube.errors import KubeError
from dra_bridge.kube.events import event, post_event

logger = logging.getLogger(__name__)
REASON = "DRAMigrationPlan"
COMPONENT = "dra-bridge-webhook"


class AuditSink(Protocol):
    """Receives one audit plan per admitted pod that has an owner."""

    def emit(self, namespace: str, owner: Mapping[str, Any], message: str) -> None:
        """Record ``message`` on ``owner`` (an ownerReference) in ``namespace``; never raises."""
        ...


def event_body(namespace: str, owner: Mapping[str, Any], message: str, now: datetime.datetime) -> dict[str, Any]:
    """A core/v1 Event about ``owner``; the name is unique per owner and timestamp."""
    involved = {**{k: owner.get(k) for k in ("apiVersion", "kind", "name", "uid")}, "namespace": namespace}
    return event(
        involved,
        reason=REASON,
        message=message,
        component=COMPONENT,
        namespace=namespace,
        now=now,
        generate_name=f"{str(owner.get('name', 'pod'))[:200]}.dra-plan-",
    )


class KubeAuditSink:
    """Posts Events in background tasks; ``on_result(ok)`` counts them."""

    def __init__(self, api: KubeApi, on_result: Callable[[bool], None] = lambda _ok: None) -> None:
        self._api = api
        self._tasks: set[asyncio.Task[None]] = set()
        self._on_result = on_result

    def emit(self, namespace: str, owner: Mapping[str, Any], message: str) -> None:
        """See :class:`AuditSink`."""
        body = event_body(namespace, owner, message, datetime.datetime.now(datetime.UTC))
        task = asyncio.get_running_loop().create_task(self._post(namespace, body))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _post(self, namespace: str, body: dict[str, Any]) -> None:
        try:
            async with asyncio.timeout(5):
                await post_event(self._api, body)
            self._on_result(True)
        except (KubeError, TimeoutError) as exc:
            logger.warning("audit event in %s: %s", namespace, exc)
            self._on_result(False)

    async def drain(self) -> None:
        """Wait for pending posts (shutdown, tests)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
