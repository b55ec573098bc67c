"""Health that withdraws: the taint rule's timing, taint support judged from the returned object,
tainted devices left out where the field is dropped, and 64 devices per slice with a taint."""

from __future__ import annotations

from typing import Any

from dra_bridge.translate.inventory.device_taints import (
    TAINT_KEY,
    TaintState,
    max_devices,
    step,
    taints_dropped,
    with_taints,
)
from dra_bridge.translate.inventory.pool import internal_form, pool_slices, render_slice


def test_a_device_is_tainted_after_60s_unhealthy_and_cleared_after_300s_healthy() -> None:
    states: dict[str, TaintState] = {}
    states, changes = step(states, {"gpu-0": True, "gpu-1": False}, 0.0, "t0")
    assert changes == []
    states, changes = step(states, {"gpu-0": True, "gpu-1": False}, 59.0, "t59")
    assert changes == [] and not states["gpu-0"].tainted
    states, changes = step(states, {"gpu-0": True, "gpu-1": False}, 60.0, "t60")
    assert changes == [("gpu-0", "tainted")] and states["gpu-0"].time_added == "t60"
    states, changes = step(states, {"gpu-0": False, "gpu-1": False}, 100.0, "t100")  # healthy again
    assert changes == [] and states["gpu-0"].tainted
    states, changes = step(states, {"gpu-0": True, "gpu-1": False}, 150.0, "t150")  # a blip resets the clock
    states, changes = step(states, {"gpu-0": False, "gpu-1": False}, 160.0, "t160")
    states, changes = step(states, {"gpu-0": False, "gpu-1": False}, 459.0, "t459")
    assert changes == [] and states["gpu-0"].tainted and states["gpu-0"].time_added == "t60"
    states, changes = step(states, {"gpu-0": False, "gpu-1": False}, 460.0, "t460")
    assert changes == [("gpu-0", "cleared")] and not states["gpu-0"].tainted


def test_settings_change_the_delays() -> None:
    states, changes = step({}, {"gpu-0": True}, 0.0, "t0", taint_after=0)
    assert changes == [("gpu-0", "tainted")]
    states, changes = step(states, {"gpu-0": False}, 1.0, "t1", clear_after=1)
    states, changes = step(states, {"gpu-0": False}, 2.0, "t2", clear_after=1)
    assert changes == [("gpu-0", "cleared")]


DEVICES: list[dict[str, Any]] = [{"name": f"gpu-{i}", "attributes": {}, "capacity": {}} for i in range(3)]
TAINTED = {"gpu-1": TaintState(True, 0.0, True, "2026-12-02T00:00:00Z")}


def test_tainted_devices_carry_the_taint_or_are_left_out_where_the_field_is_dropped() -> None:
    out = with_taints(DEVICES, TAINTED, supported=True)
    assert out[1]["taints"] == [{"key": TAINT_KEY, "effect": "NoSchedule", "timeAdded": "2026-12-02T00:00:00Z"}]
    assert "taints" not in out[0] and max_devices(out) == 64
    left = with_taints(DEVICES, TAINTED, supported=False)
    assert [d["name"] for d in left] == ["gpu-0", "gpu-2"] and max_devices(left) == 128


def test_support_is_judged_from_the_returned_object_in_every_version() -> None:
    sent = {"spec": {"devices": [{"name": "gpu-1", "taints": [{"key": TAINT_KEY, "effect": "NoSchedule"}]}]}}
    assert taints_dropped(sent, {"spec": {"devices": [{"name": "gpu-1"}]}})
    assert not taints_dropped(sent, sent)
    beta1 = {"spec": {"devices": [{"name": "gpu-1", "basic": {"taints": [{"key": TAINT_KEY}]}}]}}
    assert not taints_dropped(beta1, beta1)
    assert taints_dropped(beta1, {"spec": {"devices": [{"name": "gpu-1", "basic": {}}]}})
    assert not taints_dropped({"spec": {"devices": [{"name": "gpu-0"}]}}, {"spec": {"devices": [{"name": "gpu-0"}]}})


def test_a_pool_with_a_tainted_device_splits_at_64_and_keeps_the_taint_in_every_version() -> None:
    many: list[dict[str, Any]] = [{"name": f"gpu-{i}", "attributes": {}, "capacity": {}} for i in range(100)]
    tainted = with_taints(many, {"gpu-7": TaintState(True, 0.0, True, "t")}, supported=True)
    slices = pool_slices("node-a", "dra-bridge.io", tainted, 0, max_devices(tainted))  # type: ignore[arg-type]
    assert [len(s["spec"]["devices"]) for s in slices] == [64, 36]
    assert len(pool_slices("node-a", "dra-bridge.io", many, 0, max_devices(many))) == 1  # type: ignore[arg-type]
    beta1 = render_slice(slices[0], "resource.k8s.io/v1beta1")
    assert beta1["spec"]["devices"][7]["basic"]["taints"][0]["key"] == TAINT_KEY
    assert internal_form(beta1)["spec"]["devices"][7]["taints"] == slices[0]["spec"]["devices"][7]["taints"]
