"""The shared in-memory API: what it answers, what it refuses, what it does not pretend."""

from __future__ import annotations

import asyncio

import pytest

from dra_bridge.kube.errors import AlreadyExists, Forbidden, InvalidName, NotFound, Unavailable
from dra_bridge.kube.fake import FakeKube, matches
from dra_bridge.kube.resources import LEASES, NODES, PODS, RESOURCE_CLAIM_TEMPLATES, ApiCall, grant


def test_selectors_match_by_equality_and_existence() -> None:
    pod = {"metadata": {"name": "p", "labels": {"app": "a", "tier": "x"}}, "spec": {"nodeName": "n1"}}
    assert matches(pod, "app=a,tier", "spec.nodeName=n1,metadata.name=p")
    assert not matches(pod, "app!=a") and not matches(pod, "missing") and not matches(pod, "", "spec.nodeName=n2")
    assert matches(pod, "app==a", "spec.nodeName!=n2")


async def test_an_undeclared_call_is_forbidden_as_rbac_would_refuse_it() -> None:
    fake = FakeKube(allowed=grant("", "pods", "list"))
    assert (await fake.list(PODS))["items"] == []
    with pytest.raises(Forbidden, match="get core/pods"):
        await fake.get(PODS, "p", "ns")
    assert fake.calls == [ApiCall("list", "", "pods"), ApiCall("get", "", "pods", "namespace")]


async def test_a_namespace_grant_does_not_cover_every_namespace() -> None:
    fake = FakeKube(allowed=grant("coordination.k8s.io", "leases", "get", scope="namespace"))
    with pytest.raises(NotFound):
        await fake.get(LEASES, "l", "own")
    with pytest.raises(Forbidden):
        await fake.list(LEASES)


async def test_names_are_unique_and_generated_names_are_filled_in() -> None:
    fake = FakeKube()
    created = await fake.create(PODS, {"metadata": {"generateName": "web-"}}, "ns")
    assert created["metadata"]["name"].startswith("web-") and created["metadata"]["namespace"] == "ns"
    with pytest.raises(AlreadyExists):
        await fake.create(PODS, {"metadata": {"name": created["metadata"]["name"]}}, "ns")
    assert fake.writes == [("create", "pods", f"ns/{created['metadata']['name']}")]


async def test_status_patches_merge_conditions_by_type() -> None:
    fake = FakeKube()
    fake.put(NODES, {"metadata": {"name": "n"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    await fake.patch_status(NODES, "n", {"status": {"conditions": [{"type": "X", "status": "False"}]}})
    await fake.patch_status(NODES, "n", {"status": {"conditions": [{"type": "X", "status": "True"}]}})
    assert fake.objects["nodes"]["n"]["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "X", "status": "True"},
    ]


async def test_a_watch_sees_what_exists_then_changes_until_its_timeout() -> None:
    fake = FakeKube()
    fake.put(NODES, {"metadata": {"name": "a"}})
    seen: list[tuple[str, str]] = []

    async def watch() -> None:
        async for kind, obj in fake.watch(NODES, timeout=1):
            seen.append((kind, obj["metadata"]["name"]))
            if len(seen) == 3:
                return

    task = asyncio.create_task(watch())
    await asyncio.sleep(0.01)
    await fake.create(NODES, {"metadata": {"name": "b"}})
    fake.remove(NODES, "a")
    await asyncio.wait_for(task, 2)
    assert seen == [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "a")]


async def test_fail_makes_every_call_unavailable() -> None:
    fake = FakeKube(served=["resource.k8s.io/v1"])
    fake.fail = "refused"
    with pytest.raises(Unavailable, match="refused"):
        await fake.served_versions("resource.k8s.io")
    fake.fail = ""
    assert await fake.served_versions("resource.k8s.io") == ["resource.k8s.io/v1"]


async def test_the_fake_refuses_the_names_the_real_client_refuses_before_counting_a_call() -> None:
    fake = FakeKube()
    with pytest.raises(InvalidName):
        await fake.get(RESOURCE_CLAIM_TEMPLATES, "t", "kube-system/../kube-system")
    with pytest.raises(InvalidName):
        await fake.delete(RESOURCE_CLAIM_TEMPLATES, "..", "team-a")
    with pytest.raises(InvalidName):
        await fake.create(RESOURCE_CLAIM_TEMPLATES, {"metadata": {"name": "t"}}, "../../api/v1")
    assert fake.calls == []
