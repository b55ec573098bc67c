"""The DRA kubelet plugin against a fake kubelet: registration, NodePrepareResources and
NodeUnprepareResources over unix sockets (v1 and v1beta1), per-claim errors, idempotency,
restart from the checkpoint alone, reboot, and SIGKILL at each step of a prepare."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from dra_bridge.bridge.health import Metrics
from dra_bridge.bridge.kubeletapi import registration_pb2, registration_pb2_grpc
from dra_bridge.bridge.kubeletplugin.cdi_specs import SpecIndex
from dra_bridge.bridge.kubeletplugin.claims import CRASH_POINT_ENV, CRASH_POINTS
from dra_bridge.bridge.kubeletplugin.node_plugin import Plugin, PluginPaths, start_plugin
from dra_bridge.bridge.ports import PrepareGate, StaticView
from dra_bridge.kube.errors import Unavailable
from dra_bridge.kube.fake import FakeKube
from dra_bridge.kube.resources import RESOURCE_CLAIMS
from tests.bridge.draplugin_fixtures import (
    AMD_DRM,
    AMD_PCI,
    DRIVER,
    INVENTORY,
    NODE,
    NVIDIA_UUID,
    UID,
    Kubelet,
    claim,
    fake_api,
    fake_sysfs,
    layout,
    remove_tree,
    short_dir,
    toolkit_spec,
)

ROOT = Path(__file__).resolve().parents[2]


async def v1() -> str:
    return "resource.k8s.io/v1"


class Node:
    """One node: layout, fake API, the plugin, the kubelet client; restartable."""

    def __init__(self, root: Path, claims: list[dict[str, Any]]) -> None:
        self.paths: PluginPaths = layout(root)
        self.api: FakeKube = fake_api(claims)
        self.boot = "boot-1"
        self.view = StaticView(INVENTORY)
        self.metrics = Metrics()
        self.plugin: Plugin | None = None

    async def start(self) -> Plugin:
        self.plugin = await start_plugin(
            self.paths,
            self.api,
            NODE,
            self.view,
            metrics=self.metrics,
            boot_id=lambda: self.boot,
        )
        return self.plugin

    async def stop(self) -> None:
        if self.plugin is not None:
            await self.plugin.stop()
            self.plugin = None

    def specs(self) -> list[str]:
        return sorted(p.name for p in self.paths.cdi_dirs[1].iterdir() if not p.name.startswith("."))

    def checkpoint(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.paths.state_dir / "prepared-claims.json").read_text())
        return data


@pytest.fixture
async def node() -> AsyncIterator[Node]:
    root = short_dir()
    n = Node(
        root,
        [
            claim(UID[0], "nv", [("gpu/sub", DRIVER, NODE, "gpu-nv0"), ("vendor", "gpu.nvidia.com", NODE, "gpu-0")]),
            claim(UID[1], "amd", [("a", DRIVER, NODE, "gpu-amd0"), ("b", DRIVER, NODE, "gpu-amd1")]),
            claim(UID[2], "replaced", [("a", DRIVER, NODE, "gpu-amd0")], api_uid=UID[9]),
            claim(UID[3], "theirs", [("a", "gpu.nvidia.com", NODE, "gpu-0")]),
            claim(UID[4], "no-toolkit", [("a", DRIVER, NODE, "gpu-nv1")]),
            claim(UID[5], "unknown-device", [("a", DRIVER, NODE, "gpu-gone")]),
            {
                "metadata": {"name": "malformed", "namespace": "ns", "uid": UID[6]},
                "status": {"allocation": {"devices": {"results": [{"request": 3}]}}},
            },
        ],
    )
    toolkit_spec(n.paths, [NVIDIA_UUID, "0", "all"])
    await n.start()
    yield n
    await n.stop()
    remove_tree(root)


async def test_registration_get_info_and_status(node: Node) -> None:
    async with grpc.aio.insecure_channel(f"unix://{node.paths.registration_socket}") as ch:
        stub = registration_pb2_grpc.RegistrationStub(ch)
        info = await stub.GetInfo(registration_pb2.InfoRequest(), timeout=5)
        assert (info.type, info.name, info.endpoint) == ("DRAPlugin", DRIVER, str(node.paths.dra_socket))
        assert list(info.supported_versions) == ["v1.DRAPlugin", "v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth"]
        assert node.paths.registration_socket.name == "dra-bridge.io-reg.sock"
        assert str(node.paths.dra_socket).endswith("/kubelet/plugins/dra-bridge.io/dra.sock")
        await stub.NotifyRegistrationStatus(registration_pb2.RegistrationStatus(plugin_registered=False, error="x"))
        assert node.plugin is not None and (node.plugin.registration.registered, node.plugin.registration.error) == (
            False,
            "x",
        )
    assert await node.plugin.alive() == ""


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
async def test_empty_prepare_and_unprepare_succeed(node: Node, version: str) -> None:
    kubelet = Kubelet(node.paths.dra_socket, version)
    assert dict((await kubelet.prepare()).claims) == {}
    assert dict((await kubelet.unprepare()).claims) == {}
    await kubelet.close()


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
async def test_nvidia_claim_gets_the_toolkit_device_and_no_spec_of_ours(node: Node, version: str) -> None:
    kubelet = Kubelet(node.paths.dra_socket, version)
    entry = (await kubelet.prepare((UID[0], "nv"))).claims[UID[0]]
    assert entry.error == ""
    [device] = entry.devices  # the other driver's result is not ours
    assert (list(device.request_names), device.pool_name, device.device_name, list(device.cdi_device_ids)) == (
        ["gpu"],
        NODE,
        "gpu-nv0",
        [f"nvidia.com/gpu={NVIDIA_UUID}"],
    )
    assert node.specs() == []
    assert list(node.checkpoint()["claims"]) == [UID[0]]
    await kubelet.close()


async def test_recipe_claim_gets_one_spec_named_by_its_uid_and_unprepare_removes_it(node: Node) -> None:
    kubelet = Kubelet(node.paths.dra_socket)
    entry = (await kubelet.prepare((UID[1], "amd"))).claims[UID[1]]
    assert entry.error == ""
    ids = [list(d.cdi_device_ids) for d in entry.devices]
    assert ids == [[f"dra-bridge.io/claim={UID[1]}-gpu-amd0"], [f"dra-bridge.io/claim={UID[1]}-gpu-amd1"]]
    assert node.specs() == [f"dra-bridge.io-claim_{UID[1]}.json"]
    spec = json.loads((node.paths.cdi_dirs[1] / node.specs()[0]).read_text())
    assert spec["kind"] == "dra-bridge.io/claim" and spec["cdiVersion"] == "0.5.0"
    assert [d["name"] for d in spec["devices"]] == [f"{UID[1]}-gpu-amd0", f"{UID[1]}-gpu-amd1"]
    assert spec["devices"][0]["containerEdits"] == {  # the real nodes at canonical paths, never a by-path link
        "deviceNodes": [
            {"path": "/dev/dri/card0", "type": "c", "major": 226, "minor": 0},
            {"path": "/dev/dri/renderD128", "type": "c", "major": 226, "minor": 128},
        ]
    }
    assert spec["containerEdits"] == {"deviceNodes": [{"path": "/dev/kfd"}]}
    assert f"{UID[1]}-gpu-amd0" in "".join(SpecIndex(node.paths.cdi_dirs).names())  # our spec resolves
    assert node.plugin is not None and node.plugin.preparer.count == 1
    unprepared = await kubelet.unprepare((UID[1], "amd"), (UID[8], "never-prepared"))
    assert {u: e.error for u, e in unprepared.claims.items()} == {UID[1]: "", UID[8]: ""}
    assert node.specs() == [] and node.checkpoint()["claims"] == {}
    await kubelet.close()


async def test_bad_claims_get_their_own_error_and_the_good_one_succeeds(node: Node) -> None:
    kubelet = Kubelet(node.paths.dra_socket)
    response = await kubelet.prepare(
        (UID[0], "nv"),
        (UID[2], "replaced"),
        (UID[3], "theirs"),
        (UID[4], "no-toolkit"),
        (UID[5], "unknown-device"),
        (UID[6], "malformed"),
        (UID[7], "missing"),
    )
    errors = {uid: e.error for uid, e in response.claims.items()}
    assert errors[UID[0]] == ""
    assert "claim ns/replaced" in errors[UID[2]] and "replaced" in errors[UID[2]] and UID[9] in errors[UID[2]]
    assert "no allocation result has driver dra-bridge.io" in errors[UID[3]]
    assert "nvidia.com/gpu=GPU-missing" in errors[UID[4]] and "nvidia-ctk cdi generate" in errors[UID[4]]
    assert "gpu-gone is not in this node's recorded inventory" in errors[UID[5]]
    assert "claim ns/malformed" in errors[UID[6]] and "results[0]" in errors[UID[6]]
    assert "claim ns/missing" in errors[UID[7]] and "cannot read the ResourceClaim" in errors[UID[7]]
    assert list(node.checkpoint()["claims"]) == [UID[0]] and node.specs() == []
    text = node.metrics.text().decode()
    assert 'dra_bridge_claim_operations_total{op="prepare"} 7.0' in text
    assert 'dra_bridge_claim_operation_errors_total{op="prepare"} 6.0' in text
    assert 'dra_bridge_claim_operation_seconds_count{op="prepare"} 1.0' in text
    await kubelet.close()


async def test_toolkit_device_is_checked_at_every_prepare(node: Node) -> None:
    kubelet = Kubelet(node.paths.dra_socket)
    assert (await kubelet.prepare((UID[0], "nv"))).claims[UID[0]].error == ""
    (node.paths.cdi_dirs[0] / "nvidia.yaml").unlink()
    assert "no longer resolve" in (await kubelet.prepare((UID[0], "nv"))).claims[UID[0]].error
    # two specs of one directory defining the same name: both dropped, the name does not resolve
    toolkit_spec(node.paths, [NVIDIA_UUID], "a.json")
    toolkit_spec(node.paths, [NVIDIA_UUID], "b.json")
    assert "no longer resolve" in (await kubelet.prepare((UID[0], "nv"))).claims[UID[0]].error
    (node.paths.cdi_dirs[0] / "b.json").unlink()
    assert (await kubelet.prepare((UID[0], "nv"))).claims[UID[0]].error == ""
    await kubelet.close()


async def test_idempotent_and_restart_from_the_checkpoint_alone(node: Node) -> None:
    kubelet = Kubelet(node.paths.dra_socket)
    first = await kubelet.prepare((UID[1], "amd"), (UID[0], "nv"))
    assert (await kubelet.prepare((UID[1], "amd"), (UID[0], "nv"))) == first
    await kubelet.close()
    await node.stop()
    node.api.remove(RESOURCE_CLAIMS, "amd", "ns")  # the claim is gone, the API is down, the node left DRA mode
    node.api.fail = Unavailable("down")
    node.view.gate = PrepareGate(True, False, "the node is not in DRA mode (dra-bridge.io/mode=dra)")
    await node.start()
    kubelet = Kubelet(node.paths.dra_socket, "v1beta1")
    again = await kubelet.prepare((UID[1], "amd"))
    assert [list(d.cdi_device_ids) for d in again.claims[UID[1]].devices] == [
        list(d.cdi_device_ids) for d in first.claims[UID[1]].devices
    ]
    assert "not in DRA mode" in (await kubelet.prepare((UID[8], "new"))).claims[UID[8]].error
    assert {u: e.error for u, e in (await kubelet.unprepare((UID[1], "amd"), (UID[0], "nv"))).claims.items()} == {
        UID[1]: "",
        UID[0]: "",
    }
    assert node.specs() == [] and node.checkpoint()["claims"] == {}
    await kubelet.close()


async def test_a_reboot_rewrites_missing_specs_of_prepared_claims(node: Node) -> None:
    kubelet = Kubelet(node.paths.dra_socket)
    await kubelet.prepare((UID[1], "amd"))
    await kubelet.close()
    await node.stop()
    written = (node.paths.cdi_dirs[1] / node.specs()[0]).read_bytes()
    (node.paths.cdi_dirs[1] / node.specs()[0]).unlink()  # /var/run/cdi is tmpfs
    node.boot = "boot-2"
    await node.start()
    assert (node.paths.cdi_dirs[1] / f"dra-bridge.io-claim_{UID[1]}.json").read_bytes() == written
    assert node.checkpoint()["bootID"] == "boot-2"
    (node.paths.cdi_dirs[1] / f"dra-bridge.io-claim_{UID[1]}.json").unlink()  # lost later: Prepare rewrites it
    kubelet = Kubelet(node.paths.dra_socket)
    assert (await kubelet.prepare((UID[1], "amd"))).claims[UID[1]].error == ""
    assert node.specs() == [f"dra-bridge.io-claim_{UID[1]}.json"]
    await kubelet.close()


def test_spec_index_parses_a_file_again_only_when_it_changed(tmp_path: Path) -> None:
    paths = layout(tmp_path)
    spec = toolkit_spec(paths, ["GPU-a"])
    index = SpecIndex(paths.cdi_dirs)
    assert index.resolves(["nvidia.com/gpu=GPU-a", "nvidia.com/gpu=GPU-b"]) == {
        "nvidia.com/gpu=GPU-a": True,
        "nvidia.com/gpu=GPU-b": False,
    }
    index.names()
    assert index.parses == 1
    toolkit_spec(paths, ["GPU-a", "GPU-b"])
    os.utime(spec, ns=(1, 2))
    assert index.resolves(["nvidia.com/gpu=GPU-b"]) == {"nvidia.com/gpu=GPU-b": True}
    assert index.parses == 2
    (paths.cdi_dirs[0] / "broken.json").write_text("{not json")
    assert "nvidia.com/gpu=GPU-b" in index.names()  # an unparsable file defines nothing


@contextlib.contextmanager
def _plugin_process(root: Path, claims: Path, crash: str | None) -> Iterator[subprocess.Popen[str]]:
    """The plugin in a child process, ready; killed, waited for and its pipe closed on leaving."""
    env = {k: v for k, v in os.environ.items() if k != CRASH_POINT_ENV}
    if crash:
        env[CRASH_POINT_ENV] = crash
    with subprocess.Popen(
        [sys.executable, "-m", "tests.bridge.plugin_process", str(root), str(claims), "boot-1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            yield proc
        finally:
            proc.kill()


@pytest.mark.timeout(40)
@pytest.mark.parametrize("crash", CRASH_POINTS)
async def test_sigkill_at_each_step_of_prepare_leaves_no_stray_spec(crash: str) -> None:
    root = short_dir()
    try:
        paths = layout(root)
        claims = root / "claims.json"
        claims.write_text(json.dumps([claim(UID[1], "amd", [("a", DRIVER, NODE, "gpu-amd0")])]))
        with _plugin_process(root, claims, crash) as proc:
            kubelet = Kubelet(paths.dra_socket)
            with pytest.raises(grpc.RpcError):
                await kubelet.prepare((UID[1], "amd"))
            assert await asyncio.to_thread(proc.wait, 10) == -signal.SIGKILL
            await kubelet.close()
        specs_after_crash = sorted(p.name for p in paths.cdi_dirs[1].iterdir())
        assert specs_after_crash == ([] if crash == "before-spec" else [f"dra-bridge.io-claim_{UID[1]}.json"])
        with _plugin_process(root, claims, None):  # restart: a spec without a checkpoint entry is removed
            checkpointed = (
                json.loads((paths.state_dir / "prepared-claims.json").read_text())["claims"]
                if (paths.state_dir / "prepared-claims.json").exists()
                else {}
            )
            expected = [f"dra-bridge.io-claim_{UID[1]}.json"] if UID[1] in checkpointed else []
            assert sorted(p.name for p in paths.cdi_dirs[1].iterdir()) == expected
            assert (UID[1] in checkpointed) == (crash == "after-checkpoint")
            kubelet = Kubelet(paths.dra_socket)
            assert (await kubelet.prepare((UID[1], "amd"))).claims[UID[1]].error == ""  # the kubelet retries
            assert sorted(p.name for p in paths.cdi_dirs[1].iterdir()) == [f"dra-bridge.io-claim_{UID[1]}.json"]
            assert (await kubelet.unprepare((UID[1], "amd"))).claims[UID[1]].error == ""
            assert sorted(p.name for p in paths.cdi_dirs[1].iterdir()) == []
            await kubelet.close()
    finally:
        remove_tree(root)


async def test_a_reboot_that_swaps_the_card_order_gives_the_claim_the_device_at_its_pci_address(node: Node) -> None:
    """The boot ID changed and probe order swapped the DRM minors: the spec is written again from
    each device's PCI address (kept in the checkpoint), never from the host paths of before."""
    kubelet = Kubelet(node.paths.dra_socket)
    assert (await kubelet.prepare((UID[1], "amd"))).claims[UID[1]].error == ""
    await kubelet.close()
    await node.stop()
    assert [d["pciAddress"] for d in node.checkpoint()["claims"][UID[1]]["devices"]] == [AMD_PCI, "0000:04:00.0"]
    swapped = {AMD_PCI: AMD_DRM["0000:04:00.0"], "0000:04:00.0": AMD_DRM[AMD_PCI]}
    fake_sysfs(node.paths.sysfs, swapped)
    node.boot = "boot-2"
    await node.start()  # the spec survived (say, in /etc/cdi): rewritten all the same
    spec = json.loads((node.paths.cdi_dirs[1] / f"dra-bridge.io-claim_{UID[1]}.json").read_text())
    nodes = {
        d["name"].rsplit("-", 1)[-1]: [n["path"] for n in d["containerEdits"]["deviceNodes"]] for d in spec["devices"]
    }
    assert nodes == {
        "amd0": ["/dev/dri/card1", "/dev/dri/renderD129"],
        "amd1": ["/dev/dri/card0", "/dev/dri/renderD128"],
    }
    fake_sysfs(node.paths.sysfs, {"0000:04:00.0": AMD_DRM[AMD_PCI]})  # the GPU vanished: no stale path written
    (node.paths.cdi_dirs[1] / f"dra-bridge.io-claim_{UID[1]}.json").unlink()
    kubelet = Kubelet(node.paths.dra_socket)
    error = (await kubelet.prepare((UID[1], "amd"))).claims[UID[1]].error
    assert f"no DRM card or render node for its PCI address {AMD_PCI}" in error and node.specs() == []
    await kubelet.close()
