"""The webhook's Kubernetes I/O against the shared fake allowed exactly webhook/access.py: the
reconciler's Lease and collection, the watch-fed caches, audit Events. What needs real server
semantics (the Lease's compare-and-swap, defaulting) is in tests/e2e."""

from __future__ import annotations

import asyncio

from dra_bridge.kube.fake import FakeKube
from dra_bridge.kube.resources import EVENTS, LEASES, NODES, RESOURCE_CLAIM_TEMPLATES
from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.names import MANAGED_BY, MANAGED_BY_WEBHOOK
from dra_bridge.webhook.access import API_CALLS
from dra_bridge.webhook.cluster import ClusterView
from dra_bridge.webhook.events import KubeAuditSink
from dra_bridge.webhook.reconciler import LEASE_NAME, Reconciler

V1 = "resource.k8s.io/v1"


async def test_the_reconciler_takes_the_lease_and_collects_an_unused_template() -> None:
    fake = FakeKube(allowed=API_CALLS)
    fake.put(
        RESOURCE_CLAIM_TEMPLATES,
        {
            "metadata": {
                "name": "t",
                "namespace": "team-a",
                "creationTimestamp": "2020-01-01T00:00:00Z",
                "labels": {MANAGED_BY: MANAGED_BY_WEBHOOK},
            },
            "spec": {},
        },
    )
    rec = Reconciler(fake, V1, load_catalog, "replica-a", "dra-bridge", grace=0)
    report = await rec.run_once()
    assert report.leader and report.deleted == [("team-a", "t")]
    lease = fake.objects[LEASES.plural][f"dra-bridge/{LEASE_NAME}"]
    assert lease["spec"]["holderIdentity"] == "replica-a"
    other = Reconciler(fake, V1, load_catalog, "replica-b", "dra-bridge", grace=0)
    assert (await other.run_once()).leader is False  # the holder's lease is live


async def test_the_caches_list_and_watch_every_kind_within_the_declared_calls() -> None:
    fake = FakeKube(allowed=API_CALLS)
    fake.put(NODES, {"metadata": {"name": "n1", "labels": {"dra-bridge.io/mode": "dra"}}})
    view = ClusterView()
    stop = asyncio.Event()
    task = asyncio.create_task(view.run(fake, V1, stop))
    async with asyncio.timeout(2):
        while len(view.synced) < 5:
            await asyncio.sleep(0.01)
    assert view.node_mode("n1") == "dra"
    fake.put(NODES, {"metadata": {"name": "n1", "labels": {}}})
    async with asyncio.timeout(2):
        while view.node_mode("n1") is not None:
            await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(task, 2)


async def test_an_audit_event_is_posted_on_the_owner() -> None:
    fake = FakeKube(allowed=API_CALLS)
    results: list[bool] = []
    sink = KubeAuditSink(fake, results.append)
    sink.emit("team-a", {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u1"}, "plan")
    await sink.drain()
    (event,) = fake.items(EVENTS)
    assert results == [True] and event["involvedObject"]["name"] == "web-1" and event["reason"] == "DRAMigrationPlan"
    assert event["metadata"]["namespace"] == "team-a" and event["metadata"]["name"].startswith("web-1.dra-plan-")
