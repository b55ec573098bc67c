"""The part of a device plugin's Allocate answers that composes under DRA (pure).

The bridge asks a plugin's ``Allocate`` for one device per call while the node is legacy
(docs/design.md D10) and replays the answer later as CDI container edits. The kubelet hands a
container the union of its requests' CDI IDs in no fixed order, and CDI env edits of one variable
replace each other (https://github.com/cncf-tags/container-device-interface/blob/main/pkg/cdi/container-edits.go),
so only what adds up is kept:

- device nodes (``DeviceSpec``: container path, host path, permissions) and mounts, unless two
  devices put different things at one container path (then the later would hide the earlier);
- variables whose value does not depend on the device: a variable two devices' answers set to
  different values is per index or list-valued and dropped, as is every variable of
  :data:`LIST_VARIABLES`, any ``*_VISIBLE_DEVICES`` and any value with a comma;
- never: ``annotations`` and ``cdi_devices`` (names in the plugin's own CDI spec, which leaves
  with the plugin), MPS edits (``CUDA_MPS_*`` variables and mounts of the
  MPS daemon's pipe and shared-memory directories: the daemon leaves with the plugin), and the
  GPUDirect Storage, MOFED, GDRCopy and IMEX-channel variables (:data:`NOT_CARRIED`).

Shapes: an answer is the protobuf JSON form of a ``ContainerAllocateResponse`` with the proto's
field names (``envs``, ``mounts[].container_path/host_path/read_only``,
``devices[].container_path/host_path/permissions``, ``annotations``, ``cdi_devices``), as
``bridge.deviceplugin.client.to_json`` gives it. :func:`compose` returns
``{"devices": {device ID: CDI containerEdits}, "dropped": [why, ...]}``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

LIST_VARIABLES = frozenset(
    {
        "NVIDIA_VISIBLE_DEVICES",
        "CUDA_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES",
        "GPU_DEVICE_ORDINAL",
        "ZE_AFFINITY_MASK",
        "NVIDIA_MIG_CONFIG_DEVICES",
        "NVIDIA_MIG_MONITOR_DEVICES",
    }
)
"""Variables whose value lists devices: one per device cannot compose (docs/design.md D10)."""
NOT_CARRIED = {
    "NVIDIA_GDS": "GPUDirect Storage",
    "NVIDIA_MOFED": "MOFED",
    "NVIDIA_GDRCOPY": "GDRCopy",
    "NVIDIA_IMEX_CHANNELS": "IMEX channels",
}
"""Variables NVIDIA's device plugin sets for features the bridge does not carry over (their
drivers and daemons are set up by the plugin's deployment, not by a variable): dropped, and named."""
MPS_PREFIX = "CUDA_MPS_"
"""NVIDIA's MPS variables (``CUDA_MPS_PIPE_DIRECTORY``, ...: NVIDIA/k8s-device-plugin ``internal/plugin/mps.go``)."""
_PERMISSIONS_RE = re.compile(r"[rwm]{1,3}")


class ResourceEdits(TypedDict):
    """What was kept of one resource's answers: per device ID its CDI ``containerEdits``
    (``env``, ``deviceNodes``, ``mounts``; empty when nothing composed) and why parts were dropped."""

    devices: dict[str, dict[str, Any]]
    dropped: list[str]


def list_valued(key: str, value: str) -> bool:
    """Whether one ``KEY=value`` lists devices by its name or its value."""
    return key in LIST_VARIABLES or key.endswith("_VISIBLE_DEVICES") or "," in value


def _mps_dirs(envs: Mapping[str, str]) -> list[str]:
    return [v.rstrip("/") for k, v in envs.items() if k.startswith(MPS_PREFIX) and v.startswith("/")]


def _is_mps_mount(mount: Mapping[str, Any], dirs: list[str]) -> bool:
    paths = [str(mount.get("container_path", "")), str(mount.get("host_path", ""))]
    if paths[0] == "/dev/shm":
        return True
    return any("mps" in p.split("/") or any(p == d or p.startswith(d + "/") for d in dirs) for p in paths)


@dataclass(frozen=True)
class _Seen:
    """Across all answers: each variable's values, each container path's (host path,
    permissions) device nodes and (host path, read-only) mounts."""

    values: Mapping[str, set[str]]
    nodes_at: Mapping[str, set[tuple[str, str]]]
    mounts_at: Mapping[str, set[tuple[str, bool]]]


