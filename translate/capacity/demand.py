"""What each workload asks of the cluster: converted claims, legacy requests, node constraints, priority.

Pure (no I/O). Builds :class:`~translate.capacity.model.WorkloadDemand` from a legacy object
and its converted form (the output of ``convert`` or :func:`translate.plan.pod_plan.plan_pod`):

- pods: a Pod is one pod; Deployment, ReplicaSet, StatefulSet count ``spec.replicas``
  (default 1), Job ``spec.parallelism`` (default 1; ``completions`` when smaller), CronJob one
  run of its job template (:func:`translate.capacity.pod_counts.job_pods`); pods are named
  ``<name>-<i>`` (a Pod keeps its name, or ``<generateName><i>``); other kinds raise InputError
  (a custom resource's pods: :mod:`translate.capacity.pod_counts` and :func:`pod_demand`);
- converted claims: each ``spec.resourceClaims`` entry of the converted pod spec, in order: a
  ``resourceClaimTemplateName`` becomes claim ``<pod>-<entry>`` with the template's spec; a
  ``resourceClaimName`` is a claim shared by every pod naming it (its spec from the given
  ResourceClaims);
- legacy requests: the pod's effective request of each extended resource, as the scheduler
  counts it (k8s.io/component-helpers ``resource.PodRequests``): the larger of the app
  containers' plus native sidecars' sum and, for each init container, its own request plus
  the sidecars started before it;
- node constraints: ``spec.nodeName``, ``nodeSelector``, required node affinity's terms,
  tolerations; the legacy pod also tolerates ``<resource>:NoSchedule`` for each extended
  resource it requests, as the ExtendedResourceToleration admission plugin adds (convert
  writes those into the converted pod);
- priority (:func:`pod_priority`): ``spec.priority`` when set, else the value of the
  PriorityClass named by ``priorityClassName``, else the ``globalDefault`` class's, else 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from dra_bridge.translate.alloc.shapes import claim_spec, object_label
from dra_bridge.translate.capacity.model import ClaimDemand, NodeConstraints, PodDemand, WorkloadDemand
from dra_bridge.translate.capacity.pod_counts import job_pods
from dra_bridge.translate.errors import InputError
from dra_bridge.translate.plan.demand import containers, is_extended
from dra_bridge.translate.plan.device_counts import parse_count
from dra_bridge.translate.plan.field_types import require_shape
from dra_bridge.translate.plan.request_layout import Demand, legacy_total

__all__ = ["legacy_requests", "node_constraints", "pod_demand", "pod_demands", "pod_priority", "workload_demand"]

_COUNT_FIELD: Final = ("Deployment", "ReplicaSet", "StatefulSet")


def _requests(container: Mapping[str, Any], where: str) -> Counter[str]:
    resources = container.get("resources") or {}
    values = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
    out: Counter[str] = Counter()
    for name, value in values.items():
        if is_extended(str(name)):
            try:
                out[str(name)] = parse_count(value)
            except ValueError as exc:
                raise InputError(f"{where}.resources.limits[{name}]: {exc}") from exc
    return out


def legacy_requests(spec: Mapping[str, Any], where: str = "spec") -> dict[str, int]:
    """The pod's effective extended-resource requests (``{resource: devices}``, zeros left out):
    per resource, :func:`translate.plan.request_layout.legacy_total` of the containers' counts."""
    demands: dict[str, list[Demand]] = {}
    for fld, index, role, container in containers(spec):
        for name, count in _requests(container, f"{where}.{fld}[{index}]").items():
            demands.setdefault(name, []).append(Demand(str(container.get("name", "")), role, index, count))
    return {name: total for name in sorted(demands) if (total := legacy_total(demands[name])) > 0}


def node_constraints(spec: Mapping[str, Any], extended_tolerations: bool = False) -> NodeConstraints:
    """The node constraints of a pod spec; ``extended_tolerations`` adds the
    ExtendedResourceToleration plugin's tolerations for the spec's extended resources."""
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    terms = None if affinity is None else tuple(affinity.get("nodeSelectorTerms") or [])
    tolerations = list(spec.get("tolerations") or [])
    if extended_tolerations:
        tolerations += [{"key": name, "operator": "Exists", "effect": "NoSchedule"} for name in legacy_requests(spec)]
    selector = spec.get("nodeSelector") or {}
    return NodeConstraints(
        spec.get("nodeName") or None, {str(k): str(v) for k, v in selector.items()}, terms, tuple(tolerations)
    )


def pod_priority(
    spec: Mapping[str, Any], priority_classes: Mapping[str, int] | None = None, global_default: int = 0
) -> int:
    """The pod's priority (see the module docstring); ``priority_classes``: value by class name."""
    if isinstance(spec.get("priority"), int) and not isinstance(spec.get("priority"), bool):
        return int(spec["priority"])
    name = spec.get("priorityClassName")
    if name and priority_classes and name in priority_classes:
        return int(priority_classes[name])
    return global_default


