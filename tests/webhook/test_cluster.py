"""The watch-fed ClusterView: what events do to the node-mode, quota and KEP-5004 caches."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes_asyncio import client

from dra_bridge.kube.api import ApiServer
from dra_bridge.kube.backoff import Backoff
from dra_bridge.kube.client import Client
from dra_bridge.kube.errors import Unavailable
from dra_bridge.kube.resources import NODES
from dra_bridge.webhook.cluster import ClusterView


def node(name: str, mode: str | None) -> dict[str, object]:
    return {"metadata": {"name": name, "labels": {"dra-bridge.io/mode": mode} if mode else {}}}


def quota(ns: str, name: str, *keys: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": ns}, "spec": {"hard": {k: "4" for k in keys}}}


def test_node_mode_follows_label_changes_and_deletion() -> None:
    view = ClusterView()
    view.replace("Node", [node("n1", "legacy"), node("n2", None)])
    assert (view.node_mode("n1"), view.node_mode("n2")) == ("legacy", None)
    view.apply("Node", "MODIFIED", node("n1", "dra"))
    assert view.node_mode("n1") == "dra"
    view.apply("Node", "DELETED", node("n1", "dra"))
    assert view.node_mode("n1") is None


def test_quota_keys_are_the_union_of_a_namespaces_quotas() -> None:
    view = ClusterView()
    view.replace(
        "ResourceQuota",
        [quota("a", "q1", "requests.nvidia.com/gpu"), quota("a", "q2", "pods"), quota("b", "q1", "cpu")],
    )
    assert view.quota_keys("a") == frozenset({"requests.nvidia.com/gpu", "pods"})
    view.apply("ResourceQuota", "DELETED", quota("a", "q1"))
    assert view.quota_keys("a") == frozenset({"pods"})


def test_relist_forgets_objects_deleted_while_disconnected() -> None:
    view = ClusterView()
    view.replace("Node", [node("n1", "dra")])
    view.replace("Node", [])
    assert view.node_mode("n1") is None and "Node" in view.synced


def kep_class(name: str, expression: str) -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "spec": {"extendedResourceName": "nvidia.com/gpu", "selectors": [{"cel": {"expression": expression}}]},
    }


def gpu_slice(node_name: str, product: str) -> dict[str, object]:
    return {
        "metadata": {"name": f"{node_name}-gpu"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": node_name,
            "devices": [{"name": "gpu-0", "attributes": {"productName": {"string": product}}}],
        },
    }


def test_kep5004_counts_classes_that_select_a_device_on_a_dra_node() -> None:
    view = ClusterView()
    view.replace("Node", [node("n1", "dra"), node("n2", None)])
    view.replace("ResourceSlice", [gpu_slice("n1", "A100"), gpu_slice("n2", "T4")])
    view.replace(
        "DeviceClass",
        [
            kep_class("t4-only", 'device.attributes["gpu.nvidia.com"].productName == "T4"'),
            {"metadata": {"name": "plain"}, "spec": {}},
        ],
    )
    assert dict(view.kep5004()) == {}  # T4 devices exist only on a legacy node
    view.apply("DeviceClass", "ADDED", kep_class("gpu.nvidia.com", 'device.driver == "gpu.nvidia.com"'))
    assert dict(view.kep5004()) == {"nvidia.com/gpu": "gpu.nvidia.com"}
    view.apply("Node", "MODIFIED", node("n1", "legacy"))
    assert dict(view.kep5004()) == {}


def test_kep5004_ignores_selectors_that_fail_at_runtime() -> None:
    view = ClusterView()
    view.replace("Node", [node("n1", "dra")])
    view.replace("ResourceSlice", [gpu_slice("n1", "A100")])
    view.replace("DeviceClass", [kep_class("broken", 'device.attributes["x.com"].missing == "y"')])
    assert dict(view.kep5004()) == {}


class Recorder:
    """An injected sleep: records each pause, sets ``stop`` after ``limit`` pauses."""

    def __init__(self, stop: asyncio.Event, limit: int) -> None:
        self.delays: list[float] = []
        self.stop, self.limit = stop, limit

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        if len(self.delays) >= self.limit:
            self.stop.set()


async def feed_with_script(
    script: list[BaseException | bool], limit: int, monkeypatch: pytest.MonkeyPatch
) -> list[float]:
    """Run one ClusterView feed whose list-and-watch attempts follow ``script``
    (an exception is raised, a bool is returned; unreachable after the script)."""
    stop = asyncio.Event()
    sleep = Recorder(stop, limit)
    view = ClusterView(sleep=sleep)
    steps = iter(script)

    async def attempt(*_args: object) -> bool:
        step = next(steps, Unavailable("connection refused"))
        if isinstance(step, BaseException):
            raise step
        return step

    monkeypatch.setattr(view, "_list_and_watch", attempt)
    await asyncio.wait_for(view._feed(None, "Node", NODES, stop), 5)  # type: ignore[arg-type]
    return sleep.delays


async def test_an_unreachable_api_server_is_retried_with_exponential_backoff_capped_at_30s(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    delays = await feed_with_script([], 8, monkeypatch)
    assert delays == [1, 2, 4, 8, 16, 30, 30, 30]
    assert "relisting in 16s" in caplog.text


async def test_backoff_resets_after_a_watch_that_worked(monkeypatch: pytest.MonkeyPatch) -> None:
    script: list[BaseException | bool] = [
        Unavailable("refused"),
        Unavailable("refused"),
        Unavailable("refused"),
        True,
        Unavailable("server disconnected"),
        Unavailable("503", 503),
    ]
    assert await feed_with_script(script, 4, monkeypatch) == [1, 2, 4, 1]


async def test_a_watch_ending_in_an_error_event_is_relisted_after_a_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    assert await feed_with_script([False, False], 3, monkeypatch) == [1, 2, 4]


def test_backoff_schedule() -> None:
    b = Backoff(initial=0.5, cap=3)
    assert [b.next() for _ in range(5)] == [0.5, 1, 2, 3, 3]
    b.reset()
    assert b.next() == 0.5
    with pytest.raises(ValueError):
        Backoff(initial=2, cap=1)


async def test_every_kind_backs_off_against_a_closed_port(caplog: pytest.LogCaptureFixture) -> None:
    from tests.webhook.test_api_unreachable import closed_port

    stop = asyncio.Event()
    sleep = Recorder(stop, 16)
    view = ClusterView(sleep=sleep)
    api = Client(client.ApiClient(client.Configuration(host=f"https://127.0.0.1:{closed_port()}")))
    try:
        await asyncio.wait_for(view.run(ApiServer(api), "resource.k8s.io/v1", stop), 10)
    finally:
        await api.close()
    assert sorted(sleep.delays)[:4] == [1, 1, 1, 1] and 4 in sleep.delays
    assert set(sleep.delays) <= {1, 2, 4, 8, 16, 30}
    assert not view.synced and "relisting in 2s" in caplog.text


def test_quota_keys_are_unknown_until_the_quotas_are_listed() -> None:
    from dra_bridge.translate.plan.cluster_state import QuotaUnknown

    view = ClusterView()
    unknown = view.quota_keys("a")
    assert isinstance(unknown, QuotaUnknown) and "not listed yet" in unknown.cause
    view.replace("ResourceQuota", [])
    assert view.quota_keys("a") == frozenset()
