"""Live mode of ``dra-migrate report``: read what a report needs from the cluster, read-only.

    objects, version = await read_cluster(api, progress)   (source, object) pairs; "v1.36.3"
    slim(obj) -> obj                                        what the report reads of one object
    served, metrics, why = await read_served(api)          resource.k8s.io versions; /metrics or None

Every object's source is :data:`SOURCE` (``cluster``).

Lists every kind of :data:`migrate.access.API_CALLS` cluster-wide in pages of
:data:`PAGE` (``limit``/``continue``), ``resource.k8s.io`` kinds in the newest version the
server serves (discovery; none served: no DeviceClasses or ResourceSlices, not an error), the
custom resources of :data:`translate.report.custom_kinds.KNOWN_CUSTOM_KINDS` whose group the
server serves (discovery; in the group's preferred version, the first listed; a kind of a
served group whose list answers 404 is not installed and is skipped), and the server's
version from ``/version``. Each object is :func:`slim` as its page arrives (no managed fields,
node images or status conditions, no pod server fields: a node's images alone can outweigh
everything the report reads of it; the pods of one workload share one spec, status, labels
and owner references), so memory follows what the report keeps. :func:`read_served` asks
discovery which ``resource.k8s.io`` versions the server serves, and reads the API server's ``/metrics`` (for its
``kubernetes_feature_enabled`` samples) where the optional grant
(:data:`migrate.access.OPTIONAL_CALLS`) allows: a refusal is no error, the report then judges
the gates by the release's defaults and says why. ``progress(kind, count)`` is called after each page
(the command draws a bar on stderr only when stderr is a terminal). Raises
:class:`kube.errors.KubeError` (Forbidden names the missing permission).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dra_bridge.kube.api import KubeApi, list_pages
from dra_bridge.kube.discovery import GROUP
from dra_bridge.kube.errors import KubeError, NotFound, Unavailable
from dra_bridge.kube.resources import (
    CRON_JOBS,
    DAEMON_SETS,
    DEPLOYMENTS,
    DEVICE_CLASSES,
    JOBS,
    NAMESPACES,
    NODES,
    PODS,
    REPLICA_SETS,
    RESOURCE_QUOTAS,
    RESOURCE_SLICES,
    STATEFUL_SETS,
    Resource,
)
from dra_bridge.translate.names import API_VERSIONS
from dra_bridge.translate.report.custom_kinds import KNOWN_CUSTOM_KINDS

PAGE = 500
SOURCE = "cluster"
CORE = (
    NAMESPACES,
    NODES,
    DEVICE_CLASSES,
    RESOURCE_SLICES,
    RESOURCE_QUOTAS,
    DEPLOYMENTS,
    REPLICA_SETS,
    STATEFUL_SETS,
    DAEMON_SETS,
    JOBS,
    CRON_JOBS,
    PODS,
)


_POD_SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "selfLink")


def slim(obj: dict[str, Any], seen: dict[str, Any] | None = None) -> dict[str, Any]:
    """``obj`` without what no part of the report reads and a big cluster has much of:
    ``metadata.managedFields``, a Node's ``status.images``, any ``status.conditions``, a
    Pod's server fields (``uid``, ``resourceVersion``, ``creationTimestamp``...) and its status
    but the phase (IPs, start time, container statuses differ per pod) (changed in place, and
    returned). ``seen``: values seen so far by their JSON text; a Pod's spec (but its
    ``nodeName``), status, labels and owner references equal (as text) to ones seen become those
    objects: the pods of one workload then hold one of each, a bound pod only a spec dict of its
    own whose values are shared (nothing in the report changes its input)."""
    meta, status = obj.get("metadata"), obj.get("status")
    pod = obj.get("kind") == "Pod"
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        for name in _POD_SERVER_FIELDS if pod else ():
            meta.pop(name, None)
    if isinstance(status, dict):
        status.pop("conditions", None)
        if obj.get("kind") == "Node":
            status.pop("images", None)
    if pod and isinstance(status, dict):
        obj["status"] = {"phase": status["phase"]} if "phase" in status else {}
    if seen is not None and pod:
        spec = obj.get("spec")
        node = spec.pop("nodeName", None) if isinstance(spec, dict) else None
        for holder, name in ((obj, "spec"), (obj, "status"), (meta, "labels"), (meta, "ownerReferences")):
            if isinstance(holder, dict) and isinstance(holder.get(name), dict | list):
                holder[name] = seen.setdefault(json.dumps(holder[name]), holder[name])
        if node is not None:  # a bound pod: its own small dict, every value shared with its workload's
            obj["spec"] = {**obj["spec"], "nodeName": node}
    return obj


async def read_cluster(
    api: KubeApi, progress: Callable[[str, int], None] = lambda _k, _n: None
) -> tuple[list[tuple[str, Any]], str]:
    """Every object a report reads, and the server's version (see the module docstring)."""
    version = await api.server_version()
    served = await api.served_versions(GROUP)
    resource_version = next((v for v in API_VERSIONS if v in served), None)
    objects: list[tuple[str, Any]] = []
    seen: dict[str, Any] = {}
    groups: dict[str, list[str]] = {}
    for resource in CORE:
        chosen: Resource = resource
        if resource.group == GROUP:
            if resource_version is None:
                continue
            chosen = resource.at(resource_version)
        count = 0
        async for page in list_pages(api, chosen, limit=PAGE):
            objects += [(SOURCE, slim(obj, seen)) for obj in page]
            count += len(page)
            progress(chosen.plural, count)
    for kind in KNOWN_CUSTOM_KINDS:
        group = await api.served_versions(kind.group) if kind.group not in groups else groups[kind.group]
        groups[kind.group] = group
        if not group:
            continue
        custom = Resource(kind.group, group[0].split("/", 1)[1], kind.plural, kind.kind, kind.namespaced)
        count = 0
        try:
            async for page in list_pages(api, custom, limit=PAGE):
                objects += [(SOURCE, slim(obj, seen)) for obj in page]
                count += len(page)
                progress(custom.plural, count)
        except NotFound:  # the group is served, this kind is not (its CRD not installed)
            continue
    return objects, version


async def read_served(api: KubeApi) -> tuple[tuple[str, ...], str | None, str]:
    """The ``resource.k8s.io`` versions served, the ``/metrics`` text (None when it cannot be
    read) and why not (see the module docstring). Raises Unavailable when the server is gone."""
    served = tuple(await api.served_versions(GROUP))
    try:
        return served, await api.server_metrics(), ""
    except Unavailable:
        raise
    except KubeError as exc:  # 403 without the optional grant; 404 where /metrics is off
        answer = f"{exc.status} {exc.reason}".strip() if exc.status else str(exc)
        return served, None, f"the API server's /metrics not read ({answer})"
