"""Connection: kubernetes-asyncio's Configuration and ApiClient, spoken to in raw JSON.

    client = await connect(kubeconfig | None)          kubeconfig file, or the in-cluster service account
    client = Client(api_client)                         over an existing ApiClient (tests)
    await client.request(method, path, body=None, query=(), content_type=..., accept=...) -> dict | None
    async for line in client.stream(path, query, accept=...):   decoded JSON lines of a watch
    await client.close()

A kubeconfig is read first as a regular file of at most :data:`MAX_KUBECONFIG_BYTES`
(:func:`kube.regular_files.read_regular_text`: opened without blocking, so a FIFO is refused,
not waited on) that parses as YAML; otherwise
:class:`kube.errors.KubeconfigFileError` names it.

No generated models: every body in and out is a plain dict, so every ``resource.k8s.io``
version works the same way. Every failure is a :class:`kube.errors.KubeError` raised ``from``
the client's exception (connection failures and timeouts: ``Unavailable``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client.exceptions import ApiException

from dra_bridge.kube.errors import (
    FileRefused,
    KubeConfigError,
    KubeconfigFileError,
    KubeError,
    Unavailable,
    from_api_exception,
    from_status,
    is_connection_failure,
)
from dra_bridge.kube.regular_files import read_regular_text

logger = logging.getLogger(__name__)
JSON = "application/json"
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
#: The largest kubeconfig read (one with embedded certificates is a few kB).
MAX_KUBECONFIG_BYTES = 4 << 20


def check_kubeconfig(path: str | Path) -> None:
    """KubeconfigFileError naming ``path`` unless it is a regular file of at most
    MAX_KUBECONFIG_BYTES in UTF-8 YAML (the client library then reads it itself)."""
    try:
        text = read_regular_text(path, MAX_KUBECONFIG_BYTES)
    except FileRefused as exc:
        raise KubeconfigFileError(f"kubeconfig {path}: {_kubeconfig_phrase(exc)}") from exc
    try:
        yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise KubeconfigFileError(f"kubeconfig {path}: not YAML{where}") from None


def _kubeconfig_phrase(exc: FileRefused) -> str:
    if exc.kind == "not-regular":
        return "is not a regular file"
    if exc.kind == "too-large":
        return f"larger than {MAX_KUBECONFIG_BYTES >> 20} MiB"
    if exc.kind == "not-utf8":
        return f"not UTF-8 (byte {exc.offset})"
    return exc.phrase  # cannot read: ..., is a directory


async def configuration(kubeconfig: str | Path | None, context: str | None = None) -> k8s.Configuration:
    """A client Configuration from a kubeconfig file (its ``context``, default the current one),
    or the pod's service account when empty."""
    cfg = k8s.Configuration()
    try:
        if kubeconfig:
            check_kubeconfig(kubeconfig)
            await k8s_config.load_kube_config(config_file=str(kubeconfig), context=context, client_configuration=cfg)
        else:
            k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    except (k8s_config.ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        where = kubeconfig or "the in-cluster service account"
        raise KubeConfigError(f"cannot configure the Kubernetes client from {where}: {exc}") from exc
    return cfg


async def connect(kubeconfig: str | Path | None = None, context: str | None = None) -> Client:
    """A :class:`Client` from a kubeconfig file (``context``: one of its contexts), or the
    in-cluster service account when empty."""
    return Client(k8s.ApiClient(await configuration(kubeconfig, context)))


class Client:
    """Raw JSON requests over one ``kubernetes_asyncio.client.ApiClient``."""

    def __init__(self, api_client: k8s.ApiClient) -> None:
        self.api_client = api_client

    async def close(self) -> None:
        """Close the connection pool."""
        await self.api_client.close()

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: Sequence[tuple[str, str]] = (),
        content_type: str = JSON,
        timeout: float | None = None,
        accept: str = JSON,
    ) -> Any:
        """One call; the decoded JSON answer (``accept``: the Accept header, JSON by default).
        Raises KubeError (see the module docstring)."""
        return await self._call(
            f"{method} {path}",
            path,
            method,
            query_params=list(query),
            body=body,
            header_params={"Accept": accept, "Content-Type": content_type},
            response_types_map={200: "object", 201: "object", 202: "object"},
            _request_timeout=timeout,
        )

    async def _call(self, what: str, path: str, method: str, **kwargs: Any) -> Any:
        try:
            return await self.api_client.call_api(
                path, method, auth_settings=["BearerToken"], _return_http_data_only=True, **kwargs
            )
        except ApiException as exc:
            raise from_api_exception(what, exc) from exc
        except Exception as exc:
            if is_connection_failure(exc):
                raise Unavailable(f"{what}: API server unreachable: {type(exc).__name__}: {exc}") from exc
            raise

    async def text(self, path: str) -> str:
        """``GET path`` of a non-resource URL answering text (``/metrics``); KubeError for an error
        status (403 Forbidden without the grant) or a connection failure."""
        what = f"GET {path}"
        resp = await self._call(what, path, "GET", header_params={"Accept": "text/plain"}, _preload_content=False)
        try:
            body = await resp.read()
            if not 200 <= resp.status <= 299:
                raise from_status(what, resp.status, body, str(resp.reason or ""))
            return bytes(body).decode(errors="replace")
        except KubeError:
            raise
        except Exception as exc:
            if is_connection_failure(exc):
                raise Unavailable(f"{what}: connection lost: {type(exc).__name__}: {exc}") from exc
            raise
        finally:
            resp.close()

    async def stream(
        self, path: str, query: Sequence[tuple[str, str]] = (), accept: str = JSON
    ) -> AsyncIterator[dict[str, Any]]:
        """The decoded JSON lines of a watch on ``path`` (``watch=true`` is added) until the server
        ends it (``accept``: the Accept header). Raises KubeError: for an error status, a line that
        does not decode, or a connection failure."""
        what = f"watch {path}"
        resp = await self._call(
            what,
            path,
            "GET",
            query_params=[*query, ("watch", "true")],
            header_params={"Accept": accept},
            _preload_content=False,
        )
        try:
            if not 200 <= resp.status <= 299:
                raise from_status(what, resp.status, await resp.read(), str(resp.reason or ""))
            while line := await resp.content.readline():
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except ValueError as exc:
                    raise KubeError(f"{what}: a watch line that does not decode: {line[:200]!r}") from exc
                if not isinstance(event, dict):
                    raise KubeError(f"{what}: a watch line that is not an object: {line[:200]!r}")
                yield event
        except KubeError:
            raise
        except Exception as exc:
            if is_connection_failure(exc):
                raise Unavailable(f"{what}: connection lost: {type(exc).__name__}: {exc}") from exc
            raise
        finally:
            resp.close()  # a watch connection is never reused
