"""KubeTemplateEnsurer against a fake CustomObjectsApi: idempotence, cache, deletion, deadline."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.factories import make_pod
from translate.catalog import load_catalog
from translate.names import MANAGED_BY_WEBHOOK
from translate.plan.pod_plan import Options, plan_pod
from webhook.errors import TemplateError
from webhook.templates import KubeTemplateEnsurer


class FakeObjects:
    def __init__(self) -> None:
        self.store: dict[tuple[str, str], dict[str, Any]] = {}
        self.creates = 0
        self.delay = 0.0
        self.fail_status = 0

    async def create_namespaced_custom_object(self, group: str, version: str, ns: str, plural: str,
                                              body: dict[str, Any]) -> dict[str, Any]:
        self.creates += 1
        await asyncio.sleep(self.delay)
        if self.fail_status:
            raise ApiException(status=self.fail_status, reason="Forbidden")
        key = (ns, body["metadata"]["name"])
        if key in self.store:
            raise ApiException(status=409, reason="AlreadyExists")
        stored = copy.deepcopy(body)
        # API defaulting: the server adds fields the webhook never sent.
        for req in stored["spec"]["spec"]["devices"]["requests"]:
            req.get("exactly", req).setdefault("adminAccess", False)
        self.store[key] = stored
        return stored

    async def get_namespaced_custom_object(self, group: str, version: str, ns: str, plural: str,
                                           name: str) -> dict[str, Any]:
        if (ns, name) not in self.store:
            raise ApiException(status=404, reason="NotFound")
        return self.store[(ns, name)]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def template(gpus: int = 1) -> dict[str, Any]:
    return dict(plan_pod(make_pod(gpus=gpus), load_catalog(), Options(managed_by=MANAGED_BY_WEBHOOK),
                         "team-a").templates[0])


@pytest.fixture
def fake() -> FakeObjects:
    return FakeObjects()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def ensurer(fake: FakeObjects, clock: Clock) -> AsyncIterator[KubeTemplateEnsurer]:
    api = client.ApiClient()
    e = KubeTemplateEnsurer(api, "resource.k8s.io/v1", deadline=0.2, ttl=30, clock=clock)
    e._objects = fake  # type: ignore[assignment]
    yield e
    await api.close()


async def test_creates_once_then_serves_from_cache(ensurer: KubeTemplateEnsurer, fake: FakeObjects) -> None:
    assert await ensurer.ensure([template()], dry_run=False) == 1
    assert await ensurer.ensure([template()], dry_run=False) == 0
    assert fake.creates == 1


async def test_already_exists_with_an_equal_spec_after_defaulting_is_success(
        ensurer: KubeTemplateEnsurer, fake: FakeObjects, clock: Clock) -> None:
    await ensurer.ensure([template()], dry_run=False)
    clock.now = 31  # cache expired
    assert await ensurer.ensure([template()], dry_run=False) == 0
    assert fake.creates == 2


async def test_a_different_spec_under_the_name_is_an_error(ensurer: KubeTemplateEnsurer, fake: FakeObjects) -> None:
    tpl = template()
    await ensurer.ensure([tpl], dry_run=False)
    ensurer.forget("team-a", tpl["metadata"]["name"])
    stored = fake.store[("team-a", tpl["metadata"]["name"])]
    stored["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 5
    with pytest.raises(TemplateError, match="different spec"):
        await ensurer.ensure([tpl], dry_run=False)


async def test_a_template_being_deleted_counts_as_missing(ensurer: KubeTemplateEnsurer, fake: FakeObjects) -> None:
    tpl = template()
    await ensurer.ensure([tpl], dry_run=False)
    fake.store[("team-a", tpl["metadata"]["name"])]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    ensurer.forget("team-a", tpl["metadata"]["name"])  # what the watch does on the update
    with pytest.raises(TemplateError, match="being deleted"):
        await ensurer.ensure([tpl], dry_run=False)


async def test_deleted_template_is_recreated_for_the_next_pod(ensurer: KubeTemplateEnsurer, fake: FakeObjects) -> None:
    tpl = template()
    await ensurer.ensure([tpl], dry_run=False)
    del fake.store[("team-a", tpl["metadata"]["name"])]
    ensurer.forget("team-a", tpl["metadata"]["name"])  # the watch saw DELETED
    assert await ensurer.ensure([tpl], dry_run=False) == 1
    assert ("team-a", tpl["metadata"]["name"]) in fake.store


async def test_dry_run_calls_nothing(ensurer: KubeTemplateEnsurer, fake: FakeObjects) -> None:
    assert await ensurer.ensure([template()], dry_run=True) == 0
    assert fake.creates == 0 and not fake.store


async def test_slow_api_hits_the_deadline(ensurer: KubeTemplateEnsurer, fake: FakeObjects) -> None:
    fake.delay = 1.0
    with pytest.raises(TemplateError, match=r"within 0\.2s"):
        await ensurer.ensure([template()], dry_run=False)


async def test_api_errors_become_template_errors(ensurer: KubeTemplateEnsurer, fake: FakeObjects) -> None:
    fake.fail_status = 403
    with pytest.raises(TemplateError, match="HTTP 403"):
        await ensurer.ensure([template()], dry_run=False)
