"""No confused deputy: the webhook acts with its own permissions only for what the review names
in the shape the API server sends it (docs/webhook.md, "Limits and hardening")."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from dra_bridge.kube.fake import FakeKube
from dra_bridge.kube.resources import EVENTS, RESOURCE_CLAIM_TEMPLATES
from dra_bridge.webhook.access import API_CALLS
from dra_bridge.webhook.errors import TemplateError
from dra_bridge.webhook.events import KubeAuditSink, postable_owner
from dra_bridge.webhook.templates import KubeTemplateEnsurer
from tests.factories import make_pod
from tests.webhook.conftest import FakeAudit, make_admission_review
from tests.webhook.test_templates import template

Client = TestClient[web.Request, web.Application]
RS = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8c7", "uid": "rs-uid", "controller": True}


@pytest.fixture
async def client(aiohttp_client: Any, app: web.Application) -> Client:
    out: Client = await aiohttp_client(app)
    return out


def owned_pod(owner: dict[str, Any]) -> dict[str, Any]:
    pod = make_pod(name=None, gpus=2, generate_name="web-")
    pod["metadata"]["ownerReferences"] = [owner]
    return pod


async def audit_post(client: Client, review: dict[str, Any]) -> dict[str, Any]:
    resp = await client.post("/mutate/audit", data=json.dumps(review), headers={"Content-Type": "application/json"})
    assert resp.status == 200
    answer: dict[str, Any] = await resp.json()
    return answer


@pytest.mark.parametrize(
    "owner",
    [
        {**RS, "apiVersion": "v1", "kind": "Secret", "name": "db-password"},
        {**RS, "apiVersion": "v1", "kind": "ConfigMap"},
        {**RS, "name": "../../secrets/db-password"},
        {**RS, "name": "Web"},
        {**RS, "name": ""},
        {**RS, "kind": "replica set"},
        {**RS, "apiVersion": "apps/v1/../v1"},
        {**RS, "apiVersion": 1},
        {**RS, "uid": ""},
        {**RS, "namespace": "kube-system"},
    ],
    ids=[
        "a-secret",
        "a-configmap",
        "dot-dot-name",
        "upper-case-name",
        "empty-name",
        "kind-with-space",
        "dot-dot-api-version",
        "int-api-version",
        "no-uid",
        "a-namespace-field",
    ],
)
async def test_no_event_is_posted_about_what_cannot_own_a_pod(
    client: Client, audit: FakeAudit, owner: dict[str, Any]
) -> None:
    answer = await audit_post(client, make_admission_review(owned_pod(owner)))
    assert answer["response"]["allowed"] is True and answer["response"]["warnings"]
    assert audit.events == [] or all(set(o) <= {"apiVersion", "kind", "name", "uid"} for _, o, _ in audit.events)
    if "namespace" not in owner:
        assert audit.events == []


@pytest.mark.parametrize(
    "owner",
    [
        RS,
        {**RS, "apiVersion": "batch/v1", "kind": "Job", "name": "train.v2"},
        {**RS, "apiVersion": "v1", "kind": "ReplicationController"},
        {**RS, "apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "ray-1"},
    ],
    ids=["replicaset", "job", "replicationcontroller", "custom-resource"],
)
async def test_the_event_names_the_owner_as_the_review_does_in_the_reviews_namespace(
    client: Client, audit: FakeAudit, owner: dict[str, Any]
) -> None:
    pod = owned_pod(owner)
    pod["metadata"]["namespace"] = "kube-system"  # the review's namespace decides, never the object's
    await audit_post(client, make_admission_review(pod, namespace="team-b"))
    ((namespace, ref, _message),) = audit.events
    assert namespace == "team-b"
    assert ref == {k: owner[k] for k in ("apiVersion", "kind", "name", "uid")}


def test_postable_owner_keeps_only_the_reference_fields() -> None:
    assert postable_owner({**RS, "namespace": "kube-system", "blockOwnerDeletion": True}) == {
        k: RS[k] for k in ("apiVersion", "kind", "name", "uid")
    }
    assert postable_owner({**RS, "kind": "Secret", "apiVersion": "v1"}) is None


async def test_the_sink_posts_nothing_for_a_namespace_or_owner_it_cannot_use() -> None:
    fake = FakeKube(allowed=API_CALLS)
    results: list[bool] = []
    sink = KubeAuditSink(fake, results.append)
    sink.emit("kube-system/../kube-system", RS, "plan")
    sink.emit("team-a", {**RS, "apiVersion": "v1", "kind": "Secret", "name": "db-password"}, "plan")
    sink.emit("team-a", RS, "plan")
    await sink.drain()
    (event,) = fake.items(EVENTS)
    assert event["involvedObject"]["name"] == "web-5d8c7" and event["involvedObject"]["namespace"] == "team-a"
    assert results == [False, False, True]


@pytest.mark.parametrize(
    ("namespace", "name"),
    [
        ("kube-system/../kube-system", "dra-bridge-abc"),
        ("team-a", "../../../../api/v1/namespaces/kube-system/secrets/x"),
        ("team-a", "Dra-Bridge"),
        ("team-a", "a" * 254),
    ],
    ids=["dot-dot-namespace", "dot-dot-name", "upper-case-name", "254-chars"],
)
async def test_a_template_whose_names_break_the_rules_is_not_sent(namespace: str, name: str) -> None:
    fake = FakeKube(allowed=API_CALLS)
    tpl = template()
    tpl["metadata"] = {**tpl["metadata"], "namespace": namespace, "name": name}
    with pytest.raises(TemplateError, match="not a valid"):
        await KubeTemplateEnsurer(fake, "resource.k8s.io/v1").ensure([tpl], dry_run=False)
    assert fake.calls == [] and fake.items(RESOURCE_CLAIM_TEMPLATES) == []