def compose(answers: Mapping[str, Mapping[str, Any]]) -> ResourceEdits:
    """The composing part of each device's answer (device ID -> answer, see the module
    docstring), decided across all of them: deterministic, independent of the order given."""
    dropped: set[str] = set()
    seen = _seen(answers)
    out: dict[str, dict[str, Any]] = {}
    for device_id in sorted(answers):
        answer = answers[device_id]
        if answer.get("annotations"):
            dropped.add("annotations (they name the plugin's own CDI devices)")
        if answer.get("cdi_devices"):
            dropped.add("CDI devices of the plugin's own spec (it leaves with the plugin)")
        env = _env(answer, seen, dropped)
        nodes = _nodes(answer, seen, dropped)
        mounts = _mounts(answer, seen, dropped)
        edits: dict[str, Any] = {}
        if env:
            edits["env"] = env
        if nodes:
            edits["deviceNodes"] = sorted({n["path"]: n for n in nodes}.values(), key=lambda n: str(n["path"]))
        if mounts:
            edits["mounts"] = sorted(
                {m["containerPath"]: m for m in mounts}.values(), key=lambda m: str(m["containerPath"])
            )
        out[device_id] = edits
    return ResourceEdits(devices=out, dropped=sorted(dropped))


def _seen(answers: Mapping[str, Mapping[str, Any]]) -> _Seen:
    values: dict[str, set[str]] = defaultdict(set)
    nodes_at: dict[str, set[tuple[str, str]]] = defaultdict(set)
    mounts_at: dict[str, set[tuple[str, bool]]] = defaultdict(set)
    for answer in answers.values():
        for k, v in (answer.get("envs") or {}).items():
            values[str(k)].add(str(v))
        for d in answer.get("devices") or []:
            path = str(d.get("container_path") or d.get("host_path") or "")
            nodes_at[path].add((str(d.get("host_path") or path), str(d.get("permissions") or "")))
        dirs = _mps_dirs(answer.get("envs") or {})
        for m in answer.get("mounts") or []:
            if not _is_mps_mount(m, dirs):
                mounts_at[str(m.get("container_path", ""))].add((str(m.get("host_path", "")), bool(m.get("read_only"))))
    return _Seen(values, nodes_at, mounts_at)


def _env(answer: Mapping[str, Any], seen: _Seen, dropped: set[str]) -> list[str]:
    """The ``KEY=value`` entries of one answer that compose (why others do not: ``dropped``)."""
    env = []
    for k, v in sorted((answer.get("envs") or {}).items()):
        if k.startswith(MPS_PREFIX):
            dropped.add(f"MPS variable {k} (the MPS daemon leaves with the plugin)")
        elif k in NOT_CARRIED:
            dropped.add(f"{NOT_CARRIED[k]} variable {k} (not carried over)")
        elif list_valued(k, v):
            dropped.add(f"list-valued variable {k} (the last device's value would win)")
        elif len(seen.values[k]) > 1:
            dropped.add(f"variable {k}, set to a different value per device (per index)")
        else:
            env.append(f"{k}={v}")
    return env


def _nodes(answer: Mapping[str, Any], seen: _Seen, dropped: set[str]) -> list[dict[str, Any]]:
    """The CDI device nodes of one answer that compose (why others do not: ``dropped``)."""
    nodes = []
    for d in answer.get("devices") or []:
        path = str(d.get("container_path") or d.get("host_path") or "")
        host, perms = str(d.get("host_path") or path), str(d.get("permissions") or "")
        if not path.startswith("/") or not host.startswith("/"):
            dropped.add("a device node without an absolute path")
        elif len(seen.nodes_at[path]) > 1:
            dropped.add(f"device node {path}, a different host device per device")
        elif perms and not _PERMISSIONS_RE.fullmatch(perms):
            dropped.add(f"device node {path} with permissions {perms!r} (CDI allows r, w, m)")
        else:
            nodes.append({"path": path, "hostPath": host, **({"permissions": perms} if perms else {})})
    return nodes


def _mounts(answer: Mapping[str, Any], seen: _Seen, dropped: set[str]) -> list[dict[str, Any]]:
    """The CDI mounts of one answer that compose (why others do not: ``dropped``)."""
    mounts = []
    dirs = _mps_dirs(answer.get("envs") or {})
    for m in answer.get("mounts") or []:
        target, host = str(m.get("container_path", "")), str(m.get("host_path", ""))
        if _is_mps_mount(m, dirs):
            dropped.add(f"MPS mount {target} (the MPS daemon leaves with the plugin)")
        elif not target.startswith("/") or not host.startswith("/"):
            dropped.add("a mount without absolute paths")
        elif len(seen.mounts_at[target]) > 1:
            dropped.add(f"mount {target}, a different host path per device")
        else:
            mounts.append(
                {
                    "hostPath": host,
                    "containerPath": target,
                    "options": ["bind", "ro" if m.get("read_only") else "rw"],
                }
            )
    return mounts
