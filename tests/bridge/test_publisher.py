"""The ResourceSlice publisher against the in-memory API server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dra_bridge.bridge.publisher import Publisher, is_subset
from dra_bridge.kube.errors import KubeConfigError
from dra_bridge.kube.resources import Resource
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.inventory.allocatable import InventoryDevice
from dra_bridge.translate.inventory.api_rules import SliceDevice
from dra_bridge.translate.inventory.slices import build_devices
from tests.bridge.conftest import FakeApi


def make_devices(catalog: Catalog, n: int, resource: str = "nvidia.com/gpu") -> list[SliceDevice]:
    inv = [InventoryDevice(resourceName=resource, deviceID=f"GPU-{i}", numaNodes=[0]) for i in range(n)]
    return build_devices(inv, catalog)[0]


async def test_second_identical_publish_makes_no_api_writes(catalog: Catalog, api: FakeApi) -> None:
    pub = Publisher(api, "node-a", "dra-bridge.io")
    pub.owner_uid = "uid-node-a"
    pub.update(make_devices(catalog, 2))
    assert await pub.sync() is True
    assert pub.stats.creates == 1
    pub.update(make_devices(catalog, 2))
    assert await pub.sync() is False
    assert pub.stats.writes == 1
    stored = next(iter(api.slices.values()))
    assert stored["apiVersion"] == "resource.k8s.io/v1"
    assert stored["metadata"]["ownerReferences"][0] == {
        "apiVersion": "v1",
        "kind": "Node",
        "name": "node-a",
        "uid": "uid-node-a",
        "controller": True,
    }
    assert stored["spec"]["nodeName"] == "node-a" and "allNodes" not in stored["spec"]


async def test_changed_inventory_bumps_the_pool_generation(catalog: Catalog, api: FakeApi) -> None:
    pub = Publisher(api, "node-a", "dra-bridge.io")
    pub.update(make_devices(catalog, 2))
    await pub.sync()
    pub.update(make_devices(catalog, 3))
    assert await pub.sync() is True
    (stored,) = api.slices.values()
    assert stored["spec"]["pool"]["generation"] == 1
    assert len(stored["spec"]["devices"]) == 3
    assert pub.stats.updates == 1


async def test_more_than_128_devices_split_and_shrinking_deletes_stale_slices(catalog: Catalog, api: FakeApi) -> None:
    pub = Publisher(api, "node-a", "dra-bridge.io")
    pub.update(make_devices(catalog, 300, "nvidia.com/gpu.shared"))
    await pub.sync()
    assert sorted(len(s["spec"]["devices"]) for s in api.slices.values()) == [44, 128, 128]
    pub.update(make_devices(catalog, 10, "nvidia.com/gpu.shared"))
    await pub.sync()
    assert list(api.slices) == ["node-a-dra-bridge-io-0"]
    assert pub.stats.deletes == 2
    assert api.slices["node-a-dra-bridge-io-0"]["spec"]["pool"] == {
        "name": "node-a",
        "generation": 1,
        "resourceSliceCount": 1,
    }


async def test_slice_deleted_by_someone_else_is_recreated(catalog: Catalog, api: FakeApi) -> None:
    pub = Publisher(api, "node-a", "dra-bridge.io")
    pub.update(make_devices(catalog, 1))
    await pub.sync()
    api.slices.clear()  # the kubelet wipes a node's slices when it restarts
    assert await pub.sync() is True
    assert pub.stats.creates == 2


async def test_withdrawing_deletes_only_our_pool(catalog: Catalog, api: FakeApi) -> None:
    other = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "vendor", "resourceVersion": "1"},
        "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-a", "pool": {"name": "node-a"}, "devices": []},
    }
    api.slices["vendor"] = other
    pub = Publisher(api, "node-a", "dra-bridge.io")
    pub.update(make_devices(catalog, 1))
    await pub.sync()
    pub.update(None)
    await pub.sync()
    assert list(api.slices) == ["vendor"]


async def test_v1beta1_is_used_when_it_is_the_only_served_version(catalog: Catalog) -> None:
    api = FakeApi(served=["resource.k8s.io/v1beta1"])
    pub = Publisher(api, "node-a", "dra-bridge.io")
    pub.update(make_devices(catalog, 1))
    await pub.sync()
    (stored,) = api.slices.values()
    assert stored["apiVersion"] == "resource.k8s.io/v1beta1"
    assert "basic" in stored["spec"]["devices"][0]
    assert await pub.sync() is False


async def test_no_served_version_is_a_configuration_error() -> None:
    pub = Publisher(FakeApi(served=[]), "node-a", "dra-bridge.io")
    with pytest.raises(KubeConfigError, match="serves none"):
        await pub.version()


async def test_api_errors_back_off_exponentially_then_recover(catalog: Catalog, api: FakeApi) -> None:
    sleeps: list[float] = []
    stop = asyncio.Event()

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 4:
            api.fail = ""

    pub = Publisher(api, "node-a", "dra-bridge.io", sleep=fake_sleep, backoff_initial=1, backoff_max=4)
    pub.update(make_devices(catalog, 1))
    api.fail = "API server down"
    task = asyncio.create_task(pub.run(stop, resync=60))
    for _ in range(100):
        await asyncio.sleep(0)
        if api.slices:
            break
    stop.set()
    await asyncio.wait_for(task, 1)
    assert sleeps == [1, 2, 4, 4]
    assert pub.stats.errors == 4 and pub.healthy
    assert len(api.slices) == 1


def test_empty_lists_match_fields_the_server_omitted() -> None:
    assert is_subset({"spec": {"devices": [], "x": 1}}, {"spec": {"x": 1, "extra": 2}})
    assert not is_subset({"spec": {"devices": [{"name": "a"}]}}, {"spec": {}})


async def test_a_slice_deleted_by_hand_comes_back_at_once_through_the_watch(catalog: Catalog, api: FakeApi) -> None:
    """With a resync of an hour, only the watch can bring the slice back within a second;
    our own writes wake a sync too, which lists and writes nothing."""
    pub = Publisher(api, "node-a", "dra-bridge.io")
    pub.update(make_devices(catalog, 2))
    stop = asyncio.Event()
    tasks = [asyncio.create_task(pub.run(stop, resync=3600)), asyncio.create_task(pub.watch(stop))]
    try:

        async def until(check: object, seconds: float = 2.0) -> None:
            async with asyncio.timeout(seconds):
                while not check():  # type: ignore[operator]
                    await asyncio.sleep(0.01)

        await until(lambda: len(api.slices) == 1)
        await asyncio.sleep(0.2)
        assert pub.stats.writes == 1, "the watch event of our own create must not cause a write"
        (name,) = api.slices
        api.delete_by_hand(name)
        await until(lambda: name in api.slices)
        assert pub.stats.creates == 2 and pub.stats.writes == 2
    finally:
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_failing_watch_backs_off_and_watches_again(api: FakeApi) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 3:
            api.fail = ""
        await asyncio.sleep(0)

    pub = Publisher(api, "node-a", "dra-bridge.io", sleep=sleep)
    api.fail = "connection refused"
    stop = asyncio.Event()
    task = asyncio.create_task(pub.watch(stop, timeout=1))
    try:
        async with asyncio.timeout(2):
            while not api._watchers:
                await asyncio.sleep(0.01)
        assert slept == [1.0, 2.0, 4.0]
    finally:
        stop.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_an_unexpected_error_in_a_sync_is_retried_not_fatal(
    catalog: Catalog, api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    slept: list[float] = []
    real = api.list
    calls = 0

    async def odd_then_fine(resource: Resource, namespace: str | None = None, **selectors: Any) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ValueError("a slice under our selector that we cannot read")
        return await real(resource, namespace, **selectors)

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(api, "list", odd_then_fine)
    pub = Publisher(api, "node-a", "dra-bridge.io", sleep=sleep)
    pub.update(make_devices(catalog, 1))
    stop = asyncio.Event()
    task = asyncio.create_task(pub.run(stop, resync=3600))
    try:
        async with asyncio.timeout(2):
            while not api.slices:
                await asyncio.sleep(0.01)
        assert slept == [1.0] and pub.stats.errors == 1 and pub.healthy
    finally:
        stop.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_watch_that_ends_at_once_without_events_is_not_restarted_in_a_tight_loop(api: FakeApi) -> None:
    slept: list[float] = []
    stop = asyncio.Event()

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 4:
            stop.set()
        await asyncio.sleep(0)

    pub = Publisher(api, "node-a", "dra-bridge.io", sleep=sleep)
    await asyncio.wait_for(pub.watch(stop, timeout=0), 2)  # an empty pool: each watch ends at once
    assert slept == [1.0, 2.0, 4.0, 8.0]
