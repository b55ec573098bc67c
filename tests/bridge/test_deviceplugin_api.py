"""Our device plugin v1beta1 proto is the kubelet's on the wire: package, services, RPC names and
streaming, every message's fields with their numbers, types and labels, re-typed below from the
kubelet's https://github.com/kubernetes/kubelet/blob/master/pkg/apis/deviceplugin/v1beta1/api.proto"""

from __future__ import annotations

import pytest
from google.protobuf.descriptor import FieldDescriptor

from dra_bridge.bridge.deviceplugin import api_pb2

# message -> [(field, number, type)], "repeated X" for repeated fields, "map<k,v>" for maps.
KUBELET_MESSAGES: dict[str, list[tuple[str, int, str]]] = {
    "Empty": [],
    "DevicePluginOptions": [("pre_start_required", 1, "bool"), ("get_preferred_allocation_available", 2, "bool")],
    "RegisterRequest": [
        ("version", 1, "string"),
        ("endpoint", 2, "string"),
        ("resource_name", 3, "string"),
        ("options", 4, "DevicePluginOptions"),
    ],
    "ListAndWatchResponse": [("devices", 1, "repeated Device")],
    "TopologyInfo": [("nodes", 1, "repeated NUMANode")],
    "NUMANode": [("ID", 1, "int64")],
    "Device": [("ID", 1, "string"), ("health", 2, "string"), ("topology", 3, "TopologyInfo")],
    "PreStartContainerRequest": [("devices_ids", 1, "repeated string")],
    "PreStartContainerResponse": [],
    "PreferredAllocationRequest": [("container_requests", 1, "repeated ContainerPreferredAllocationRequest")],
    "ContainerPreferredAllocationRequest": [
        ("available_deviceIDs", 1, "repeated string"),
        ("must_include_deviceIDs", 2, "repeated string"),
        ("allocation_size", 3, "int32"),
    ],
    "PreferredAllocationResponse": [("container_responses", 1, "repeated ContainerPreferredAllocationResponse")],
    "ContainerPreferredAllocationResponse": [("deviceIDs", 1, "repeated string")],
    "AllocateRequest": [("container_requests", 1, "repeated ContainerAllocateRequest")],
    "ContainerAllocateRequest": [("devices_ids", 1, "repeated string")],
    "AllocateResponse": [("container_responses", 1, "repeated ContainerAllocateResponse")],
    "ContainerAllocateResponse": [
        ("envs", 1, "map<string,string>"),
        ("mounts", 2, "repeated Mount"),
        ("devices", 3, "repeated DeviceSpec"),
        ("annotations", 4, "map<string,string>"),
        ("cdi_devices", 5, "repeated CDIDevice"),
    ],
    "Mount": [("container_path", 1, "string"), ("host_path", 2, "string"), ("read_only", 3, "bool")],
    "DeviceSpec": [("container_path", 1, "string"), ("host_path", 2, "string"), ("permissions", 3, "string")],
    "CDIDevice": [("name", 1, "string")],
}

# service -> [(rpc, request, response, server streaming)]
KUBELET_SERVICES = {
    "Registration": [("Register", "RegisterRequest", "Empty", False)],
    "DevicePlugin": [
        ("GetDevicePluginOptions", "Empty", "DevicePluginOptions", False),
        ("ListAndWatch", "Empty", "ListAndWatchResponse", True),
        ("GetPreferredAllocation", "PreferredAllocationRequest", "PreferredAllocationResponse", False),
        ("Allocate", "AllocateRequest", "AllocateResponse", False),
        ("PreStartContainer", "PreStartContainerRequest", "PreStartContainerResponse", False),
    ],
}

_SCALARS = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_INT32: "int32",
}


def _type_of(field: FieldDescriptor) -> str:
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        key, value = (_type_of(f) for f in field.message_type.fields)
        return f"map<{key},{value}>"
    base = field.message_type.name if field.message_type is not None else _SCALARS[field.type]
    return f"repeated {base}" if field.is_repeated else base


def test_package_and_message_set_are_the_kubelets() -> None:
    assert api_pb2.DESCRIPTOR.package == "v1beta1"
    assert set(api_pb2.DESCRIPTOR.message_types_by_name) == set(KUBELET_MESSAGES)


@pytest.mark.parametrize("message", sorted(KUBELET_MESSAGES))
def test_message_fields_match_the_kubelet(message: str) -> None:
    descriptor = api_pb2.DESCRIPTOR.message_types_by_name[message]
    ours = [(f.name, f.number, _type_of(f)) for f in descriptor.fields]
    assert ours == KUBELET_MESSAGES[message]


@pytest.mark.parametrize("service", sorted(KUBELET_SERVICES))
def test_service_rpcs_match_the_kubelet(service: str) -> None:
    descriptor = api_pb2.DESCRIPTOR.services_by_name[service]
    assert descriptor.full_name == f"v1beta1.{service}"
    ours = [(m.name, m.input_type.name, m.output_type.name, m.server_streaming) for m in descriptor.methods]
    assert ours == KUBELET_SERVICES[service]
    assert not any(m.client_streaming for m in descriptor.methods)
    assert set(api_pb2.DESCRIPTOR.services_by_name) == set(KUBELET_SERVICES)


def test_an_allocate_response_round_trips_as_the_kubelet_checkpoint_stores_it() -> None:
    # The kubelet checkpoint keeps ContainerAllocateResponse serialized (kubelet devicemanager's pod_devices.go): the
    # bytes of field 5 (cdi_devices) and field 2 (mounts) must decode back unchanged.
    response = api_pb2.ContainerAllocateResponse(
        envs={"NVIDIA_VISIBLE_DEVICES": "GPU-a"},
        mounts=[api_pb2.Mount(container_path="/var/run/nvidia-container-devices/GPU-a", host_path="/dev/null")],
        cdi_devices=[api_pb2.CDIDevice(name="k8s.device-plugin.nvidia.com/gpu=GPU-a")],
    )
    wire = response.SerializeToString(deterministic=True)
    assert b"\x2a" in wire  # field 5, wire type 2 (length-delimited): (5 << 3) | 2
    assert api_pb2.ContainerAllocateResponse.FromString(wire) == response
