"""The ``DRABridgePreparedClaims`` Node condition, pure: what it says and when it is written.

    condition_update(current, count, unreadable, now)   -> the condition to write, or None

What it says (docs/bridge.md "The prepared-claim condition"; docs/design.md D29):

| checkpoint | status | reason | message |
|---|---|---|---|
| read, claims prepared | ``True`` | ``ClaimsPrepared`` | ``N prepared claim(s) on this node`` |
| read, none | ``False`` | ``NoPreparedClaims`` | ``0 prepared claim(s) on this node`` |
| unreadable (``count`` None) | ``Unknown`` | ``CheckpointUnreadable`` | why, and no number |

An unknown count is not zero: the operator's gate ("status False and 0") never opens on it.

When it is written: when status, reason or message differ from the Node's, or when the Node's
``lastHeartbeatTime`` is :data:`HEARTBEAT_INTERVAL` old (or missing), never on every poll (5,000
nodes polling every 30 s would be 170 Node writes a second). ``lastTransitionTime`` moves only
when the status changes. A heartbeat older than :data:`STALE_AFTER` means the agent is not
writing (stopped, or the API server refuses it): the condition is then not current.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

CONDITION_TYPE = "DRABridgePreparedClaims"
HEARTBEAT_INTERVAL = 300.0
"""Seconds after which an unchanged condition is written again (its heartbeat)."""
STALE_AFTER = 900.0
"""Seconds after which an operator treats the heartbeat as stale: three heartbeats missed."""
UNREADABLE = "CheckpointUnreadable"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def _stamp(now: float) -> str:
    return datetime.datetime.fromtimestamp(now, datetime.UTC).strftime(TIME_FORMAT)


def _parse(stamp: object) -> float | None:
    try:
        return datetime.datetime.strptime(str(stamp), TIME_FORMAT).replace(tzinfo=datetime.UTC).timestamp()
    except ValueError:
        return None


def desired(count: int | None, unreadable: str = "") -> dict[str, str]:
    """Status, reason and message for ``count`` prepared claims; None: the checkpoint is
    unreadable (``unreadable`` says why)."""
    if count is None:
        return {
            "status": "Unknown",
            "reason": UNREADABLE,
            "message": "the prepared-claim checkpoint is unreadable, so every recorded device counts as "
            f"held: {unreadable or 'unknown error'}",
        }
    return {
        "status": "True" if count else "False",
        "reason": "ClaimsPrepared" if count else "NoPreparedClaims",
        "message": f"{count} prepared claim(s) on this node",
    }


def find(conditions: object) -> Mapping[str, Any] | None:
    """Our condition among a Node's ``status.conditions``, if there."""
    for c in conditions if isinstance(conditions, list) else []:
        if isinstance(c, dict) and c.get("type") == CONDITION_TYPE:
            return c
    return None


def condition_update(
    current: Mapping[str, Any] | None,
    count: int | None,
    unreadable: str,
    now: float,
    heartbeat: float = HEARTBEAT_INTERVAL,
) -> dict[str, str] | None:
    """The condition to write over ``current`` (the Node's, None when absent) at wall time ``now``,
    or None when the Node's is current (see the module docstring)."""
    want = desired(count, unreadable)
    stamp = _stamp(now)
    if current is not None and all(current.get(k) == v for k, v in want.items()):
        beat = _parse(current.get("lastHeartbeatTime"))
        if beat is not None and now - beat < heartbeat:
            return None
    same_status = current is not None and current.get("status") == want["status"]
    transition = str(current.get("lastTransitionTime", "")) if current is not None and same_status else ""
    return {
        "type": CONDITION_TYPE,
        **want,
        "lastHeartbeatTime": stamp,
        "lastTransitionTime": transition if _parse(transition) is not None else stamp,
    }
