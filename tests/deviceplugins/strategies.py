"""What the test plugins answer, as pure functions: NVIDIA's device plugin in its common strategies.

Shapes of ``ContainerAllocateResponse`` (``getAllocateResponse`` in
https://github.com/NVIDIA/k8s-device-plugin/blob/main/internal/plugin/server.go), for the request's
IDs in the request's order (replica suffixes ``::<n>`` stripped, duplicates dropped, as ``AnnotatedIDs.GetIDs`` does):

- ``envvar``: ``envs = {"NVIDIA_VISIBLE_DEVICES": "<id1>,<id2>"}``, nothing else;
- ``volume-mounts``: ``envs = {"NVIDIA_VISIBLE_DEVICES": "/var/run/nvidia-container-devices"}`` and
  one ``Mount(container_path="/var/run/nvidia-container-devices/<id>", host_path="/dev/null")`` per
  device (``read_only`` unset, as NVIDIA leaves it);
- ``cdi-cri``: ``cdi_devices = [CDIDevice(name="k8s.device-plugin.nvidia.com/<class>=<id>"), ...]``,
  no envs and no mounts (only CDI strategies selected); the names resolve in the spec the plugin
  writes at start (:func:`tests.deviceplugins.toolkit_cdi.write_plugin_spec`).

Two strategies imitate a non-NVIDIA vendor (answers built per device from its own device map, as
ROCm's and Intel's plugins do), to test what the bridge records of an answer:

- ``vendor``: per device ``DeviceSpec(/dev/vendor/<id>, "rw")`` plus the shared
  ``/dev/vendor-ctl``, a variable whose name is per device (``VENDOR_DEVICE_<ID>=present``), one
  list-valued variable (``VENDOR_VISIBLE_DEVICES=<id1>,<id2>``), and an MPS-like daemon's pipe
  (``CUDA_MPS_PIPE_DIRECTORY=/run/vendor/mps/pipe`` with a mount of it);
- ``vendor-list-only``: only ``VENDOR_VISIBLE_DEVICES`` (nothing that composes).

Not reproduced (not in NVIDIA's defaults): ``cdi-annotations``, ``--pass-device-specs``, GDS/MOFED/IMEX
extras, MPS, and the NVLink-aware preferred allocation (ours: must-include first, then the
plugin's device order). A bad request raises :class:`BadRequest`, which the servicer turns into
``INVALID_ARGUMENT`` with the message.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from dra_bridge.bridge.deviceplugin import api_pb2

VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
VOLUME_MOUNTS_ROOT = "/var/run/nvidia-container-devices"
VOLUME_MOUNTS_HOST_PATH = "/dev/null"
PLUGIN_CDI_VENDOR = "k8s.device-plugin.nvidia.com"
VENDOR_LIST = "VENDOR_VISIBLE_DEVICES"
VENDOR_MPS_PIPE = "/run/vendor/mps/pipe"


class Strategy(enum.StrEnum):
    """NVIDIA's ``--device-list-strategy`` values we reproduce."""

    ENVVAR = "envvar"
    VOLUME_MOUNTS = "volume-mounts"
    CDI_CRI = "cdi-cri"
    VENDOR = "vendor"
    VENDOR_LIST_ONLY = "vendor-list-only"


class BadRequest(ValueError):
    """A request the plugin refuses; the message names what is wrong."""


def cdi_class(resource: str) -> str:
    """The CDI class NVIDIA's plugin uses for a resource: ``mig`` for MIG resources, else ``gpu``."""
    suffix = resource.split("/", 1)[-1]
    return "mig" if suffix.startswith("mig-") else "gpu"


def plugin_cdi_name(resource: str, device_id: str) -> str:
    """The fully-qualified CDI name of a device in the plugin's own spec."""
    return f"{PLUGIN_CDI_VENDOR}/{cdi_class(resource)}={device_id}"


def socket_name(resource: str) -> str:
    """NVIDIA's socket naming (``nvidia-<part after "nvidia.com/">.sock``); other domains: ``<domain>-<name>.sock``."""
    domain, _, name = resource.partition("/")
    return f"nvidia-{name}.sock" if domain == "nvidia.com" else f"{domain}-{name}.sock"


def strip_replicas(ids: Sequence[str]) -> list[str]:
    """``<uuid>::<n>`` back to ``<uuid>``, first occurrence kept, order kept."""
    out: list[str] = []
    for device_id in ids:
        base = device_id.split("::", 1)[0]
        if base not in out:
            out.append(base)
    return out


