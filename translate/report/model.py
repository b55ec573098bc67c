"""The migration report: every workload's plan, path, risks and alignment, per node pool, totals.

    build_report(objects, catalog, settings) -> Report
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.enrolment import Enrolment, EnrolmentSettings, enrolment
from dra_bridge.translate.errors import CountError
from dra_bridge.translate.findings import SEVERITY, Finding, worst
from dra_bridge.translate.names import CATALOG_API_VERSION, GFD_PRODUCT_LABEL
from dra_bridge.translate.plan.alignment import Alignment, devices_per_constraint, not_written
from dra_bridge.translate.plan.cluster_state import hold_for_quota, namespace_quota_keys
from dra_bridge.translate.plan.demand import ContainerDemand, collect
from dra_bridge.translate.plan.device_counts import parse_count
from dra_bridge.translate.plan.pod_plan import Options
from dra_bridge.translate.plan.workloads import (
    Converted,
    convert_object,
)
from dra_bridge.translate.policy import Policy
from dra_bridge.translate.report.grouping import Inventory, Unit, group, meta
from dra_bridge.translate.report.grouping import pod_templates as pod_templates  # re-exported: capacity, convert
from dra_bridge.translate.report.integrations import integration_risks
from dra_bridge.translate.report.listing import is_gpu_workload
from dra_bridge.translate.report.namespaces import enrolment_inputs, enrolment_json, namespace_labels
from dra_bridge.translate.report.paths import (
    PATHS,
    PathName,
    PathVerdict,
    choose_path,
    enrolled_path,
    kep5004_blockers,
    kep5004_classes,
)
from dra_bridge.translate.report.policy_options import switched_off, workload_options
from dra_bridge.translate.report.quotas import QuotaReport, legacy_quotas
from dra_bridge.translate.report.risks import Risk, mixed_allocator_nodes, workload_risks
from dra_bridge.translate.report.served import NO_DRA, Served, cluster_features

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
    capacity engine."""

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

    def fails(self, level: str) -> bool:
        """True when some workload reaches ``--fail-on level``."""
        return any(w.fails(level) for w in self.workloads)

    def totals(self) -> dict[str, Any]:
        """Workloads, pods, per path and outcome, risks, legacy devices asked for."""
        return {
            "workloads": len(self.workloads),
            "pods": sum(len(w.unit.pods) for w in self.workloads),
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


def _alignment(
    demands: Sequence[ContainerDemand], findings: Sequence[Finding], alignment: Alignment, path: PathName
) -> dict[str, Any]:
    # The plan drops slicing requests (no DRA request, so nothing to align).
    most = max(
        devices_per_constraint(
            (((d.field, d.index), d.count if d.mapping.kind != "slicing" else 0) for d in demands), alignment.scope
        ).values(),
        default=0,
    )
    multi = most > 1
    base = {"multiDevice": multi, "policy": alignment.policy, "scope": alignment.scope}
    if not multi or path != "needs-conversion":
        why = "one device per container" if not multi else f"path {path}: the legacy pod keeps its alignment"
        return {**base, "status": "not-applicable", "reason": why}
    if alignment.policy == "none":
        return {
            **base,
            "status": "lost",
            "reason": f"{most} devices "
            "the Topology Manager kept on one NUMA node may come from two once converted: --alignment numa|pcie "
            "keeps them together",
        }
    lost = not_written(findings)
    if lost:
        return {**base, "status": "partial", "reason": lost[0].reason}
    return {**base, "status": "kept", "reason": f"claim constraint matchAttribute {alignment.attribute}"}


def _pools_of(pods: Sequence[Mapping[str, Any]], node_pool: Mapping[str, str], label: str) -> list[str]:
    pools = []
    for pod in pods:
        spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
        node = str(spec.get("nodeName") or "") if isinstance(spec, Mapping) else ""
        selector = spec.get("nodeSelector") if isinstance(spec, Mapping) else None
        if node and node in node_pool:
            pools.append(node_pool[node])
        elif isinstance(selector, Mapping) and label in selector:
            pools.append(str(selector[label]))
    return list(dict.fromkeys(pools)) or [ANY_POOL]


def _without_dra(
    verdict: PathVerdict, served: Served, legacy: bool, templates: Sequence[tuple[str, Mapping[str, Any]]]
) -> PathVerdict:
    """``blocked`` (:data:`NO_DRA`) on a cluster serving no ``resource.k8s.io`` version, for a
    workload with a legacy request or a claim; else ``verdict``."""
    claims = any(isinstance(p.get("spec"), Mapping) and p["spec"].get("resourceClaims") for _, p in templates)
    return PathVerdict("blocked", "", NO_DRA) if served.no_dra and (legacy or claims) else verdict


def _workload(
    unit: Unit,
    inv: Inventory,
    catalog: Catalog,
    settings: Settings,
    classes: Mapping[str, str],
    node_pool: Mapping[str, str],
    enrolled: Enrolment,
) -> WorkloadReport:
    templates = pod_templates(unit.obj)
    served = settings.cluster
    options, translation = settings.options, None
    if settings.policy is not None and templates:
        options, translation = workload_options(
            templates[0][1], unit.obj, unit.namespace, settings.policy, settings.options, classes
        )
    converted = (
        switched_off(unit.obj, translation)
        if translation is not None and not translation.convert
        else convert_object(unit.obj, catalog, options)
    )
    keys = namespace_quota_keys(inv.quotas).get(unit.namespace, frozenset())
    ignore = translation is not None and translation.ignore_legacy_quota
    converted = hold_for_quota(unit.obj, converted, keys, catalog, ignore)  # as the webhook would
    phrase = settings.remedy_text
    findings = tuple(f.phrased(phrase(f)) for f in converted.findings) if phrase else converted.findings
    demands: list[ContainerDemand] = []
    blockers: list[str] = []
    risks: list[Risk] = []
    for prefix, pod in templates:
        spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
        found = [d for d in collect(spec if isinstance(spec, Mapping) else {}, catalog, prefix, []) if d.count > 0]
        demands += found
        if found:
            blockers += kep5004_blockers(pod, found, classes, served.features.mapping_off())
        risks += workload_risks(unit.obj, pod, found, catalog, unit.custom, prefix)
        risks += integration_risks(unit.obj, pod, found, catalog, prefix)
    verdict = enrolled_path(choose_path(demands, findings, list(dict.fromkeys(blockers)), classes), enrolled)
    verdict = _without_dra(verdict, served, bool(demands), templates)
    legacy = tuple((d.container, d.mapping.resource_name, d.count, d.mapping.kind) for d in demands)
    return WorkloadReport(
        unit,
        verdict,
        findings,
        converted.templates,
        tuple(risks),
        legacy,
        _alignment(demands, findings, options.topology, verdict.path),
        tuple(_pools_of([*unit.pod_objects, *(p for _, p in templates)], node_pool, settings.pool_label)),
        converted=converted,
        policy=translation,
        enrolment=enrolled,
    )


def _node_pools(inv: Inventory, catalog: Catalog, label: str) -> tuple[dict[str, str], dict[str, PoolReport]]:
    node_pool: dict[str, str] = {}
    pools: dict[str, PoolReport] = {}
    for node in inv.nodes:
        m = meta(node)
        name = str(m.get("name") or "")
        pool = str((m.get("labels") or {}).get(label) or ANY_POOL)
        node_pool[name] = pool
        report = pools.setdefault(pool, PoolReport(pool))
        report.nodes.append(name)
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        for resource, value in allocatable.items():
            if catalog.lookup(str(resource)):
                try:
                    report.legacy_devices[str(resource)] += parse_count(value)
                except CountError:
                    continue
    for piece in inv.slices:
        spec = piece.get("spec") if isinstance(piece.get("spec"), Mapping) else {}
        on = str(spec.get("nodeName") or "") if isinstance(spec, Mapping) else ""
        if on in node_pool and isinstance(spec, Mapping):
            pools[node_pool[on]].dra_devices += len(spec.get("devices") or [])
    for name, resources in mixed_allocator_nodes(inv.nodes, inv.slices, catalog).items():
        pools[node_pool[name]].mixed_allocators[name] = resources
    return node_pool, pools


def build_report(objects: Iterable[tuple[str, Any]], catalog: Catalog, settings: Settings = Settings()) -> Report:
    """The report over ``objects`` (``(source, object)`` pairs; see the module docstring)."""
    listed = list(objects)
    inv = group(listed)
    classes = kep5004_classes(inv.classes)
    node_pool, pools = _node_pools(inv, catalog, settings.pool_label)
    labels = namespace_labels(inv.namespaces)
    every = [
        _workload(
            u,
            inv,
            catalog,
            settings,
            classes,
            node_pool,
            enrolment(u.namespace, labels.get(u.namespace), settings.enrolment),
        )
        for u in inv.units
    ]
    workloads = [w for w in every if settings.list_all or _listed(w)]
    for w in workloads:
        for pool in w.pools:
            p = pools.setdefault(pool, PoolReport(pool))
            p.paths[w.path.path] += 1
    counts = Counter(str(o.get("kind")) for _, o in listed if isinstance(o, Mapping) and o.get("kind"))
    return Report(
        settings,
        workloads,
        sorted(pools.values(), key=lambda p: (p.name == ANY_POOL, p.name)),
        counts,
        len(catalog.device_classes()),
        inv,
        not_listed=len(every) - len(workloads),
        quotas=legacy_quotas(inv.quotas, catalog, (u.namespace for u in inv.units)),
    )


def _listed(w: WorkloadReport) -> bool:
    pods = [*w.unit.pod_objects, *(p for _, p in pod_templates(w.unit.obj))]
    return is_gpu_workload(w.path.path, w.findings, w.risks, w.legacy, pods)


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
