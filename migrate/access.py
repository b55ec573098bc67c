"""Every API call ``dra-migrate report`` makes in live mode, in one list: its read-only RBAC.

Only ``list`` (paged) on the kinds a report reads, cluster-wide, the custom resources of
:data:`translate.report.custom_kinds.KNOWN_CUSTOM_KINDS` included (listed only where served);
discovery (``/apis/...``) and ``/version`` need no grant (``system:discovery``, ``system:public-info-viewer``);
:data:`OPTIONAL_CALLS` are asked for and done without when refused. README
("dra-migrate report", live mode) shows the ClusterRole; a test compares it with this list,
and the e2e test runs the report as a ServiceAccount granted exactly this.
"""

from __future__ import annotations

from dra_bridge.kube.api import METRICS_CALL
from dra_bridge.kube.resources import ApiCall, grant
from dra_bridge.translate.report.custom_kinds import KNOWN_CUSTOM_KINDS

API_CALLS: tuple[ApiCall, ...] = (
    *grant("", "pods", "list"),
    *grant("", "nodes", "list"),
    *grant("", "namespaces", "list"),
    *grant("", "resourcequotas", "list"),
    *grant("apps", "deployments", "list"),
    *grant("apps", "replicasets", "list"),
    *grant("apps", "statefulsets", "list"),
    *grant("apps", "daemonsets", "list"),
    *grant("batch", "jobs", "list"),
    *grant("batch", "cronjobs", "list"),
    *grant("resource.k8s.io", "deviceclasses", "list"),
    *grant("resource.k8s.io", "resourceslices", "list"),
    *(call for kind in KNOWN_CUSTOM_KINDS for call in grant(kind.group, kind.plural, "list")),
)
"""The report's API calls (verb, group, resource, scope)."""

OPTIONAL_CALLS: tuple[ApiCall, ...] = (METRICS_CALL,)
"""Calls the report makes and does without when refused: ``get /metrics`` (a non-resource URL),
for the API server's ``kubernetes_feature_enabled`` samples; without it the DRA gates are the
release's defaults (the report says so)."""
