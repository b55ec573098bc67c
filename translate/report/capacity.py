"""The report's capacity section: the capacity check (docs/capacity.md) run over a report's workloads.

    report_capacity(report, catalog, inventories, features) -> None     fills the report in place

Pure. From a :class:`~translate.report.model.Report` (its workloads, their converted objects,
and the cluster facts it read):

- **Demand** per workload (:mod:`translate.capacity.demand`): a workload object counts its
  replicas (``workload_demand``); a unit planned from its pods (owner not in the input) is
  one pod per pod read; a custom resource creates the pods
  :func:`translate.capacity.pod_counts.pod_counts` counts for each pod template or pod spec
  (named ``<name>-<role>-<i>``); one the webhook converts (``needs-conversion`` via the
  webhook, its templates left as they are) is planned as the webhook plans each of its pods
  (:func:`translate.plan.pod_plan.plan_pod` on the template, with the workload's options), so
  its pods are placed on the DRA side too. Pods that ask for no device are not placed. DaemonSets are
  not placed (one pod per node; convert leaves them to the webhook): their running pods hold
  their legacy devices. Converted claims' ResourceClaimTemplates are the
  plan's, then the input's; ResourceClaims are the input's. Priority: ``spec.priority``, else
  the input's PriorityClasses (``globalDefault`` included). A workload whose demand cannot be
  built (a claim template not in the input, ...) is not placed; its section says why.
- **Devices** (:func:`translate.capacity.cluster_devices`): per node, an inventory dump
  (``inventories``: grouped ``dra-bridge inventory --json`` dumps by node name), else its
  ResourceSlices, else what the bridge would publish from its allocatable and GFD labels;
  ``deviceSources`` says which. DeviceClasses: ours (the catalog's), replaced by the
  cluster's of the same name. Held before: ResourceClaims with ``status.allocation``, and the
  legacy requests of running pods (a ``nodeName``, not ``Succeeded`` or ``Failed``) of
  workloads not placed.
- **Output**: per workload ``{fits, node, code, reason, legacyFits, legacyNode, legacyReason,
  placesDifferently, order, priority, podsFit, legacyPodsFit, podCount, podSources, podNotes,
  pods}`` (``podCount``: its pods asking for a device; ``order``: its place in
  the placement order; ``node``/``reason``: the first placed pod's node, the first unplaced
  pod's reason); per node pool :meth:`PoolUsage.as_json` (the pool without the label is
  ``(any)``); ``report.capacity``: the pool label, ``deviceSources``, ``warnings``,
  ``notPlaced`` and ``totals``. With ``--alignment``, a workload whose alignment is ``kept``
  or ``partial`` gets ``alignment.placementFits``: whether its aligned claims fit. With no
  nodes in the input nothing is placed: ``report.capacity`` is ``{"skipped": NO_NODES}``.

Raises :class:`translate.errors.InputError` for malformed nodes, slices, classes or dumps.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dra_bridge.translate.alloc import Features
from dra_bridge.translate.capacity import (
    Held,
    PodDemand,
    WorkloadDemand,
    WorkloadFit,
    check_capacity,
    cluster_devices,
    cluster_node,
    device_classes,
    legacy_requests,
    placement_order,
    pod_demand,
    pod_demands,
    pod_priority,
    workload_demand,
)
from dra_bridge.translate.capacity.pod_counts import PodCounts, TemplateCount, above_bound, pod_counts
from dra_bridge.translate.capacity.train_jobs import is_train_job, train_job_pods
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.errors import InputError
from dra_bridge.translate.inventory.allocatable import InventoryDevice
from dra_bridge.translate.plan.field_types import require_shape
from dra_bridge.translate.plan.pod_plan import Options, plan_pod
from dra_bridge.translate.report.grouping import Unit, meta
from dra_bridge.translate.report.model import ANY_POOL, Report, WorkloadReport, attach_capacity, pod_templates

__all__ = ["NO_NODES", "report_capacity"]

NO_NODES = "no nodes in the input"
_COUNTED = ("Pod", "Deployment", "ReplicaSet", "StatefulSet", "Job", "CronJob")
_Named = dict[tuple[str, str], Mapping[str, Any]]


def _spec(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = pod.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _by_kind(objects: Sequence[tuple[str, Any]], kind: str) -> _Named:
    return {
        (str(meta(o).get("namespace") or "default"), str(meta(o).get("name") or "")): o
        for _, o in objects
        if isinstance(o, Mapping) and o.get("kind") == kind
    }


def _by_namespace(named: _Named) -> dict[str, dict[str, Mapping[str, Any]]]:
    """``{namespace: {name: object}}``: a workload reads its namespace's, not every namespace's."""
    out: dict[str, dict[str, Mapping[str, Any]]] = {}
    for (namespace, name), obj in named.items():
        out.setdefault(namespace, {})[name] = obj
    return out


def _priorities(objects: Sequence[tuple[str, Any]]) -> tuple[dict[str, int], int]:
    values: dict[str, int] = {}
    default = 0
    for _, obj in objects:
        if isinstance(obj, Mapping) and obj.get("kind") == "PriorityClass" and isinstance(obj.get("value"), int):
            values[str(meta(obj).get("name") or "")] = int(obj["value"])
            if obj.get("globalDefault") is True:
                default = int(obj["value"])
    return values, default


@dataclass(frozen=True)
class _Counted:
    """A workload's demand (its pods asking for a device) and where its pod count came from."""

    demand: WorkloadDemand
    sources: tuple[dict[str, Any], ...]
    notes: tuple[str, ...]


