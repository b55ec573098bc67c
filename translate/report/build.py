"""Building the migration report: every workload planned, its path, risks and alignment, the
node pools and the ResourceQuotas (the data and its JSON: :mod:`translate.report.model`).

    build_report(objects, catalog, settings) -> Report

Pure: objects in, a report out (see :mod:`translate.report.model` for what each part holds).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.enrolment import Enrolment, enrolment
from dra_bridge.translate.errors import CountError, InputError
from dra_bridge.translate.findings import Finding
from dra_bridge.translate.plan.alignment import Alignment, devices_per_constraint, not_written
from dra_bridge.translate.plan.cluster_state import hold_for_quota, namespace_quota_keys
from dra_bridge.translate.plan.demand import ContainerDemand, collect
from dra_bridge.translate.plan.device_counts import parse_count
from dra_bridge.translate.plan.workloads import (
    convert_object,
)
from dra_bridge.translate.report.grouping import Inventory, Unit, group, located_pod_templates, meta
from dra_bridge.translate.report.grouping import pod_templates as pod_templates  # re-exported: capacity, convert
from dra_bridge.translate.report.integrations import integration_risks
from dra_bridge.translate.report.listing import is_gpu_workload
from dra_bridge.translate.report.malformed import malformed, require_quotas
from dra_bridge.translate.report.model import (
    ANY_POOL,
    PoolReport,
    Report,
    Settings,
    WorkloadReport,
)
from dra_bridge.translate.report.namespaces import namespace_labels, pod_labels
from dra_bridge.translate.report.paths import (
    PathName,
    PathVerdict,
    choose_path,
    enrolled_path,
    kep5004_blockers,
    kep5004_classes,
)
from dra_bridge.translate.report.policy_options import switched_off, workload_options
from dra_bridge.translate.report.quotas import legacy_quotas
from dra_bridge.translate.report.risks import Risk, mixed_allocator_nodes, workload_risks
from dra_bridge.translate.report.served import NO_DRA, Served


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
    verdict: PathVerdict, served: Served, legacy: bool, templates: Sequence[tuple[str, Mapping[str, Any], object]]
) -> PathVerdict:
    """``blocked`` (:data:`NO_DRA`) on a cluster serving no ``resource.k8s.io`` version, for a
    workload with a legacy request or a claim; else ``verdict``."""
    claims = any(isinstance(p.get("spec"), Mapping) and p["spec"].get("resourceClaims") for _, p, _ in templates)
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
    templates = located_pod_templates(unit.obj)
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
    said = {f.path for f in findings}  # fields the report cannot read: never "converts cleanly"
    findings = (*(f for f in malformed(unit.obj) if f.path not in said), *findings)
    demands: list[ContainerDemand] = []
    blockers: list[str] = []
    risks: list[Risk] = []
    for prefix, pod, at in templates:
        spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
        found = [d for d in collect(spec if isinstance(spec, Mapping) else {}, catalog, prefix, []) if d.count > 0]
        demands += found
        if found:
            blockers += kep5004_blockers(pod, found, classes, served.features.mapping_off())
        risks += workload_risks(unit.obj, pod, found, catalog, unit.custom, at)
        risks += integration_risks(unit.obj, pod, found, catalog, at)
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
        tuple(_pools_of([*unit.pod_objects, *(p for _, p, _ in templates)], node_pool, settings.pool_label)),
        converted=converted,
        policy=translation,
        enrolment=enrolled,
    )


def _object_field(value: Any, node: str, field: str) -> Mapping[str, Any]:
    """A Node's field that must be an object (core/v1 schema), ``{}`` when unset."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"Node {node}: {field}: must be an object (core/v1 schema), not {value!r:.40}")
    return value


def _node_pools(inv: Inventory, catalog: Catalog, label: str) -> tuple[dict[str, str], dict[str, PoolReport]]:
    node_pool: dict[str, str] = {}
    pools: dict[str, PoolReport] = {}
    for node in inv.nodes:
        m = meta(node)
        name = str(m.get("name") or "")
        pool = str(_object_field(m.get("labels"), name, "metadata.labels").get(label) or ANY_POOL)
        node_pool[name] = pool
        report = pools.setdefault(pool, PoolReport(pool))
        report.nodes.append(name)
        status = _object_field(node.get("status"), name, "status")
        allocatable = _object_field(status.get("allocatable"), name, "status.allocatable")
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
    require_quotas(inv.quotas)
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
            enrolment(
                u.namespace,
                labels.get(u.namespace),
                settings.enrolment,
                pod_labels([p for _, p in pod_templates(u.obj)], settings.enrolment.object_selector),
            ),
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
