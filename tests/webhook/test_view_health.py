"""Quota safety fails closed, and readiness says why (issue 10, items 1 and 2).

Component tests on the shared fake (allowed webhook/access.py, minus a permission where the
test says so) and the real app through aiohttp's test client. The same behaviour against a
real kube-apiserver (a service account without ``list resourcequotas``; a list that never
answers) is in tests/e2e/test_webhook_quota_e2e.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from aiohttp.web import Application

from dra_bridge.kube.errors import Forbidden, Unavailable
from dra_bridge.kube.fake import FakeKube
from dra_bridge.kube.observed import ApiHealth, ObservedApi
from dra_bridge.kube.resources import RESOURCE_QUOTAS, ApiCall, Resource
from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.plan.cluster_state import QuotaUnknown
from dra_bridge.webhook.access import API_CALLS
from dra_bridge.webhook.cluster import ClusterView
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.reconciler import Reconciler
from dra_bridge.webhook.runtime import Runtime
from dra_bridge.webhook.server import make_app
from tests.factories import make_pod
from tests.webhook.conftest import FakeEnsurer, body, make_admission_review

V1 = "resource.k8s.io/v1"
LIST_QUOTAS = ApiCall("list", "", "resourcequotas")
Client = TestClient[Any, Any]


class StallingFake(FakeKube):
    """A fake whose ResourceQuota list never answers (a network fault, not an API answer)."""

    async def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        if resource.plural == RESOURCE_QUOTAS.plural:
            await asyncio.Event().wait()
        return await super().list(
            resource,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            limit=limit,
            continue_token=continue_token,
            metadata_only=metadata_only,
        )


async def until(check: Callable[[], bool], seconds: float = 2.0) -> None:
    async with asyncio.timeout(seconds):
        while not check():
            await asyncio.sleep(0.01)


async def run_view(fake: FakeKube, health: ApiHealth, check: Callable[[ClusterView], bool]) -> ClusterView:
    """Feed a ClusterView from ``fake`` (through ObservedApi) until ``check`` holds, then stop it."""
    view = ClusterView(sleep=lambda _s: asyncio.sleep(0.01))
    stop = asyncio.Event()
    task = asyncio.create_task(view.run(ObservedApi(fake, health), V1, stop))
    try:
        await until(lambda: check(view))
    finally:
        stop.set()
        await asyncio.wait_for(task, 2)
    return view


async def test_without_list_resourcequotas_quota_stays_unknown_and_one_line_names_the_permission(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeKube(allowed=[c for c in API_CALLS if c != LIST_QUOTAS])
    health = ApiHealth()
    caplog.set_level(logging.INFO)
    view = await run_view(fake, health, lambda v: fake.calls.count(LIST_QUOTAS) >= 3 and len(v.synced) == 4)
    unknown = view.quota_keys("team-a")
    assert isinstance(unknown, QuotaUnknown) and "list core/resourcequotas" in unknown.cause
    assert health.missing() == [LIST_QUOTAS]
    naming = [r for r in caplog.records if "missing permission list core/resourcequotas" in r.getMessage()]
    assert len(naming) == 1 and naming[0].levelno == logging.ERROR
    status = view.status()
    assert status["ResourceQuota"].startswith("not synced") and status["Node"] == "synced"


async def test_a_quota_list_that_never_answers_leaves_quota_unknown_and_shows_as_pending() -> None:
    fake = StallingFake(allowed=API_CALLS)
    health = ApiHealth()
    view = await run_view(fake, health, lambda v: len(v.synced) == 4 and bool(health.pending()))
    unknown = view.quota_keys("team-a")
    assert isinstance(unknown, QuotaUnknown) and "no answer" in unknown.cause
    assert "listing" in view.status()["ResourceQuota"]
    assert health.reachable is True and health.pending() == []  # stopping the view cancelled the list


def test_pending_calls_are_listed_oldest_first_with_their_age() -> None:
    now = [100.0]
    health = ApiHealth(clock=lambda: now[0])
    token = health.started(LIST_QUOTAS)
    now[0] = 112.0
    health.started(ApiCall("list", "", "pods"))
    assert health.pending() == [(LIST_QUOTAS, 12.0), (ApiCall("list", "", "pods"), 0.0)]
    assert health.detail()["pending"] == ["list core/resourcequotas for 12s", "list core/pods for 0s"]
    health.finished(token)
    assert [call for call, _age in health.pending()] == [ApiCall("list", "", "pods")]


async def test_the_reconciler_refused_by_rbac_and_an_unreachable_api_server_show_in_health() -> None:
    pods = ApiCall("list", "", "pods")
    fake = FakeKube(allowed=[c for c in API_CALLS if c != pods])
    health = ApiHealth()
    rec = Reconciler(ObservedApi(fake, health), V1, load_catalog, "replica-a", "dra-bridge")
    with pytest.raises(Forbidden):
        await rec.run_once()
    assert health.missing() == [pods] and health.reachable is True
    fake.fail = Unavailable("connection refused")
    with pytest.raises(Unavailable):
        await rec.run_once()
    assert health.reachable is False and "connection refused" in health.last_failure


def app_with(runtime: Runtime) -> Application:
    return make_app(runtime, Admitter(runtime.context, FakeEnsurer(), runtime.metrics))


async def test_a_pod_whose_namespace_quota_is_unknown_stays_legacy_with_warning_audit_and_metric(
    aiohttp_client: Any,
) -> None:
    runtime = Runtime(
        V1, require_tls=False, quota_keys=lambda _ns: QuotaUnknown("missing permission list core/resourcequotas")
    )
    client: Client = await aiohttp_client(app_with(runtime))
    resp = await client.post("/mutate/enforce", data=body(make_admission_review(make_pod())))
    answer = (await resp.json())["response"]
    assert answer["allowed"] is True and "patch" not in answer
    assert any("list core/resourcequotas" in w and "kept-legacy" in w for w in answer["warnings"])
    assert "quota" in answer["auditAnnotations"]["kept-legacy"]
    metrics = await (await client.get("/metrics")).text()
    assert 'dra_webhook_kept_legacy_total{mode="enforce",reason="quota-view"} 1.0' in metrics


async def test_readiness_stays_ready_and_names_views_permissions_and_the_api_server(aiohttp_client: Any) -> None:
    fake = FakeKube(allowed=[c for c in API_CALLS if c != LIST_QUOTAS])
    health = ApiHealth()
    view = await run_view(fake, health, lambda v: len(v.synced) == 4 and bool(health.missing()))
    runtime = Runtime(V1, require_tls=False, quota_keys=view.quota_keys)
    runtime.watch_cluster(view, health)
    client: Client = await aiohttp_client(app_with(runtime))
    resp = await client.get("/readyz")
    detail = await resp.json()
    assert resp.status == 200 and detail["ready"] is True
    cluster = detail["cluster"]
    assert cluster["views"]["Node"] == "synced" and cluster["views"]["ResourceQuota"].startswith("not synced")
    assert cluster["missingPermissions"] == ["list core/resourcequotas"]
    assert cluster["apiServer"].startswith("answering")
    fake.fail = Unavailable("connection refused")
    with pytest.raises(Unavailable):
        await ObservedApi(fake, health).list(RESOURCE_QUOTAS)
    detail = await (await client.get("/readyz")).json()
    assert detail["ready"] is True and detail["cluster"]["apiServer"].startswith("unreachable")
    metrics = await (await client.get("/metrics")).text()
    assert 'dra_webhook_view_synced{view="ResourceQuota"} 0.0' in metrics
    assert 'dra_webhook_view_synced{view="Node"} 1.0' in metrics
    assert 'dra_webhook_permission_missing{permission="list core/resourcequotas"} 1.0' in metrics
    assert "dra_webhook_api_server_up 0.0" in metrics


class StallOnceFake(FakeKube):
    """A fake whose first ResourceQuota list never answers (a connection lost in a network fault);
    every later list answers."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.quota_lists = 0

    async def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        if resource.plural == RESOURCE_QUOTAS.plural:
            self.quota_lists += 1
            if self.quota_lists == 1:
                await asyncio.Event().wait()
        return await super().list(
            resource,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            limit=limit,
            continue_token=continue_token,
            metadata_only=metadata_only,
        )


async def test_a_list_that_hangs_is_given_up_after_the_list_timeout_and_retried() -> None:
    fake = StallOnceFake(allowed=API_CALLS)
    health = ApiHealth()
    view = ClusterView(sleep=lambda _s: asyncio.sleep(0.01), list_timeout=0.05)
    stop = asyncio.Event()
    task = asyncio.create_task(view.run(ObservedApi(fake, health), V1, stop))
    try:
        await until(lambda: "ResourceQuota" in view.synced)
    finally:
        stop.set()
        await asyncio.wait_for(task, 2)
    assert fake.quota_lists == 2
    assert view.quota_keys("team-a") == frozenset()