def _asks(pod: PodDemand) -> bool:
    return bool(pod.claims or pod.legacy_requests)


def _train_job(
    w: WorkloadReport,
    objects: Sequence[Mapping[str, Any]],
    priorities: tuple[dict[str, int], int],
    webhook: tuple[Catalog, Options] | None = None,
) -> _Counted | str | None:
    """A TrainJob's trainer pods on the legacy path, and as the webhook converts them where it
    does (``webhook``), or why not."""
    u = w.unit
    found = train_job_pods(u.obj, objects)
    if found.pod is None:
        return f"{found.unknown}; {found.pods} pods ({found.source})" if found.pods else None
    if bound := above_bound(found.pods):
        return f"{bound} ({found.source})"
    namespace, spec = u.namespace or "default", _spec(found.pod)
    plan = plan_pod(found.pod, webhook[0], webhook[1], namespace) if webhook is not None else None
    new = _spec(plan.pod) if plan is not None else None
    local = {str(x["metadata"]["name"]): x for x in plan.templates} if plan is not None else {}
    pods = pod_demands(namespace, [f"{u.name}-node-{i}" for i in range(found.pods)], spec, new, local)
    source = {"template": "spec.runtimeRef", "role": "node", "pods": found.pods, "from": found.source}
    if not pods or not _asks(pods[0]):
        return None
    priority = pod_priority(spec, *priorities)
    return _Counted(WorkloadDemand(namespace, u.name, u.kind, pods, priority), ({**source, "devices": True},), ())


