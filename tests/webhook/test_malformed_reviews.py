"""Malformed reviews and names that would reach an API path are refused with HTTP 400 before
anything is called (docs/webhook.md, "Limits and hardening")."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from kubernetes_asyncio import client

from dra_bridge.kube.api import ApiServer
from dra_bridge.kube.client import Client
from dra_bridge.webhook.errors import ReviewError
from dra_bridge.webhook.events import KubeAuditSink
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.review import MAX_UID_CHARS, decode_review
from dra_bridge.webhook.runtime import Runtime
from dra_bridge.webhook.server import make_app
from dra_bridge.webhook.templates import KubeTemplateEnsurer
from tests.factories import make_pod
from tests.webhook.conftest import FakeAudit, FakeEnsurer, body, make_admission_review

HookClient = TestClient[web.Request, web.Application]


def _review(**request: Any) -> dict[str, Any]:
    review = make_admission_review(make_pod())
    for key, value in request.items():
        if value is _DROP:
            del review["request"][key]
        else:
            review["request"][key] = value
    return review


_DROP = object()


@pytest.mark.parametrize(
    ("request_fields", "named"),
    [
        ({"namespace": _DROP}, "request.namespace"),
        ({"namespace": ""}, "request.namespace"),
        ({"namespace": None}, "request.namespace"),
        ({"namespace": 7}, "request.namespace"),
        ({"dryRun": "false"}, "request.dryRun"),
        ({"dryRun": 0}, "request.dryRun"),
        ({"dryRun": None}, "request.dryRun"),
        ({"operation": _DROP}, "request.operation"),
        ({"operation": "create"}, "request.operation"),
        ({"operation": None}, "request.operation"),
    ],
    ids=[
        "no-namespace",
        "empty-namespace",
        "null-namespace",
        "int-namespace",
        "string-dryrun",
        "int-dryrun",
        "null-dryrun",
        "no-operation",
        "lower-case-operation",
        "null-operation",
    ],
)
def test_a_malformed_request_is_a_400_naming_the_field(request_fields: dict[str, Any], named: str) -> None:
    with pytest.raises(ReviewError, match=re.escape(named)) as err:
        decode_review(body(_review(**request_fields)))
    assert err.value.status == 400


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_json_constants_outside_the_json_grammar_are_a_400(constant: str) -> None:
    raw = body(make_admission_review(make_pod())).replace(
        b'"dryRun": false', b'"dryRun": false, "x": ' + constant.encode()
    )
    assert constant.encode() in raw
    with pytest.raises(ReviewError, match="not JSON") as err:
        decode_review(raw)
    assert err.value.status == 400


@pytest.mark.parametrize(
    "namespace",
    [
        "kube-system/../kube-system",
        "../../../../api/v1/secrets",
        "team-a/",
        "..",
        "Team-A",
        "team_a",
        "a" * 64,
        "team-a%2F..",
        "team-a\n",
        "-team",
    ],
    ids=[
        "dot-dot-kube-system",
        "dot-dot-api",
        "slash",
        "dot-dot",
        "upper-case",
        "underscore",
        "64-chars",
        "escaped-slash",
        "newline",
        "leading-dash",
    ],
)
def test_a_namespace_that_is_not_a_dns_label_is_a_400(namespace: str) -> None:
    with pytest.raises(ReviewError, match=r"request\.namespace") as err:
        decode_review(body(_review(namespace=namespace)))
    assert err.value.status == 400


def test_a_well_formed_review_still_decodes() -> None:
    request = decode_review(body(_review(dryRun=_DROP)))
    assert request["namespace"] == "team-a" and request["operation"] == "CREATE"


@pytest.fixture
async def hook(aiohttp_client: Any, app: web.Application) -> HookClient:
    out: HookClient = await aiohttp_client(app)
    return out


@pytest.mark.parametrize(
    "request_fields",
    [
        {"namespace": "kube-system/../kube-system"},
        {"namespace": "../../../../api/v1/namespaces/kube-system/secrets"},
        {"namespace": _DROP},
        {"operation": _DROP},
        {"dryRun": "yes"},
    ],
    ids=["dot-dot-kube-system", "dot-dot-api", "no-namespace", "no-operation", "string-dryrun"],
)
async def test_a_hostile_review_calls_nothing_and_is_answered_400(
    hook: HookClient, ensurer: FakeEnsurer, audit: FakeAudit, request_fields: dict[str, Any]
) -> None:
    for mode in ("enforce", "audit"):
        pod = make_pod()
        pod["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u1", "controller": True}
        ]
        review = make_admission_review(pod)
        review["request"].update({k: v for k, v in request_fields.items() if v is not _DROP})
        for key in [k for k, v in request_fields.items() if v is _DROP]:
            del review["request"][key]
        resp = await hook.post(f"/mutate/{mode}", data=json.dumps(review), headers={"Content-Type": "application/json"})
        assert resp.status == 400, await resp.text()
        assert "error" in await resp.json()
    assert ensurer.calls == [] and audit.events == []


async def test_through_the_real_kube_layer_a_hostile_review_reaches_no_api_path(aiohttp_client: Any) -> None:
    """The real ensurer and audit sink over a stand-in API server that logs every request: a
    review with a traversal namespace or owner calls nothing; a good one calls where it should."""
    seen: list[str] = []

    async def logged(request: web.Request) -> web.Response:
        seen.append(f"{request.method} {request.raw_path}")
        return web.json_response({"kind": "Status", "reason": "NotFound", "code": 404}, status=404)

    stand_in = web.Application()
    stand_in.router.add_route("*", "/{tail:.*}", logged)
    server = await aiohttp_client(stand_in)
    k8s = client.ApiClient(client.Configuration(host=str(server.make_url("")).rstrip("/")))
    api = ApiServer(Client(k8s))
    runtime = Runtime("resource.k8s.io/v1", require_tls=False)
    sink = KubeAuditSink(api)
    admitter = Admitter(runtime.context, KubeTemplateEnsurer(api, "resource.k8s.io/v1"), runtime.metrics, sink)
    hook: HookClient = await aiohttp_client(make_app(runtime, admitter))
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u1", "controller": True}
    hostile = [
        ("enforce", "kube-system/../kube-system", owner),
        ("audit", "../../../../api/v1/namespaces/kube-system/secrets", owner),
        ("audit", "team-a", {**owner, "apiVersion": "v1", "kind": "Secret", "name": "db-password"}),
        ("audit", "team-a", {**owner, "name": "../../../secrets/db-password"}),
    ]
    for mode, namespace, ref in hostile:
        pod = make_pod()
        pod["metadata"]["ownerReferences"] = [ref]
        review = make_admission_review(pod)
        review["request"]["namespace"] = namespace
        await hook.post(f"/mutate/{mode}", data=json.dumps(review), headers={"Content-Type": "application/json"})
    await sink.drain()
    assert seen == []
    pod = make_pod()
    pod["metadata"]["ownerReferences"] = [owner]
    await hook.post("/mutate/audit", data=json.dumps(make_admission_review(pod)))
    await hook.post("/mutate/enforce", data=json.dumps(make_admission_review(pod)))
    await sink.drain()
    assert sorted(seen) == [
        "POST /api/v1/namespaces/team-a/events",
        "POST /apis/resource.k8s.io/v1/namespaces/team-a/resourceclaimtemplates",
    ]
    await k8s.close()


def test_a_uid_longer_than_a_kubernetes_uid_is_a_400_naming_the_field() -> None:
    assert decode_review(body(_review(uid="u" * MAX_UID_CHARS)))["uid"] == "u" * MAX_UID_CHARS
    with pytest.raises(ReviewError, match=r"request.uid must be at most 128 characters") as err:
        decode_review(body(_review(uid="u" * 2_000_000)))
    assert err.value.status == 400 and len(str(err.value)) < 300


async def test_a_huge_uid_or_name_is_answered_and_logged_in_bounded_length(
    hook: HookClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    review = _review(uid="u" * 500_000)
    resp = await hook.post("/mutate/enforce", data=json.dumps(review), headers={"Content-Type": "application/json"})
    assert resp.status == 400 and len(await resp.read()) < 1000
    review = make_admission_review(make_pod(name="n" * 100_000))
    resp = await hook.post("/mutate/enforce", data=json.dumps(review), headers={"Content-Type": "application/json"})
    assert resp.status == 200
    assert caplog.records and max(len(r.getMessage()) for r in caplog.records) < 1000
