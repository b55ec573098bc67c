"""GPUs served with MPS are not published (the bridge cannot carry its limits), detected from the
recorded Allocate answer or the GFD label, never from replica IDs alone."""

from __future__ import annotations

from typing import Any

from dra_bridge.translate.allocate_edits import compose
from dra_bridge.translate.inventory.allocatable import InventoryDevice
from dra_bridge.translate.inventory.mps import refuse_mps

REPLICAS = [InventoryDevice(resourceName="nvidia.com/gpu", deviceID=f"GPU-a::{i}", numaNodes=[]) for i in range(2)]


def _answer(**envs: str) -> dict[str, Any]:
    return {"envs": dict(envs), "mounts": [{"container_path": "/dev/shm", "host_path": "/run/nvidia/mps/shm"}]}


def test_replica_ids_alone_are_time_slicing_and_published() -> None:
    kept, warnings = refuse_mps(REPLICAS, {}, {"nvidia.com/gpu.sharing-strategy": "time-slicing"})
    assert kept == REPLICAS and warnings == []


def test_the_gfd_label_refuses_the_nvidia_devices_with_a_reason() -> None:
    amd = InventoryDevice(resourceName="amd.com/gpu", deviceID="0000:03:00.0", numaNodes=[])
    kept, warnings = refuse_mps([*REPLICAS, amd], {}, {"nvidia.com/gpu.sharing-strategy": "mps"})
    assert kept == [amd]
    assert warnings == [
        "resource nvidia.com/gpu: 2 device(s) not published: served with MPS (the node's label "
        "nvidia.com/gpu.sharing-strategy=mps), whose memory and thread limits are lost when served as plain "
        "shared GPUs"
    ]


def test_a_recorded_answer_with_mps_refuses_and_names_the_variables_not_carried_over() -> None:
    answers = {
        f"GPU-a::{i}": _answer(CUDA_MPS_PIPE_DIRECTORY="/mps/pipe", NVIDIA_GDS="enabled", NVIDIA_MOFED="enabled")
        for i in range(2)
    }
    recorded = {"nvidia.com/gpu": compose(answers)}
    assert all("NVIDIA_GDS" not in "".join(e.get("env", [])) for e in recorded["nvidia.com/gpu"]["devices"].values())
    kept, [warning] = refuse_mps(REPLICAS, recorded, {})
    assert kept == []
    assert "its recorded Allocate answer (MPS" in warning and "CUDA_MPS_PIPE_DIRECTORY" in warning
    assert "also not carried over: NVIDIA_GDS (GPUDirect Storage), NVIDIA_MOFED (MOFED)" in warning
