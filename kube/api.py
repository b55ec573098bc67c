"""The typed calls the services make, as plain dicts, over any resource of :mod:`kube.resources`.

    class KubeApi(Protocol):                    what a service may do; ApiServer (real), FakeKube (tests)
        await served_versions(group) -> ["resource.k8s.io/v1", ...]      discovery of one group
        await get(resource, name, namespace=None) -> obj
        await list(resource, namespace=None, label_selector=, field_selector=, limit=, continue_token=,
                   metadata_only=)              -> List object (one page when ``limit``: metadata.continue)
        await server_version() -> "v1.36.3"     GET /version (gitVersion; no RBAC: system:public-info-viewer)
        await server_metrics() -> text          GET /metrics (Prometheus text; needs the non-resource grant
                                                :data:`METRICS_CALL`, else Forbidden)
        await create(resource, body, namespace=None) -> obj
        await replace(resource, name, body, namespace=None) -> obj      (metadata.resourceVersion: CAS)
        await patch_status(resource, name, patch, namespace=None)       strategic merge of .../status
        await delete(resource, name, namespace=None, resource_version=None)   (precondition when given)
        watch(resource, namespace=None, ..., resource_version=, timeout=, metadata_only=)
                                                -> async (type, obj) events

    list_pages(api, resource, limit=500)        async pages of a paged list
    await list_all(api, resource, limit=500, metadata_only=, keep=)   (every item, the list's
                                                resourceVersion), paged; relisted from the start on 410

``namespace=None`` on a namespaced resource means every namespace (list, watch). Every call
raises :mod:`kube.errors` (NotFound, AlreadyExists, Conflict, Forbidden, Gone, Unavailable,
...). A watch ends when the server ends it (``timeout`` seconds); an ERROR event raises the
error it carries (410: :class:`~kube.errors.Gone`, relist). :func:`api_call` says which
permission a call needs (the services declare theirs in one list each).

``metadata_only``: the API server answers each object as a ``PartialObjectMetadata`` (apiVersion
``meta.k8s.io/v1``: only ``metadata``), lists as a ``PartialObjectMetadataList``
(:data:`METADATA_LIST_ACCEPT`, :data:`METADATA_WATCH_ACCEPT`, as client-go's metadata client
asks): the server trims, so a reader that needs only names and labels never parses the rest
(a Node's images and status; docs/design.md D52).
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

from dra_bridge.kube.client import JSON, STRATEGIC_MERGE, Client
from dra_bridge.kube.errors import Gone, KubeError, NotFound, from_status
from dra_bridge.kube.resources import ApiCall, Resource, Verb

Obj = dict[str, Any]
#: The permission ``server_metrics`` needs: ``get`` on the non-resource URL ``/metrics``.
METRICS_CALL = ApiCall("get", "", "/metrics")
#: The Accept headers of a metadata-only list and watch (plain JSON last: any server answers).
METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
METADATA_WATCH_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
#: The page size of :func:`list_all` and :func:`list_pages` (kubectl's).
PAGE = 500


def api_call(verb: Verb, resource: Resource, namespace: str | None = None, subresource: str = "") -> ApiCall:
    """The permission one call needs (a namespaced resource called without a namespace: cluster-wide)."""
    plural = f"{resource.plural}/{subresource}" if subresource else resource.plural
    return ApiCall(verb, resource.group, plural, "namespace" if resource.namespaced and namespace else "cluster")


def _selectors(label_selector: str, field_selector: str) -> list[tuple[str, str]]:
    query = []
    if label_selector:
        query.append(("labelSelector", label_selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
    return query


class KubeApi(Protocol):
    """What a service may ask of the API server (see the module docstring)."""

    async def served_versions(self, group: str) -> builtins.list[str]:
        """``<group>/<version>`` of every version served (empty when the group is not served); KubeError
        when the answer is not an APIGroup."""
        ...

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        """Read one object."""
        ...

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
    ) -> Obj:
        """The List object (``items``, ``metadata.resourceVersion``); with ``limit``, one page of at
        most that many items, ``metadata.continue`` naming the next (pass it as ``continue_token``;
        Gone when it has expired; ``metadata_only``: each item only its ``metadata``)."""
        ...

    async def server_version(self) -> str:
        """The API server's ``gitVersion`` (``v1.36.3``) from ``GET /version``."""
        ...

    async def server_metrics(self) -> str:
        """The API server's ``/metrics`` (Prometheus text format); Forbidden without
        :data:`METRICS_CALL`."""
        ...

    async def create(self, resource: Resource, body: Obj, namespace: str | None = None) -> Obj:
        """Create an object; AlreadyExists when the name is taken."""
        ...

    async def replace(self, resource: Resource, name: str, body: Obj, namespace: str | None = None) -> Obj:
        """Replace an object (a ``metadata.resourceVersion`` in ``body`` makes it a compare-and-swap)."""
        ...

    async def patch_status(self, resource: Resource, name: str, patch: Obj, namespace: str | None = None) -> Obj:
        """Strategic-merge-patch the status subresource."""
        ...

    async def delete(
        self, resource: Resource, name: str, namespace: str | None = None, *, resource_version: str | None = None
    ) -> None:
        """Delete an object (only at ``resource_version`` when given: Conflict otherwise)."""
        ...

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
        timeout: int = 300,
        metadata_only: bool = False,
    ) -> AsyncIterator[tuple[str, Obj]]:
        """Events ``(ADDED | MODIFIED | DELETED, object)`` until the server ends the watch
        (``metadata_only``: each object only its ``metadata``)."""
        ...


