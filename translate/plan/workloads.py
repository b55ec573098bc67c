"""Workloads: find the pod templates in Kubernetes objects and convert them in place.

    convert_object(obj, catalog, options, include_custom_resources=False) -> Converted

Where the pod template lives:
    Pod                                   the object itself
    Deployment, ReplicaSet, StatefulSet, Job, DaemonSet    spec.template
    CronJob                               spec.jobTemplate.spec.template
    PodTemplate                           template
    ResourceQuota                         spec.hard gets the DRA quota key beside the legacy one
    anything else                         every nested mapping with spec.containers, any depth;
                                          KServe's pod specs; a finding for any other GPU request
                                          (Argo templates, ...): :mod:`translate.plan.custom_resources`

DaemonSets span legacy and DRA node pools, so they stay unchanged (``left-for-webhook``: the
webhook converts their pods node by node). Custom resources (RayCluster, PyTorchJob,
LeaderWorkerSet, ...) stay unchanged unless ``include_custom_resources``: their operators
derive settings (process counts, ...) from the GPU limit in the template (the findings carry
:attr:`~translate.findings.Remedy.INCLUDE_CUSTOM_RESOURCES`); a Volcano Job's stay legacy, with
or without it, while its scheduler is not declared to support DRA
(:func:`~translate.plan.foreign.controller_scheduler_without_dra`). Why a pod stays legacy:
:mod:`translate.plan.stay_legacy`; a ResourceQuota: :mod:`translate.plan.quota`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.findings import FOREIGN_CODES, Finding, Remedy
from dra_bridge.translate.json_copy import clone, clone_mapping
from dra_bridge.translate.plan.custom_resources import (
    PodSpecSite,
    get_path,
    path_name,
    path_text,
    pod_spec_sites,
    stray_gpu_requests,
)
from dra_bridge.translate.plan.field_types import object_meta_problem
from dra_bridge.translate.plan.foreign import controller_scheduler_without_dra
from dra_bridge.translate.plan.pod_plan import Options, plan_pod
from dra_bridge.translate.plan.quota import convert_quota
from dra_bridge.translate.plan.ray_params import pin_num_gpus
from dra_bridge.translate.plan.stay_legacy import live_pod

BUILTIN_TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "Deployment": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
    "PodTemplate": ("template",),
}
CORE_GROUPS = ("v1", "apps/v1", "batch/v1")


@dataclass(frozen=True)
class Converted:
    """The converted ``obj`` (a new dict), the ResourceClaimTemplates it needs, findings."""

    obj: Any
    templates: tuple[dict[str, Any], ...]
    findings: tuple[Finding, ...]


def _is_builtin(obj: Mapping[str, Any]) -> bool:
    return obj.get("apiVersion") in CORE_GROUPS


def find_pod_templates(node: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Paths of every nested mapping that looks like a pod template (``spec.containers`` list)."""
    if isinstance(node, Mapping):
        spec = node.get("spec")
        if path and isinstance(spec, Mapping) and isinstance(spec.get("containers"), list):
            yield path
            return
        for key, value in node.items():
            yield from find_pod_templates(value, (*path, str(key)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from find_pod_templates(value, (*path, i))


def convert_object(
    obj: Any,
    catalog: Catalog,
    options: Options = Options(),
    include_custom_resources: bool = False,
    private: bool = True,
) -> Converted:
    """Convert one object (see the module docstring); never mutates ``obj``.

    ``private`` False (a Pod or a built-in workload): the result shares with ``obj`` the subtrees
    the conversion leaves alone instead of copying them, for a caller that changes neither and
    whose ``obj`` reaches no list or mapping twice (the output would then too)."""
    refused = _left_alone(obj)
    if refused is not None:
        return Converted(clone(obj), (), (refused,))
    kind = str(obj.get("kind", ""))
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
    if kind == "ResourceQuota" and obj.get("apiVersion") == "v1":
        quota, notes = convert_quota(obj, catalog)
        return Converted(quota, (), notes)
    if kind == "Pod" and obj.get("apiVersion") == "v1":
        return _convert_pod(obj, catalog, options, private)
    builtin = _is_builtin(obj) and kind in BUILTIN_TEMPLATE_PATHS
    paths = [BUILTIN_TEMPLATE_PATHS[kind]] if builtin else list(find_pod_templates(obj))
    sites = [] if builtin else pod_spec_sites(obj)
    shared = builtin and not private
    new = _spine(obj, BUILTIN_TEMPLATE_PATHS[kind]) if shared else clone_mapping(obj)
    templates: list[dict[str, Any]] = []
    findings: list[Finding] = []
    units: list[tuple[tuple[str | int, ...], PodSpecSite | None]] = [(p, None) for p in paths]
    held = controller_scheduler_without_dra(obj, options.dra_schedulers)
    for path, site in [*units, *((s.path, s) for s in sites)]:
        try:
            found = get_path(obj, path)
        except (KeyError, IndexError, TypeError):
            continue
        if not isinstance(found, Mapping):
            continue
        template = site.as_pod(found) if site else found
        plan = plan_pod(template, catalog, options, namespace, "" if site else path_text(path))
        planned = [site.finding(f, found) for f in plan.findings] if site else list(plan.findings)
        if not plan.changed or held is not None:  # unchanged, or its controller's scheduler keeps it
            findings += _not_converted(plan.changed, planned, held, findings)
            continue
        if kind == "DaemonSet":
            findings += [
                Finding(
                    f.path,
                    f.legacy,
                    "left-for-webhook",
                    "a DaemonSet spans legacy and DRA node pools: the webhook converts its pods node by node",
                )
                for f in planned
                if f.outcome == "translated"
            ]
            findings += [f for f in planned if f.outcome != "translated"]
            continue
        if not builtin and not include_custom_resources:
            findings += [
                Finding(
                    f.path,
                    f.legacy,
                    "left-for-webhook",
                    f"{kind} is a custom resource whose operator "
                    "may derive settings from the GPU limit: left for the webhook",
                    Remedy.INCLUDE_CUSTOM_RESOURCES,
                    kind,
                )
                for f in planned
                if f.outcome == "translated"
            ]
            findings += [f for f in planned if f.outcome != "translated"]
            continue
        if site:
            site.write_back(get_path(new, path), clone_mapping(plan.pod))
        else:
            target: Any = get_path(new, path[:-1]) if len(path) > 1 else new
            target[path[-1]] = plan.pod if shared else clone_mapping(plan.pod)  # plan.pod shares with obj
            pinned = pin_num_gpus(kind, target, found, path_text(path[:-1]))
            findings += [pinned] if pinned else []
        templates += plan.templates
        findings += planned
        if not builtin:
            findings.append(
                Finding(
                    path_name(path),
                    kind,
                    "partial",
                    f"{kind} converted on request: check that its operator does not derive settings "
                    "(process counts, ...) from the GPU limit, which the converted template no "
                    "longer carries",
                    Remedy.INCLUDE_CUSTOM_RESOURCES,
                    kind,
                )
            )
    if not builtin:
        findings += stray_gpu_requests(obj, catalog, [*paths, *(s.path for s in sites)])
    if templates:
        new = _without_server_fields(new)
    return Converted(new, tuple(templates), tuple(findings))


def _not_converted(
    changed: bool, planned: list[Finding], held: Finding | None, findings: list[Finding]
) -> list[Finding]:
    """The findings of a template left as it is: its plan's when the plan leaves it unchanged; when
    its controller's scheduler keeps it legacy (``held``), its plan's but the translations, and
    ``held`` once per object."""
    if not changed or held is None:
        return planned
    kept = [f for f in planned if f.outcome != "translated"]
    return kept if held in findings else [*kept, held]


def _left_alone(obj: Any) -> Finding | None:
    """Why ``obj`` is not converted at all: not an object, or its name or namespace not a string."""
    if not (type(obj) is dict or isinstance(obj, Mapping)):
        return Finding(".", "", "ignored", "not an object")
    return object_meta_problem(obj.get("metadata"))


def _spine(obj: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """``obj`` with new mappings along ``path`` to the pod template's parent (the rest shared)."""
    new = dict(obj)
    at = new
    for part in path[:-1]:
        child = at.get(part)
        if not isinstance(child, Mapping):
            break
        at[part] = at = dict(child)
    return new


def _convert_pod(obj: Mapping[str, Any], catalog: Catalog, options: Options, private: bool = True) -> Converted:
    """A bare Pod: its plan, unless it exists or has an owner (:func:`~translate.plan.stay_legacy.live_pod`)."""
    meta = obj.get("metadata")
    meta = meta if type(meta) is dict or isinstance(meta, Mapping) else {}
    namespace = meta.get("namespace")
    plan = plan_pod(obj, catalog, options, namespace)
    asks = plan.changed or any(f.severity > 0 for f in plan.findings)
    live = live_pod(meta) if asks else None  # before nodeName: why it stays
    if live is not None:  # what is not ours stays said: a live pod's unknown device is still unknown
        return Converted(clone(obj), (), (live, *(f for f in plan.findings if f.code in FOREIGN_CODES)))
    pod = clone_mapping(plan.pod) if private else dict(plan.pod)
    return Converted(_without_server_fields(pod), plan.templates, plan.findings)


#: Fields the API server sets; a converted copy of a live object keeps none of them, so
#: ``kubectl apply`` neither conflicts on a stale resourceVersion nor re-sends status.
SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")


def _without_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not (set(SERVER_FIELDS) & set(meta) or "status" in obj):
        return obj
    out = {k: v for k, v in obj.items() if k != "status"}
    out["metadata"] = {k: v for k, v in meta.items() if k not in SERVER_FIELDS}
    return out
