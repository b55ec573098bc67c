"""The pure decision step (bridge/decide.py) over tables of observations: one row per interlock
and per decision, no sockets, no clock."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from dra_bridge.bridge.decide import decide
from dra_bridge.bridge.interlocks import INTERLOCKS
from dra_bridge.bridge.observation import Memory, Observation
from dra_bridge.bridge.owner_record import Instance
from dra_bridge.bridge.state import Inventory
from dra_bridge.translate.inventory.allocatable import DeviceId, InventoryDevice
from dra_bridge.translate.inventory.device_facts import NvmlFacts

ROOT = Path(__file__).resolve().parents[2]


def dev(resource: str, device_id: str) -> InventoryDevice:
    return InventoryDevice(resourceName=resource, deviceID=device_id, numaNodes=[0])


NV = dev("nvidia.com/gpu", "GPU-aaaa")
NV2 = dev("nvidia.com/gpu", "GPU-bbbb")
AMD = dev("amd.com/gpu", "0000:03:00.0")
INTEL = dev("gpu.intel.com/i915", "card0-0")
NVML: dict[str, NvmlFacts] = {
    "GPU-aaaa": {"pciBusID": "00000000:65:00.0"},
    "GPU-bbbb": {"pciBusID": "00000000:17:00.0"},
}
RECORDED = Inventory("n", (NV, NV2, AMD), nvml=NVML)
CLEAR = Observation(now=1000, recorded=RECORDED, settle_seconds=30)
UNREADABLE = replace(CLEAR, checkpoint_readable=False, checkpoint_error="not a checkpoint.dra-bridge.io/v1 checkpoint")
SETTLED = Memory(clear_since=900, publishing=True, decided=True)
RESUMED = replace(CLEAR, publishing_since=1_700_000_000.0)  # wall time, from the publishing record
PUBLISHED = frozenset(DeviceId.of(d) for d in RECORDED.devices)


def other_slice(driver: str, **attrs: str) -> dict[str, Any]:
    return {
        "driver": driver,
        "devices": [{"name": "d0", "attributes": {k.replace("__", "/"): {"string": v} for k, v in attrs.items()}}],
    }


REFUSALS = [
    ("inventory", replace(CLEAR, recorded=Inventory())),
    ("checkpoint", UNREADABLE),
    ("plugin-socket", replace(CLEAR, plugin_sockets=frozenset({"nvidia-gpu.sock"}))),
    (
        "plugin-socket",
        replace(CLEAR, plugin_sockets=frozenset({"amd.com_gpu"}), catalogued_sockets={"amd.com/gpu": "amd.com_gpu"}),
    ),
    ("node-capacity", replace(CLEAR, node_capacity={"nvidia.com/gpu": "2"})),
    ("node-capacity", replace(CLEAR, node_allocatable={"amd.com/gpu": "1"})),
    ("kubelet-offers", replace(CLEAR, offered=(NV,))),
    ("kubelet-offers", replace(CLEAR, offered=(dev("nvidia.com/gpu", "1"),))),  # index IDs
    ("devices-held", replace(CLEAR, held={"GPU-aaaa": ["ns/pod/c"]})),
    ("devices-held", replace(CLEAR, offered=None)),
    ("devices-held", replace(CLEAR, held=None)),
    ("other-driver", replace(CLEAR, other_slices=(other_slice("gpu.nvidia.com", uuid="GPU-aaaa"),))),
    ("other-driver", replace(CLEAR, other_slices=(other_slice("gpu.amd.com", pciAddr="0000:03:00.0"),))),
    (
        "other-driver",
        replace(CLEAR, other_slices=(other_slice("gpu.intel.com", resource__kubernetes__io__pciBusID="0000:65:00.0"),)),
    ),
    ("other-driver", replace(CLEAR, other_slices=None, slices_error="connection refused")),
]


@pytest.mark.parametrize(("interlock", "obs"), REFUSALS, ids=[f"{i}-{n}" for n, (i, _) in enumerate(REFUSALS)])
def test_each_interlock_refuses_and_withdraws(interlock: str, obs: Observation) -> None:
    decision = decide(obs, Memory())
    assert decision.action == "withdraw" and not decision.publish
    assert interlock in [r.interlock for r in decision.refusals]
    assert decision.memory.clear_since is None
    assert decision.gate.decided and not decision.gate.publishing and interlock in decision.gate.reason


def test_every_interlock_has_a_row() -> None:
    assert {i for i, _ in REFUSALS} | {"settle"} == set(INTERLOCKS)


DECISIONS = [
    # (row, observation, memory, action, publishing, gate open)
    ("first-clear-tick-settles", CLEAR, Memory(), "withdraw", False, False),
    ("settling", replace(CLEAR, now=1029), Memory(1000, False, True), "withdraw", False, False),
    ("settled-publishes", replace(CLEAR, now=1030), Memory(1000, False, True), "publish", True, True),
    ("publishing-stays", CLEAR, SETTLED, "publish", True, True),
    ("kubelet-blip-keeps", replace(CLEAR, offered=None), SETTLED, "keep", True, True),
    ("slice-list-blip-keeps", replace(CLEAR, other_slices=None), SETTLED, "keep", True, True),
    ("blip-while-settling-withdraws", replace(CLEAR, offered=None), Memory(990, False, True), "withdraw", False, False),
    ("legacy-withdraws", replace(CLEAR, mode="legacy"), SETTLED, "withdraw", False, False),
    ("unreadable-node-keeps", replace(CLEAR, mode=None), SETTLED, "keep", True, True),
    ("unreadable-checkpoint-withdraws", UNREADABLE, SETTLED, "withdraw", False, False),
    # a restart with a publishing record for this inventory (docs/design.md D43)
    ("restart-resumes-at-once", RESUMED, Memory(), "publish", True, True),
    ("restart-blip-keeps", replace(RESUMED, offered=None), Memory(), "keep", True, True),
    ("restart-unreadable-node-keeps", replace(RESUMED, mode=None), Memory(), "keep", True, False),
    (
        "restart-refused-withdraws",
        replace(RESUMED, node_capacity={"nvidia.com/gpu": "2"}),
        Memory(),
        "withdraw",
        False,
        False,
    ),
    ("restart-legacy-withdraws", replace(RESUMED, mode="legacy"), Memory(), "withdraw", False, False),
    ("record-counts-only-at-start", RESUMED, Memory(990, False, True), "withdraw", False, False),
]


@pytest.mark.parametrize(
    ("obs", "memory", "action", "publishing", "gate"), [r[1:] for r in DECISIONS], ids=[r[0] for r in DECISIONS]
)
def test_decisions(obs: Observation, memory: Memory, action: str, publishing: bool, gate: bool) -> None:
    decision = decide(obs, memory)
    assert (decision.action, decision.publish, decision.gate.publishing) == (action, publishing, gate)
    assert decision.gate.decided or obs.mode is None


def test_a_resumed_publication_says_so_and_remembers_the_settle_period_as_passed() -> None:
    decision = decide(RESUMED, Memory())
    assert decision.resumed and decision.memory == Memory(RESUMED.now - RESUMED.settle_seconds, True, True)
    assert not decide(CLEAR, Memory()).resumed


ME = Instance(2000.0, "pod-b")
OWNERSHIP = [
    # (row, the owner record, action, take over)
    ("no-record-takes-over", None, "publish", True),
    ("older-owner-taken-over", Instance(1000.0, "pod-a"), "publish", True),
    ("own-record-owns", ME, "publish", False),
    ("own-pods-earlier-container-taken-over", Instance(1500.0, "pod-b"), "publish", True),
    ("newer-owner-stands-by", Instance(3000.0, "pod-c"), "standby", False),
    ("same-start-greater-uid-stands-by", Instance(2000.0, "pod-c"), "standby", False),
]


@pytest.mark.parametrize(("record", "action", "take_over"), [r[1:] for r in OWNERSHIP], ids=[r[0] for r in OWNERSHIP])
def test_one_publisher_in_a_surge_rollout(record: Instance | None, action: str, take_over: bool) -> None:
    decision = decide(replace(CLEAR, instance=ME, owner=record), SETTLED)
    assert (decision.action, decision.take_over) == (action, take_over)
    assert decision.publish == (action == "publish")
    assert decision.gate.publishing  # standing by, it still answers Prepare as it decided


def test_a_standby_instance_still_withdraws_nothing_and_a_single_instance_has_no_owner_rule() -> None:
    refused = replace(CLEAR, node_capacity={"nvidia.com/gpu": "2"}, instance=ME, owner=Instance(3000.0, "pod-c"))
    assert decide(refused, SETTLED).action == "standby"
    assert decide(replace(CLEAR, owner=Instance(3000.0, "pod-c")), SETTLED).action == "publish"


def test_a_blip_keeps_the_settle_period_running() -> None:
    kept = decide(replace(CLEAR, offered=None), SETTLED)
    assert kept.memory.clear_since == 900
    assert decide(CLEAR, kept.memory).action == "publish"


def test_before_the_first_decision_prepare_gets_a_retryable_answer() -> None:
    decision = decide(replace(CLEAR, mode=None), Memory())
    assert not decision.gate.decided and "not decided yet" in decision.gate.reason
    assert not decision.reported


ALARMS = [
    # (row, observation, the device the alarm names)
    ("plugin-back", replace(CLEAR, offered=(NV,), published=PUBLISHED), "GPU-aaaa"),
    ("plugin-back-index-ids", replace(CLEAR, offered=(dev("nvidia.com/gpu", "0"),), published=PUBLISHED), "GPU-bbbb"),
    ("plugin-back-amd", replace(CLEAR, offered=(AMD,), prepared=frozenset({DeviceId.of(AMD)})), "0000:03:00.0"),
    (
        "legacy-container",
        replace(CLEAR, held={"GPU-aaaa": ["ns/p/c"]}, prepared=frozenset({DeviceId.of(NV)})),
        "GPU-aaaa",
    ),
    (
        "amd-dra-driver",
        replace(CLEAR, other_slices=(other_slice("gpu.amd.com", pciAddr="0000:03:00.0"),), published=PUBLISHED),
        "0000:03:00.0",
    ),
    (
        "nvidia-dra-driver-by-pci",
        replace(
            CLEAR,
            other_slices=(other_slice("gpu.nvidia.com", resource__kubernetes__io__pciBusID="0000:17:00.0"),),
            prepared=frozenset({DeviceId.of(NV2)}),
        ),
        "GPU-bbbb",
    ),
    # an unreadable checkpoint: every recorded device counts as held (unknown is not zero)
    ("unreadable-checkpoint-offered", replace(UNREADABLE, mode="legacy", offered=(NV2,)), "GPU-bbbb"),
    (
        "unreadable-checkpoint-held",
        replace(UNREADABLE, mode="legacy", held={"0000:03:00.0": ["ns/p/c"]}),
        "0000:03:00.0",
    ),
    (
        "legacy-rollback",
        replace(CLEAR, mode="legacy", offered=(NV,), prepared=frozenset({DeviceId.of(NV)})),
        "GPU-aaaa",
    ),
]


@pytest.mark.parametrize(("obs", "device"), [r[1:] for r in ALARMS], ids=[r[0] for r in ALARMS])
def test_the_alarm_fires_for_every_vendor_and_identity(obs: Observation, device: str) -> None:
    decision = decide(obs, SETTLED)
    assert decision.alarm is not None and device in decision.alarm
    assert {d.device_id for d in decision.alarmed} == {device}


def test_offered_devices_nobody_publishes_or_holds_are_no_alarm() -> None:
    assert decide(replace(CLEAR, offered=(NV,)), Memory()).alarm is None


def test_numbered_ids_of_another_vendors_plugin_are_not_nvidia_index_ids() -> None:
    obs = replace(CLEAR, offered=(dev("example.com/fpga", "0"),), held={"1": ["ns/p/c"]}, published=PUBLISHED)
    decision = decide(obs, SETTLED)
    assert decision.action == "publish" and decision.alarm is None


def test_index_ids_without_recorded_bus_ids_map_to_every_nvidia_device() -> None:
    recorded = Inventory("n", (NV, NV2, AMD))
    obs = replace(CLEAR, recorded=recorded, offered=(dev("nvidia.com/gpu", "0"),), published=PUBLISHED)
    assert {d.device_id for d in decide(obs, SETTLED).alarmed} == {"GPU-aaaa", "GPU-bbbb"}


def test_docs_interlock_table_is_the_interlock_table() -> None:
    text = (ROOT / "docs" / "bridge.md").read_text("utf-8")
    table = text[text.index("| interlock | holds when |") :].split("\n\n", 1)[0]
    names = [line.split("|")[1].strip().strip("`") for line in table.splitlines()[2:]]
    assert names == list(INTERLOCKS)
