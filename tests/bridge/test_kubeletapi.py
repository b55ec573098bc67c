"""The registration, DRA and DRA health protos match the kubelet's wire contract: package names,
service and RPC names, field numbers, types and labels, transcribed from the kubelet's own protos
under https://github.com/kubernetes/kubelet/tree/master/pkg/apis (pluginregistration/v1; dra/v1
and dra/v1beta1; dra-health/v1alpha1, which was also compared with the file descriptor compiled into
the v1.36.3 kubelet binary: the same package, messages, numbers, types, enum and streaming RPC)."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.descriptor import FieldDescriptor

from dra_bridge.bridge.kubeletapi import dra_health_v1alpha1_pb2, dra_v1_pb2, dra_v1beta1_pb2, registration_pb2

S, B, M, I64, E = "string", "bool", "message", "int64", "enum"
REP = "repeated"

# message -> {field: (number, type, repeated?)}; a map is a repeated message (its entry).
REGISTRATION = {
    "PluginInfo": {
        "type": (1, S, False),
        "name": (2, S, False),
        "endpoint": (3, S, False),
        "supported_versions": (4, S, True),
    },
    "RegistrationStatus": {"plugin_registered": (1, B, False), "error": (2, S, False)},
    "RegistrationStatusResponse": {},
    "InfoRequest": {},
}
DRA_V1BETA1 = {
    "NodePrepareResourcesRequest": {"claims": (1, M, True)},
    "NodePrepareResourcesResponse": {"claims": (1, M, True)},
    "NodePrepareResourceResponse": {"devices": (1, M, True), "error": (2, S, False)},
    "Device": {
        "request_names": (1, S, True),
        "pool_name": (2, S, False),
        "device_name": (3, S, False),
        "cdi_device_ids": (4, S, True),
    },
    "NodeUnprepareResourcesRequest": {"claims": (1, M, True)},
    "NodeUnprepareResourcesResponse": {"claims": (1, M, True)},
    "NodeUnprepareResourceResponse": {"error": (1, S, False)},
    "Claim": {"namespace": (1, S, False), "uid": (2, S, False), "name": (3, S, False)},
}
DRA_V1 = {**DRA_V1BETA1, "Device": {**DRA_V1BETA1["Device"], "share_id": (5, S, False)}}
DRA_HEALTH_V1ALPHA1 = {
    "NodeWatchResourcesRequest": {},
    "NodeWatchResourcesResponse": {"devices": (1, M, True)},
    "DeviceIdentifier": {"pool_name": (1, S, False), "device_name": (2, S, False)},
    "DeviceHealth": {
        "device": (1, M, False),
        "health": (2, E, False),
        "last_updated_time": (3, I64, False),
        "health_check_timeout_seconds": (4, I64, False),
        "message": (5, S, False),
    },
}

TYPES = {
    FieldDescriptor.TYPE_STRING: S,
    FieldDescriptor.TYPE_BOOL: B,
    FieldDescriptor.TYPE_MESSAGE: M,
    FieldDescriptor.TYPE_INT64: I64,
    FieldDescriptor.TYPE_ENUM: E,
}


def _fields(message: Any) -> dict[str, tuple[int, str, bool]]:
    return {f.name: (f.number, TYPES.get(f.type, str(f.type)), f.is_repeated) for f in message.DESCRIPTOR.fields}


@pytest.mark.parametrize(
    ("module", "package", "service", "methods", "messages"),
    [
        (registration_pb2, "pluginregistration", "Registration", ["GetInfo", "NotifyRegistrationStatus"], REGISTRATION),
        (
            dra_v1_pb2,
            "k8s.io.kubelet.pkg.apis.dra.v1",
            "DRAPlugin",
            ["NodePrepareResources", "NodeUnprepareResources"],
            DRA_V1,
        ),
        (
            dra_v1beta1_pb2,
            "k8s.io.kubelet.pkg.apis.dra.v1beta1",
            "DRAPlugin",
            ["NodePrepareResources", "NodeUnprepareResources"],
            DRA_V1BETA1,
        ),
        (dra_health_v1alpha1_pb2, "v1alpha1", "DRAResourceHealth", ["NodeWatchResources"], DRA_HEALTH_V1ALPHA1),
    ],
    ids=["registration", "dra-v1", "dra-v1beta1", "dra-health-v1alpha1"],
)
def test_proto_matches_the_kubelet(
    module: Any, package: str, service: str, methods: list[str], messages: dict[str, dict[str, tuple[int, str, bool]]]
) -> None:
    assert module.DESCRIPTOR.package == package
    svc = module.DESCRIPTOR.services_by_name[service]
    assert svc.full_name == f"{package}.{service}"
    assert [m.name for m in svc.methods] == methods
    assert set(module.DESCRIPTOR.message_types_by_name) == set(messages)
    for name, fields in messages.items():
        assert _fields(getattr(module, name)) == fields, name


@pytest.mark.parametrize("module", [dra_v1_pb2, dra_v1beta1_pb2])
def test_claim_maps_are_keyed_by_uid_strings(module: Any) -> None:
    for response, value in (
        ("NodePrepareResourcesResponse", "NodePrepareResourceResponse"),
        ("NodeUnprepareResourcesResponse", "NodeUnprepareResourceResponse"),
    ):
        entry = getattr(module, response).DESCRIPTOR.fields_by_name["claims"].message_type
        assert entry.GetOptions().map_entry
        assert entry.fields_by_name["key"].type == FieldDescriptor.TYPE_STRING
        assert entry.fields_by_name["value"].message_type.name == value


def test_rpc_types_and_share_id_presence() -> None:
    rpc = registration_pb2.DESCRIPTOR.services_by_name["Registration"].methods_by_name
    assert (rpc["GetInfo"].input_type.name, rpc["GetInfo"].output_type.name) == ("InfoRequest", "PluginInfo")
    assert (rpc["NotifyRegistrationStatus"].input_type.name, rpc["NotifyRegistrationStatus"].output_type.name) == (
        "RegistrationStatus",
        "RegistrationStatusResponse",
    )
    for module in (dra_v1_pb2, dra_v1beta1_pb2):
        for m in module.DESCRIPTOR.services_by_name["DRAPlugin"].methods:
            assert (m.input_type.name, m.output_type.name) == (f"{m.name}Request", f"{m.name}Response")
            assert not m.client_streaming and not m.server_streaming
    # v1's share_id is proto3 `optional` (presence tracked), as in the kubelet's dra/v1/api.proto
    assert dra_v1_pb2.Device.DESCRIPTOR.fields_by_name["share_id"].has_presence


def test_health_stream_rpc_enum_and_message_types() -> None:
    (rpc,) = dra_health_v1alpha1_pb2.DESCRIPTOR.services_by_name["DRAResourceHealth"].methods
    assert (rpc.input_type.name, rpc.output_type.name) == ("NodeWatchResourcesRequest", "NodeWatchResourcesResponse")
    assert rpc.server_streaming and not rpc.client_streaming
    health = dra_health_v1alpha1_pb2.DESCRIPTOR.enum_types_by_name["HealthStatus"]
    assert [(v.name, v.number) for v in health.values] == [("UNKNOWN", 0), ("HEALTHY", 1), ("UNHEALTHY", 2)]
    fields = dra_health_v1alpha1_pb2.DeviceHealth.DESCRIPTOR.fields_by_name
    assert fields["device"].message_type.full_name == "v1alpha1.DeviceIdentifier"
    assert fields["health"].enum_type.full_name == "v1alpha1.HealthStatus"
    devices = dra_health_v1alpha1_pb2.NodeWatchResourcesResponse.DESCRIPTOR.fields_by_name["devices"]
    assert devices.message_type.full_name == "v1alpha1.DeviceHealth"
