"""The API-server edge: the few calls the agent needs, as plain dicts (style.md item 2).

The agent needs only (issue 5): ResourceSlices (create, update, delete, list, watch), get its Node,
create Events, and patch its own Node's status with one condition. :class:`KubeApi` is that
surface as a Protocol, so the publisher and the agent are tested against an in-memory fake;
:class:`RestKubeApi` implements it with kubernetes-asyncio's ``ApiClient.call_api`` on raw JSON
(no generated models, so every ``resource.k8s.io`` version works the same way). Every failure
raises :class:`~bridge.errors.PublishError` with the HTTP status in ``code``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any, Protocol

from bridge.errors import PublishError
from translate.names import API_VERSIONS

logger = logging.getLogger(__name__)

Obj = dict[str, Any]
GROUP = "resource.k8s.io"


class KubeApi(Protocol):
    """What the agent may do on the API server."""

    async def served_resource_versions(self) -> list[str]:
        """The ``resource.k8s.io/<version>`` group versions the server serves."""
        ...

    async def list_slices(self, api_version: str, field_selector: str) -> list[Obj]:
        """ResourceSlices matching a field selector (``spec.nodeName=...,spec.driver=...``)."""
        ...

    async def create_slice(self, api_version: str, body: Obj) -> Obj:
        """Create a ResourceSlice."""
        ...

    async def replace_slice(self, api_version: str, name: str, body: Obj) -> Obj:
        """Replace a ResourceSlice (``body.metadata.resourceVersion`` set)."""
        ...

    async def delete_slice(self, api_version: str, name: str) -> None:
        """Delete a ResourceSlice (a missing one is not an error)."""
        ...

    def watch_slices(self, api_version: str, field_selector: str, timeout: int) -> AsyncIterator[tuple[str, Obj]]:
        """Events ``(type, object)`` (ADDED for what exists first, then ADDED, MODIFIED,
        DELETED) on ResourceSlices matching the selector, until the server ends the watch
        after ``timeout`` seconds; an ERROR event ends it too. Raises PublishError."""
        ...

    async def get_node(self, name: str) -> Obj:
        """Read a Node."""
        ...

    async def patch_node_status(self, name: str, patch: Obj) -> None:
        """Strategic-merge-patch a Node's status (conditions merge by ``type``)."""
        ...

    async def create_event(self, namespace: str, body: Obj) -> None:
        """Create a core/v1 Event."""
        ...


def newest_version(served: list[str]) -> str:
    """The newest ``resource.k8s.io`` version we render that the server serves (v1 > v1beta2 > v1beta1)."""
    for version in API_VERSIONS:
        if version in served:
            return version
    raise PublishError(f"the API server serves none of {', '.join(API_VERSIONS)} (serves {served or 'nothing'})")


def _slices_path(api_version: str, name: str | None = None) -> str:
    path = f"/apis/{api_version}/resourceslices"
    return f"{path}/{name}" if name else path


def _connection_failure(exc: Exception) -> bool:
    """True for an OSError, a timeout or an aiohttp client error: the API server unreachable."""
    return isinstance(exc, OSError | TimeoutError) or type(exc).__module__.startswith("aiohttp")


class RestKubeApi:
    """:class:`KubeApi` over a ``kubernetes_asyncio.client.ApiClient``."""

    def __init__(self, api_client: Any) -> None:
        self.client = api_client

    async def _call(self, method: str, path: str, body: Obj | None = None, query: list[tuple[str, str]] | None = None,
                    content_type: str = "application/json") -> Any:
        from kubernetes_asyncio.client.exceptions import ApiException

        try:
            return await self.client.call_api(
                path, method, query_params=query or [], body=body,
                header_params={"Accept": "application/json", "Content-Type": content_type},
                response_types_map={200: "object", 201: "object", 202: "object"},
                auth_settings=["BearerToken"], _return_http_data_only=True,
            )
        except ApiException as exc:
            text = f"{method} {path}: {exc.status} {exc.reason}: {str(exc.body)[:300]}"
            raise PublishError(text, exc.status) from exc
        except Exception as exc:
            if _connection_failure(exc):
                raise PublishError(f"{method} {path}: API server unreachable: {exc}") from exc
            raise

    async def served_resource_versions(self) -> list[str]:
        try:
            group = await self._call("GET", f"/apis/{GROUP}")
        except PublishError as exc:
            if exc.code == 404:
                return []
            raise
        return [v["groupVersion"] for v in (group or {}).get("versions", [])]

    async def list_slices(self, api_version: str, field_selector: str) -> list[Obj]:
        result = await self._call("GET", _slices_path(api_version), query=[("fieldSelector", field_selector)])
        items: list[Obj] = (result or {}).get("items") or []
        return items

    async def create_slice(self, api_version: str, body: Obj) -> Obj:
        result: Obj = await self._call("POST", _slices_path(api_version), body)
        return result

    async def replace_slice(self, api_version: str, name: str, body: Obj) -> Obj:
        result: Obj = await self._call("PUT", _slices_path(api_version, name), body)
        return result

    async def delete_slice(self, api_version: str, name: str) -> None:
        try:
            await self._call("DELETE", _slices_path(api_version, name))
        except PublishError as exc:
            if exc.code != 404:
                raise

    async def watch_slices(self, api_version: str, field_selector: str, timeout: int) -> AsyncIterator[tuple[str, Obj]]:
        from kubernetes_asyncio import client, watch
        from kubernetes_asyncio.client.exceptions import ApiException

        group, version = api_version.split("/", 1)
        objects = client.CustomObjectsApi(self.client)
        w = watch.Watch()
        try:
            async for event in w.stream(objects.list_cluster_custom_object, group, version, "resourceslices",
                                        field_selector=field_selector, timeout_seconds=timeout):
                kind, raw = str(event.get("type")), event.get("raw_object")
                if kind == "ERROR" or not isinstance(raw, dict):
                    return
                yield kind, raw
        except ApiException as exc:
            raise PublishError(f"watch {_slices_path(api_version)}: {exc.status} {exc.reason}", exc.status) from exc
        except ValueError as exc:  # a watch line that does not decode
            raise PublishError(f"watch {_slices_path(api_version)}: {exc}") from exc
        except Exception as exc:
            if _connection_failure(exc):
                raise PublishError(f"watch {_slices_path(api_version)}: API server unreachable: {exc}") from exc
            raise
        finally:
            w.stop()

    async def get_node(self, name: str) -> Obj:
        result: Obj = await self._call("GET", f"/api/v1/nodes/{name}")
        return result

    async def patch_node_status(self, name: str, patch: Obj) -> None:
        await self._call("PATCH", f"/api/v1/nodes/{name}/status", patch,
                         content_type="application/strategic-merge-patch+json")

    async def create_event(self, namespace: str, body: Obj) -> None:
        await self._call("POST", f"/api/v1/namespaces/{namespace}/events", body)


async def connect(kubeconfig: str = "") -> Any:
    """An ``ApiClient`` from a kubeconfig file, or the in-cluster service account when empty."""
    from kubernetes_asyncio import client, config

    try:
        if kubeconfig:
            configuration = client.Configuration()
            await config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        else:
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise PublishError(f"cannot load Kubernetes credentials ({kubeconfig or 'in-cluster'}): {exc}") from exc
    return client.ApiClient(configuration)
