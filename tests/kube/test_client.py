"""ApiServer over a loopback HTTP server: raw JSON in and out, statuses mapped to the error
tree, watch streams decoded, an ERROR event raised as its error (410: Gone)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client

from dra_bridge.kube.api import ApiServer
from dra_bridge.kube.client import Client
from dra_bridge.kube.discovery import discover_resource_version
from dra_bridge.kube.errors import AlreadyExists, Gone, InvalidName, NotFound, Unavailable
from dra_bridge.kube.resources import NODES, RESOURCE_CLAIM_TEMPLATES, RESOURCE_SLICES

SEEN: list[tuple[str, str, Any]] = []


async def handle(request: web.Request) -> web.StreamResponse:
    body = await request.json() if request.can_read_body else None
    SEEN.append((request.method, request.raw_path, body))  # as sent: escapes kept
    if request.path == "/apis/resource.k8s.io":
        return web.json_response(
            {"versions": [{"groupVersion": "resource.k8s.io/v1beta2"}, {"groupVersion": "resource.k8s.io/v1beta1"}]}
        )
    if request.method == "POST":
        return web.json_response({"kind": "Status", "reason": "AlreadyExists", "message": "taken"}, status=409)
    if request.path.endswith("/nodes/gone"):
        return web.json_response({"kind": "Status", "reason": "NotFound"}, status=404)
    if request.query.get("watch") == "true":
        resp = web.StreamResponse()
        await resp.prepare(request)
        for event in (
            {"type": "ADDED", "object": {"metadata": {"name": "s1"}}},
            {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}},
        ):
            await resp.write(json.dumps(event).encode() + b"\n")
        return resp
    if request.path.endswith("/nodes/down"):
        return web.json_response({}, status=503)
    return web.json_response({"metadata": {"name": request.path.rsplit("/", 1)[-1]}})


@pytest.fixture
async def api(aiohttp_server: Any) -> AsyncIterator[ApiServer]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    server = await aiohttp_server(app)
    c = Client(client.ApiClient(client.Configuration(host=str(server.make_url("")).rstrip("/"))))
    SEEN.clear()
    yield ApiServer(c)
    await c.close()


async def test_calls_speak_plain_json_and_answers_map_to_the_error_tree(api: ApiServer) -> None:
    assert await api.get(NODES, "n1") == {"metadata": {"name": "n1"}}
    with pytest.raises(NotFound):
        await api.get(NODES, "gone")
    with pytest.raises(Unavailable):
        await api.get(NODES, "down")
    templates = RESOURCE_CLAIM_TEMPLATES.at("resource.k8s.io/v1beta1")
    with pytest.raises(AlreadyExists, match="taken") as info:
        await api.create(templates, {"metadata": {"name": "t"}}, "ns")
    assert info.value.__cause__ is not None
    await api.delete(templates, "t", "ns", resource_version="7")
    assert SEEN[-2][:2] == ("POST", "/apis/resource.k8s.io/v1beta1/namespaces/ns/resourceclaimtemplates")
    assert SEEN[-1] == (
        "DELETE",
        "/apis/resource.k8s.io/v1beta1/namespaces/ns/resourceclaimtemplates/t",
        {"preconditions": {"resourceVersion": "7"}},
    )


async def test_discovery_picks_the_newest_version_served(api: ApiServer) -> None:
    assert await discover_resource_version(api) == "resource.k8s.io/v1beta2"


async def test_a_watch_yields_events_and_raises_gone_for_an_expired_one(api: ApiServer) -> None:
    seen = []
    with pytest.raises(Gone):
        async for kind, obj in api.watch(RESOURCE_SLICES, field_selector="spec.nodeName=n", timeout=5):
            seen.append((kind, obj["metadata"]["name"]))
    assert seen == [("ADDED", "s1")]
    assert "watch=true" in SEEN[-1][1] and "fieldSelector=spec.nodeName" in SEEN[-1][1]


@pytest.mark.parametrize(
    ("namespace", "name", "segment"),
    [
        ("team-a", "system:node", "system:node"),  # ':' and '=' may stand in a path segment
        ("team-a", "a b", "a%20b"),
        ("team-a", "a?watch=true", "a%3Fwatch=true"),
        ("team-a", "a#b", "a%23b"),
    ],
    ids=["colon", "space", "query", "fragment"],
)
async def test_each_name_is_one_escaped_path_segment(api: ApiServer, namespace: str, name: str, segment: str) -> None:
    await api.get(RESOURCE_CLAIM_TEMPLATES, name, namespace)
    ((method, path, _body),) = SEEN
    assert (
        method == "GET" and path == f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaimtemplates/{segment}"
    )


@pytest.mark.parametrize(
    ("namespace", "name"),
    [
        ("kube-system/../kube-system", "t"),
        ("../../../../api/v1/namespaces/kube-system/secrets", "t"),
        ("team-a", ".."),
        ("team-a", "."),
        ("team-a", "a/b"),
        ("team-a", "a%2Fb"),
        ("Team-A", "t"),
    ],
    ids=[
        "dot-dot-namespace",
        "dot-dot-api",
        "dot-dot-name",
        "dot-name",
        "slash-name",
        "escaped-slash-name",
        "upper-ns",
    ],
)
async def test_a_name_that_cannot_be_a_path_segment_calls_nothing(api: ApiServer, namespace: str, name: str) -> None:
    with pytest.raises(InvalidName):
        await api.get(RESOURCE_CLAIM_TEMPLATES, name, namespace)
    with pytest.raises(InvalidName):
        await api.delete(RESOURCE_CLAIM_TEMPLATES, name, namespace)
    if name == "t":
        with pytest.raises(InvalidName):
            await api.create(RESOURCE_CLAIM_TEMPLATES, {"metadata": {"name": "t"}}, namespace)
    assert SEEN == []
