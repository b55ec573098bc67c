"""Two agents of one node during a DaemonSet rolling update with surge (kubelets 1.33+): each
names its registration and DRA sockets with its pod UID (``--pod-uid``), both serve at once, and
one stopping removes only its own sockets."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import grpc
import pytest

from dra_bridge.bridge.kubeletapi import registration_pb2, registration_pb2_grpc
from dra_bridge.bridge.node_plugin import Plugin, start_plugin
from tests.bridge.draplugin_fixtures import INVENTORY, NODE, Kubelet, fake_api, layout, remove_tree, short_dir

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
            plugins.append(await start_plugin(paths, fake_api([]), NODE, lambda: INVENTORY, v1, boot_id=lambda: "b"))
        yield plugins
    finally:
        for p in plugins:
            await p.stop()
        remove_tree(root)


async def _info(plugin: Plugin) -> registration_pb2.PluginInfo:
    async with grpc.aio.insecure_channel(f"unix://{plugin.paths.registration_socket}") as ch:
        stub = registration_pb2_grpc.RegistrationStub(ch)  # type: ignore[no-untyped-call]
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
