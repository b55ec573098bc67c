"""The resources some service calls, and the REST paths and RBAC names that derive from them.

    Resource(group, version, plural, kind, namespaced)
    PODS, NODES, NAMESPACES, EVENTS, LEASES, RESOURCE_QUOTAS            fixed versions
    DEPLOYMENTS, REPLICA_SETS, STATEFUL_SETS, DAEMON_SETS, JOBS, CRON_JOBS    (apps/v1, batch/v1)
    DEVICE_CLASSES, RESOURCE_SLICES, RESOURCE_CLAIMS,                   resource.k8s.io: ``.at(api_version)``
    RESOURCE_CLAIM_TEMPLATES
    resource.path(namespace, name, subresource) -> "/apis/<group>/<version>/..."
    api_path(api_version, plural, namespace, name, subresource)        the same for any resource;
                                                                        InvalidName for a bad segment
    ApiCall(verb, group, resource, scope)                               one permission a service needs
    grant(group, resource, *verbs, scope=) -> (ApiCall, ...)            how a service writes its list
    rbac_rules(calls, scope) -> [PolicyRule]                            the RBAC that grants exactly those

Every namespace, name and subresource is one path segment, percent-escaped; a namespace that is
not a DNS label, or a name that Kubernetes refuses as a path segment (``.``, ``..``, one holding
``/`` or ``%``: apimachinery's ``IsValidPathSegmentName``), raises
:class:`~kube.errors.InvalidName` before any call is made, so a caller's string cannot reach
another path (``kube-system/../kube-system``, ``../../../../api/v1/...``).

Only resources that some service (or an e2e helper) calls are listed here; the typed calls
of :mod:`kube.api` take one of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal
from urllib.parse import quote

from dra_bridge.kube.errors import InvalidName
from dra_bridge.translate.dns_names import is_dns_label

Verb = Literal["get", "list", "watch", "create", "update", "patch", "delete"]
Scope = Literal["cluster", "namespace"]


def api_path(
    api_version: str, plural: str, namespace: str | None = None, name: str | None = None, subresource: str | None = None
) -> str:
    """``/api/v1/...`` for the core group, ``/apis/<group>/<version>/...`` otherwise; each
    namespace, name and subresource checked and escaped (module docstring)."""
    parts = ["api", "v1"] if api_version == "v1" else ["apis", *api_version.split("/")]
    if namespace:
        if not is_dns_label(namespace):
            raise InvalidName(f"namespace {namespace[:80]!r} is not a DNS label: no call made")
        parts += ["namespaces", namespace]
    parts.append(plural)
    if name:
        parts.append(segment(name))
    if subresource:
        parts.append(segment(subresource))
    return "/" + "/".join(parts)


def segment(name: str) -> str:
    """``name`` as one escaped path segment; InvalidName for ``.``, ``..`` or one holding ``/``
    or ``%`` (Kubernetes refuses such names: apimachinery ``path.IsValidPathSegmentName``)."""
    if name in (".", "..") or "/" in name or "%" in name:
        raise InvalidName(f"name {name[:80]!r} cannot be a path segment: no call made")
    return quote(name, safe="")


@dataclass(frozen=True)
class Resource:
    """A served resource: ``group`` ("" for core), ``version``, ``plural``, ``kind``, ``namespaced``."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """``v1`` or ``<group>/<version>``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def at(self, api_version: str) -> Resource:
        """The same resource in another version of its group (``resource.k8s.io/v1beta1`` or ``v1beta1``)."""
        version = api_version.rsplit("/", 1)[-1]
        if "/" in api_version and api_version.split("/", 1)[0] != self.group:
            raise ValueError(f"{api_version} is not a version of {self.group or 'core'}")
        return replace(self, version=version)

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The REST path (a collection when ``name`` is None; every namespace when ``namespace`` is None)."""
        return api_path(self.api_version, self.plural, namespace if self.namespaced else None, name, subresource)


PODS = Resource("", "v1", "pods", "Pod", True)
NODES = Resource("", "v1", "nodes", "Node", False)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False)
EVENTS = Resource("", "v1", "events", "Event", True)
RESOURCE_QUOTAS = Resource("", "v1", "resourcequotas", "ResourceQuota", True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
DEVICE_CLASSES = Resource("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False)
RESOURCE_SLICES = Resource("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False)
RESOURCE_CLAIMS = Resource("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", True)
REPLICA_SETS = Resource("apps", "v1", "replicasets", "ReplicaSet", True)
STATEFUL_SETS = Resource("apps", "v1", "statefulsets", "StatefulSet", True)
DAEMON_SETS = Resource("apps", "v1", "daemonsets", "DaemonSet", True)
JOBS = Resource("batch", "v1", "jobs", "Job", True)
CRON_JOBS = Resource("batch", "v1", "cronjobs", "CronJob", True)
RESOURCE_CLAIM_TEMPLATES = Resource("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True)


@dataclass(frozen=True, order=True)
class ApiCall:
    """One permission: ``verb`` on ``group``/``resource`` (``nodes/status`` for a subresource),
    cluster-wide or only in the service's own namespace (``scope``); a ``resource`` starting
    with ``/`` is a non-resource URL (``/metrics``: group empty, cluster scope)."""

    verb: Verb
    group: str
    resource: str
    scope: Scope = "cluster"

    @property
    def non_resource(self) -> bool:
        """True for a non-resource URL (``/metrics``)."""
        return self.resource.startswith("/")

    def __str__(self) -> str:
        if self.non_resource:
            return f"{self.verb} {self.resource}"
        where = " (own namespace)" if self.scope == "namespace" else ""
        return f"{self.verb} {self.group or 'core'}/{self.resource}{where}"


def grant(group: str, resource: str, *verbs: Verb, scope: Scope = "cluster") -> tuple[ApiCall, ...]:
    """One :class:`ApiCall` per verb on ``group``/``resource`` (how services write their lists)."""
    return tuple(ApiCall(verb, group, resource, scope) for verb in verbs)


def rbac_rules(calls: Iterable[ApiCall], scope: Scope = "cluster") -> list[dict[str, list[str]]]:
    """RBAC PolicyRules granting exactly the ``calls`` of ``scope``: a ClusterRole's
    (``cluster``; non-resource URLs as ``nonResourceURLs`` rules), or the Role's in the service's
    own namespace (``namespace``)."""
    verbs: dict[tuple[str, str], set[str]] = {}
    urls: dict[str, set[str]] = {}
    for call in calls:
        if call.non_resource and scope == "cluster":
            urls.setdefault(call.resource, set()).add(call.verb)
        elif call.scope == scope and not call.non_resource:
            verbs.setdefault((call.group, call.resource), set()).add(call.verb)
    rules: list[dict[str, list[str]]] = [
        {"apiGroups": [group], "resources": [resource], "verbs": sorted(v)}
        for (group, resource), v in sorted(verbs.items())
    ]
    return rules + [{"nonResourceURLs": [url], "verbs": sorted(v)} for url, v in sorted(urls.items())]
