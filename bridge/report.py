"""The report step of a tick: Events on the Node, the ``DRABridgePreparedClaims`` condition,
metrics and readiness detail, from a :class:`bridge.decide.Decision`.

Each is written only when what it says changes: an Event when the set of refusals changes
(``PublicationRefused``, ``PublicationStarted``), for a new alarm text (``DeviceOfferedAgain``)
and for a new set of devices that cannot be prepared (``DevicesNotPublished``); the condition as
:mod:`bridge.node_condition` rules (on change, and as a 5-minute heartbeat; Unknown while the
checkpoint is unreadable). Whether the checkpoint is readable goes to readiness (``/readyz``
fails with the reason, never ``/healthz``) and to ``dra_bridge_checkpoint_readable``. Events are
queued during the tick and posted at its end (:meth:`flush`).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from typing import Any

from dra_bridge.bridge.decide import Decision
from dra_bridge.bridge.health import Health, Metrics
from dra_bridge.bridge.interlocks import INTERLOCKS
from dra_bridge.bridge.node_condition import CONDITION_TYPE, condition_update, find
from dra_bridge.kube.api import KubeApi
from dra_bridge.kube.errors import KubeError
from dra_bridge.kube.events import event, post_event
from dra_bridge.kube.resources import NODES

logger = logging.getLogger(__name__)

__all__ = ["COMPONENT", "CONDITION_TYPE", "EVENT_NAMESPACE", "Reporter"]
EVENT_NAMESPACE = "default"
COMPONENT = "dra-bridge"


class Reporter:
    """What the agent tells the cluster and its probes (see the module docstring)."""

    def __init__(self, api: KubeApi, node_name: str, metrics: Metrics, health: Health, wall: Callable[[], float]):
        self.api, self.node_name, self.metrics, self.health, self.wall = api, node_name, metrics, health, wall
        self.node_uid = ""
        self.node_writes = 0
        self.heartbeats = 0  # of node_writes: condition writes that only refreshed lastHeartbeatTime
        self._refused: tuple[str, ...] = ()
        self._alarm: str | None = None
        self._withheld: list[str] = []
        self._pending: list[tuple[str, str, str]] = []

    def event(self, kind: str, reason: str, message: str) -> None:
        """Queue an Event on the Node (posted by :meth:`flush`)."""
        self._pending.append((kind, reason, message[:1000]))

    def decision(self, decision: Decision, devices: int) -> None:
        """Report the refusals (log, Event on change, gauge, readiness) and the alarm."""
        refused = tuple(r.interlock for r in decision.refusals)
        for name in INTERLOCKS:
            self.metrics.refused.labels(interlock=name).set(1 if name in refused else 0)
        self.health.interlocks = {r.interlock: r.reason for r in decision.refusals}
        if refused != self._refused:
            if refused:
                text = "; ".join(f"{r.interlock}: {r.reason}" for r in decision.refusals)
                logger.warning("not publishing: %s", text)
                self.event("Normal" if refused == ("settle",) else "Warning", "PublicationRefused", text)
            else:
                logger.info("every interlock holds: publishing the recorded inventory")
                self.event("Normal", "PublicationStarted", f"publishing {devices} device(s)")
            self._refused = refused
        self.alarm(decision.alarm)

    def alarm(self, text: str | None) -> None:
        """The alarm (log ERROR, ``dra_bridge_alarms_total``, Warning Event), once per new text."""
        if text and text != self._alarm:
            logger.error("ALARM: %s", text)
            self.metrics.alarms.inc()
            self.event("Warning", "DeviceOfferedAgain", text)
        self._alarm = text

    def withheld(self, withheld: list[str]) -> None:
        """Devices left out of the slices because nobody could prepare them (once per new set)."""
        if withheld != self._withheld and withheld:
            self.event("Warning", "DevicesNotPublished", "; ".join(withheld))
        self._withheld = withheld

    def legacy(self) -> None:
        """Legacy mode: no refusals to report, none remembered."""
        self._refused = ()
        self.health.interlocks = {}
        for name in INTERLOCKS:
            self.metrics.refused.labels(interlock=name).set(0)

    async def flush(self) -> None:
        """Post the queued Events; a failure is logged, never raised."""
        events, self._pending = self._pending, []
        now = datetime.datetime.fromtimestamp(self.wall(), datetime.UTC)
        node = {"apiVersion": "v1", "kind": "Node", "name": self.node_name, "uid": self.node_uid}
        for kind, reason, message in events:
            body = event(
                node,
                reason=reason,
                message=message,
                component=COMPONENT,
                namespace=EVENT_NAMESPACE,
                type=kind,
                now=now,
                generate_name=f"{self.node_name}.dra-bridge.",
            )
            try:
                await post_event(self.api, body)
                self.node_writes += 1
            except KubeError as exc:
                logger.warning("cannot create Event %s: %s", reason, exc)

    def checkpoint(self, count: int | None, unreadable: str) -> None:
        """The checkpoint's state: readiness (``unreadable``, why; empty while readable), the
        readable gauge, and the prepared-claim gauge while the count is known."""
        self.health.checkpoint = unreadable
        self.metrics.checkpoint_readable.set(0 if unreadable else 1)
        if count is not None:
            self.metrics.prepared.set(count)

    async def condition(self, node: dict[str, Any], count: int | None, unreadable: str = "") -> None:
        """Set the prepared-claim condition on the Node when :func:`bridge.node_condition.condition_update`
        says so (``count`` None: the checkpoint is unreadable, ``unreadable`` says why)."""
        current = find(node.get("status", {}).get("conditions"))
        condition = condition_update(current, count, unreadable, self.wall())
        if condition is None:
            return
        try:
            await self.api.patch_status(NODES, self.node_name, {"status": {"conditions": [condition]}})
            self.node_writes += 1
            if current is not None and all(current.get(k) == condition[k] for k in ("status", "reason", "message")):
                self.heartbeats += 1
        except KubeError as exc:
            logger.warning("cannot set the %s condition: %s", CONDITION_TYPE, exc)
