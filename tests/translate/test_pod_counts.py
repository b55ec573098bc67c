"""translate.capacity.pod_counts: the pods each pod template of a workload creates."""

from __future__ import annotations

from typing import Any

import pytest

from dra_bridge.translate.capacity.pod_counts import job_pods, pod_counts
from dra_bridge.translate.errors import InputError

POD: dict[str, Any] = {"spec": {"containers": [{"name": "c", "image": "i"}]}}


def counts(obj: dict[str, Any]) -> list[tuple[str, int]]:
    return [(t.role, t.pods) for t in pod_counts(obj).templates]


def ray_group(**fields: Any) -> dict[str, Any]:
    return {"groupName": "g", "rayStartParams": {}, "template": POD, **fields}


def ray(*groups: dict[str, Any], **spec: Any) -> dict[str, Any]:
    cluster = {"headGroupSpec": {"template": POD}, "workerGroupSpecs": list(groups), **spec}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r"}, "spec": cluster}


@pytest.mark.parametrize(
    ("group", "pods"),
    [
        pytest.param({"replicas": 3}, 3, id="replicas"),
        pytest.param({}, 0, id="unset-min-default-0"),
        pytest.param({"minReplicas": 2}, 2, id="unset-min"),
        pytest.param({"replicas": 1, "minReplicas": 2}, 2, id="raised-to-min"),
        pytest.param({"replicas": 9, "maxReplicas": 4}, 4, id="capped-at-max"),
        pytest.param({"replicas": 2, "numOfHosts": 4}, 8, id="num-of-hosts"),
        pytest.param({"replicas": 2, "suspend": True}, 0, id="suspended"),
    ],
)
def test_ray_worker_group_rules(group: dict[str, Any], pods: int) -> None:
    assert counts(ray(ray_group(**group))) == [("head", 1), ("g", pods)]


def test_ray_autoscaling_counts_min_replicas_with_a_note() -> None:
    found = pod_counts(ray(ray_group(replicas=5, minReplicas=1), enableInTreeAutoscaling=True))
    assert [(t.role, t.pods) for t in found.templates] == [("head", 1), ("g", 1)]
    assert found.notes and "enableInTreeAutoscaling" in found.notes[0]


def test_ray_job_cluster_spec_and_submitter() -> None:
    job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "spec": {"rayClusterSpec": ray(ray_group(replicas=2))["spec"], "submitterPodTemplate": POD},
    }
    assert counts(job) == [("head", 1), ("g", 2), ("submitter", 1)]


def test_lws_without_a_leader_template_uses_the_worker_template_for_every_pod() -> None:
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 3, "workerTemplate": POD}},
    }
    assert counts(lws) == [("worker", 6)]
    lws["spec"] = {"leaderWorkerTemplate": {"workerTemplate": POD}}  # defaults: 1 group of size 1
    assert counts(lws) == [("worker", 1)]


def test_kserve_worker_spec_adds_pipeline_parallel_workers() -> None:
    isvc = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "spec": {
            "predictor": {
                "minReplicas": 2,
                "model": {"modelFormat": {"name": "huggingface"}},
                "workerSpec": {"pipelineParallelSize": 3, "containers": [{"name": "w", "image": "i"}]},
            }
        },
    }
    assert counts(isvc) == [("predictor", 2), ("predictor-worker", 4)]


def test_trainer_runtime_creates_no_pods_of_its_own() -> None:
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "torch-distributed"},
        "spec": {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": POD}}}]}}},
    }
    found = pod_counts(runtime)
    assert [(t.role, t.pods) for t in found.templates] == [("node", 0)] and found.notes


def test_unknown_custom_resource_is_one_pod_a_template_with_a_note() -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"a": POD, "b": POD}}
    found = pod_counts(obj)
    assert [t.pods for t in found.templates] == [1, 1]
    assert found.notes == ("Thing/t: no pod count rule for 2 pod template(s); counted 1 pod each",)


@pytest.mark.parametrize(
    ("spec", "pods"),
    [
        pytest.param({}, 1, id="default"),
        pytest.param({"parallelism": 4}, 4, id="parallelism"),
        pytest.param({"parallelism": 4, "completions": 2}, 2, id="bounded-by-completions"),
        pytest.param({"completions": 5}, 1, id="completions-above"),
    ],
)
def test_job_pods(spec: dict[str, Any], pods: int) -> None:
    assert job_pods(spec, "spec.")[0] == pods


def test_a_bad_count_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"workerGroupSpecs\[0\]\.replicas: must be a non-negative integer"):
        pod_counts(ray(ray_group(replicas="two")))
    with pytest.raises(InputError, match=r"pytorchReplicaSpecs\.Worker\.replicas"):
        pod_counts(
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": -1, "template": POD}}},
            }
        )