class ApiServer:
    """:class:`KubeApi` over a :class:`kube.client.Client`."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def served_versions(self, group: str) -> builtins.list[str]:
        try:
            doc = await self.client.request("GET", f"/apis/{group}")
        except NotFound:
            return []
        versions = doc.get("versions", []) if isinstance(doc, dict) else None
        if not isinstance(versions, builtins.list) or not all(
            isinstance(v, dict) and isinstance(v.get("groupVersion"), str) for v in versions
        ):
            raise KubeError(
                f"GET /apis/{group}: not an APIGroup (a versions list of groupVersion strings): {str(doc)[:120]!r}"
            )
        return [v["groupVersion"] for v in versions]

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        result: Obj = await self.client.request("GET", resource.path(namespace, name))
        return result

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
    ) -> Obj:
        query = _selectors(label_selector, field_selector)
        if limit:
            query.append(("limit", str(limit)))
        if continue_token:
            query.append(("continue", continue_token))
        accept = METADATA_LIST_ACCEPT if metadata_only else JSON
        result: Obj = await self.client.request("GET", resource.path(namespace), query=query, accept=accept)
        return result or {"items": []}

    async def server_version(self) -> str:
        doc = await self.client.request("GET", "/version")
        if not isinstance(doc, dict) or not isinstance(doc.get("gitVersion"), str):
            raise KubeError(f"GET /version: no gitVersion in {str(doc)[:120]!r}")
        return str(doc["gitVersion"])

    async def server_metrics(self) -> str:
        return await self.client.text(METRICS_CALL.resource)

    async def create(self, resource: Resource, body: Obj, namespace: str | None = None) -> Obj:
        result: Obj = await self.client.request("POST", resource.path(namespace), body)
        return result

    async def replace(self, resource: Resource, name: str, body: Obj, namespace: str | None = None) -> Obj:
        result: Obj = await self.client.request("PUT", resource.path(namespace, name), body)
        return result

    async def patch_status(self, resource: Resource, name: str, patch: Obj, namespace: str | None = None) -> Obj:
        result: Obj = await self.client.request(
            "PATCH", resource.path(namespace, name, "status"), patch, content_type=STRATEGIC_MERGE
        )
        return result

    async def delete(
        self, resource: Resource, name: str, namespace: str | None = None, *, resource_version: str | None = None
    ) -> None:
        body = {"preconditions": {"resourceVersion": resource_version}} if resource_version else None
        await self.client.request("DELETE", resource.path(namespace, name), body)

    async def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
        timeout: int = 300,
        metadata_only: bool = False,
    ) -> AsyncIterator[tuple[str, Obj]]:
        path = resource.path(namespace)
        query = [*_selectors(label_selector, field_selector), ("timeoutSeconds", str(timeout))]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        accept = METADATA_WATCH_ACCEPT if metadata_only else JSON
        async for event in self.client.stream(path, query, accept=accept):
            kind, obj = str(event.get("type", "")), event.get("object")
            if kind == "ERROR":
                status = obj if isinstance(obj, dict) else {}
                raise from_status(f"watch {path}", int(status.get("code") or 0), status)
            if kind == "BOOKMARK" or not isinstance(obj, dict):
                continue
            yield kind, obj


async def list_pages(
    api: KubeApi, resource: Resource, namespace: str | None = None, *, limit: int = PAGE
) -> AsyncIterator[builtins.list[Obj]]:
    """Every object of ``resource``, ``limit`` per page (``limit``/``continue``, as kubectl pages),
    each item with its ``apiVersion`` and ``kind`` (a List's items carry neither). Raises
    KubeError; Gone when a continue token expires between pages."""
    token = ""
    while True:
        page = await api.list(resource, namespace, limit=limit, continue_token=token)
        items = [
            {"apiVersion": resource.api_version, "kind": resource.kind, **item}
            for item in page.get("items") or []
            if isinstance(item, dict)
        ]
        yield items
        meta = page.get("metadata")
        token = str(meta.get("continue") or "") if isinstance(meta, dict) else ""
        if not token:
            return


async def list_all(
    api: KubeApi,
    resource: Resource,
    *,
    limit: int = PAGE,
    metadata_only: bool = False,
    keep: Callable[[Obj], Obj] = lambda obj: obj,
) -> tuple[builtins.list[Obj], str]:
    """Every object of ``resource`` (cluster-wide), read ``limit`` per page, each passed through
    ``keep`` as its page arrives (what a caller keeps of it), and the list's resourceVersion (to
    watch from). A continue token that expired between pages (410 Gone) starts the list over,
    once; a second expiry raises Gone."""
    for attempt in (1, 2):
        items: builtins.list[Obj] = []
        token, version = "", ""
        try:
            while True:
                page = await api.list(resource, limit=limit, continue_token=token, metadata_only=metadata_only)
                got = page.get("metadata")
                meta: Obj = got if isinstance(got, dict) else {}
                version = version or str(meta.get("resourceVersion") or "")
                items += [keep(item) for item in page.get("items") or [] if isinstance(item, dict)]
                token = str(meta.get("continue") or "")
                if not token:
                    return items, version
        except Gone:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
