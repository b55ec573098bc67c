"""Audit must reach people: an Event on the pod's owner describing the plan.

    class AuditSink(Protocol):
        def emit(namespace, owner_ref, message) -> None    # fire and forget, never raises
    postable_owner(owner_ref) -> {apiVersion, kind, name, uid} | None   what an Event may be about

Warnings go to the client that created the pod (for a Deployment's pods that is the
controller-manager, which nobody reads), so audit mode also records a core/v1 Event
(``reason: DRAMigrationPlan``, type Normal, built by :func:`kube.events.event`) on the owner
named by the pod's controller ownerReference. :class:`KubeAuditSink` posts it in a
background task; failures are logged and counted, never surfaced to the admission.

The webhook posts with its own permission (``create events`` in every namespace), so an Event
is only ever about the pod's owner as the review names it, in the review's namespace, and only
when that reference has the shape of something that can own a pod (:func:`postable_owner`):
``apiVersion`` ``[group/]version`` (a DNS subdomain and a DNS label), ``kind`` a CamelCase
identifier, ``name`` a DNS subdomain, a ``uid``; no core kind but ReplicationController (a
Secret or a ConfigMap controls no pod: ``kind: Secret, name: db-password`` gets no Event). The
Event carries those four fields and the review's namespace, nothing else of the reference.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from dra_bridge.kube.api import KubeApi
from dra_bridge.kube.errors import KubeError
from dra_bridge.kube.events import event, post_event
from dra_bridge.translate.dns_names import is_dns_label, is_dns_subdomain

logger = logging.getLogger(__name__)
REASON = "DRAMigrationPlan"
COMPONENT = "dra-bridge-webhook"
#: A Kind as Kubernetes spells them (CamelCase, no separators).
_KIND = re.compile(r"[A-Z][A-Za-z0-9]{0,62}")
#: The core (``v1``) kinds that can control pods.
CORE_OWNER_KINDS = frozenset({"ReplicationController"})
REF_FIELDS = ("apiVersion", "kind", "name", "uid")


def postable_owner(owner: Mapping[str, Any] | None) -> dict[str, str] | None:
    """The reference an Event may be about (its four fields), or None when ``owner`` cannot own a
    pod (see the module docstring)."""
    if not owner:
        return None
    values = [owner.get(k) for k in REF_FIELDS]
    if not all(isinstance(v, str) and v for v in values):
        return None
    api_version, kind, name, uid = (str(v) for v in values)
    group, _, version = api_version.rpartition("/")
    if not is_dns_label(version) or (group and not is_dns_subdomain(group)):
        return None
    if not _KIND.fullmatch(kind) or not is_dns_subdomain(name) or len(uid) > 128:
        return None
    if not group and kind not in CORE_OWNER_KINDS:
        return None
    return dict(zip(REF_FIELDS, (api_version, kind, name, uid), strict=True))


class AuditSink(Protocol):
    """Receives one audit plan per admitted pod that has an owner."""

    def emit(self, namespace: str, owner: Mapping[str, Any], message: str) -> None:
        """Record ``message`` on ``owner`` (an ownerReference) in ``namespace``; never raises."""
        ...


def event_body(namespace: str, owner: Mapping[str, Any], message: str, now: datetime.datetime) -> dict[str, Any]:
    """A core/v1 Event about ``owner``; the name is unique per owner and timestamp."""
    involved = {**{k: owner.get(k) for k in REF_FIELDS}, "namespace": namespace}
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
        """See :class:`AuditSink`; nothing is posted for a namespace that is not a DNS label or an
        owner :func:`postable_owner` refuses (one WARNING, counted as a failure)."""
        ref = postable_owner(owner)
        if ref is None or not is_dns_label(namespace):
            logger.warning("audit event in %.80r: refused (not a namespace, or not a pod's owner)", namespace)
            self._on_result(False)
            return
        body = event_body(namespace, ref, message, datetime.datetime.now(datetime.UTC))
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
