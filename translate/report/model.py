"""The migration report: every workload's plan, path, risks and alignment, per node pool, totals.

    build_report(objects, catalog, settings) -> Report   (translate.report.build)
    Report.as_json() -> dict       the ``report.dra-bridge.io/v2`` document
                                   (schema: translate/data/report-v2.schema.json)

Pure: objects in, a report out. Per workload (:mod:`translate.report.grouping`): the plan
(``convert_object``: its findings and the ResourceClaimTemplates it would get), the path
(:mod:`translate.report.paths`; ``not-enrolled`` where :func:`translate.enrolment.enrolment`
says the webhook never sees the namespace, from the input's Namespace objects and
``settings.enrolment``), the risks (:mod:`translate.report.risks`) and, for a
workload with more than one device in a container (or pod, with pod scope), whether the
Topology Manager's NUMA/PCIe alignment survives (``kept``, ``partial``, or ``lost`` without
``--alignment``: MIGRATION.md, "Topology Manager"). A node pool is the value of
``settings.pool_label`` on a workload's nodes (its pods' ``spec.nodeName``, else its
``nodeSelector``); workloads with neither are in the pool ``(any)``.

Capacity (which converted claims fit on the cluster's devices, and the legacy model on the
same inventory) is an optional section: ``Report.capacity``, ``WorkloadReport.capacity`` and
``PoolReport.capacity`` are None until :func:`translate.report.capacity.report_capacity`
fills them (through :func:`attach_capacity`; ``--no-capacity`` leaves them None).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dra_bridge.translate.enrolment import Enrolment, EnrolmentSettings
from dra_bridge.translate.findings import SEVERITY, Finding, worst
from dra_bridge.translate.names import CATALOG_API_VERSION, GFD_PRODUCT_LABEL
from dra_bridge.translate.plan.pod_plan import Options
from dra_bridge.translate.plan.workloads import (
    Converted,
)
from dra_bridge.translate.policy import Policy
from dra_bridge.translate.report.grouping import Inventory, Unit
from dra_bridge.translate.report.grouping import pod_templates as pod_templates  # re-exported: capacity, convert
from dra_bridge.translate.report.namespaces import enrolment_inputs, enrolment_json
from dra_bridge.translate.report.paths import (
    PATHS,
    PathVerdict,
)
from dra_bridge.translate.report.pod_total import created_pods
from dra_bridge.translate.report.quotas import QuotaReport
from dra_bridge.translate.report.risks import Risk
from dra_bridge.translate.report.served import Served, cluster_features

REPORT_API_VERSION = "report.dra-bridge.io/v2"
DEFAULT_POOL_LABEL = GFD_PRODUCT_LABEL
ANY_POOL = "(any)"
#: ``--fail-on`` levels, lowest first: ``legacy-request`` (any legacy request left) ranks below
#: every finding level.
FAIL_LEVELS = ("legacy-request", "left-for-webhook", "partial", "unsupported")
#: Outcomes, least first: a workload's outcome is its findings' last in this order (severity
#: first; within one severity, a translated value outranks an ignored one, unsupported outranks
#: kept-legacy), ``unchanged`` without findings. It agrees with the path
#: (:data:`translate.report.paths.PATH_OUTCOMES`).
OUTCOMES = ("unchanged", "ignored", "translated", "left-for-webhook", "partial", "kept-legacy", "unsupported")


@dataclass(frozen=True)
class Settings:
    """How to report: plan ``options`` (target version, alignment, ...), the node-pool label,
    the Kubernetes version (``major.minor``) the paths are judged for, the inputs' names,
    whether every workload is listed (``list_all``; else only GPU workloads,
    :mod:`translate.report.listing`, the others counted in ``Report.not_listed``), the front
    end's words for remedy codes (``remedy_text``: each finding's reason, and so each path's, ends
    with them; None leaves the codes unphrased), and the chart settings that decide which
    namespaces the webhook sees (``enrolment``)."""

    options: Options = field(default_factory=Options)
    pool_label: str = DEFAULT_POOL_LABEL
    kubernetes_version: str = ""
    sources: tuple[str, ...] = ()
    live: bool = False
    user_catalog: str | None = None
    policy: Policy | None = None
    list_all: bool = True
    remedy_text: Callable[[Finding], str | None] | None = None
    enrolment: EnrolmentSettings = field(default_factory=EnrolmentSettings)
    served: Served | None = None

    @property
    def cluster(self) -> Served:
        """What the paths are judged against: ``served`` (live mode), else the release's defaults."""
        return self.served or Served(cluster_features(self.options.minor))


