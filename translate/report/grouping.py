"""What a report covers: input objects -> workloads (each with the pods it owns) and cluster facts.

    group(objects) -> Inventory(units, nodes, slices, classes, quotas, namespaces)

``objects`` are ``(source, object)`` pairs, in input order; a source names where the object
came from (``FILE#N``, the N-th object of a file counted from 1, or ``cluster`` in live mode).
Rules:

- Workloads (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, PodTemplate),
  custom resources that hold a pod template or pod spec (any depth), the custom kinds with a
  pod count rule (:data:`COUNTED_KINDS`, even when their pod templates cannot be read) and
  Kubeflow Trainer TrainJobs (their pods come from a runtime) are each a :class:`Unit`, planned
  from the object itself.
- A Pod with a controller ``ownerReference`` joins its owner's unit; owners are followed up
  the chain the controllers build (ReplicaSet -> Deployment, Job -> CronJob) through the
  owners' own ``ownerReferences`` when those objects are in the input, else by the name the
  controller gives (a ReplicaSet named ``<deployment>-<pod-template-hash>`` with the pod's
  ``pod-template-hash`` label). An owner missing from the input becomes a unit of its own,
  planned from its first pod (the pods of one owner are replicas of one template).
- A Pod without a controller is its own unit; one with only ``generateName`` is marked
  ``not_yet_named`` (its name is given at creation).
- A ReplicaSet owned by a Deployment, and a Job owned by a CronJob, join their owner's unit.
- Nodes, ResourceSlices, DeviceClasses, ResourceQuotas and Namespaces are cluster facts; every other
  kind (Services, ConfigMaps, ResourceClaimTemplates, ...) is ignored.
- The same object (API group, kind, namespace, name) given twice is a warning
  (``Inventory.warnings``: ``Kind/namespace/name given twice: SOURCE and SOURCE``); both stay
  in the report, each row with its own source.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dra_bridge.translate.names import pod_name
from dra_bridge.translate.plan.custom_resources import PodPath, at_template, get_path, path_text, pod_spec_sites
from dra_bridge.translate.plan.workloads import BUILTIN_TEMPLATE_PATHS, CORE_GROUPS, find_pod_templates

WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "PodTemplate")
FACT_KINDS = ("Node", "ResourceSlice", "DeviceClass", "ResourceQuota", "Namespace")
#: Built-in API groups: their other kinds never hold pod templates.
BUILTIN_GROUPS = (
    "",
    "apps",
    "batch",
    "resource.k8s.io",
    "rbac.authorization.k8s.io",
    "networking.k8s.io",
    "policy",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "autoscaling",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "scheduling.k8s.io",
    "node.k8s.io",
    "certificates.k8s.io",
    "flowcontrol.apiserver.k8s.io",
)
#: Custom kinds with a pod count rule (translate/capacity/pod_counts.py; and every ``kubeflow.org``
#: ``...Job``): each is a workload even when its pod templates cannot be read.
COUNTED_KINDS = frozenset(
    {
        ("ray.io", "RayCluster"),
        ("ray.io", "RayJob"),
        ("ray.io", "RayService"),
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
        ("jobset.x-k8s.io", "JobSet"),
        ("serving.kserve.io", "InferenceService"),
    }
)
#: The owner kinds a controller chain climbs: a pod's owner -> that owner's usual owner.
CHAIN = {"ReplicaSet": "Deployment", "Job": "CronJob"}


@dataclass
class Unit:
    """One workload: ``kind``/``namespace``/``name`` (a Pod with only ``generateName`` carries
    that prefix and ``not_yet_named``), the ``source`` it came from, the object whose pod
    templates are planned (``obj``), and the pods grouped under it (``pods``: names)."""

    kind: str
    namespace: str
    name: str
    source: str
    obj: Mapping[str, Any]
    pods: list[str] = field(default_factory=list)
    not_yet_named: bool = False
    custom: bool = False
    order: int = 0
    pod_objects: list[Mapping[str, Any]] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str, str]:
        """(kind, namespace, name): what pods are grouped by."""
        return (self.kind, self.namespace, self.name)


@dataclass
class Inventory:
    """The units in input order and the cluster facts (objects as read)."""

    units: list[Unit] = field(default_factory=list)
    nodes: list[Mapping[str, Any]] = field(default_factory=list)
    slices: list[Mapping[str, Any]] = field(default_factory=list)
    classes: list[Mapping[str, Any]] = field(default_factory=list)
    quotas: list[Mapping[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    namespaces: list[Mapping[str, Any]] = field(default_factory=list)


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``metadata`` when it is a mapping, else an empty one."""
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def controller(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(kind, name) of the object's controller ``ownerReference``, or None."""
    for ref in meta(obj).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("kind") and ref.get("name"):
            return str(ref["kind"]), str(ref["name"])
    return None


def _group(obj: Mapping[str, Any]) -> str:
    api = str(obj.get("apiVersion", ""))
    return api.split("/", 1)[0] if "/" in api else ""


def _is_custom_workload(obj: Mapping[str, Any]) -> bool:
    if _group(obj) in BUILTIN_GROUPS:
        return False
    train_job = obj.get("kind") == "TrainJob" and _group(obj) == "trainer.kubeflow.org"  # pods from its runtime
    kind = str(obj.get("kind"))
    counted = (_group(obj), kind) in COUNTED_KINDS or (_group(obj) == "kubeflow.org" and kind.endswith("Job"))
    return bool(
        train_job or counted or next(find_pod_templates(obj), None) or pod_spec_sites(obj) or _mentions_gpu(obj)
    )


def _mentions_gpu(obj: Any) -> bool:
    """A quick test for a ``resources`` mapping anywhere (Argo templates' containers)."""
    if isinstance(obj, Mapping):
        return ("resources" in obj and "image" in obj) or any(_mentions_gpu(v) for v in obj.values())
    if isinstance(obj, list):
        return any(_mentions_gpu(v) for v in obj)
    return False


def duplicates(listed: Iterable[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """A warning per object given again (same API group, kind, namespace and name; objects with
    only ``generateName`` are never the same), naming its first source and this one."""
    first: dict[tuple[str, str, str, str], str] = {}
    out: list[str] = []
    for source, obj in listed:
        m = meta(obj)
        if not m.get("name"):
            continue
        namespace, name = str(m.get("namespace") or ""), str(m["name"])
        key = (_group(obj), str(obj["kind"]), namespace, name)
        if key in first:
            shown = "/".join(p for p in (key[1], namespace, name) if p)
            out.append(f"{shown} given twice: {first[key]} and {source}")
        else:
            first[key] = source
    return out


def pod_templates(obj: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(finding-path prefix, pod) of every pod template or pod spec the plan reads in ``obj``."""
    return [(prefix, pod) for prefix, pod, _ in located_pod_templates(obj)]


def located_pod_templates(obj: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], PodPath]]:
    """(finding-path prefix, pod, where its values are in ``obj``) of every pod template or pod
    spec the plan reads in ``obj``; a pod spec site's prefix is ``""`` (its pod is rebuilt)."""
    kind = str(obj.get("kind", ""))
    if kind == "Pod":
        return [("", obj, at_template(""))]
    builtin = kind in BUILTIN_TEMPLATE_PATHS and obj.get("apiVersion") in CORE_GROUPS
    out: list[tuple[str, Mapping[str, Any], PodPath]] = []
    for p in [BUILTIN_TEMPLATE_PATHS[kind]] if builtin else list(find_pod_templates(obj)):
        try:
            found = get_path(obj, p)
        except (KeyError, IndexError, TypeError):
            continue
        if isinstance(found, Mapping):
            out.append((path_text(p), found, at_template(path_text(p))))
    for site in [] if builtin else pod_spec_sites(obj):
        try:
            found = get_path(obj, site.path)
            out.append(("", site.as_pod(found), site.locate(found)))
        except (KeyError, IndexError, TypeError):
            continue
    return out


def _owner_of(
    kind: str,
    name: str,
    pod: Mapping[str, Any],
    owners: Mapping[tuple[str, str, str], Mapping[str, Any]],
    namespace: str,
) -> tuple[str, str]:
    """Climb from a pod's controller to the top of its chain."""
    while kind in CHAIN:
        obj = owners.get((kind, namespace, name))
        if obj is not None:
            up = controller(obj)
            if up is None:
                break
            kind, name = up
            continue
        hash_label = str((meta(pod).get("labels") or {}).get("pod-template-hash", ""))
        if kind == "ReplicaSet" and hash_label and name.endswith(f"-{hash_label}"):
            kind, name = "Deployment", name[: -len(hash_label) - 1]
        break
    return kind, name


def group(objects: Iterable[tuple[str, Any]]) -> Inventory:
    """Sort input objects into units and cluster facts (see the module docstring)."""
    listed = [(s, o) for s, o in objects if isinstance(o, Mapping) and isinstance(o.get("kind"), str)]
    inv = Inventory(warnings=duplicates(listed))
    owners = {
        (str(o["kind"]), str(meta(o).get("namespace") or ""), str(meta(o).get("name") or "")): o
        for _, o in listed
        if o["kind"] in WORKLOAD_KINDS or _group(o) not in BUILTIN_GROUPS
    }
    by_key: dict[tuple[str, str, str], Unit] = {}
    pods: list[tuple[int, str, Mapping[str, Any]]] = []
    for order, (source, obj) in enumerate(listed):
        kind, m = str(obj["kind"]), meta(obj)
        namespace = str(m.get("namespace") or "")
        if kind in FACT_KINDS and _group(obj) in ("", "resource.k8s.io"):
            facts = {
                "Node": inv.nodes,
                "ResourceSlice": inv.slices,
                "DeviceClass": inv.classes,
                "ResourceQuota": inv.quotas,
            }
            (inv.namespaces if kind == "Namespace" else facts[kind]).append(obj)
        elif kind == "Pod" and _group(obj) == "":
            pods.append((order, source, obj))
        elif (kind in WORKLOAD_KINDS and _group(obj) in ("apps", "batch", "")) or _is_custom_workload(obj):
            up = controller(obj)
            if kind in CHAIN and up is not None and up[0] == CHAIN[kind] and (up[0], namespace, up[1]) in owners:
                continue  # a Deployment's ReplicaSet, a CronJob's Job: the owner is the unit
            unit = Unit(
                kind,
                namespace,
                str(m.get("name") or m.get("generateName") or "?"),
                source,
                obj,
                custom=kind not in WORKLOAD_KINDS,
                order=order,
            )
            by_key.setdefault(unit.key, unit)
            inv.units.append(unit)
    for order, source, pod in pods:
        m = meta(pod)
        namespace = str(m.get("namespace") or "")
        name = str(m.get("name") or "")
        owner = controller(pod)
        if owner is None:
            unit = Unit(
                "Pod",
                namespace,
                name or str(m.get("generateName") or "?"),
                source,
                pod,
                not_yet_named=not name,
                order=order,
            )
            unit.pods.append(pod_name(m))
            unit.pod_objects.append(pod)
            inv.units.append(unit)
            continue
        kind, oname = _owner_of(*owner, pod, owners, namespace)
        key = (kind, namespace, oname)
        if key not in by_key:
            by_key[key] = Unit(kind, namespace, oname, source, pod, custom=kind not in WORKLOAD_KINDS, order=order)
            inv.units.append(by_key[key])
        by_key[key].pods.append(pod_name(m))
        by_key[key].pod_objects.append(pod)
    inv.units.sort(key=lambda u: u.order)
    return inv
