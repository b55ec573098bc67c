"""Watch-fed caches of the cluster state an admission may depend on (never a call per admission).

    ClusterView.node_mode(node) -> "dra" | "legacy" | ... | None     Node label dra-bridge.io/mode
    ClusterView.quota_keys(namespace) -> frozenset[str] | QuotaUnknown   keys any ResourceQuota there limits;
                                                                     QuotaUnknown (with its cause) until listed
    ClusterView.namespace_labels(ns) -> {label: value} | None | LabelsUnknown   a Namespace's labels (None:
                                                                     no such Namespace; LabelsUnknown until listed)
    ClusterView.kep5004() -> {extended resource name: DeviceClass}   classes with spec.extendedResourceName
                                                                     whose selectors match a device on a DRA node
    ClusterView.apply(kind, event_type, obj)                         the pure update (tests feed it)
    await ClusterView.run(stop)                                      list, then watch, per kind; relist on error
    ClusterView.status() -> {kind: "synced" | "not synced: <why>"}  for readiness and metrics

Lists are paged (500 a page, ``kube.api.list_all``; a continue token that expired starts the
list over). Nodes and Namespaces, of which only names and labels are read, are listed and
watched metadata-only (``PartialObjectMetadata``: the API server trims, docs/design.md D52).
ResourceSlices are listed and watched only once ``needs_slices()`` says a setting reads them
(the policy in force defers to KEP-5004 somewhere; checked every ``needs_poll`` seconds, 5);
until then their status is ``not watched: <why>``.

After an error a kind is relisted with exponential backoff (1 s doubling to 30 s, one
WARNING per attempt naming the pause), reset once a list and watch worked; ``sleep`` is
injectable for tests. A list that has not answered after ``list_timeout`` seconds (60) is
given up and retried the same way: a connection lost in a network fault must not leave a
view unsynced until the webhook restarts. Until the ResourceQuota list has answered once, every namespace's
quota is unknown (:class:`~translate.plan.cluster_state.QuotaUnknown`, whose cause says why:
not listed yet, a missing permission, no answer for N s, the last error), and the decision
keeps converting pods legacy (quota safety fails closed). After that a failing relist keeps
the last known quotas.

The Namespace view feeds the enrolment gate (``webhook/enrolment_gate.py``, docs/design.md D28):
only names and labels are kept, one small dict per namespace.

Sources of the rules: docs/design.md D6 (DaemonSet pods follow their node's handover), the
quota trap of docs/design.md's "Traps" (a quota on ``requests.nvidia.com/gpu`` does not limit the DRA class key
``<class>.deviceclass.resource.k8s.io/devices``), D8 (KEP-5004 deference, 1.36+).
A DeviceClass counts for KEP-5004 deference only when its selectors (evaluated by
``translate.cel`` like the allocator does) match at least one device of a ResourceSlice on
a node labelled ``dra-bridge.io/mode=dra``; the answer is recomputed only after a change.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dra_bridge.kube.api import KubeApi, api_call, list_all
from dra_bridge.kube.backoff import Backoff, Sleep
from dra_bridge.kube.errors import Forbidden, Gone, KubeError
from dra_bridge.kube.resources import DEVICE_CLASSES, NAMESPACES, NODES, RESOURCE_QUOTAS, RESOURCE_SLICES, Resource
from dra_bridge.translate.cel import evaluate_selectors
from dra_bridge.translate.errors import SelectorError
from dra_bridge.translate.names import NODE_MODE_LABEL
from dra_bridge.translate.plan.cluster_state import QuotaKeys, QuotaUnknown
from dra_bridge.webhook.enrolment_gate import LabelsUnknown, NamespaceLabels

logger = logging.getLogger(__name__)
Kind = str  # "Node" | "ResourceQuota" | "DeviceClass" | "ResourceSlice" | "Namespace"
KINDS: tuple[Kind, ...] = ("Node", "ResourceQuota", "DeviceClass", "ResourceSlice", "Namespace")
#: Kinds of which only names and labels are read: listed and watched metadata-only.
METADATA_KINDS: frozenset[Kind] = frozenset({"Node", "Namespace"})


def _kept(obj: dict[str, Any]) -> dict[str, Any]:
    """What a listed object keeps until the view has applied its page: no managed fields."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


