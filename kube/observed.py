"""What the API server answered a service lately: whether it answers, and what RBAC refuses.

    health = ApiHealth(clock=time.monotonic)
    api = ObservedApi(inner, health)        a KubeApi that records every call's outcome in ``health``
    health.reachable -> bool | None         None before any outcome; False after a connection failure
    health.last_failure -> str              the latest failure's text ("" when none)
    health.missing() -> [ApiCall]           calls whose latest attempt was refused (403 Forbidden)
    health.pending() -> [(ApiCall, s)]      calls without an answer yet, oldest first (watches excluded)
    health.detail() -> {"apiServer", "missingPermissions", "pending"}    for a readiness body

A call is *answered* when the server sent any HTTP status (an ApiError, or success), and
*unreachable* when it could not be reached or did not answer (:class:`~kube.errors.Unavailable`
without a status: refused, TLS, timeout). A permission that becomes refused is logged once,
at ERROR, naming it (``missing permission list core/resourcequotas``); it is logged again
only after a call with it worked in between. A watch counts as answered at its first event
or when it ends normally; it is never pending.
"""

from __future__ import annotations

import builtins
import itertools
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from dra_bridge.kube.api import METRICS_CALL, KubeApi, Obj, api_call
from dra_bridge.kube.errors import ApiError, Forbidden, KubeError, Unavailable
from dra_bridge.kube.resources import ApiCall, Resource

logger = logging.getLogger(__name__)


class ApiHealth:
    """See the module docstring. ``clock``: monotonic seconds (tests inject one)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.reachable: bool | None = None
        self.last_failure = ""
        self._missing: dict[ApiCall, str] = {}
        self._pending: dict[int, tuple[ApiCall, float]] = {}
        self._ids = itertools.count()

    def started(self, call: ApiCall) -> int:
        """A call was sent; returns the token :meth:`finished` takes."""
        token = next(self._ids)
        self._pending[token] = (call, self._clock())
        return token

    def finished(self, token: int) -> None:
        """The call of ``token`` ended, whatever the outcome (cancelled included)."""
        self._pending.pop(token, None)

    def answered(self, call: ApiCall) -> None:
        """The server answered ``call`` with success."""
        self.reachable = True
        self._missing.pop(call, None)

    def failed(self, call: ApiCall, exc: KubeError) -> None:
        """``call`` raised ``exc``: a refusal, another answer, or no answer at all."""
        self.last_failure = f"{call}: {exc}"
        if isinstance(exc, Unavailable) and exc.status is None:
            self.reachable = False
            return
        self.reachable = True
        if isinstance(exc, Forbidden):
            if call not in self._missing:
                logger.error(
                    "missing permission %s: the API server refused it (%s); grant it as "
                    "docs/webhook.md (Permissions) lists",
                    call,
                    exc,
                )
            self._missing[call] = str(exc)
        elif isinstance(exc, ApiError):
            self._missing.pop(call, None)

    def missing(self) -> list[ApiCall]:
        """Calls whose latest attempt was refused, sorted."""
        return sorted(self._missing)

    def pending(self) -> list[tuple[ApiCall, float]]:
        """Calls sent and not answered yet with their age in seconds, oldest first."""
        now = self._clock()
        return [(call, now - start) for call, start in sorted(self._pending.values(), key=lambda p: p[1])]

    def detail(self) -> dict[str, Any]:
        """``apiServer`` (answering / unreachable: why / no call yet), ``missingPermissions``
        (``verb group/resource``) and ``pending`` (calls waiting for an answer, with seconds)."""
        if self.reachable is None:
            server = "no call answered yet"
        elif self.reachable:
            server = "answering"
        else:
            server = f"unreachable: {self.last_failure}"
        return {
            "apiServer": server,
            "missingPermissions": [str(c) for c in self.missing()],
            "pending": [f"{call} for {age:.0f}s" for call, age in self.pending()],
        }


class ObservedApi:
    """A :class:`~kube.api.KubeApi` that records each call's outcome in an :class:`ApiHealth`."""

    def __init__(self, api: KubeApi, health: ApiHealth) -> None:
        self._api = api
        self.health = health

    async def _call(self, call: ApiCall, run: Callable[[], Any]) -> Any:
        token = self.health.started(call)
        try:
            result = await run()
        except KubeError as exc:
            self.health.failed(call, exc)
            raise
        finally:
            self.health.finished(token)
        self.health.answered(call)
        return result

    async def served_versions(self, group: str) -> builtins.list[str]:
        """As :meth:`KubeApi.served_versions` (discovery needs no grant: not recorded as a call)."""
        return await self._api.served_versions(group)

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        """As :meth:`KubeApi.get`."""
        result: Obj = await self._call(
            api_call("get", resource, namespace), lambda: self._api.get(resource, name, namespace)
        )
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
        """As :meth:`KubeApi.list`."""
        result: Obj = await self._call(
            api_call("list", resource, namespace),
            lambda: self._api.list(
                resource,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                limit=limit,
                continue_token=continue_token,
                metadata_only=metadata_only,
            ),
        )
        return result

    async def server_version(self) -> str:
        """As :meth:`KubeApi.server_version` (needs no grant: not recorded as a call)."""
        return await self._api.server_version()

    async def server_metrics(self) -> str:
        """As :meth:`KubeApi.server_metrics`."""
        result: str = await self._call(METRICS_CALL, self._api.server_metrics)
        return result

    async def create(self, resource: Resource, body: Obj, namespace: str | None = None) -> Obj:
        """As :meth:`KubeApi.create`."""
        result: Obj = await self._call(
            api_call("create", resource, namespace), lambda: self._api.create(resource, body, namespace)
        )
        return result

    async def replace(self, resource: Resource, name: str, body: Obj, namespace: str | None = None) -> Obj:
        """As :meth:`KubeApi.replace`."""
        result: Obj = await self._call(
            api_call("update", resource, namespace), lambda: self._api.replace(resource, name, body, namespace)
        )
        return result

    async def patch_status(self, resource: Resource, name: str, patch: Obj, namespace: str | None = None) -> Obj:
        """As :meth:`KubeApi.patch_status`."""
        result: Obj = await self._call(
            api_call("patch", resource, namespace, "status"),
            lambda: self._api.patch_status(resource, name, patch, namespace),
        )
        return result

    async def delete(
        self, resource: Resource, name: str, namespace: str | None = None, *, resource_version: str | None = None
    ) -> None:
        """As :meth:`KubeApi.delete`."""
        await self._call(
            api_call("delete", resource, namespace),
            lambda: self._api.delete(resource, name, namespace, resource_version=resource_version),
        )

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
        """As :meth:`KubeApi.watch`; answered at the first event or a normal end."""
        call = api_call("watch", resource, namespace)
        try:
            async for event in self._api.watch(
                resource,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                resource_version=resource_version,
                timeout=timeout,
                metadata_only=metadata_only,
            ):
                self.health.answered(call)
                yield event
        except KubeError as exc:
            self.health.failed(call, exc)
            raise
        self.health.answered(call)
