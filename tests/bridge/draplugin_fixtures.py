"""Shared pieces of the DRA plugin component tests: a node layout in a short temp dir, claims in
the fake API, a toolkit CDI spec, and a kubelet-side gRPC client (also used by plugin_process.py)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc

from dra_bridge.bridge.access import API_CALLS
from dra_bridge.bridge.kubeletapi import dra_v1_pb2, dra_v1_pb2_grpc, dra_v1beta1_pb2, dra_v1beta1_pb2_grpc
from dra_bridge.bridge.kubeletplugin.node_plugin import PluginPaths
from dra_bridge.kube.fake import FakeKube
from dra_bridge.kube.resources import RESOURCE_CLAIMS
from dra_bridge.translate.inventory.allocatable import DeviceId

NODE = "node-a"
DRIVER = "dra-bridge.io"
NVIDIA_UUID = "GPU-11111111-2222-3333-4444-555555555555"
AMD_PCI = "0000:03:00.0"
INVENTORY = {
    "gpu-nv0": DeviceId("nvidia.com/gpu", NVIDIA_UUID),
    "gpu-nv1": DeviceId("nvidia.com/gpu", "GPU-missing"),
    "gpu-amd0": DeviceId("amd.com/gpu", AMD_PCI),
    "gpu-amd1": DeviceId("amd.com/gpu", "0000:04:00.0"),
}
UID = ["0a1b2c3d-0000-4000-8000-00000000000" + str(i) for i in range(10)]


def short_dir() -> Path:
    """A temp dir short enough for unix socket paths (~107 bytes)."""
    return Path(tempfile.mkdtemp(prefix="drap-", dir="/tmp"))


AMD_DRM = {
    AMD_PCI: (("card0", 226, 0), ("renderD128", 226, 128)),
    "0000:04:00.0": (("card1", 226, 1), ("renderD129", 226, 129)),
}
"""The DRM nodes of the fake sysfs: PCI address -> (name, major, minor)."""


def fake_sysfs(sysfs: Path, drm: Mapping[str, Sequence[tuple[str, int, int]]]) -> Path:
    """A test-only sysfs root: ``class/drm/<name>/{dev,device}``, ``device`` a link to
    ``devices/pci0000:00/<PCI address>``; replaces what was there."""
    base = sysfs / "class" / "drm"
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    for pci, nodes in drm.items():
        device = sysfs / "devices" / "pci0000:00" / pci
        device.mkdir(parents=True, exist_ok=True)
        for name, major, minor in nodes:
            (base / name).mkdir()
            (base / name / "dev").write_text(f"{major}:{minor}\n")
            (base / name / "device").symlink_to(device)
    return sysfs


def layout(root: Path) -> PluginPaths:
    """The node layout under ``root``: kubelet dir, CDI dirs (etc, run), state dir, a sysfs with
    the AMD devices' DRM nodes."""
    paths = PluginPaths.under(root / "kubelet", root / "state", (root / "etc-cdi", root / "run-cdi"), DRIVER)
    for d in paths.cdi_dirs:
        d.mkdir(parents=True, exist_ok=True)
    return replace(paths, sysfs=fake_sysfs(root / "sys", AMD_DRM))


def toolkit_spec(paths: PluginPaths, names: list[str], file: str = "nvidia.yaml") -> Path:
    """A container-toolkit spec (kind nvidia.com/gpu) defining ``names`` in /etc/cdi."""
    path = paths.cdi_dirs[0] / file
    doc = {
        "cdiVersion": "0.5.0",
        "kind": "nvidia.com/gpu",
        "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=void"]},
        "devices": [{"name": n, "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}} for n in names],
    }
    path.write_text(
        json.dumps(doc)
        if file.endswith(".json")
        else "\n".join(
            ["cdiVersion: 0.5.0", "kind: nvidia.com/gpu", "devices:"]
            + [f"  - name: '{n}'\n    containerEdits: {{deviceNodes: [{{path: /dev/nvidia0}}]}}" for n in names]
        )
        + "\n"
    )
    return path


def claim(uid: str, name: str, results: list[tuple[str, str, str, str]], api_uid: str | None = None) -> dict[str, Any]:
    """A ResourceClaim with allocation results (request, driver, pool, device)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "ns", "uid": api_uid or uid},
        "status": {
            "allocation": {
                "devices": {
                    "results": [{"request": r, "driver": d, "pool": p, "device": dev} for r, d, p, dev in results]
                }
            }
        },
    }


def fake_api(claims: list[dict[str, Any]]) -> FakeKube:
    """The fake API allowed exactly the agent's calls, holding ``claims``."""
    fake = FakeKube(allowed=API_CALLS, served=["resource.k8s.io/v1"])
    for c in claims:
        fake.put(RESOURCE_CLAIMS, c)
    return fake


class Kubelet:
    """The kubelet's side: calls the plugin exactly as the kubelet does (v1 or v1beta1)."""

    def __init__(self, socket: Path, version: str = "v1") -> None:
        self.pb2 = dra_v1_pb2 if version == "v1" else dra_v1beta1_pb2
        grpc_mod = dra_v1_pb2_grpc if version == "v1" else dra_v1beta1_pb2_grpc
        self.channel = grpc.aio.insecure_channel(f"unix://{socket}")
        self.stub = grpc_mod.DRAPluginStub(self.channel)

    def _claims(self, refs: list[tuple[str, str]]) -> list[Any]:
        return [self.pb2.Claim(namespace="ns", name=name, uid=uid) for uid, name in refs]

    async def prepare(self, *refs: tuple[str, str], timeout: float = 5) -> Any:
        return await self.stub.NodePrepareResources(
            self.pb2.NodePrepareResourcesRequest(claims=self._claims(list(refs))), timeout=timeout
        )

    async def unprepare(self, *refs: tuple[str, str], timeout: float = 5) -> Any:
        return await self.stub.NodeUnprepareResources(
            self.pb2.NodeUnprepareResourcesRequest(claims=self._claims(list(refs))), timeout=timeout
        )

    async def close(self) -> None:
        await self.channel.close()


def remove_tree(root: Path) -> None:
    if os.path.isdir(root):
        shutil.rmtree(root, ignore_errors=True)
