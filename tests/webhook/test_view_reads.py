"""What the webhook's cluster view reads, and how (issue 27, item 3): every list paged, Nodes
and Namespaces metadata-only (the API server trims them: only names and labels are read), and
ResourceSlices only once a setting reads them (``deferToKEP5004``). The same against the real
API server, with the webhook's peak memory at 5,000 Nodes, is tests/e2e/test_webhook_scale_e2e.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from dra_bridge.kube.api import list_all
from dra_bridge.kube.errors import Gone
from dra_bridge.kube.fake import FakeKube
from dra_bridge.kube.resources import NAMESPACES, NODES, RESOURCE_SLICES, Resource
from dra_bridge.translate.names import NODE_MODE_LABEL
from dra_bridge.translate.policy import load_policy
from dra_bridge.webhook.access import API_CALLS
from dra_bridge.webhook.cluster import ClusterView
from dra_bridge.webhook.metrics import Metrics
from dra_bridge.webhook.runtime import Runtime

V1 = "resource.k8s.io/v1"


def _fake(nodes: int) -> FakeKube:
    fake = FakeKube(allowed=API_CALLS, served=[V1])
    for n in range(nodes):
        meta = {"name": f"n{n}", "labels": {NODE_MODE_LABEL: "dra"}}
        fake.put(NODES, {"metadata": meta, "status": {"images": [{"names": ["x"]}]}})
    fake.put(NAMESPACES, {"metadata": {"name": "team-a", "labels": {"team": "a"}}})
    fake.put(RESOURCE_SLICES.at(V1), {"metadata": {"name": "s"}, "spec": {"nodeName": "n0", "driver": "d"}})
    return fake


async def _run(fake: FakeKube, needs_slices: Callable[[], bool], check: Callable[[ClusterView], bool]) -> ClusterView:
    view = ClusterView(sleep=lambda _s: asyncio.sleep(0.01), needs_slices=needs_slices, needs_poll=0.01)
    stop = asyncio.Event()
    task = asyncio.create_task(view.run(fake, V1, stop))
    try:
        async with asyncio.timeout(5):
            while not check(view):
                await asyncio.sleep(0.01)
    finally:
        stop.set()
        await asyncio.wait_for(task, 2)
    return view


async def test_lists_are_paged_nodes_and_namespaces_metadata_only_and_slices_unread_without_a_setting() -> None:
    fake = _fake(1200)
    view = await _run(fake, lambda: False, lambda v: {"Node", "Namespace", "ResourceQuota"} <= v.synced)
    await asyncio.sleep(0.05)  # the slice feed had its chances to start
    lists = [r for r in fake.reads if r[0] == "list"]
    assert lists and all(limit == 500 for _, _, limit, _ in lists)
    assert [r for r in lists if r[1] == "nodes"] == [("list", "nodes", 500, True)] * 3  # 1,200 in 3 pages
    assert ("list", "namespaces", 500, True) in lists and ("list", "resourcequotas", 500, False) in lists
    assert ("watch", "nodes", 0, True) in fake.reads and ("watch", "namespaces", 0, True) in fake.reads
    assert not [r for r in fake.reads if r[1] == "resourceslices"]
    assert view.node_mode("n1199") == "dra" and view.namespace_labels("team-a") == {"team": "a"}
    assert view.status()["ResourceSlice"].startswith("not watched: ")


async def test_slices_are_read_whole_once_a_setting_needs_them() -> None:
    fake = _fake(3)
    needed = [False]
    view = await _run(fake, lambda: needed[0], lambda v: "Node" in v.synced)
    assert "ResourceSlice" not in view.synced
    needed[0] = True
    view = await _run(fake, lambda: needed[0], lambda v: "ResourceSlice" in v.synced)
    assert ("list", "resourceslices", 500, False) in fake.reads and ("watch", "resourceslices", 0, False) in fake.reads
    assert view.status()["ResourceSlice"] == "synced"


def test_the_policy_in_force_says_whether_slices_are_needed() -> None:
    runtime = Runtime(V1, Metrics())
    assert not runtime.needs_slices()  # built-in defaults: deferToKEP5004 off

    class Held:
        def __init__(self, text: str) -> None:
            self.value = load_policy(text, "p")

    rule = "rules:\n- name: r\n  match: {namespaces: [a]}\n  deferToKEP5004: true\n"
    runtime.policy = Held(rule)  # type: ignore[assignment]
    assert runtime.needs_slices()
    runtime.policy = Held("defaults: {deferToKEP5004: true}\n")  # type: ignore[assignment]
    assert runtime.needs_slices()


class ExpiringFake(FakeKube):
    """The first continue token has expired (410 Gone), as after the API server's compaction."""

    expired = 0

    async def list(self, resource: Resource, namespace: str | None = None, **kwargs: Any) -> dict[str, Any]:
        if kwargs.get("continue_token") and not self.expired:
            self.expired += 1
            raise Gone("continue token expired", 410, "Expired")
        return await super().list(resource, namespace, **kwargs)


async def test_a_list_whose_continue_token_expired_starts_over() -> None:
    fake = ExpiringFake(allowed=API_CALLS)
    for n in range(1100):
        fake.put(NODES, {"metadata": {"name": f"n{n:04d}"}})
    items, version = await list_all(fake, NODES, metadata_only=True)
    assert sorted(i["metadata"]["name"] for i in items) == [f"n{n:04d}" for n in range(1100)]
    assert version and fake.expired == 1
    assert [r[2] for r in fake.reads] == [500] * 4  # one page, its token expired, then three from the start
