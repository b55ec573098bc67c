"""An in-memory :class:`kube.api.KubeApi` for component tests.

    fake = FakeKube(allowed=SERVICE_API_CALLS, served=["resource.k8s.io/v1"])
    fake.objects[plural][key]         what is stored ("name", or "namespace/name" when namespaced)
    fake.put(resource, obj) / fake.remove(resource, name, namespace)   the test's own hand (watchers see it)
    fake.calls, fake.writes           every call's permission; (verb, plural, key) of every write
    fake.reads                        (list | watch, plural, limit, metadata_only) of every list and watch
    fake.metrics = "..."              what ``server_metrics`` answers (Forbidden unless allowed)
    fake.fail = "refused"             every call raises Unavailable (or set a KubeError to raise)
    fake.delay = 0.5                  every call waits first (deadlines)

A call outside ``allowed`` raises Forbidden, as RBAC built from the same list would, so a
component test also proves that a service declares every call it makes.

What it is not: an API server. It stores what it is given (no defaulting, no validation),
ignores resourceVersion preconditions (no 409 conflicts) and never expires a watch (no 410).
Those semantics are proven against the real API server in the e2e tests. It does answer
NotFound for a missing object and AlreadyExists for a taken name, InvalidName (before the call
counts) for a namespace or name ``ApiServer`` would refuse to put in a path, assigns resourceVersion,
uid and generated names, filters by label and field selectors (equality and existence), and
merges status patches (conditions by ``type``).
"""

from __future__ import annotations

import asyncio
import builtins
import copy
from collections import defaultdict
from collections.abc import AsyncIterator, Iterable
from typing import Any

from dra_bridge.kube.api import METRICS_CALL, api_call
from dra_bridge.kube.errors import AlreadyExists, Forbidden, KubeError, NotFound, Unavailable
from dra_bridge.kube.resources import ApiCall, Resource, Verb

Obj = dict[str, Any]


def _key(resource: Resource, name: str, namespace: str | None) -> str:
    return f"{namespace}/{name}" if resource.namespaced else name


