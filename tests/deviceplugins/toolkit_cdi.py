"""CDI specs for test GPUs: a fake of the NVIDIA container toolkit's generated spec, and the spec
the device plugin writes for its ``cdi-cri`` names.

The toolkit's spec (``nvidia-ctk cdi generate``, also what the GPU Operator's toolkit writes):
kind ``nvidia.com/gpu``; with the default ``--device-name-strategy`` (``index`` and ``uuid``
since the flag became repeatable; NVIDIA/nvidia-container-toolkit
cmd/nvidia-ctk/cdi/generate/generate.go: "the devices will be duplicated for each strategy")
every GPU is defined twice, as ``nvidia.com/gpu=<index>`` and ``nvidia.com/gpu=<uuid>``, plus
``nvidia.com/gpu=all``; ``NVIDIA_VISIBLE_DEVICES=void`` at spec level. ``strategies=("index",)``
writes what ``--device-name-strategy=index`` (and toolkits before 1.16) write: index names and
``all`` only, no UUID anywhere in the spec. Written
as YAML (the toolkit's default format) to ``<cdi dir>/nvidia.yaml``.

The device plugin's spec (``cdi-cri``): kind ``k8s.device-plugin.nvidia.com/<class>``, devices
named by device ID (its default ``--device-id-strategy=uuid``), written as JSON to
``<cdi dir>/k8s.device-plugin.nvidia.com-<class>.json`` (NVIDIA/k8s-device-plugin ``internal/cdi/cdi.go``).

Both carry the same edits per GPU, harmless on any host, so a container can prove which GPUs
it got: the device node ``/dev/nvidia<index>`` from the host's ``/dev/null``, and a read-only
mount at ``/run/fake-nvidia/gpu<index>`` of a host file (``<identity dir>/<uuid>``) holding the
UUID. ``cat /run/fake-nvidia/*`` in a container lists its GPUs' UUIDs. Spec-level edits add
``/dev/nvidiactl`` from ``/dev/zero``. The toolkit's hooks and driver library mounts are left
out (they need a driver). ``cdiVersion`` 0.5.0: the lowest with ``deviceNodes[].hostPath`` and
device names that start with a digit
(https://github.com/cncf-tags/container-device-interface/blob/main/specs-go/version.go).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

CDI_VERSION = "0.5.0"
TOOLKIT_KIND = "nvidia.com/gpu"
TOOLKIT_FILE = "nvidia.yaml"
IDENTITY_ROOT = "/run/fake-nvidia"
DEVICE_NODE_HOST = "/dev/null"
CTL_NODE_HOST = "/dev/zero"
MOUNT_OPTIONS = ["ro", "nosuid", "nodev", "bind"]

Spec = dict[str, Any]


def identity_path(index: int) -> str:
    """Where a container reads the UUID of the GPU with this index."""
    return f"{IDENTITY_ROOT}/gpu{index}"


def write_identity_files(identity_dir: Path, uuids: Sequence[str]) -> None:
    """One host file per GPU, named and holding its UUID (plus a newline)."""
    identity_dir.mkdir(parents=True, exist_ok=True)
    for uuid in uuids:
        (identity_dir / uuid).write_text(uuid + "\n")


def device_edits(index: int, uuid: str, identity_dir: Path) -> Spec:
    """The containerEdits of one GPU: its device node and its identity mount."""
    return {
        "deviceNodes": [{"path": f"/dev/nvidia{index}", "hostPath": DEVICE_NODE_HOST}],
        "mounts": [
            {
                "hostPath": str(identity_dir / uuid),
                "containerPath": identity_path(index),
                "options": list(MOUNT_OPTIONS),
            }
        ],
    }


def common_edits() -> Spec:
    """Spec-level edits, applied when any device of the spec is requested."""
    return {
        "env": ["NVIDIA_VISIBLE_DEVICES=void"],
        "deviceNodes": [{"path": "/dev/nvidiactl", "hostPath": CTL_NODE_HOST}],
    }


def _merge(edits: Sequence[Spec]) -> Spec:
    merged: Spec = {"deviceNodes": [], "mounts": []}
    for edit in edits:
        merged["deviceNodes"] += edit["deviceNodes"]
        merged["mounts"] += edit["mounts"]
    return merged


STRATEGIES = ("index", "uuid")
"""The toolkit's default ``--device-name-strategy`` (1.16 on)."""


def toolkit_spec(uuids: Sequence[str], identity_dir: Path, strategies: Sequence[str] = STRATEGIES) -> Spec:
    """The toolkit's spec: each GPU once per strategy (by index, then by UUID), then ``all``."""
    edits = [device_edits(i, u, identity_dir) for i, u in enumerate(uuids)]
    devices = [{"name": str(i), "containerEdits": e} for i, e in enumerate(edits)] if "index" in strategies else []
    if "uuid" in strategies:
        devices += [{"name": u, "containerEdits": e} for u, e in zip(uuids, edits, strict=True)]
    devices.append({"name": "all", "containerEdits": _merge(edits)})
    return {"cdiVersion": CDI_VERSION, "kind": TOOLKIT_KIND, "devices": devices, "containerEdits": common_edits()}


def plugin_spec(kind: str, device_ids: Sequence[str], uuids: Sequence[str], identity_dir: Path) -> Spec:
    """The device plugin's spec: one device per device ID (``uuids[i]`` is the GPU behind ``device_ids[i]``)."""
    order = list(dict.fromkeys(uuids))  # a GPU's index is its place among the distinct GPUs (replicas share it)
    devices = [
        {"name": d, "containerEdits": device_edits(order.index(u), u, identity_dir)}
        for d, u in zip(device_ids, uuids, strict=True)
    ]
    return {"cdiVersion": CDI_VERSION, "kind": kind, "devices": devices, "containerEdits": common_edits()}


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)  # runtimes watch the directory: never let them read half a spec


def write_toolkit_spec(
    cdi_dir: Path, uuids: Sequence[str], identity_dir: Path, strategies: Sequence[str] = STRATEGIES
) -> Path:
    """Write the identity files and ``<cdi dir>/nvidia.yaml``; returns the spec's path."""
    write_identity_files(identity_dir, uuids)
    path = cdi_dir / TOOLKIT_FILE
    _write_atomically(path, yaml.safe_dump(toolkit_spec(uuids, identity_dir, strategies), sort_keys=False))
    return path


def write_plugin_spec(cdi_dir: Path, kind: str, device_ids: Sequence[str], identity_dir: Path) -> Path:
    """Write the identity files and the plugin's ``<vendor>-<class>.json``; returns the spec's path."""
    uuids = [d.split("::", 1)[0] for d in device_ids]
    write_identity_files(identity_dir, list(dict.fromkeys(uuids)))
    vendor, cls = kind.split("/", 1)
    path = cdi_dir / f"{vendor}-{cls}.json"
    _write_atomically(path, json.dumps(plugin_spec(kind, device_ids, uuids, identity_dir), indent=2) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.deviceplugins.toolkit_cdi --cdi-dir DIR --identity-dir DIR GPU-uuid...``."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cdi-dir", type=Path, required=True)
    parser.add_argument("--identity-dir", type=Path, required=True)
    parser.add_argument("--device-name-strategy", action="append", choices=STRATEGIES, dest="strategies")
    parser.add_argument("uuids", nargs="+")
    args = parser.parse_args(argv)
    print(write_toolkit_spec(args.cdi_dir, args.uuids, args.identity_dir, args.strategies or STRATEGIES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
