"""The migration report: every workload's plan, path, risks and alignment, per node pool, totals.

    build_report(objects, catalog, settings) -> Report
    Report.as_json() -> dict       the ``report.dra-bridge.io/v2`` document
                                   (schema: translate/data/report-v2.schema.json)

Pure: objects in, a report out. Per workload (:mod:`translate.report.grouping`): the plan
(``convert_object``: its findings and the ResourceClaimTemplates it would get), the path
(:mod:`translate.report.paths`), the risks (:mod:`translate.report.risks`) and, for a
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.findings import SEVERITY, Finding, worst
from dra_bridge.translate.names import CATALOG_API_VERSION, GFD_PRODUCT_LABEL
from dra_bridge.translate.plan.alignment import Alignment, devices_per_constraint, not_written
from dra_bridge.translate.plan.cluster_state import hold_for_quota, namespace_quota_keys
from dra_bridge.translate.plan.custom_resources import get_path, path_text, pod_spec_sites
from dra_bridge.translate.plan.demand import ContainerDemand, collect
from dra_bridge.translate.plan.pod_plan import Options
from dra_bridge.translate.plan.workloads import (
    BUILTIN_TEMPLATE_PATHS,
    CORE_GROUPS,
    Converted,
    convert_object,
    find_pod_templates,
)
from dra_bridge.translate.policy import Policy, Translation
from dra_bridge.translate.report.grouping import Inventory, Unit, group, meta
from dra_bridge.translate.report.integrations import integration_risks
from dra_bridge.translate.report.paths import PathName, PathVerdict, choose_path, kep5004_blockers, kep5004_classes
from dra_bridge.translate.report.policy_options import switched_off, workload_options
from dra_bridge.translate.report.quotas import QuotaReport, legacy_quotas
from dra_bridge.translate.report.risks import Risk, mixed_allocator_nodes, workload_risks

REPORT_API_VERSION = "report.dra-bridge.io/v2"
DEFAULT_POOL_LABEL = GFD_PRODUCT_LABEL
ANY_POOL = "(any)"
#: ``--fail-on`` levels, lowest first: ``legacy-request`` (any legacy request left) ranks below
#: every finding level.
FAIL_LEVELS = ("legacy-request", "left-for-webhook", "partial", "unsupported")
#: What a picture shows per workload: the path, and for conversions the worst finding.
CATEGORIES = ("migrates", "partial", "blocked", "nothing-to-do")


@dataclass(frozen=True)
class Settings:
    """How to report: plan ``options`` (target version, alignment, ...), the node-pool label,
    the Kubernetes version (``major.minor``) the paths are judged for, and the inputs' names."""

    options: Options = field(default_factory=Options)
    pool_label: str = DEFAULT_POOL_LABEL
    kubernetes_version: str = ""
    sources: tuple[str, ...] = ()
    live: bool = False
    user_catalog: str | None = None
    policy: Policy | None = None


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
    policy: Translation | None = None

    @property
    def severity(self) -> int:
        """The worst finding's severity (0-3)."""
        return worst(self.findings)

    @property
    def outcome(self) -> str:
        """The worst finding's outcome (``unchanged`` without findings)."""
        if not self.findings:
            return "unchanged"
        return max(self.findings, key=lambda f: f.severity).outcome

    @property
    def category(self) -> str:
        """``migrates``, ``partial``, ``blocked`` or ``nothing-to-do`` (:data:`CATEGORIES`)."""
        if self.path.path in ("nothing-to-do", "blocked"):
            return self.path.path
        return "partial" if self.path.path == "needs-conversion" and self.severity >= 2 else "migrates"

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
            "category": self.category,
            "path": self.path.path,
            "via": self.path.via,
            "pathReason": self.path.reason,
            "legacy": [{"container": c, "resource": r, "count": n, "kind": k} for c, r, n, k in self.legacy],
            "findings": [f.as_dict() for f in self.findings],
            "templates": list(self.templates),
            "risks": [r.as_dict() for r in self.risks],
            "alignment": self.alignment,
            "capacity": self.capacity,
            "policy": None if self.policy is None else {"rule": self.policy.rule, "convert": self.policy.convert},
        }


