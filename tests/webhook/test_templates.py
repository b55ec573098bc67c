"""KubeTemplateEnsurer against the shared in-memory API (kube.fake): idempotence, cache,
deletion, deadline. What only the real API server proves (AlreadyExists with a spec equal after
its defaulting) is in tests/e2e; here a test writes the stored object by hand."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dra_bridge.kube.errors import Forbidden
from dra_bridge.kube.fake import FakeKube
from dra_bridge.kube.resources import RESOURCE_CLAIM_TEMPLATES
from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.names import MANAGED_BY_WEBHOOK
from dra_bridge.translate.plan.pod_plan import Options, plan_pod
from dra_bridge.webhook.access import API_CALLS
from dra_bridge.webhook.errors import TemplateError
from dra_bridge.webhook.templates import KubeTemplateEnsurer
from tests.factories import make_pod


def stored(fake: FakeKube, tpl: dict[str, Any]) -> dict[str, Any]:
    return fake.objects[RESOURCE_CLAIM_TEMPLATES.plural][f"team-a/{tpl['metadata']['name']}"]


def creates(fake: FakeKube) -> int:
    return sum(1 for verb, plural, _ in fake.writes if verb == "create" and plural == "resourceclaimtemplates")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def template(gpus: int = 1) -> dict[str, Any]:
    return dict(
        plan_pod(make_pod(gpus=gpus), load_catalog(), Options(managed_by=MANAGED_BY_WEBHOOK), "team-a").templates[0]
    )


@pytest.fixture
def fake() -> FakeKube:
    return FakeKube(allowed=API_CALLS)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ensurer(fake: FakeKube, clock: Clock) -> Iterator[KubeTemplateEnsurer]:
    yield KubeTemplateEnsurer(fake, "resource.k8s.io/v1", deadline=0.2, ttl=30, clock=clock)


async def test_creates_once_then_serves_from_cache(ensurer: KubeTemplateEnsurer, fake: FakeKube) -> None:
    assert await ensurer.ensure([template()], dry_run=False) == 1
    assert await ensurer.ensure([template()], dry_run=False) == 0
    assert creates(fake) == 1


async def test_already_exists_with_an_equal_spec_after_defaulting_is_success(
    ensurer: KubeTemplateEnsurer, fake: FakeKube, clock: Clock
) -> None:
    tpl = template()
    await ensurer.ensure([tpl], dry_run=False)
    for req in stored(fake, tpl)["spec"]["spec"]["devices"]["requests"]:  # what API defaulting adds
        req.get("exactly", req).setdefault("adminAccess", False)
    clock.now = 31  # cache expired
    assert await ensurer.ensure([template()], dry_run=False) == 0
    assert [c.verb for c in fake.calls] == ["create", "create", "get"]


async def test_a_different_spec_under_the_name_is_an_error(ensurer: KubeTemplateEnsurer, fake: FakeKube) -> None:
    tpl = template()
    await ensurer.ensure([tpl], dry_run=False)
    ensurer.forget("team-a", tpl["metadata"]["name"])
    stored(fake, tpl)["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 5
    with pytest.raises(TemplateError, match="different spec"):
        await ensurer.ensure([tpl], dry_run=False)


async def test_a_template_being_deleted_counts_as_missing(ensurer: KubeTemplateEnsurer, fake: FakeKube) -> None:
    tpl = template()
    await ensurer.ensure([tpl], dry_run=False)
    stored(fake, tpl)["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    ensurer.forget("team-a", tpl["metadata"]["name"])  # what the watch does on the update
    with pytest.raises(TemplateError, match="being deleted"):
        await ensurer.ensure([tpl], dry_run=False)


async def test_deleted_template_is_recreated_for_the_next_pod(ensurer: KubeTemplateEnsurer, fake: FakeKube) -> None:
    tpl = template()
    await ensurer.ensure([tpl], dry_run=False)
    fake.remove(RESOURCE_CLAIM_TEMPLATES, tpl["metadata"]["name"], "team-a")
    ensurer.forget("team-a", tpl["metadata"]["name"])  # the watch saw DELETED
    assert await ensurer.ensure([tpl], dry_run=False) == 1
    assert stored(fake, tpl)


async def test_dry_run_calls_nothing(ensurer: KubeTemplateEnsurer, fake: FakeKube) -> None:
    assert await ensurer.ensure([template()], dry_run=True) == 0
    assert fake.calls == [] and not fake.objects[RESOURCE_CLAIM_TEMPLATES.plural]


async def test_slow_api_hits_the_deadline(ensurer: KubeTemplateEnsurer, fake: FakeKube) -> None:
    fake.delay = 1.0
    with pytest.raises(TemplateError, match=r"within 0\.2s"):
        await ensurer.ensure([template()], dry_run=False)


async def test_api_errors_become_template_errors(ensurer: KubeTemplateEnsurer, fake: FakeKube) -> None:
    fake.fail = Forbidden("POST ...: 403 Forbidden", 403, "Forbidden")
    with pytest.raises(TemplateError, match="HTTP 403"):
        await ensurer.ensure([template()], dry_run=False)
