"""The device health rule (bridge/kubeletplugin/device_health.py), the per-device alarm (bridge/interlocks.py)
and NVML's UUID lookup (bridge/nvml.py, against a fake pynvml module)."""

from __future__ import annotations

import sys
import types

import pytest

from dra_bridge.bridge.interlocks import alarm, alarmed_devices
from dra_bridge.bridge.kubeletplugin.device_health import (
    HEALTHY,
    UNHEALTHY,
    UNKNOWN,
    HealthFacts,
    assess,
    health_of,
    nvml_uuids,
)
from dra_bridge.bridge.nvml import check_uuids
from dra_bridge.bridge.observation import Observation
from dra_bridge.bridge.state import Inventory
from dra_bridge.translate.inventory.allocatable import DeviceId, InventoryDevice

GPU, MIG, AMD = "GPU-aaaa", "MIG-cccc", "0000:03:00.0"
TOOLKIT = {f"nvidia.com/gpu={GPU}": True}


@pytest.mark.parametrize(
    ("resource", "device_id", "facts", "health", "words"),
    [
        ("nvidia.com/gpu", GPU, HealthFacts({GPU: ""}, {}, TOOLKIT), HEALTHY, "NVML finds"),
        ("nvidia.com/gpu.shared", f"{GPU}::1", HealthFacts({GPU: ""}), HEALTHY, "NVML finds"),
        ("nvidia.com/mig-1g.5gb", MIG, HealthFacts({MIG: ""}), HEALTHY, "NVML finds"),
        ("nvidia.com/gpu", GPU, HealthFacts({GPU: "GPU is lost"}, {}, TOOLKIT), UNHEALTHY, "NVML: GPU is lost"),
        ("nvidia.com/gpu", GPU, HealthFacts(None, {}, TOOLKIT), UNKNOWN, "NVML is not loadable"),
        (
            "nvidia.com/gpu",
            GPU,
            HealthFacts({GPU: ""}, {}, {f"nvidia.com/gpu={GPU}": False}),
            UNHEALTHY,
            f"nvidia.com/gpu={GPU} no longer resolves",
        ),
        (
            "nvidia.com/gpu",
            GPU,
            HealthFacts(None, {}, {f"nvidia.com/gpu={GPU}": False}),
            UNHEALTHY,
            "no longer resolves",
        ),
        (
            "nvidia.com/gpu",
            GPU,
            HealthFacts({GPU: ""}, {GPU: "assigned to legacy container(s) ns/p/c"}),
            UNHEALTHY,
            "hand-over alarm: assigned to legacy container(s) ns/p/c",
        ),
        ("amd.com/gpu", AMD, HealthFacts({GPU: ""}), UNKNOWN, "no health source for amd.com/gpu"),
        ("amd.com/gpu", AMD, HealthFacts(None, {AMD: "the kubelet offers it again"}), UNHEALTHY, "offers it again"),
    ],
    ids=[
        "nvml-finds",
        "replica",
        "mig",
        "gpu-lost",
        "no-nvml",
        "toolkit-gone",
        "toolkit-gone-no-nvml",
        "legacy-holder",
        "amd-no-source",
        "amd-alarm",
    ],
)
def test_health_rule(resource: str, device_id: str, facts: HealthFacts, health: str, words: str) -> None:
    got, message = health_of(resource, device_id, facts)
    assert got == health and words in message, message


def test_every_reason_is_given_and_the_message_fits_the_kubelets_limit() -> None:
    facts = HealthFacts({GPU: "GPU is lost"}, {GPU: "x" * 2000}, {f"nvidia.com/gpu={GPU}": False})
    health, message = health_of("nvidia.com/gpu", GPU, facts)
    assert health == UNHEALTHY and message.startswith("NVML: GPU is lost; hand-over alarm: x") and len(message) == 1024
    reports = assess({"b": DeviceId("amd.com/gpu", AMD), "a": DeviceId("nvidia.com/gpu", GPU)}, "node-1", HealthFacts())
    assert [(r.pool, r.device, r.health) for r in reports] == [("node-1", "a", UNKNOWN), ("node-1", "b", UNKNOWN)]


def _obs(offered: set[str], held: dict[str, list[str]], published: set[str], prepared: set[str]) -> Observation:
    recorded = Inventory(
        devices=tuple(InventoryDevice(resourceName="x.com/gpu", deviceID=i, numaNodes=[]) for i in "ABCXY")
    )
    return Observation(
        now=0,
        recorded=recorded,
        offered=tuple(InventoryDevice(resourceName="x.com/gpu", deviceID=i, numaNodes=[]) for i in sorted(offered)),
        held=held,
        published=frozenset(DeviceId("x.com/gpu", i) for i in published),
        prepared=frozenset(DeviceId("x.com/gpu", i) for i in prepared),
    )


def test_alarmed_devices_are_the_alarms_devices() -> None:
    obs = _obs({"A", "B", "X"}, {"C": ["ns/p/c"], "B": ["ns/q/d"], "Y": ["ns/r/e"]}, {"A"}, {"B", "C"})
    got = {d.device_id: why for d, why in alarmed_devices(obs).items()}
    assert set(got) == {"A", "B", "C"}
    assert "offers it again" in got["A"] and "offers it again" in got["B"] and "ns/q/d" in got["B"]
    assert got["C"] == "assigned to legacy container(s) ns/p/c while a prepared claim holds it"
    text = alarm(obs)
    assert text is not None and all(d in text for d in got)
    assert alarmed_devices(_obs({"X"}, {"Y": ["ns/r/e"]}, set(), set())) == {}


class _NvmlError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


def _fake_pynvml(known: set[str], lost: set[str], loadable: bool = True) -> types.ModuleType:
    nv = types.ModuleType("pynvml")
    nv.NVML_ERROR_GPU_IS_LOST = 15  # type: ignore[attr-defined]

    def init() -> None:
        if not loadable:
            raise _NvmlError(9)  # driver not loaded

    def by_uuid(uuid: str) -> object:
        if uuid in lost:
            raise _NvmlError(15)
        if uuid not in known:
            raise _NvmlError(6)
        return object()

    nv.nvmlInit, nv.nvmlShutdown, nv.nvmlDeviceGetHandleByUUID = init, lambda: None, by_uuid  # type: ignore[attr-defined]
    return nv


def test_check_uuids_through_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml({GPU}, {"GPU-lost"}))
    got = check_uuids([GPU, "GPU-lost", "GPU-gone"])
    assert got is not None and got[GPU] == "" and got["GPU-lost"] == "GPU is lost"
    assert "cannot find the device" in got["GPU-gone"]
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(set(), set(), loadable=False))
    assert check_uuids([GPU]) is None
    monkeypatch.setitem(sys.modules, "pynvml", None)  # not installed: import fails
    assert check_uuids([GPU]) is None


def test_a_device_known_by_its_index_is_never_looked_up_in_nvml_as_a_uuid() -> None:
    """A fresh node's index-only toolkit spec gives device IDs ``0``, ``1`` (docs/design.md D45):
    NVML is asked about UUIDs only, so such a device is unknown, never unhealthy for "not found"."""
    inventory = {"gpu-a": DeviceId("nvidia.com/gpu", "0"), "gpu-b": DeviceId("nvidia.com/gpu", GPU)}
    assert nvml_uuids(inventory) == [GPU]
    facts = HealthFacts({u: "" for u in nvml_uuids(inventory)})
    assert [r.health for r in assess(inventory, "node", facts)] == [UNKNOWN, HEALTHY]