@dataclass
class PoolReport:
    """One node pool: its nodes, the legacy devices they offer (resource -> allocatable), the
    DRA devices their ResourceSlices publish, nodes mixing allocators, workloads per category
    and path; ``capacity`` stays None without a capacity engine."""

    name: str
    nodes: list[str] = field(default_factory=list)
    legacy_devices: Counter[str] = field(default_factory=Counter)
    dra_devices: int = 0
    mixed_allocators: dict[str, list[str]] = field(default_factory=dict)
    categories: Counter[str] = field(default_factory=Counter)
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
            "workloads": {c: self.categories[c] for c in CATEGORIES},
            "paths": {p: self.paths[p] for p in ("nothing-to-do", "kep-5004", "needs-conversion", "blocked")},
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
    quotas: list[QuotaReport] = field(default_factory=list)

    def fails(self, level: str) -> bool:
        """True when some workload reaches ``--fail-on level``."""
        return any(w.fails(level) for w in self.workloads)

    def totals(self) -> dict[str, Any]:
        """Workloads, pods, per path, category and outcome, risks, legacy devices asked for."""
        return {
            "workloads": len(self.workloads),
            "pods": sum(len(w.unit.pods) for w in self.workloads),
            "paths": {
                p: sum(w.path.path == p for w in self.workloads)
                for p in ("nothing-to-do", "kep-5004", "needs-conversion", "blocked")
            },
            "categories": {c: sum(w.category == c for w in self.workloads) for c in CATEGORIES},
            "outcomes": dict(sorted(Counter(w.outcome for w in self.workloads).items())),
            "risks": sum(len(w.risks) for w in self.workloads) + sum(len(p.mixed_allocators) for p in self.pools),
            "alignmentLost": sum(w.alignment["status"] == "lost" for w in self.workloads),
            "legacyDevices": sum(n for w in self.workloads for _, _, n, k in w.legacy if k != "slicing"),
        }

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
            },
            "catalog": {
                "apiVersion": CATALOG_API_VERSION,
                "userCatalog": s.user_catalog,
                "resources": self.catalog_resources,
            },
            "options": {
                "apiVersion": s.options.api_version,
                "poolLabel": s.pool_label,
                "alignment": s.options.alignment.policy,
                "alignmentScope": s.options.alignment.scope,
            },
            "workloads": [w.as_json() for w in self.workloads],
            "nodePools": [p.as_json() for p in self.pools],
            "totals": self.totals(),
            "capacity": self.capacity,
            "quotas": [q.as_json() for q in self.quotas],
        }


def pod_templates(obj: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(finding-path prefix, pod) of every pod template or pod spec the plan reads in ``obj``."""
    kind = str(obj.get("kind", ""))
    if kind == "Pod":
        return [("", obj)]
    builtin = kind in BUILTIN_TEMPLATE_PATHS and obj.get("apiVersion") in CORE_GROUPS
    out: list[tuple[str, Mapping[str, Any]]] = []
    for p in [BUILTIN_TEMPLATE_PATHS[kind]] if builtin else list(find_pod_templates(obj)):
        try:
            found = get_path(obj, p)
        except (KeyError, IndexError, TypeError):
            continue
        if isinstance(found, Mapping):
            out.append((path_text(p), found))
    for site in [] if builtin else pod_spec_sites(obj):
        try:
            out.append(("", site.as_pod(get_path(obj, site.path))))
        except (KeyError, IndexError, TypeError):
            continue
    return out


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


def _workload(
    unit: Unit,
    inv: Inventory,
    catalog: Catalog,
    settings: Settings,
    classes: Mapping[str, str],
    node_pool: Mapping[str, str],
) -> WorkloadReport:
    templates = pod_templates(unit.obj)
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
    demands: list[ContainerDemand] = []
    blockers: list[str] = []
    risks: list[Risk] = []
    for prefix, pod in templates:
        spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
        found = [d for d in collect(spec if isinstance(spec, Mapping) else {}, catalog, prefix, []) if d.count > 0]
        demands += found
        if found:
            blockers += kep5004_blockers(pod, found, classes, settings.options.minor)
        risks += workload_risks(unit.obj, pod, found, catalog, unit.custom, prefix)
        risks += integration_risks(unit.obj, pod, found, catalog, prefix)
    verdict = choose_path(demands, converted.findings, list(dict.fromkeys(blockers)), classes)
    legacy = tuple((d.container, d.mapping.resource_name, d.count, d.mapping.kind) for d in demands)
    return WorkloadReport(
        unit,
        verdict,
        converted.findings,
        converted.templates,
        tuple(risks),
        legacy,
        _alignment(demands, converted.findings, options.alignment, verdict.path),
        tuple(_pools_of([*unit.pod_objects, *(p for _, p in templates)], node_pool, settings.pool_label)),
        converted=converted,
        policy=translation,
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
                    report.legacy_devices[str(resource)] += int(str(value))
                except ValueError:
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
    workloads = [_workload(u, inv, catalog, settings, classes, node_pool) for u in inv.units]
    for w in workloads:
        for pool in w.pools:
            p = pools.setdefault(pool, PoolReport(pool))
            p.categories[w.category] += 1
            p.paths[w.path.path] += 1
    counts = Counter(str(o.get("kind")) for _, o in listed if isinstance(o, Mapping) and o.get("kind"))
    return Report(
        settings,
        workloads,
        sorted(pools.values(), key=lambda p: (p.name == ANY_POOL, p.name)),
        counts,
        len(catalog.device_classes()),
        inv,
        quotas=legacy_quotas(inv.quotas, catalog, (u.namespace for u in inv.units)),
    )


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
