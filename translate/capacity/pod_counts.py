"""How many pods each pod template of a workload creates (pure): the capacity check's pod counts.

    pod_counts(obj) -> PodCounts          per pod template: its pods, a role and where the number came from
    job_pods(job_spec, where) -> (n, source)   a Job spec's pods at once

The rules (docs/capacity.md, "Pod counts"; field names from the upstream types cited below):

- Pod: 1. Deployment, ReplicaSet, StatefulSet: ``spec.replicas`` (default 1). Job:
  ``spec.parallelism`` (default 1), at most ``spec.completions`` when that is set and smaller.
  CronJob: one run, its job template's pods by the Job rule.
- Ray (``ray.io``; https://github.com/ray-project/kuberay/blob/master/ray-operator/apis/ray/v1/raycluster_types.go):
  the cluster spec is a RayCluster's ``spec``, a RayJob's ``spec.rayClusterSpec``, a
  RayService's ``spec.rayClusterConfig``. The head (``headGroupSpec.template``) is 1 pod; each
  ``workerGroupSpecs[i]`` creates ``replicas`` (default 0; ``minReplicas`` when unset, kept
  between ``minReplicas`` and ``maxReplicas``) times ``numOfHosts`` (default 1) pods, none
  when ``suspend``. With ``enableInTreeAutoscaling`` the autoscaler decides: ``minReplicas``
  (default 0) is counted, and a note says so. A RayJob's ``submitterPodTemplate`` is 1 pod.
- LeaderWorkerSet (``leaderworkerset.x-k8s.io``;
  https://github.com/kubernetes-sigs/lws/blob/main/api/leaderworkerset/v1/leaderworkerset_types.go):
  ``spec.replicas`` groups (default 1) of ``leaderWorkerTemplate.size`` pods (default 1): per
  group one leader (``leaderTemplate``, else the worker template) and ``size - 1`` workers
  (``workerTemplate``).
- Kubeflow training jobs (``kubeflow.org``: PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob,
  JAXJob; https://github.com/kubeflow/training-operator/blob/release-1.9/pkg/apis/kubeflow.org/v1/common_types.go,
  ``ReplicaSpec``): each ``spec.<x>ReplicaSpecs.<role>`` creates ``replicas`` pods (default 1).
- JobSet (``jobset.x-k8s.io``;
  https://github.com/kubernetes-sigs/jobset/blob/main/api/jobset/v1alpha2/jobset_types.go):
  each ``spec.replicatedJobs[i]`` creates ``replicas`` Jobs (default 1), each with its job
  template's pods by the Job rule.
- Trainer v2 runtimes (``trainer.kubeflow.org`` TrainingRuntime, ClusterTrainingRuntime;
  https://github.com/kubeflow/trainer/blob/master/pkg/apis/trainer/v1alpha1/trainingruntime_types.go):
  0 pods: a runtime creates pods only for the TrainJobs naming it (:mod:`~translate.capacity.train_jobs`).
- KServe InferenceService (``serving.kserve.io``;
  https://github.com/kserve/kserve/blob/master/pkg/apis/serving/v1beta1/component.go,
  ``ComponentExtensionSpec``): each component (predictor, transformer, explainer) runs
  ``max(minReplicas, 1)`` pods (``minReplicas`` default 1); ``minReplicas: 0`` scales to zero
  when idle, counted as 1 (serving) with a note. A predictor's ``workerSpec``
  (https://github.com/kserve/kserve/blob/master/pkg/apis/serving/v1alpha1/servingruntime_types.go,
  ``WorkerSpec``) adds ``pipelineParallelSize - 1`` worker pods per replica (1 when unset, with
  a note).
- Any other custom resource: 1 pod per pod template, with a note that no count rule is known.

A count field that is not a non-negative integer raises :class:`translate.errors.InputError`.

The capacity check places at most :data:`MAX_WORKLOAD_PODS` pods of one workload and
:data:`MAX_TOTAL_PODS` in all (docs/capacity.md, "Bounds"): :func:`above_bound` says why a
workload above it is not placed, before any pod is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from dra_bridge.translate.errors import InputError
from dra_bridge.translate.plan.custom_resources import PodSpecSite, get_path, path_text, pod_spec_sites
from dra_bridge.translate.plan.workloads import BUILTIN_TEMPLATE_PATHS, CORE_GROUPS, find_pod_templates

__all__ = ["MAX_TOTAL_PODS", "MAX_WORKLOAD_PODS", "PodCounts", "TemplateCount", "above_bound", "job_pods", "pod_counts"]

MAX_WORKLOAD_PODS: Final = 10_000
"""The most pods of one workload the capacity check (and simulate) places."""
MAX_TOTAL_PODS: Final = 150_000
"""The most pods of all workloads together the capacity check (and simulate) places."""

Path = tuple[str | int, ...]
RAY_CLUSTER_SPEC: Final = {
    "RayCluster": ("spec",),
    "RayJob": ("spec", "rayClusterSpec"),
    "RayService": ("spec", "rayClusterConfig"),
}
_REPLICAS: Final = ("Deployment", "ReplicaSet", "StatefulSet")
_KSERVE_WORKER: Final = "workerSpec"


@dataclass(frozen=True)
class TemplateCount:
    """``pods`` pods from the pod template at ``path`` (a KServe pod spec: ``site``), in the
    ``role`` they play (pods are named ``<workload>-<role>-<i>``), and ``source``: where the
    number came from."""

    path: Path
    pods: int
    role: str
    source: str
    site: PodSpecSite | None = None

    def pod(self, obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The pod template (or the site as a pod) at :attr:`path` in ``obj``, None when absent."""
        try:
            found = get_path(obj, self.path)
        except (KeyError, IndexError, TypeError):
            return None
        if not isinstance(found, Mapping):
            return None
        return self.site.as_pod(found) if self.site is not None else found

    def as_json(self) -> dict[str, Any]:
        """``{template, role, pods, from}`` as the report writes it."""
        return {
            "template": path_text(self.path).rstrip(".") or ".",
            "role": self.role,
            "pods": self.pods,
            "from": self.source,
        }