def _field(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def matches(obj: Obj, label_selector: str = "", field_selector: str = "") -> bool:
    """True when ``obj`` satisfies both selectors (``k=v``, ``k==v``, ``k!=v``, ``k``; comma = and)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, (t.strip() for t in label_selector.split(","))):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            if labels.get(k) != v:
                return False
        elif term not in labels:
            return False
    for term in filter(None, (t.strip() for t in field_selector.split(","))):
        negate = "!=" in term
        k, v = term.replace("!=", "=").replace("==", "=").split("=", 1)
        if (str(_field(obj, k) or "") == v) == negate:
            return False
    return True


def _merge(into: Obj, patch: Obj) -> None:
    for k, v in patch.items():
        if k == "conditions" and isinstance(v, list):
            kept = [c for c in into.get(k) or [] if c.get("type") not in {p.get("type") for p in v}]
            into[k] = kept + copy.deepcopy(v)
        elif isinstance(v, dict) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = copy.deepcopy(v)


class FakeKube:
    """See the module docstring."""

    def __init__(
        self,
        allowed: Iterable[ApiCall] | None = None,
        served: Iterable[str] = ("resource.k8s.io/v1", "resource.k8s.io/v1beta1"),
    ) -> None:
        self.allowed = frozenset(allowed) if allowed is not None else None
        self.served = builtins.list(served)
        self.version = "v1.36.3"
        self.metrics = ""
        self.objects: defaultdict[str, dict[str, Obj]] = defaultdict(dict)
        self.calls: builtins.list[ApiCall] = []
        #: (list | watch, plural, limit, metadata_only) of every list and watch
        self.reads: builtins.list[tuple[str, str, int, bool]] = []
        self.writes: builtins.list[tuple[str, str, str]] = []
        self.fail: str | KubeError = ""
        self.delay = 0.0
        self._rv = 0
        self._watchers: builtins.list[tuple[Resource, asyncio.Queue[tuple[str, Obj]]]] = []

    # -- the test's own hand ------------------------------------------------------------

    def put(self, resource: Resource, obj: Obj) -> Obj:
        """Store ``obj`` as if someone else wrote it (no permission needed; watchers see it)."""
        meta = obj.setdefault("metadata", {})
        key = _key(resource, meta["name"], meta.get("namespace"))
        self._rv += 1
        meta["resourceVersion"] = str(self._rv)
        meta.setdefault("uid", f"uid-{self._rv}")
        kind = "MODIFIED" if key in self.objects[resource.plural] else "ADDED"
        self.objects[resource.plural][key] = obj
        self._notify(resource, kind, obj)
        return obj

    def remove(self, resource: Resource, name: str, namespace: str | None = None) -> None:
        """Delete as someone else would (``kubectl delete``, a restarting kubelet)."""
        gone = self.objects[resource.plural].pop(_key(resource, name, namespace))
        self._notify(resource, "DELETED", gone)

    def items(self, resource: Resource) -> builtins.list[Obj]:
        """Every stored object of ``resource``, in key order."""
        return [self.objects[resource.plural][k] for k in sorted(self.objects[resource.plural])]

    # -- KubeApi ---------------------------------------------------------------------------

    async def _check(
        self, verb: Verb, resource: Resource, namespace: str | None, sub: str = "", name: str | None = None
    ) -> None:
        resource.path(namespace, name)  # InvalidName, as ApiServer raises before any request
        call = api_call(verb, resource, namespace, sub)
        self.calls.append(call)
        if self.delay:
            await asyncio.sleep(self.delay)
        self._failing()
        if (
            self.allowed is not None
            and call not in self.allowed
            and ApiCall(call.verb, call.group, call.resource) not in self.allowed
        ):
            raise Forbidden(f"{call}: not among the declared API calls", 403, "Forbidden")

    def _failing(self) -> None:
        if isinstance(self.fail, KubeError):
            raise self.fail
        if self.fail:
            raise Unavailable(self.fail, 503)

    def _notify(self, resource: Resource, kind: str, obj: Obj) -> None:
        for watched, queue in self._watchers:
            if watched.plural == resource.plural:
                queue.put_nowait((kind, copy.deepcopy(obj)))

    def _stored(self, resource: Resource, name: str, namespace: str | None) -> Obj:
        try:
            return self.objects[resource.plural][_key(resource, name, namespace)]
        except KeyError:
            raise NotFound(f"{resource.plural} {name!r} not found", 404, "NotFound") from None

    def _write(self, verb: str, resource: Resource, obj: Obj) -> Obj:
        stored = self.put(resource, copy.deepcopy(obj))
        meta = stored["metadata"]
        self.writes.append((verb, resource.plural, _key(resource, meta["name"], meta.get("namespace"))))
        return copy.deepcopy(stored)

    async def served_versions(self, group: str) -> builtins.list[str]:
        self._failing()  # discovery needs no permission (system:discovery)
        return [v for v in self.served if v.startswith(f"{group}/")]

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        await self._check("get", resource, namespace, name=name)
        return copy.deepcopy(self._stored(resource, name, namespace))

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
        await self._check("list", resource, namespace)
        self.reads.append(("list", resource.plural, limit, metadata_only))
        items = [
            copy.deepcopy(o)
            for o in self.items(resource)
            if matches(o, label_selector, field_selector)
            and (namespace is None or o["metadata"].get("namespace") == namespace)
        ]
        meta = {"resourceVersion": str(self._rv)}
        start = int(continue_token or 0)
        if limit:
            items, rest = items[start : start + limit], items[start + limit :]
            if rest:
                meta["continue"] = str(start + limit)
        if metadata_only:
            return {"kind": "PartialObjectMetadataList", "metadata": meta, "items": [_partial(o) for o in items]}
        return {"kind": f"{resource.kind}List", "metadata": meta, "items": items}

    async def server_version(self) -> str:
        self._failing()  # /version needs no permission (system:public-info-viewer)
        return self.version

    async def server_metrics(self) -> str:
        self.calls.append(METRICS_CALL)
        self._failing()
        if self.allowed is not None and METRICS_CALL not in self.allowed:
            raise Forbidden(f"{METRICS_CALL}: not among the declared API calls", 403, "Forbidden")
        return self.metrics

    async def create(self, resource: Resource, body: Obj, namespace: str | None = None) -> Obj:
        await self._check("create", resource, namespace)
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        if resource.namespaced:
            meta["namespace"] = namespace
        if not meta.get("name"):
            meta["name"] = f"{meta.get('generateName', '')}{self._rv + 1:05d}"
        if _key(resource, meta["name"], namespace) in self.objects[resource.plural]:
            raise AlreadyExists(f"{resource.plural} {meta['name']!r} already exists", 409, "AlreadyExists")
        meta.pop("resourceVersion", None)
        return self._write("create", resource, obj)

    async def replace(self, resource: Resource, name: str, body: Obj, namespace: str | None = None) -> Obj:
        await self._check("update", resource, namespace, name=name)
        uid = self._stored(resource, name, namespace)["metadata"].get("uid")
        obj = copy.deepcopy(body)
        obj["metadata"].update(uid=uid, **({"namespace": namespace} if resource.namespaced else {}))
        return self._write("update", resource, obj)

    async def patch_status(self, resource: Resource, name: str, patch: Obj, namespace: str | None = None) -> Obj:
        await self._check("patch", resource, namespace, "status", name=name)
        obj = copy.deepcopy(self._stored(resource, name, namespace))
        _merge(obj.setdefault("status", {}), patch.get("status") or {})
        return self._write("patch", resource, obj)

    async def delete(
        self, resource: Resource, name: str, namespace: str | None = None, *, resource_version: str | None = None
    ) -> None:
        await self._check("delete", resource, namespace, name=name)
        self._stored(resource, name, namespace)
        self.remove(resource, name, namespace)
        self.writes.append(("delete", resource.plural, _key(resource, name, namespace)))

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
        await self._check("watch", resource, namespace)
        self.reads.append(("watch", resource.plural, 0, metadata_only))
        queue: asyncio.Queue[tuple[str, Obj]] = asyncio.Queue()
        entry = (resource, queue)
        self._watchers.append(entry)
        try:
            if not resource_version:
                for obj in self.items(resource):
                    queue.put_nowait(("ADDED", copy.deepcopy(obj)))
            loop = asyncio.get_running_loop()
            end = loop.time() + timeout
            while (left := end - loop.time()) > 0:
                try:
                    kind, obj = await asyncio.wait_for(queue.get(), left)
                except TimeoutError:
                    return
                if matches(obj, label_selector, field_selector) and (
                    namespace is None or obj["metadata"].get("namespace") == namespace
                ):
                    yield kind, (_partial(obj) if metadata_only else obj)
        finally:
            self._watchers.remove(entry)


def _partial(obj: Obj) -> Obj:
    """``obj`` as a metadata-only read answers it (a ``PartialObjectMetadata``)."""
    return {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": obj.get("metadata", {})}