def _demand(
    w: WorkloadReport,
    templates: Mapping[str, dict[str, Mapping[str, Any]]],
    claims: Mapping[str, dict[str, Mapping[str, Any]]],
    priorities: tuple[dict[str, int], int],
    objects: Sequence[Mapping[str, Any]] = (),
    webhook: tuple[Catalog, Options] | None = None,
) -> _Counted | str | None:
    """The workload's demand; a reason when it cannot be known; None when it is not placed
    (DaemonSet, nothing converted, no device asked for: such pods are no part of the capacity
    totals). ``webhook``: the catalog and options the webhook would plan a custom resource's
    pods with, where it converts them."""
    u, converted = w.unit, w.converted
    if is_train_job(u.obj):
        return _train_job(w, objects, priorities, webhook)
    if converted is None or u.kind == "DaemonSet":
        return None
    namespace = u.namespace or "default"
    own: dict[str, Mapping[str, Any]] = {str(t["metadata"]["name"]): t for t in converted.templates}
    local: ChainMap[str, Mapping[str, Any]] = ChainMap(own, templates.get(namespace) or {})
    named = claims.get(namespace) or {}
    kind = str(u.obj.get("kind"))
    new_obj = converted.obj if isinstance(converted.obj, Mapping) else {}
    old_pods = pod_templates(u.obj)
    if not old_pods:
        return None
    for prefix, pod in old_pods:  # the plan's finding names the field; the check cannot read it
        require_shape(pod, path=prefix)
    priority = pod_priority(_spec(old_pods[0][1]), *priorities)
    counted = kind == u.kind and kind in _COUNTED and not u.custom
    if kind != "Pod" or counted:
        counts = pod_counts(u.obj)
        if bound := above_bound(counts.total):
            return f"{bound} ({'; '.join(t.source for t in counts.templates if t.pods)})"
    if counted:
        demand = workload_demand(u.obj, converted.obj, local, priority, named)
        demand = replace(demand, namespace=namespace, name=u.name, kind=u.kind)
        pods, sources = list(demand.pods), [(t, bool(demand.pods) and _asks(demand.pods[0])) for t in counts.templates]
    elif kind == "Pod":  # planned from its pods: the owner is not in the input
        legacy_spec, converted_spec = _spec(old_pods[0][1]), _spec(new_obj)
        pods = list(pod_demands(namespace, list(u.pods), legacy_spec, converted_spec, local, named))
        read = TemplateCount((), len(u.pods), "pod", f"{len(u.pods)} pods read ({u.kind} not in the input)")
        counts, sources = PodCounts((read,)), [(read, bool(pods) and _asks(pods[0]))]
    else:
        pods, sources = [], []
        for t in counts.templates:
            old, new = t.pod(u.obj), t.pod(new_obj)
            if old is None:
                continue
            if webhook is not None and new == old:  # left as it is: its pods are the webhook's to convert
                plan = plan_pod(old, webhook[0], webhook[1], namespace)
                new = plan.pod
                local = local.new_child({str(x["metadata"]["name"]): x for x in plan.templates})
            names = [f"{u.name}-{t.role}-{i}" for i in range(t.pods)]
            made = list(pod_demands(namespace, names, _spec(old), _spec(new or {}), local, named))
            probe = made[0] if made else pod_demand(namespace, u.name, _spec(old), _spec(new or {}), local, named)
            pods += made
            sources.append((t, _asks(probe)))
    asking = tuple(p for p in pods if _asks(p))
    if not asking:
        return None
    demand = WorkloadDemand(namespace, u.name, u.kind, asking, priority)
    listed = tuple({**t.as_json(), "devices": devices} for t, devices in sources)
    return _Counted(demand, listed, counts.notes)


def _by_webhook(w: WorkloadReport) -> bool:
    """Whether the webhook converts the custom resource's pods (its path says so)."""
    return w.unit.custom and (w.path.path, w.path.via) == ("needs-conversion", "webhook")


def _held_legacy(units: Sequence[Unit]) -> dict[str, dict[str, int]]:
    held: dict[str, dict[str, int]] = {}
    for unit in units:
        for pod in unit.pod_objects:
            spec, status = _spec(pod), pod.get("status")
            phase = status.get("phase") if isinstance(status, Mapping) else None
            if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
                continue
            on = held.setdefault(str(spec["nodeName"]), {})
            for resource, count in legacy_requests(spec).items():
                on[resource] = on.get(resource, 0) + count
    return held


def _workload_section(fit: WorkloadFit, order: int, counted: _Counted) -> dict[str, Any]:
    placed = [p for p in fit.pods if p.fits]
    unplaced = [p for p in fit.pods if p.fits is False]
    legacy_placed = [p for p in fit.pods if p.legacy_fits]
    legacy_unplaced = [p for p in fit.pods if not p.legacy_fits]
    code = unplaced[0].code if unplaced else ("fits" if placed else "not-converted")
    return {
        "fits": fit.fits,
        "node": placed[0].node if placed else None,
        "code": code,
        "reason": unplaced[0].reason if unplaced else "",
        "legacyFits": fit.legacy_fits,
        "legacyNode": legacy_placed[0].legacy_node if legacy_placed else None,
        "legacyReason": legacy_unplaced[0].legacy_reason if legacy_unplaced else "",
        "placesDifferently": fit.differs,
        "order": order,
        "priority": fit.priority,
        "podsFit": len(placed),
        "legacyPodsFit": len(legacy_placed),
        "podCount": len(fit.pods),
        "podSources": list(counted.sources),
        "podNotes": list(counted.notes),
        "pods": [p.as_json() for p in fit.pods],
    }


