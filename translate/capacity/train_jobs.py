"""The pods of a Kubeflow Trainer v2 TrainJob (pure): its trainer nodes, from its runtime.

    train_job_pods(job, objects) -> TrainJobPods     pods, where the number came from, the pod (or why not)

A TrainJob (``trainer.kubeflow.org``;
https://github.com/kubeflow/trainer/blob/master/pkg/apis/trainer/v1alpha1/trainjob_types.go)
holds no pod template: the pods come from the runtime ``spec.runtimeRef`` names (``kind``
ClusterTrainingRuntime by default, or a TrainingRuntime of the TrainJob's namespace;
https://github.com/kubeflow/trainer/blob/master/pkg/apis/trainer/v1alpha1/trainingruntime_types.go),
whose ``spec.template`` is a JobSet template. The count is ``spec.trainer.numNodes``, else the
runtime's ``spec.mlPolicy.numNodes``, else 1: one pod per training node. The pod is the
runtime's trainer job (the replicated job labelled ``trainer.kubeflow.org/trainjob-ancestor-step:
trainer``, else the one named ``node``), with ``spec.trainer.resourcesPerNode`` replacing the
resources of its trainer container (named ``node``, else the first). With the runtime not in
the input the GPUs per pod are unknown: no pod is given, never a guess, and ``unknown`` says why.
Initializer jobs (dataset, model) are not counted: they run before the trainer and ask for no
device in the shipped runtimes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dra_bridge.translate.errors import InputError
from dra_bridge.translate.json_copy import clone_mapping

__all__ = ["TRAINER_GROUP", "TrainJobPods", "is_train_job", "train_job_pods"]

TRAINER_GROUP: Final = "trainer.kubeflow.org"
ANCESTOR_LABEL: Final = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER_NODE: Final = "node"


@dataclass(frozen=True)
class TrainJobPods:
    """``pods`` trainer pods (``source``: where the number came from); ``pod``: one of them (a
    pod template), None when ``unknown`` says why its devices cannot be known."""

    pods: int
    source: str
    pod: Mapping[str, Any] | None
    unknown: str = ""


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def is_train_job(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` is a Trainer v2 TrainJob."""
    return obj.get("kind") == "TrainJob" and str(obj.get("apiVersion", "")).split("/", 1)[0] == TRAINER_GROUP


def _runtime(job: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]) -> tuple[str, Mapping[str, Any] | None]:
    ref = _m(_m(job.get("spec")).get("runtimeRef"))
    kind, name = str(ref.get("kind") or "ClusterTrainingRuntime"), str(ref.get("name") or "")
    namespace = str(_m(job.get("metadata")).get("namespace") or "default")
    for obj in objects:
        meta = _m(obj.get("metadata"))
        if obj.get("kind") != kind or str(obj.get("apiVersion", "")).split("/", 1)[0] != TRAINER_GROUP:
            continue
        if meta.get("name") == name and (
            kind == "ClusterTrainingRuntime" or meta.get("namespace", "default") == namespace
        ):
            return f"{kind} {name}", obj
    label = f"{kind} {name}" if kind == "ClusterTrainingRuntime" else f"{kind} {namespace}/{name}"
    return label, None


def _trainer_pod(runtime: Mapping[str, Any], resources: Any) -> Mapping[str, Any] | None:
    jobs = _m(_m(_m(runtime.get("spec")).get("template")).get("spec")).get("replicatedJobs")
    jobs = [j for j in jobs if isinstance(j, Mapping)] if isinstance(jobs, list) else []
    labelled = [
        j for j in jobs if _m(_m(_m(j.get("template")).get("metadata")).get("labels")).get(ANCESTOR_LABEL) == "trainer"
    ]
    chosen = (labelled or [j for j in jobs if j.get("name") == TRAINER_NODE] or [None])[0]
    template = _m(_m(_m(chosen).get("template")).get("spec")).get("template")
    if not isinstance(template, Mapping) or not isinstance(_m(template.get("spec")).get("containers"), list):
        return None
    pod = clone_mapping(template)
    containers = [c for c in pod["spec"]["containers"] if isinstance(c, dict)]
    if isinstance(resources, Mapping) and containers:
        trainer = next((c for c in containers if c.get("name") == TRAINER_NODE), containers[0])
        trainer["resources"] = clone_mapping(resources)
    return pod


def train_job_pods(job: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]) -> TrainJobPods:
    """The TrainJob's trainer pods (module docstring); ``objects``: the input's objects, where
    its runtime may be. Raises InputError for a ``numNodes`` that is not a non-negative integer."""
    trainer = _m(_m(job.get("spec")).get("trainer"))
    label, runtime = _runtime(job, objects)
    policy = _m(_m(_m(runtime).get("spec")).get("mlPolicy"))
    if trainer.get("numNodes") is not None:
        nodes, source = trainer["numNodes"], "spec.trainer.numNodes"
    elif policy.get("numNodes") is not None:
        nodes, source = policy["numNodes"], f"{label}: spec.mlPolicy.numNodes"
    else:
        nodes, source = 1, "numNodes unset"
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 0:
        raise InputError(f"{source}: must be a non-negative integer, not {nodes!r}")
    source = f"{source} {nodes}"
    if runtime is None:
        return TrainJobPods(nodes, source, None, f"GPUs per pod unknown: {label} is not in the input")
    pod = _trainer_pod(runtime, trainer.get("resourcesPerNode"))
    if pod is None:
        return TrainJobPods(nodes, source, None, f"GPUs per pod unknown: {label} has no trainer job template")
    return TrainJobPods(nodes, source, pod)
