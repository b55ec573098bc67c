"""Two agents of one node during a DaemonSet rolling update with surge (kubelets 1.33+): each
names its registration and DRA sockets with its pod UID (``--pod-uid``), both serve at once, and
one stopping removes only its own sockets; start-up recovery runs under the file lock, and both
report the prepared count on disk (docs/design.md D44)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest

from dra_bridge.bridge.file_lock import LOCK_FILE, file_lock
from dra_bridge.bridge.kubeletapi import registration_pb2, registration_pb2_grpc
from dra_bridge.bridge.kubeletplugin.cdi_specs import write_spec
from dra_bridge.bridge.kubeletplugin.checkpoint import Checkpoint, CheckpointStore, PreparedClaim
from dra_bridge.bridge.kubeletplugin.node_plugin import Plugin, start_plugin
from dra_bridge.bridge.ports import StaticView
from tests.bridge.draplugin_fixtures import (
    DRIVER,
    INVENTORY,
    NODE,
    NVIDIA_UUID,
    UID,
    Kubelet,
    claim,
    fake_api,
    layout,
    remove_tree,
    short_dir,
    toolkit_spec,
)

POD_UIDS = ("6f1c2a3b-0000-4000-8000-00000000000a", "6f1c2a3b-0000-4000-8000-00000000000b")


async def v1() -> str:
    return "resource.k8s.io/v1"


@pytest.fixture
async def two_agents() -> AsyncIterator[list[Plugin]]:
    root = short_dir()
    base = layout(root)
    plugins: list[Plugin] = []
    try:
        for uid in POD_UIDS:
            paths = replace(base, pod_uid=uid)
            plugins.append(await start_plugin(paths, fake_api([]), NODE, StaticView(INVENTORY), boot_id=lambda: "b"))
        yield plugins
    finally:
        for p in plugins:
            await p.stop()
        remove_tree(root)


async def _info(plugin: Plugin) -> registration_pb2.PluginInfo:
    async with grpc.aio.insecure_channel(f"unix://{plugin.paths.registration_socket}") as ch:
        stub = registration_pb2_grpc.RegistrationStub(ch)
        info: registration_pb2.PluginInfo = await stub.GetInfo(registration_pb2.InfoRequest(), timeout=5)
        return info


async def test_two_agents_sockets_coexist_and_each_removes_only_its_own(two_agents: list[Plugin]) -> None:
    old, new = two_agents
    registry = old.paths.registry_dir
    assert sorted(p.name for p in registry.iterdir()) == sorted(f"dra-bridge.io-{u}-reg.sock" for u in POD_UIDS)
    assert sorted(p.name for p in old.paths.plugin_dir.iterdir()) == sorted(f"dra-{u}.sock" for u in POD_UIDS)
    for plugin in two_agents:
        info = await _info(plugin)
        assert (info.name, info.endpoint) == ("dra-bridge.io", str(plugin.paths.dra_socket))
        assert await plugin.alive() == ""
        kubelet = Kubelet(plugin.paths.dra_socket)
        assert dict((await kubelet.prepare()).claims) == {}
        await kubelet.close()
    await old.stop()  # the old pod terminates after the new one is ready
    assert not old.paths.registration_socket.exists() and not old.paths.dra_socket.exists()
    assert new.paths.registration_socket.exists() and new.paths.dra_socket.exists()
    assert await new.alive() == ""


async def test_two_agents_share_the_checkpoint_without_losing_a_claim() -> None:
    # the old instance prepares a claim after the new one loaded the checkpoint (a call in flight
    # while the kubelet switches): the new instance's next prepare must keep it
    root = short_dir()
    base = layout(root)
    toolkit_spec(base, [NVIDIA_UUID])
    claims = [
        claim(UID[0], "a", [("gpu", DRIVER, NODE, "gpu-nv0")]),
        claim(UID[1], "b", [("gpu", DRIVER, NODE, "gpu-amd0")]),
    ]
    plugins = [
        await start_plugin(replace(base, pod_uid=u), fake_api(claims), NODE, StaticView(INVENTORY), boot_id=lambda: "b")
        for u in POD_UIDS
    ]
    old, new = (Kubelet(p.paths.dra_socket) for p in plugins)
    try:
        assert (await old.prepare((UID[0], "a"))).claims[UID[0]].error == ""
        assert (await new.prepare((UID[1], "b"))).claims[UID[1]].error == ""
        on_disk = json.loads((base.state_dir / "prepared-claims.json").read_text())["claims"]
        assert set(on_disk) == {UID[0], UID[1]}
        assert (await new.unprepare((UID[0], "a"))).claims[UID[0]].error == ""  # the other instance's claim
        on_disk = json.loads((base.state_dir / "prepared-claims.json").read_text())["claims"]
        assert set(on_disk) == {UID[1]}
    finally:
        for k in (old, new):
            await k.close()
        for p in plugins:
            await p.stop()
        remove_tree(root)


async def test_a_waiter_cancelled_on_the_file_lock_never_keeps_it(tmp_path: Path) -> None:
    lock = tmp_path / "state" / LOCK_FILE
    async with file_lock(lock):
        waiter = asyncio.ensure_future(_hold(lock))
        await asyncio.sleep(0.2)
        assert not waiter.done()  # blocked on the held lock
        waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await asyncio.sleep(0.2)  # the cancelled waiter's thread took the lock and closed it again
    async with asyncio.timeout(2), file_lock(lock):
        pass


async def _hold(lock: Path) -> None:
    async with file_lock(lock):
        await asyncio.sleep(10)


async def test_start_up_recovery_waits_for_the_other_instance_between_its_spec_and_its_entry() -> None:
    # the old instance holds the lock, has written a claim's CDI spec and not yet its checkpoint
    # entry; the new one starting now must not take that spec for a crash's leftover
    root = short_dir()
    base = layout(root)
    store = CheckpointStore(base.state_dir, lambda: "b")
    try:
        async with file_lock(base.state_dir / LOCK_FILE):
            spec = write_spec(
                base.spec_dir,
                UID[0],
                {
                    "cdiVersion": "0.5.0",
                    "kind": "dra-bridge.io/claim",
                    "devices": [{"name": "gpu-nv0", "containerEdits": {"env": ["A=1"]}}],
                },
            )
            starting = asyncio.ensure_future(
                start_plugin(
                    replace(base, pod_uid=POD_UIDS[1]), fake_api([]), NODE, StaticView(INVENTORY), boot_id=lambda: "b"
                )
            )
            await asyncio.sleep(0.3)
            assert spec.exists(), "the other instance's spec was removed while it held the lock"
            store.save(Checkpoint(boot_id="b", claims={UID[0]: PreparedClaim("ns", "a", ())}))
        plugin = await starting
        try:
            assert spec.exists() and plugin.prepared_count == 1
        finally:
            await plugin.stop()
    finally:
        remove_tree(root)


async def test_both_instances_report_the_prepared_count_on_disk() -> None:
    # the kubelet calls the newest instance; the old one's count must follow the checkpoint
    root = short_dir()
    base = layout(root)
    toolkit_spec(base, [NVIDIA_UUID])
    claims = [claim(UID[0], "a", [("gpu", DRIVER, NODE, "gpu-nv0")])]
    plugins = [
        await start_plugin(replace(base, pod_uid=u), fake_api(claims), NODE, StaticView(INVENTORY), boot_id=lambda: "b")
        for u in POD_UIDS
    ]
    old, new = plugins
    kubelet = Kubelet(new.paths.dra_socket)
    try:
        assert (await kubelet.prepare((UID[0], "a"))).claims[UID[0]].error == ""
        for plugin in plugins:
            plugin.reread_checkpoint()  # each tick
        assert (old.prepared_count, new.prepared_count) == (1, 1)
        assert old.prepared_devices() == new.prepared_devices() != frozenset()
        assert (await kubelet.unprepare((UID[0], "a"))).claims[UID[0]].error == ""
        for plugin in plugins:
            plugin.reread_checkpoint()
        assert (old.prepared_count, new.prepared_count) == (0, 0)
    finally:
        await kubelet.close()
        for p in plugins:
            await p.stop()
        remove_tree(root)