def allocate_one(
    strategy: Strategy, resource: str, known: Sequence[str], ids: Sequence[str]
) -> api_pb2.ContainerAllocateResponse:
    """One container's answer; ``known`` is the plugin's device list."""
    if not ids:
        raise BadRequest(f"invalid allocation request for '{resource}': no device IDs")
    for device_id in ids:
        if device_id not in known:
            raise BadRequest(f"invalid allocation request for '{resource}': unknown device: {device_id}")
    device_ids = strip_replicas(ids)
    if strategy is Strategy.VENDOR_LIST_ONLY:
        return api_pb2.ContainerAllocateResponse(envs={VENDOR_LIST: ",".join(device_ids)})
    if strategy is Strategy.VENDOR:
        return vendor_answer(device_ids)
    if strategy is Strategy.ENVVAR:
        return api_pb2.ContainerAllocateResponse(envs={VISIBLE_DEVICES: ",".join(device_ids)})
    if strategy is Strategy.VOLUME_MOUNTS:
        return api_pb2.ContainerAllocateResponse(
            envs={VISIBLE_DEVICES: VOLUME_MOUNTS_ROOT},
            mounts=[
                api_pb2.Mount(container_path=f"{VOLUME_MOUNTS_ROOT}/{d}", host_path=VOLUME_MOUNTS_HOST_PATH)
                for d in device_ids
            ],
        )
    return api_pb2.ContainerAllocateResponse(
        cdi_devices=[api_pb2.CDIDevice(name=plugin_cdi_name(resource, d)) for d in device_ids]
    )


def vendor_answer(device_ids: Sequence[str]) -> api_pb2.ContainerAllocateResponse:
    """The ``vendor`` strategy's answer (see the module docstring)."""
    envs = {VENDOR_LIST: ",".join(device_ids), "CUDA_MPS_PIPE_DIRECTORY": VENDOR_MPS_PIPE}
    envs |= {f"VENDOR_DEVICE_{d.upper().replace('-', '_')}": "present" for d in device_ids}
    nodes = [api_pb2.DeviceSpec(container_path="/dev/vendor-ctl", host_path="/dev/vendor-ctl", permissions="rw")]
    nodes += [
        api_pb2.DeviceSpec(container_path=f"/dev/vendor/{d}", host_path=f"/dev/vendor/{d}", permissions="rw")
        for d in device_ids
    ]
    return api_pb2.ContainerAllocateResponse(
        envs=envs, devices=nodes, mounts=[api_pb2.Mount(container_path=VENDOR_MPS_PIPE, host_path=VENDOR_MPS_PIPE)]
    )


def allocate(
    strategy: Strategy, resource: str, known: Sequence[str], request: api_pb2.AllocateRequest
) -> api_pb2.AllocateResponse:
    """``Allocate``: one answer per container request, in order."""
    if not request.container_requests:
        raise BadRequest(f"invalid allocation request for '{resource}': no container requests")
    return api_pb2.AllocateResponse(
        container_responses=[
            allocate_one(strategy, resource, known, list(c.devices_ids)) for c in request.container_requests
        ]
    )


def prefer_one(resource: str, known: Sequence[str], request: api_pb2.ContainerPreferredAllocationRequest) -> list[str]:
    """Must-include devices first, then the other available ones in the plugin's order."""
    available, must = list(request.available_deviceIDs), list(request.must_include_deviceIDs)
    size = request.allocation_size
    unknown = [d for d in available + must if d not in known]
    if unknown:
        raise BadRequest(f"preferred allocation for '{resource}': unknown device: {unknown[0]}")
    if missing := [d for d in must if d not in available]:
        raise BadRequest(f"preferred allocation for '{resource}': must-include device {missing[0]} is not available")
    if size <= 0 or size > len(available) or size < len(must):
        raise BadRequest(
            f"preferred allocation for '{resource}': allocation size {size} does not fit "
            f"{len(available)} available and {len(must)} must-include devices"
        )
    rest = [d for d in known if d in available and d not in must]
    return (must + rest)[:size]


def preferred(
    resource: str, known: Sequence[str], request: api_pb2.PreferredAllocationRequest
) -> api_pb2.PreferredAllocationResponse:
    """``GetPreferredAllocation``: one answer per container request, in order."""
    if not request.container_requests:
        raise BadRequest(f"preferred allocation for '{resource}': no container requests")
    return api_pb2.PreferredAllocationResponse(
        container_responses=[
            api_pb2.ContainerPreferredAllocationResponse(deviceIDs=prefer_one(resource, known, c))
            for c in request.container_requests
        ]
    )
