"""The template reconciler against a fake API server on loopback: what it re-creates.

A pod converted by the webhook under a policy rule keeps naming its template; when the
template is deleted, the reconciler must re-create it from the pod's conversion record,
with the options the webhook used, not the defaults.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import jsonpatch
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes_asyncio import client

from tests.factories import make_pod
from tests.webhook.conftest import make_admission_review
from translate.catalog import load_catalog
from webhook import Context, evaluate
from webhook.policy import parse_policy
from webhook.reconciler import Reconciler

V1 = "resource.k8s.io/v1"


class FakeApi:
    """Just the API calls one reconciler pass makes: no Lease yet, the pods and templates given."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = pods
        self.created: list[dict[str, Any]] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}", self._no_lease)
        app.router.add_post("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", self._echo)
        app.router.add_get("/api/v1/pods", self._pods)
        app.router.add_get("/apis/resource.k8s.io/v1/resourceclaimtemplates", self._templates)
        app.router.add_post("/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates", self._create)
        return app

    async def _no_lease(self, _request: web.Request) -> web.Response:
        return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404,
                                  "reason": "NotFound"}, status=404)

    async def _echo(self, request: web.Request) -> web.Response:
        return web.json_response(await request.json(), status=201)

    async def _pods(self, _request: web.Request) -> web.Response:
        return web.json_response({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": self.pods})

    async def _templates(self, _request: web.Request) -> web.Response:
        return web.json_response({"apiVersion": V1, "kind": "ResourceClaimTemplateList", "items": self.created})

    async def _create(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.created.append(body)
        return web.json_response(body, status=201)


def converted(pod: dict[str, Any], policy: str) -> dict[str, Any]:
    """``pod`` as the webhook stored it under ``policy`` (enforce), then scheduled and running."""
    ctx = Context(load_catalog(), parse_policy(json.loads(policy), "test"), V1)
    decision = evaluate(make_admission_review(pod)["request"], "enforce", ctx)
    assert decision.log.outcome == "patched", decision
    stored: dict[str, Any] = jsonpatch.apply_patch(pod, list(decision.answer.patch))
    stored["metadata"].update(uid="3f1c", resourceVersion="7", creationTimestamp="2026-01-01T00:00:00Z")
    stored["spec"]["nodeName"] = "node-a"
    stored["status"] = {"phase": "Running"}
    return stored


@pytest.fixture
async def fake_api() -> AsyncIterator[tuple[FakeApi, client.ApiClient]]:
    fake = FakeApi([])
    async with TestServer(fake.app()) as server:
        config = client.Configuration(host=str(server.make_url("")).rstrip("/"))
        async with client.ApiClient(config) as api:
            yield fake, api


def _gpumem_pod() -> dict[str, Any]:
    pod = make_pod(gpus=1)
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"] = 4000
    return pod


@pytest.mark.parametrize(("pod", "policy"), [
    (make_pod(gpus=2), "{}"),
    (make_pod(gpus=1, schedulerName="volcano"), '{"defaults": {"draSchedulers": ["volcano"]}}'),
    (_gpumem_pod(), '{"rules": [{"name": "hami", "match": {}, "hamiSlicing": "whole-devices"}]}'),
], ids=["defaults", "dra-schedulers", "hami-whole-devices"])
async def test_a_deleted_template_is_recreated_with_the_options_that_converted_the_pod(
        fake_api: tuple[FakeApi, client.ApiClient], pod: dict[str, Any], policy: str) -> None:
    fake, api = fake_api
    stored = converted(pod, policy)
    fake.pods.append(stored)
    names = [c["resourceClaimTemplateName"] for c in stored["spec"]["resourceClaims"]]

    report = await Reconciler(api, V1, load_catalog, "replica-0", "dra-bridge").run_once()

    assert report.leader
    assert report.recreated == [("team-a", n) for n in names]
    assert [t["metadata"]["name"] for t in fake.created] == names
    assert all(t["metadata"]["namespace"] == "team-a" for t in fake.created)