@dataclass
class WorkloadReport:
    """One workload's report (see the module docstring); ``capacity`` stays None without a
    capacity engine; ``pods_created``: the pods it creates (:func:`translate.report.pod_total.created_pods`,
    None when not known), filled in by :class:`Report`."""

    unit: Unit
    path: PathVerdict
    findings: tuple[Finding, ...]
    templates: tuple[dict[str, Any], ...]
    risks: tuple[Risk, ...]
    legacy: tuple[tuple[str, str, int, str], ...]
    alignment: dict[str, Any]
    pools: tuple[str, ...]
    capacity: dict[str, Any] | None = None
    converted: Converted | None = None
    policy: Options | None = None
    enrolment: Enrolment | None = None
    pods_created: int | None = None

    @property
    def severity(self) -> int:
        """The worst finding's severity (0-3)."""
        return worst(self.findings)

    @property
    def outcome(self) -> str:
        """The findings' last outcome in :data:`OUTCOMES` (``unchanged`` without findings)."""
        return max((f.outcome for f in self.findings), key=OUTCOMES.index, default="unchanged")

    def fails(self, level: str) -> bool:
        """True when this workload reaches ``--fail-on level`` (:data:`FAIL_LEVELS`)."""
        if level == "legacy-request":
            return bool(self.legacy) or self.severity >= 1
        return self.severity >= SEVERITY[level]

    def as_json(self) -> dict[str, Any]:
        """The ``workloads[]`` entry of the JSON document."""
        u = self.unit
        return {
            "kind": u.kind,
            "namespace": u.namespace,
            "name": u.name,
            "source": u.source,
            "notYetNamed": u.not_yet_named,
            "pods": list(u.pods),
            "podsCreated": self.pods_created,
            "pools": list(self.pools),
            "outcome": self.outcome,
            "severity": self.severity,
            "path": self.path.path,
            "via": self.path.via,
            "pathReason": self.path.reason,
            "legacy": [{"container": c, "resource": r, "count": n, "kind": k} for c, r, n, k in self.legacy],
            "findings": [{**f.as_dict(), "code": f.code} for f in self.findings],
            "templates": list(self.templates),
            "risks": [r.as_dict() for r in self.risks],
            "alignment": self.alignment,
            "capacity": self.capacity,
            "policy": None if self.policy is None else {"rule": self.policy.rule, "convert": self.policy.convert},
            "enrolment": None if self.enrolment is None else enrolment_json(self.enrolment),
        }


@dataclass
class PoolReport:
    """One node pool: its nodes, the legacy devices they offer (resource -> allocatable), the
    DRA devices their ResourceSlices publish, nodes mixing allocators, workloads per path;
    ``capacity`` stays None without a capacity engine."""

    name: str
    nodes: list[str] = field(default_factory=list)
    legacy_devices: Counter[str] = field(default_factory=Counter)
    dra_devices: int = 0
    mixed_allocators: dict[str, list[str]] = field(default_factory=dict)
    paths: Counter[str] = field(default_factory=Counter)
    capacity: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        """The ``nodePools[]`` entry of the JSON document."""
        return {
            "name": self.name,
            "nodes": self.nodes,
            "legacyDevices": dict(sorted(self.legacy_devices.items())),
            "draDevices": self.dra_devices,
            "mixedAllocators": self.mixed_allocators,
            "paths": {p: self.paths[p] for p in PATHS},
            "capacity": self.capacity,
        }


