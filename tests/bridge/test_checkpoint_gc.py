"""The checkpoint collection rule (bridge/kubeletplugin/checkpoint_gc.py) over tables of observations: an entry
is collected only when its claim has been gone for the grace period and no container uses it."""

from __future__ import annotations

from typing import Any

import pytest

from dra_bridge.bridge.kubeletplugin.checkpoint_gc import (
    Entry,
    Seen,
    Usage,
    claim_seen,
    collect,
    pod_resources_usage,
    to_check,
)

GRACE = 600.0
DRIVER = "dra-bridge.io"
ENTRY = Entry("uid-1", "ns", "c", frozenset({(DRIVER, "node-1", "gpu-1")}), frozenset({"GPU-1"}))
NOBODY = Usage()


@pytest.mark.parametrize(
    ("seen", "usage", "gone_since", "now", "collected", "clock"),
    [
        ("gone", NOBODY, {}, 1000.0, False, 1000.0),  # first seen gone: the clock starts
        ("gone", NOBODY, {"uid-1": 1000.0}, 1599.0, False, 1000.0),  # within the grace period
        ("gone", NOBODY, {"uid-1": 1000.0}, 1600.0, True, 1000.0),  # gone for the grace period
        ("present", NOBODY, {"uid-1": 1000.0}, 1600.0, False, None),  # back (or a blip): clock reset
        ("unknown", NOBODY, {"uid-1": 1000.0}, 1600.0, False, 1000.0),  # unanswered read: no news
        ("unknown", NOBODY, {}, 1600.0, False, None),
        ("gone", None, {"uid-1": 1000.0}, 1600.0, False, 1000.0),  # PodResources did not answer
        ("gone", Usage(claims=frozenset({("ns", "c")})), {"uid-1": 1000.0}, 1600.0, False, 1000.0),
        ("gone", Usage(devices=frozenset({(DRIVER, "node-1", "gpu-1")})), {"uid-1": 1000.0}, 1600.0, False, 1000.0),
        ("gone", Usage(device_ids=frozenset({"GPU-1"})), {"uid-1": 1000.0}, 1600.0, False, 1000.0),
        ("unknown", Usage(device_ids=frozenset({"GPU-1"})), {"uid-1": 1000.0}, 1600.0, False, 1000.0),  # not read
        ("gone", Usage(devices=frozenset({(DRIVER, "node-1", "gpu-2")})), {"uid-1": 1000.0}, 1600.0, True, 1000.0),
    ],
    ids=["first-gone", "in-grace", "past-grace", "present-again", "read-failed", "read-failed-no-clock",
         "no-podresources", "claim-in-use", "dra-device-in-use", "legacy-container-holds-it", "in-use-not-read",
         "other-device-in-use"],
)  # fmt: skip
def test_collection_rule(
    seen: Seen, usage: Usage | None, gone_since: dict[str, float], now: float, collected: bool, clock: float | None
) -> None:
    decision = collect([ENTRY], {"uid-1": seen}, usage, gone_since, now, GRACE)
    assert decision.collect == (("uid-1",) if collected else ())
    assert decision.gone_since.get("uid-1") == clock


def test_an_entry_not_read_is_unknown_and_a_removed_entry_is_forgotten() -> None:
    decision = collect([ENTRY], {}, NOBODY, {"uid-1": 1.0, "uid-gone": 1.0}, 1e6, GRACE)
    assert decision.collect == () and decision.gone_since == {"uid-1": 1.0}


@pytest.mark.parametrize(
    ("claim", "seen"),
    [
        (None, "gone"),
        ({"metadata": {"uid": "uid-1"}}, "present"),
        ({"metadata": {"uid": "uid-9"}}, "gone"),  # a new claim under the same name
        ({"metadata": {"uid": "uid-1", "deletionTimestamp": "2026-01-01T00:00:00Z"}}, "present"),
    ],
    ids=["not-found", "same-uid", "other-uid", "deleting"],
)
def test_claim_seen(claim: dict[str, Any] | None, seen: Seen) -> None:
    assert claim_seen(claim, "uid-1") == seen


def test_only_claims_no_container_uses_are_read_and_none_without_podresources() -> None:
    used = Entry("uid-2", "ns", "d", frozenset({(DRIVER, "node-1", "gpu-2")}))
    usage = Usage(devices=frozenset({(DRIVER, "node-1", "gpu-2")}))
    assert to_check([ENTRY, used], usage) == [ENTRY]
    assert to_check([ENTRY, used], None) == []


def test_usage_from_the_list_answer() -> None:
    listed = {
        "podResources": [
            {
                "name": "p",
                "namespace": "ns",
                "containers": [
                    {
                        "name": "main",
                        "devices": [{"resourceName": "nvidia.com/gpu", "deviceIds": ["GPU-7"]}],
                        "dynamicResources": [
                            {
                                "claimName": "c",
                                "claimNamespace": "ns",
                                "claimResources": [{"driverName": DRIVER, "poolName": "node-1", "deviceName": "gpu-1"}],
                            }
                        ],
                    },
                    {"name": "sidecar"},
                ],
            }
        ]
    }
    assert pod_resources_usage(listed) == Usage(
        frozenset({("ns", "c")}), frozenset({(DRIVER, "node-1", "gpu-1")}), frozenset({"GPU-7"})
    )
    assert pod_resources_usage({}) == NOBODY
