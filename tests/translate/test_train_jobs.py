"""translate.capacity.train_jobs: a Trainer v2 TrainJob's trainer pods, from its runtime."""

from __future__ import annotations

from typing import Any

import pytest

from dra_bridge.translate.capacity.train_jobs import train_job_pods
from dra_bridge.translate.errors import InputError


def runtime(kind: str = "ClusterTrainingRuntime", namespace: str | None = None, **policy: Any) -> dict[str, Any]:
    trainer = {
        "name": "node",
        "template": {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "sidecar", "image": "s"},
                            {"name": "node", "image": "t", "resources": {"limits": {"nvidia.com/gpu": "2"}}},
                        ]
                    }
                }
            }
        },
    }
    meta = {"name": "torch", **({"namespace": namespace} if namespace else {})}
    spec = {"mlPolicy": policy, "template": {"spec": {"replicatedJobs": [{"name": "dataset-initializer"}, trainer]}}}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind, "metadata": meta, "spec": spec}


def job(**trainer: Any) -> dict[str, Any]:
    ref = trainer.pop("ref", {"name": "torch"})
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "j", "namespace": "ml"},
        "spec": {"runtimeRef": ref, "trainer": trainer},
    }


def limits(pod: Any) -> list[Any]:
    return [c.get("resources", {}).get("limits") for c in pod["spec"]["containers"]]


def test_num_nodes_from_the_job_else_the_runtime_else_one() -> None:
    assert train_job_pods(job(numNodes=3), [runtime(numNodes=2)]).pods == 3
    found = train_job_pods(job(), [runtime(numNodes=2)])
    assert (found.pods, found.source) == (2, "ClusterTrainingRuntime torch: spec.mlPolicy.numNodes 2")
    assert train_job_pods(job(), [runtime()]).pods == 1


def test_resources_per_node_replace_the_trainer_container_s() -> None:
    found = train_job_pods(job(resourcesPerNode={"limits": {"nvidia.com/gpu": "8"}}), [runtime()])
    assert found.pod is not None and limits(found.pod) == [None, {"nvidia.com/gpu": "8"}]
    kept = train_job_pods(job(), [runtime()])
    assert kept.pod is not None and limits(kept.pod) == [None, {"nvidia.com/gpu": "2"}]


def test_a_runtime_not_in_the_input_leaves_the_gpus_unknown() -> None:
    found = train_job_pods(job(numNodes=4), [])
    assert (found.pods, found.pod) == (4, None)
    assert found.unknown == "GPUs per pod unknown: ClusterTrainingRuntime torch is not in the input"
    namespaced = job(ref={"name": "torch", "kind": "TrainingRuntime"})
    other = train_job_pods(namespaced, [runtime("TrainingRuntime", "other")])
    assert other.unknown == "GPUs per pod unknown: TrainingRuntime ml/torch is not in the input"
    assert train_job_pods(namespaced, [runtime("TrainingRuntime", "ml")]).pod is not None


def test_a_bad_num_nodes_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"spec\.trainer\.numNodes: must be a non-negative integer"):
        train_job_pods(job(numNodes="four"), [])