@dataclass
class Report:
    """The whole report (see the module docstring)."""

    settings: Settings
    workloads: list[WorkloadReport]
    pools: list[PoolReport]
    object_counts: Counter[str]
    catalog_resources: int
    inventory: Inventory = field(default_factory=Inventory)
    capacity: dict[str, Any] | None = None
    inventories: dict[str, str] = field(default_factory=dict)
    not_listed: int = 0
    quotas: list[QuotaReport] = field(default_factory=list)

    def __post_init__(self) -> None:
        objects = [u.obj for u in self.inventory.units]
        for w in self.workloads:
            w.pods_created = created_pods(w.unit, objects)

    def fails(self, level: str) -> bool:
        """True when some workload reaches ``--fail-on level``."""
        return any(w.fails(level) for w in self.workloads)

    def totals(self) -> dict[str, Any]:
        """Workloads, the pods they create (``podsUnknown``: workloads whose count is not known),
        per path and outcome, risks, legacy devices asked for."""
        return {
            "workloads": len(self.workloads),
            "pods": sum(w.pods_created or 0 for w in self.workloads),
            "podsUnknown": sum(w.pods_created is None for w in self.workloads),
            "paths": {p: sum(w.path.path == p for w in self.workloads) for p in PATHS},
            "outcomes": dict(sorted(Counter(w.outcome for w in self.workloads).items())),
            "risks": sum(len(w.risks) for w in self.workloads) + sum(len(p.mixed_allocators) for p in self.pools),
            "alignmentLost": sum(w.alignment["status"] == "lost" for w in self.workloads),
            "legacyDevices": sum(n for w in self.workloads for _, _, n, k in w.legacy if k != "slicing"),
            "notListed": self.not_listed,
        }

    def enrolment_inputs(self) -> dict[str, Any]:
        """``inputs.enrolment`` of the JSON document (:func:`translate.report.namespaces.enrolment_inputs`)."""
        return enrolment_inputs(self.settings.enrolment, len(self.inventory.namespaces))

    def as_json(self) -> dict[str, Any]:
        """The ``report.dra-bridge.io/v2`` document."""
        s = self.settings
        return {
            "apiVersion": REPORT_API_VERSION,
            "kind": "MigrationReport",
            "inputs": {
                "sources": list(s.sources),
                "live": s.live,
                "kubernetesVersion": s.kubernetes_version,
                "objects": dict(sorted(self.object_counts.items())),
                "inventories": self.inventories,
                "enrolment": self.enrolment_inputs(),
                "servedApiVersions": None if s.cluster.api_versions is None else list(s.cluster.api_versions),
                "features": s.cluster.features.as_json(),
            },
            "catalog": {
                "apiVersion": CATALOG_API_VERSION,
                "userCatalog": s.user_catalog,
                "resources": self.catalog_resources,
            },
            "options": {
                "apiVersion": s.options.api_version,
                "poolLabel": s.pool_label,
                "alignment": s.options.alignment,
                "alignmentScope": s.options.alignment_scope,
            },
            "workloads": [w.as_json() for w in self.workloads],
            "nodePools": [p.as_json() for p in self.pools],
            "totals": self.totals(),
            "capacity": self.capacity,
            "warnings": list(self.inventory.warnings),
            "quotas": [q.as_json() for q in self.quotas],
        }


def attach_capacity(
    report: Report,
    workloads: Mapping[int, dict[str, Any]],
    pools: Mapping[str, dict[str, Any]],
    summary: dict[str, Any],
) -> None:
    """Fill the optional capacity sections from a capacity engine's answers: per workload (by its
    index in ``report.workloads``) ``{fits, node, reason, legacyFits, legacyNode,
    placesDifferently, ...}``, per pool name ``{devices, usedBefore, usedAfter, ...}``, and the
    report's ``summary`` (shapes in the JSON schema; :mod:`translate.report.capacity` fills them)."""
    for i, w in enumerate(report.workloads):
        w.capacity = workloads.get(i)
    for p in report.pools:
        p.capacity = pools.get(p.name)
    report.capacity = summary
