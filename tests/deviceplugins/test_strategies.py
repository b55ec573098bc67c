"""The answers, exactly in NVIDIA's shapes (NVIDIA/k8s-device-plugin ``getAllocateResponse``)."""

from __future__ import annotations

from typing import Any

import pytest

from dra_bridge.bridge.deviceplugin import api_pb2
from dra_bridge.bridge.deviceplugin.client import to_json
from tests.deviceplugins import strategies
from tests.deviceplugins.strategies import BadRequest, Strategy

A, B, C = "GPU-a", "GPU-b", "GPU-c"
KNOWN = [A, B, C]


def allocate(
    strategy: Strategy, ids: list[str], known: list[str] = KNOWN, resource: str = "nvidia.com/gpu"
) -> dict[str, Any]:
    request = api_pb2.AllocateRequest(container_requests=[api_pb2.ContainerAllocateRequest(devices_ids=ids)])
    response = strategies.allocate(strategy, resource, known, request)
    assert len(response.container_responses) == 1
    return to_json(response.container_responses[0])


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        (Strategy.ENVVAR, {"envs": {"NVIDIA_VISIBLE_DEVICES": "GPU-c,GPU-a"}}),
        (
            Strategy.VOLUME_MOUNTS,
            {
                "envs": {"NVIDIA_VISIBLE_DEVICES": "/var/run/nvidia-container-devices"},
                "mounts": [
                    {"container_path": "/var/run/nvidia-container-devices/GPU-c", "host_path": "/dev/null"},
                    {"container_path": "/var/run/nvidia-container-devices/GPU-a", "host_path": "/dev/null"},
                ],
            },
        ),
        (
            Strategy.CDI_CRI,
            {
                "cdi_devices": [
                    {"name": "k8s.device-plugin.nvidia.com/gpu=GPU-c"},
                    {"name": "k8s.device-plugin.nvidia.com/gpu=GPU-a"},
                ]
            },
        ),
    ],
    ids=str,
)
def test_allocate_answers_in_nvidias_shape_in_request_order(strategy: Strategy, expected: dict[str, Any]) -> None:
    assert allocate(strategy, [C, A]) == expected


@pytest.mark.parametrize("strategy", [s for s in Strategy if not s.startswith("vendor")], ids=str)
def test_replicas_are_stripped_back_to_their_gpu_once(strategy: Strategy) -> None:
    answer = allocate(strategy, ["GPU-a::0", "GPU-a::1"], known=["GPU-a::0", "GPU-a::1"])
    assert "GPU-a::" not in str(answer) and str(answer).count("GPU-a") == 1


def test_the_vendor_strategies_answer_nodes_a_per_device_name_a_list_and_an_mps_pipe() -> None:
    answer = allocate(Strategy.VENDOR, [C], known=[C])
    assert answer["envs"] == {
        "VENDOR_VISIBLE_DEVICES": C,
        "CUDA_MPS_PIPE_DIRECTORY": "/run/vendor/mps/pipe",
        f"VENDOR_DEVICE_{C.upper().replace('-', '_')}": "present",
    }
    assert [d["container_path"] for d in answer["devices"]] == ["/dev/vendor-ctl", f"/dev/vendor/{C}"]
    assert answer["mounts"] == [{"container_path": "/run/vendor/mps/pipe", "host_path": "/run/vendor/mps/pipe"}]
    assert allocate(Strategy.VENDOR_LIST_ONLY, [C, A]) == {"envs": {"VENDOR_VISIBLE_DEVICES": f"{C},{A}"}}


def test_mig_resources_get_the_mig_class() -> None:
    assert allocate(Strategy.CDI_CRI, ["MIG-x"], known=["MIG-x"], resource="nvidia.com/mig-1g.10gb") == {
        "cdi_devices": [{"name": "k8s.device-plugin.nvidia.com/mig=MIG-x"}]
    }


def test_allocate_answers_every_container_in_order() -> None:
    request = api_pb2.AllocateRequest(
        container_requests=[
            api_pb2.ContainerAllocateRequest(devices_ids=[B]),
            api_pb2.ContainerAllocateRequest(devices_ids=[A]),
        ]
    )
    response = strategies.allocate(Strategy.ENVVAR, "nvidia.com/gpu", KNOWN, request)
    assert [r.envs["NVIDIA_VISIBLE_DEVICES"] for r in response.container_responses] == [B, A]


@pytest.mark.parametrize(
    ("resource", "name"),
    [
        ("nvidia.com/gpu", "nvidia-gpu.sock"),
        ("nvidia.com/mig-1g.5gb", "nvidia-mig-1g.5gb.sock"),
        ("nvidia.com/gpu.shared", "nvidia-gpu.shared.sock"),
        ("example.com/gpu", "example.com-gpu.sock"),
    ],
)
def test_socket_names_follow_nvidia(resource: str, name: str) -> None:
    assert strategies.socket_name(resource) == name


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ([], "no device IDs"),
        (["GPU-zz"], "unknown device: GPU-zz"),
        ([A, "GPU-zz"], "unknown device: GPU-zz"),
    ],
    ids=["empty", "unknown", "one-unknown"],
)
def test_bad_allocate_requests_are_refused_naming_why(ids: list[str], message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        allocate(Strategy.ENVVAR, ids)


def test_allocate_without_containers_is_refused() -> None:
    with pytest.raises(BadRequest, match="no container requests"):
        strategies.allocate(Strategy.ENVVAR, "nvidia.com/gpu", KNOWN, api_pb2.AllocateRequest())


def prefer(available: list[str], must: list[str], size: int) -> list[str]:
    request = api_pb2.PreferredAllocationRequest(
        container_requests=[
            api_pb2.ContainerPreferredAllocationRequest(
                available_deviceIDs=available, must_include_deviceIDs=must, allocation_size=size
            )
        ]
    )
    response = strategies.preferred("nvidia.com/gpu", KNOWN, request)
    return list(response.container_responses[0].deviceIDs)


@pytest.mark.parametrize(
    ("available", "must", "size", "expected"),
    [
        ([C, B, A], [], 2, [A, B]),
        ([C, B, A], [C], 2, [C, A]),
        ([B, C], [], 2, [B, C]),
        ([A, B, C], [B, C], 2, [B, C]),
    ],
    ids=["plugin-order", "must-first", "all-available", "only-must"],
)
def test_preferred_allocation_takes_must_include_then_plugin_order(
    available: list[str], must: list[str], size: int, expected: list[str]
) -> None:
    assert prefer(available, must, size) == expected


@pytest.mark.parametrize(
    ("available", "must", "size", "message"),
    [
        ([A, "GPU-zz"], [], 1, "unknown device: GPU-zz"),
        ([A], [B], 1, "must-include device GPU-b is not available"),
        ([A], [], 2, "allocation size 2 does not fit"),
        ([A, B], [A, B], 1, "allocation size 1 does not fit"),
        ([A], [], 0, "allocation size 0"),
    ],
    ids=["unknown", "must-not-available", "too-large", "smaller-than-must", "zero"],
)
def test_bad_preferred_requests_are_refused_naming_why(
    available: list[str], must: list[str], size: int, message: str
) -> None:
    with pytest.raises(BadRequest, match=message):
        prefer(available, must, size)
