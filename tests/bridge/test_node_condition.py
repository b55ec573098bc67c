"""The DRABridgePreparedClaims condition (bridge/node_condition.py) over a table: what it says for
a count or an unreadable checkpoint, and when it is written (on change, or a 5-minute heartbeat)."""

from __future__ import annotations

from typing import Any

import pytest

from dra_bridge.bridge.node_condition import CONDITION_TYPE, HEARTBEAT_INTERVAL, condition_update, find

T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z
STAMP0 = "2023-11-14T22:13:20Z"


def current(status: str, reason: str, message: str, beat: str = STAMP0, moved: str = STAMP0) -> dict[str, Any]:
    return {
        "type": CONDITION_TYPE,
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": beat,
        "lastTransitionTime": moved,
    }


ZERO = current("False", "NoPreparedClaims", "0 prepared claim(s) on this node")


@pytest.mark.parametrize(
    ("count", "status", "reason", "message"),
    [
        (0, "False", "NoPreparedClaims", "0 prepared claim(s) on this node"),
        (3, "True", "ClaimsPrepared", "3 prepared claim(s) on this node"),
    ],
)
def test_what_a_count_says(count: int, status: str, reason: str, message: str) -> None:
    written = condition_update(None, count, "", T0)
    assert written == current(status, reason, message)


def test_an_unreadable_checkpoint_is_unknown_without_a_number() -> None:
    written = condition_update(ZERO, None, "not a checkpoint.dra-bridge.io/v1 checkpoint", T0 + 30)
    assert written is not None
    assert (written["status"], written["reason"]) == ("Unknown", "CheckpointUnreadable")
    assert "prepared claim(s)" not in written["message"] and "checkpoint.dra-bridge.io/v1" in written["message"]
    assert written["lastTransitionTime"] == "2023-11-14T22:13:50Z", "the status changed"


@pytest.mark.parametrize(
    ("node", "count", "age", "write", "transition"),
    [
        (None, 0, 0.0, True, "now"),  # no condition yet
        (ZERO, 0, 30.0, False, None),  # unchanged, fresh heartbeat: no Node write on a poll
        (ZERO, 0, HEARTBEAT_INTERVAL - 1, False, None),
        (ZERO, 0, HEARTBEAT_INTERVAL, True, "kept"),  # the heartbeat: same status, transition kept
        (ZERO, 2, 30.0, True, "now"),  # the count changed the status
        (current("True", "ClaimsPrepared", "1 prepared claim(s) on this node"), 2, 30.0, True, "kept"),
        (current("False", "NoPreparedClaims", "0 prepared claim(s) on this node", beat="garbage"), 0, 30.0, True,
         "kept"),
    ],
    ids=["absent", "fresh", "almost-stale", "heartbeat", "status-changed", "message-changed", "bad-heartbeat"],
)  # fmt: skip
def test_when_it_is_written(
    node: dict[str, Any] | None, count: int, age: float, write: bool, transition: str | None
) -> None:
    written = condition_update(node, count, "", T0 + age)
    if not write:
        assert written is None
        return
    assert written is not None
    assert written["lastHeartbeatTime"] != STAMP0 or age == 0
    expected = STAMP0 if transition == "kept" else written["lastHeartbeatTime"]
    assert written["lastTransitionTime"] == expected


def test_find_picks_ours() -> None:
    other = {"type": "Ready", "status": "True"}
    assert find([other, ZERO]) == ZERO and find([other]) is None and find(None) is None