def report_capacity(
    report: Report,
    catalog: Catalog,
    inventories: Mapping[str, Sequence[InventoryDevice]],
    features: Features | None = None,
    objects: Sequence[tuple[str, Any]] = (),
) -> None:
    """Run the capacity check over ``report`` and fill its capacity sections (module docstring).
    ``objects``: the input's other objects (ResourceClaimTemplates, ResourceClaims,
    PriorityClasses), as ``(source, object)`` pairs."""
    inv = report.inventory
    templates, claims = _by_kind(objects, "ResourceClaimTemplate"), _by_kind(objects, "ResourceClaim")
    priorities = _priorities(objects)
    demands: list[WorkloadDemand] = []
    index: dict[int, int] = {}
    not_placed: list[str] = []
    unplaced_units: list[Unit] = []
    if not inv.nodes:
        attach_capacity(report, {}, {}, {"skipped": NO_NODES})
        return
    counted: dict[int, _Counted] = {}
    grouped_templates, grouped_claims = _by_namespace(templates), _by_namespace(claims)
    others = [o for _, o in objects if isinstance(o, Mapping)]
    placed = 0
    for i, w in enumerate(report.workloads):
        try:
            webhook = (catalog, w.policy or report.settings.options) if _by_webhook(w) else None
            found = _demand(w, grouped_templates, grouped_claims, priorities, others, webhook)
        except InputError as exc:
            found = str(exc)
        if isinstance(found, _Counted) and (bound := above_bound(len(found.demand.pods), placed)):
            found = bound
        if isinstance(found, str):
            not_placed.append(f"{w.unit.kind}/{w.unit.namespace}/{w.unit.name}: {found}")
            found = None
        if found is None:
            unplaced_units.append(w.unit)
            continue
        index[id(found.demand)] = i
        placed += len(found.demand.pods)
        counted[i] = found
        demands.append(found.demand)
    nodes = [cluster_node(n) for n in inv.nodes]
    devices = cluster_devices(nodes, inv.slices, catalog, inventories)
    ours = [{**c, "apiVersion": "resource.k8s.io/v1"} for c in catalog.device_classes()]
    classes = device_classes(ours) | device_classes(inv.classes)
    held = [
        c["status"]["allocation"]
        for c in claims.values()
        if isinstance(c.get("status"), Mapping) and isinstance(c["status"].get("allocation"), Mapping)
    ]
    label = report.settings.pool_label
    result = check_capacity(
        demands,
        nodes,
        devices.slices,
        classes,
        features or Features(),
        held=Held(held, _held_legacy(unplaced_units)),
        pool_label=label,
    )
    per_workload: dict[int, dict[str, Any]] = {}
    for order, (demand, fit) in enumerate(zip(placement_order(demands), result.workloads, strict=True)):
        i = index[id(demand)]
        per_workload[i] = _workload_section(fit, order, counted[i])
    pools = {(p.pool or ANY_POOL): {**p.as_json(), "pool": p.pool or ANY_POOL} for p in result.pools}
    summary = {
        "poolLabel": label,
        "deviceSources": dict(sorted(devices.sources.items())),
        "warnings": list(devices.warnings),
        "notPlaced": not_placed,
        "totals": result.as_json()["totals"],
    }
    attach_capacity(report, per_workload, pools, summary)
    for w in report.workloads:
        if w.capacity is not None and w.alignment.get("status") in ("kept", "partial"):
            w.alignment["placementFits"] = w.capacity["fits"]