@dataclass(frozen=True)
class PodCounts:
    """Every pod template of a workload with its count, and notes an operator should read
    (autoscaling, scale-to-zero, no count rule)."""

    templates: tuple[TemplateCount, ...]
    notes: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        """The pods of every template."""
        return sum(t.pods for t in self.templates)


def above_bound(pods: int, placed: int = 0) -> str | None:
    """Why ``pods`` more pods (``placed`` already counted) are not placed, None within the bounds."""
    if pods > MAX_WORKLOAD_PODS:
        return f"{pods} pods, above the bound of {MAX_WORKLOAD_PODS} pods a workload (docs/capacity.md): not placed"
    if placed + pods > MAX_TOTAL_PODS:
        return (
            f"{pods} pods: the bound of {MAX_TOTAL_PODS} pods in all is reached ({placed} placed before; "
            "docs/capacity.md): not placed"
        )
    return None


def _label(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return f"{obj.get('kind')}/{name or '?'}"


def _count(node: Any, key: str, default: int, where: str) -> int:
    """``node[key]`` as a non-negative integer (``default`` when absent or null)."""
    value = node.get(key) if isinstance(node, Mapping) else None
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{where}{key}: must be a non-negative integer, not {value!r}")
    return value


def _at(obj: Mapping[str, Any], path: Path) -> Any:
    try:
        return get_path(obj, path)
    except (KeyError, IndexError, TypeError):
        return None


def job_pods(job_spec: Any, where: str) -> tuple[int, str]:
    """The pods a Job spec runs at once: ``parallelism`` (default 1), at most ``completions``."""
    parallelism = _count(job_spec, "parallelism", 1, where)
    completions = _count(job_spec, "completions", parallelism, where)
    if completions < parallelism:
        return completions, f"{where}completions {completions} (below parallelism {parallelism})"
    set_ = isinstance(job_spec, Mapping) and job_spec.get("parallelism") is not None
    return parallelism, f"{where}parallelism {parallelism}" if set_ else f"{where}parallelism unset: 1"


def _builtin(obj: Mapping[str, Any], kind: str) -> PodCounts:
    path = BUILTIN_TEMPLATE_PATHS[kind]
    spec = obj.get("spec")
    if kind in _REPLICAS:
        n = _count(spec, "replicas", 1, "spec.")
        source = (
            f"spec.replicas {n}"
            if isinstance(spec, Mapping) and spec.get("replicas") is not None
            else "spec.replicas unset: 1"
        )
    elif kind == "Job":
        n, source = job_pods(spec, "spec.")
    elif kind == "CronJob":
        n, source = job_pods(_at(obj, ("spec", "jobTemplate", "spec")), "spec.jobTemplate.spec.")
        source = f"one run: {source}"
    else:  # DaemonSet, PodTemplate: no count of their own
        return PodCounts(())
    return PodCounts((TemplateCount(path, n, kind.lower(), source),))


def _ray(obj: Mapping[str, Any], base: Path) -> PodCounts:
    cluster = _at(obj, base)
    if not isinstance(cluster, Mapping):
        return PodCounts(())
    where = path_text(base)
    autoscaling = cluster.get("enableInTreeAutoscaling") is True
    out = [TemplateCount((*base, "headGroupSpec", "template"), 1, "head", "the head: 1")]
    notes = []
    groups = cluster.get("workerGroupSpecs")
    for i, group in enumerate(groups if isinstance(groups, list) else []):
        at = f"{where}workerGroupSpecs[{i}]."
        role = str(group.get("groupName") or f"worker{i}") if isinstance(group, Mapping) else f"worker{i}"
        low = _count(group, "minReplicas", 0, at)
        high = _count(group, "maxReplicas", 2**31 - 1, at)
        hosts = _count(group, "numOfHosts", 1, at)
        if autoscaling:
            n, source = low, f"{at}minReplicas {low} (enableInTreeAutoscaling)"
        elif isinstance(group, Mapping) and group.get("replicas") is not None:
            n = min(max(_count(group, "replicas", 0, at), low), high)
            source = f"{at}replicas {n}"
        else:
            n, source = low, f"{at}replicas unset: minReplicas {low}"
        if isinstance(group, Mapping) and group.get("suspend") is True:
            n, source = 0, f"{at}suspend: 0"
        if hosts != 1:
            source += f" x numOfHosts {hosts}"
        out.append(TemplateCount((*base, "workerGroupSpecs", i, "template"), n * hosts, role, source))
    if autoscaling:
        notes.append(
            f"{where}enableInTreeAutoscaling: the Ray autoscaler adds workers up to maxReplicas on demand; "
            "each worker group counts its minReplicas"
        )
    if obj.get("kind") == "RayJob":
        out.append(TemplateCount(("spec", "submitterPodTemplate"), 1, "submitter", "the submitter: 1"))
    return PodCounts(tuple(out), tuple(notes))


def _lws(obj: Mapping[str, Any]) -> PodCounts:
    spec = obj.get("spec")
    groups = _count(spec, "replicas", 1, "spec.")
    lwt = _at(obj, ("spec", "leaderWorkerTemplate"))
    size = _count(lwt, "size", 1, "spec.leaderWorkerTemplate.")
    base: Path = ("spec", "leaderWorkerTemplate")
    size_text = f"spec.replicas {groups} x (spec.leaderWorkerTemplate.size {size} - 1)"
    if isinstance(lwt, Mapping) and isinstance(lwt.get("leaderTemplate"), Mapping):
        return PodCounts(
            (
                TemplateCount(
                    (*base, "leaderTemplate"), groups, "leader", f"spec.replicas {groups}: one leader a group"
                ),
                TemplateCount((*base, "workerTemplate"), groups * (size - 1 if size else 0), "worker", size_text),
            )
        )
    source = f"spec.replicas {groups} x spec.leaderWorkerTemplate.size {size} (the leader from workerTemplate)"
    return PodCounts((TemplateCount((*base, "workerTemplate"), groups * size, "worker", source),))


def _kubeflow(obj: Mapping[str, Any]) -> PodCounts:
    spec = obj.get("spec")
    out = []
    for key, roles in spec.items() if isinstance(spec, Mapping) else []:
        if not str(key).endswith("ReplicaSpecs") or not isinstance(roles, Mapping):
            continue
        for role, replica in roles.items():
            at = f"spec.{key}.{role}."
            n = _count(replica, "replicas", 1, at)
            given = isinstance(replica, Mapping) and replica.get("replicas") is not None
            source = f"{at}replicas {n}" if given else f"{at}replicas unset: 1"
            out.append(TemplateCount(("spec", str(key), str(role), "template"), n, str(role).lower(), source))
    return PodCounts(tuple(out))


def _jobset(obj: Mapping[str, Any], base: Path = ("spec",)) -> PodCounts:
    jobs = _at(obj, (*base, "replicatedJobs"))
    out = []
    for i, job in enumerate(jobs if isinstance(jobs, list) else []):
        at = f"{path_text(base)}replicatedJobs[{i}]."
        replicas = _count(job, "replicas", 1, at)
        per_job, source = job_pods(_at(obj, (*base, "replicatedJobs", i, "template", "spec")), f"{at}template.spec.")
        role = str(job.get("name") or f"job{i}") if isinstance(job, Mapping) else f"job{i}"
        path = (*base, "replicatedJobs", i, "template", "spec", "template")
        out.append(TemplateCount(path, replicas * per_job, role, f"{at}replicas {replicas} x {source}"))
    return PodCounts(tuple(out))


def _kserve(obj: Mapping[str, Any]) -> PodCounts:
    out, notes = [], []
    replicas: dict[str, int] = {}
    for site in pod_spec_sites(obj):
        component = str(site.path[1])
        at = f"spec.{component}."
        if site.path[-1] != _KSERVE_WORKER:
            low = _count(_at(obj, site.path), "minReplicas", 1, at)
            replicas[component] = max(low, 1)
            if low == 0:
                notes.append(f"{at}minReplicas 0: scales to zero when idle; counted 1 pod while serving")
            out.append(TemplateCount(site.path, max(low, 1), component, f"max({at}minReplicas {low}, 1)", site))
            continue
        worker = _at(obj, site.path)
        size = _count(worker, "pipelineParallelSize", 0, f"{at}{_KSERVE_WORKER}.")
        per = size - 1 if size else 1
        if not size:
            notes.append(f"{at}{_KSERVE_WORKER}.pipelineParallelSize unset: counted 1 worker pod a replica")
        n = replicas.get(component, 1)
        source = f"{n} replicas x (pipelineParallelSize {size} - 1)" if size else f"{n} replicas x 1"
        out.append(TemplateCount(site.path, n * max(per, 0), f"{component}-worker", source, site))
    return PodCounts(tuple(out), tuple(notes))


def _group(obj: Mapping[str, Any]) -> str:
    return str(obj.get("apiVersion", "")).split("/", 1)[0]


def _custom(obj: Mapping[str, Any], kind: str) -> PodCounts | None:
    group = _group(obj)
    if group == "ray.io" and kind in RAY_CLUSTER_SPEC:
        return _ray(obj, RAY_CLUSTER_SPEC[kind])
    if group == "leaderworkerset.x-k8s.io" and kind == "LeaderWorkerSet":
        return _lws(obj)
    if group == "kubeflow.org" and kind.endswith("Job"):
        return _kubeflow(obj)
    if group == "jobset.x-k8s.io" and kind == "JobSet":
        return _jobset(obj)
    if group == "serving.kserve.io" and kind == "InferenceService":
        return _kserve(obj)
    if group == "trainer.kubeflow.org" and kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
        counts = _jobset(obj, ("spec", "template", "spec"))
        zero = tuple(
            TemplateCount(t.path, 0, t.role, "a runtime creates pods only for TrainJobs") for t in counts.templates
        )
        return PodCounts(zero, (f"{kind}: pods are counted on the TrainJobs that name it",))
    return None


def pod_counts(obj: Mapping[str, Any]) -> PodCounts:
    """The pod templates of ``obj`` with their pod counts (module docstring). Pod templates a
    rule does not name are 1 pod each, with a note."""
    kind = str(obj.get("kind", ""))
    if kind == "Pod":
        return PodCounts((TemplateCount((), 1, "pod", "a Pod: 1"),))
    if kind in BUILTIN_TEMPLATE_PATHS and obj.get("apiVersion") in CORE_GROUPS:
        return _builtin(obj, kind)
    counts = _custom(obj, kind) or PodCounts(())
    known = {t.path for t in counts.templates}
    rest = [p for p in find_pod_templates(obj) if p not in known]
    if not rest:
        return counts
    extra = tuple(TemplateCount(p, 1, f"template{i}", "no pod count rule: 1") for i, p in enumerate(rest))
    note = f"{_label(obj)}: no pod count rule for {len(rest)} pod template(s); counted 1 pod each"
    return PodCounts(counts.templates + extra, (*counts.notes, note))