class ClusterView:
    """See the module docstring; ``synced`` holds the kinds listed at least once.

    ``sleep``: the pause between attempts (tests pass a recorder); ``initial_backoff`` and
    ``max_backoff``: the first and the largest pause in seconds; ``clock``: monotonic seconds.
    """

    def __init__(
        self,
        *,
        sleep: Sleep = asyncio.sleep,
        initial_backoff: float = 1.0,
        max_backoff: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        list_timeout: float = 60.0,
        needs_slices: Callable[[], bool] = lambda: True,
        needs_poll: float = 5.0,
    ) -> None:
        self._sleep = sleep
        self._needs_slices, self._needs_poll = needs_slices, needs_poll
        self._unwatched: dict[Kind, str] = {}
        self._list_timeout = list_timeout
        self._clock = clock
        self._listing: dict[Kind, float] = {}
        self._failure: dict[Kind, str] = {}
        self._backoff = (initial_backoff, max_backoff)
        self._nodes: dict[str, str] = {}
        self._quotas: dict[tuple[str, str], frozenset[str]] = {}
        self._classes: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._slices: dict[str, Mapping[str, Any]] = {}
        self._namespaces: dict[str, dict[str, str]] = {}
        self._kep5004: dict[str, str] | None = None
        self.synced: set[Kind] = set()

    def node_mode(self, node: str) -> str | None:
        """The node's ``dra-bridge.io/mode`` label (None: unlabelled or unknown node)."""
        return self._nodes.get(node)

    def quota_keys(self, namespace: str) -> QuotaKeys:
        """Every resource key limited by a ResourceQuota in ``namespace``; QuotaUnknown (why, in a
        few words) until the ResourceQuota list has answered once."""
        if "ResourceQuota" not in self.synced:
            return QuotaUnknown(self._why("ResourceQuota"))
        keys: set[str] = set()
        for (ns, _name), hard in tuple(self._quotas.items()):  # a snapshot: decisions run in worker threads
            if ns == namespace:
                keys |= hard
        return frozenset(keys)

    def namespace_labels(self, namespace: str) -> NamespaceLabels:
        """The labels of Namespace ``namespace``; None when a synced view has no such Namespace;
        LabelsUnknown (why) until the Namespace list has answered once."""
        if "Namespace" not in self.synced:
            return LabelsUnknown(self._why("Namespace"))
        return self._namespaces.get(namespace)

    def _why(self, kind: Kind) -> str:
        if kind in self._failure:
            return self._failure[kind]
        if kind in self._listing:
            return f"the list has had no answer for {self._clock() - self._listing[kind]:.0f}s"
        return "not listed yet"

    def status(self) -> dict[Kind, str]:
        """Each kind: ``synced`` (listed at least once), or ``not synced: <why>``; a kind listed
        before whose relist fails says ``synced (relisting: <why>)``."""
        out: dict[Kind, str] = {}
        for kind in KINDS:
            problem = self._failure.get(kind) or ("listing" if kind in self._listing else "")
            if kind in self._unwatched:
                out[kind] = f"not watched: {self._unwatched[kind]}"
            elif kind not in self.synced:
                out[kind] = f"not synced: {self._why(kind)}" + (" (listing)" if kind in self._listing else "")
            else:
                out[kind] = f"synced (relisting: {problem})" if problem else "synced"
        return out

    def kep5004(self) -> Mapping[str, str]:
        """Extended resource name -> the DeviceClass that serves it through KEP-5004 on DRA nodes."""
        if self._kep5004 is None:
            out: dict[str, str] = {}
            for name, (resource, selectors) in sorted(self._classes.items()):
                if resource not in out and self._selects_dra_device(selectors):
                    out[resource] = name
            self._kep5004 = out
        return self._kep5004

    def _selects_dra_device(self, selectors: tuple[str, ...]) -> bool:
        for spec in self._slices.values():
            if self._nodes.get(str(spec.get("nodeName") or "")) != "dra":
                continue
            driver = str(spec.get("driver") or "")
            for device in spec.get("devices") or []:
                try:
                    if evaluate_selectors(selectors, device, driver):
                        return True
                except (SelectorError, TypeError, ValueError, KeyError):
                    continue
        return False

    def replace(self, kind: Kind, objects: Sequence[Mapping[str, Any]]) -> None:
        """Replace everything known of ``kind`` by a fresh list."""
        if kind == "Node":
            self._nodes.clear()
        elif kind == "ResourceQuota":
            self._quotas.clear()
        elif kind == "DeviceClass":
            self._classes.clear()
        elif kind == "ResourceSlice":
            self._slices.clear()
        elif kind == "Namespace":
            self._namespaces.clear()
        self._kep5004 = None
        for obj in objects:
            self.apply(kind, "ADDED", obj)
        self.synced.add(kind)

    def apply(self, kind: Kind, event_type: str, obj: Mapping[str, Any]) -> None:
        """Apply one watch event (ADDED, MODIFIED, DELETED) to the cache of ``kind``."""
        meta = obj.get("metadata") or {}
        name, ns = str(meta.get("name", "")), str(meta.get("namespace", ""))
        gone = event_type == "DELETED"
        if kind == "Node":
            mode = (meta.get("labels") or {}).get(NODE_MODE_LABEL)
            if gone or mode is None:
                self._nodes.pop(name, None)
            else:
                self._nodes[name] = str(mode)
        elif kind == "ResourceQuota":
            hard = (obj.get("spec") or {}).get("hard") or {}
            if gone:
                self._quotas.pop((ns, name), None)
            else:
                self._quotas[(ns, name)] = frozenset(str(k) for k in hard)
        elif kind == "DeviceClass":
            spec = obj.get("spec") or {}
            resource = spec.get("extendedResourceName")
            if gone or not resource:
                self._classes.pop(name, None)
            else:
                exprs = tuple(str((s.get("cel") or {}).get("expression", "")) for s in spec.get("selectors") or [])
                self._classes[name] = (str(resource), exprs)
        elif kind == "ResourceSlice":
            if gone:
                self._slices.pop(name, None)
            else:
                self._slices[name] = obj.get("spec") or {}
        elif kind == "Namespace":
            if gone:
                self._namespaces.pop(name, None)
            else:
                self._namespaces[name] = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
            return  # no bearing on KEP-5004
        self._kep5004 = None

    async def run(self, api: KubeApi, resource_version: str, stop: asyncio.Event) -> None:
        """Keep every cache fed until ``stop`` is set (``resource_version``: resource.k8s.io/<v>)."""
        sources: dict[Kind, Resource] = {
            "Node": NODES,
            "ResourceQuota": RESOURCE_QUOTAS,
            "DeviceClass": DEVICE_CLASSES.at(resource_version),
            "ResourceSlice": RESOURCE_SLICES.at(resource_version),
            "Namespace": NAMESPACES,
        }
        tasks = [
            asyncio.get_running_loop().create_task(self._feed(api, kind, resource, stop))
            for kind, resource in sources.items()
        ]
        try:
            await stop.wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _feed(self, api: KubeApi, kind: Kind, resource: Resource, stop: asyncio.Event) -> None:
        backoff = Backoff(*self._backoff, sleep=self._sleep)
        if kind == "ResourceSlice":
            while not self._needs_slices() and not stop.is_set():
                self._unwatched[kind] = "no policy setting reads ResourceSlices (deferToKEP5004 is off)"
                await self._sleep(self._needs_poll)
            self._unwatched.pop(kind, None)
        while not stop.is_set():
            try:
                if await self._list_and_watch(api, kind, resource, stop):
                    backoff.reset()
                    continue
                logger.info("%s watch: ended with an ERROR event; relisting in %gs", kind, backoff.delay)
                await backoff.wait()
            except asyncio.CancelledError:
                raise
            except (KubeError, ValueError, TimeoutError) as exc:
                self._failure[kind] = self._cause(kind, resource, exc)
                logger.warning("%s watch: %s; relisting in %gs", kind, str(exc) or self._failure[kind], backoff.delay)
                await backoff.wait()

    def _cause(self, kind: Kind, resource: Resource, exc: Exception) -> str:
        listing = kind in self._listing or kind not in self.synced
        verb = "list" if listing else "watch"
        self._listing.pop(kind, None)
        if isinstance(exc, Forbidden):
            return f"missing permission {api_call('list' if listing else 'watch', resource)}"
        if isinstance(exc, TimeoutError) and listing:
            return f"the list had no answer within {self._list_timeout:g}s; retrying"
        return f"{verb} failed: {str(exc)[:80] or type(exc).__name__}"

    async def _list_and_watch(self, api: KubeApi, kind: Kind, resource: Resource, stop: asyncio.Event) -> bool:
        """List ``kind``, then apply watch events until the watch ends; True when it worked
        (the watch delivered an event or ended normally). A watch that expired (410 Gone)
        returns whether it delivered anything; other errors propagate."""
        self._listing[kind] = self._clock()
        metadata_only = kind in METADATA_KINDS
        async with asyncio.timeout(self._list_timeout):
            items, rv = await list_all(api, resource, metadata_only=metadata_only, keep=_kept)
        del self._listing[kind]
        self._failure.pop(kind, None)
        self.replace(kind, items)
        worked = False
        try:
            async for event_type, obj in api.watch(
                resource, resource_version=rv, timeout=300, metadata_only=metadata_only
            ):
                worked = True
                self.apply(kind, event_type, obj)
                if stop.is_set():
                    break
        except Gone:
            return worked
        return True