def pod_demand(
    namespace: str,
    name: str,
    legacy_spec: Mapping[str, Any],
    converted_spec: Mapping[str, Any] | None,
    templates: Mapping[str, Mapping[str, Any]],
    claims: Mapping[str, Mapping[str, Any]] | None = None,
) -> PodDemand:
    """One pod. ``converted_spec`` None: not converted (no claims). ``templates`` and ``claims``:
    ResourceClaimTemplate and ResourceClaim objects of the namespace by name. Raises
    InputError for a field of the wrong type (:func:`translate.plan.field_types.require_shape`)."""
    require_shape({"spec": legacy_spec}, f"Pod {namespace}/{name}")
    if converted_spec is not None and converted_spec is not legacy_spec:
        require_shape({"spec": converted_spec}, f"Pod {namespace}/{name} (converted)")
    demands: list[ClaimDemand] = []
    for i, entry in enumerate((converted_spec or {}).get("resourceClaims") or []):
        where = f"Pod {namespace}/{name}: spec.resourceClaims[{i}]"
        if entry.get("resourceClaimTemplateName"):
            template = templates.get(str(entry["resourceClaimTemplateName"]))
            if template is None:
                raise InputError(
                    f"{where}.resourceClaimTemplateName: ResourceClaimTemplate {namespace}/"
                    f"{entry['resourceClaimTemplateName']} is not in the input"
                )
            label = f"{object_label(template)}: spec.spec"
            spec = claim_spec(template, (template.get("spec") or {}).get("spec"), label)
            demands.append(ClaimDemand(f"{name}-{entry.get('name')}", spec))
        elif entry.get("resourceClaimName"):
            claim = (claims or {}).get(str(entry["resourceClaimName"]))
            if claim is None:
                raise InputError(
                    f"{where}.resourceClaimName: ResourceClaim {namespace}/{entry['resourceClaimName']} "
                    "is not in the input"
                )
            spec = claim_spec(claim, claim.get("spec"), f"{object_label(claim)}: spec")
            demands.append(ClaimDemand(str(entry["resourceClaimName"]), spec, shared=True))
        else:
            raise InputError(f"{where}: one of resourceClaimName or resourceClaimTemplateName must be set")
    return PodDemand(
        name,
        tuple(demands),
        legacy_requests(legacy_spec),
        node_constraints(converted_spec if converted_spec is not None else legacy_spec),
        node_constraints(legacy_spec, extended_tolerations=True),
    )


def pod_demands(
    namespace: str,
    names: Sequence[str],
    legacy_spec: Mapping[str, Any],
    converted_spec: Mapping[str, Any] | None,
    templates: Mapping[str, Mapping[str, Any]],
    claims: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[PodDemand, ...]:
    """:func:`pod_demand` for pods of one spec named ``names``: the first is read, the others
    are it renamed (their template claims ``<pod>-<entry>``; a named claim is the same claim),
    so a workload of many replicas reads its spec once."""
    if not names:
        return ()
    first = pod_demand(namespace, names[0], legacy_spec, converted_spec, templates, claims)
    cut = len(names[0])

    def renamed(name: str) -> PodDemand:
        own = tuple(c if c.shared else replace(c, name=name + c.name[cut:]) for c in first.claims)
        return replace(first, name=name, claims=own)

    return (first, *(renamed(name) for name in names[1:]))


def _pods(obj: Mapping[str, Any]) -> tuple[int, Mapping[str, Any]]:
    kind = str(obj.get("kind"))
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return 1, spec
    if kind in ("Job", "CronJob"):
        job = spec if kind == "Job" else (spec.get("jobTemplate") or {}).get("spec") or {}
        try:
            count = job_pods(job, "spec." if kind == "Job" else "spec.jobTemplate.spec.")[0]
        except InputError as exc:
            raise InputError(f"{object_label(obj)}: {exc}") from exc
        return count, (job.get("template") or {}).get("spec") or {}
    if kind not in _COUNT_FIELD:
        raise InputError(
            f"{object_label(obj)}: kind {kind}: no pod count rule (Pod, Deployment, ReplicaSet, "
            "StatefulSet, Job, CronJob)"
        )
    replicas: Any = spec.get("replicas")
    replicas = 1 if replicas is None else replicas
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        raise InputError(f"{object_label(obj)}: spec.replicas: must be a non-negative integer")
    return replicas, (spec.get("template") or {}).get("spec") or {}


def workload_demand(
    legacy: Mapping[str, Any],
    converted: Mapping[str, Any] | None,
    templates: Mapping[str, Mapping[str, Any]],
    priority: int = 0,
    claims: Mapping[str, Mapping[str, Any]] | None = None,
) -> WorkloadDemand:
    """A workload's demand from its legacy object and converted object (None: not converted)."""
    meta = legacy.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    count, legacy_spec = _pods(legacy)
    converted_spec = _pods(converted)[1] if converted is not None else None
    name = str(meta.get("name") or "")
    if legacy.get("kind") == "Pod":
        names = [name or f"{meta.get('generateName') or 'pod-'}0"]
    else:
        names = [f"{name}-{i}" for i in range(count)]
    pods = pod_demands(namespace, names, legacy_spec, converted_spec, templates, claims)
    return WorkloadDemand(
        namespace, name or str(meta.get("generateName") or ""), str(legacy.get("kind")), pods, priority
    )
