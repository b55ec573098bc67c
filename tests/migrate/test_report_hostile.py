"""Hostile inputs to ``report`` and ``simulate``: wrong field types, huge pod counts, malformed
objects. Never a traceback, never a run that does not finish, never "converts cleanly" for a
field the report cannot read."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_bridge.migrate.cli import main
from dra_bridge.translate.capacity import pod_counts
from dra_bridge.translate.capacity.pod_counts import MAX_WORKLOAD_PODS

COUNTS = Path(__file__).resolve().parents[1] / "data" / "pod-counts"


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((COUNTS / name).read_text()) if d]


NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
    "status": {"allocatable": {"nvidia.com/gpu": "8"}},
}


def run(objects: list[Any], *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    stdin = io.StringIO(yaml.safe_dump_all(objects))
    code = main([*argv, "-f", "-"], stdin=stdin, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def report(objects: list[Any]) -> tuple[int, dict[str, Any], str]:
    code, out, err = run(objects, "report", "-o", "json", "--kubernetes-version", "1.36")
    return code, (json.loads(out) if code in (0, 3) and out else {}), err


def deployment(pod: dict[str, Any] | None = None, replicas: Any = 1, **container: Any) -> dict[str, Any]:
    box = {"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": "1"}}, **container}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ml"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [box], **(pod or {})}},
        },
    }


@pytest.mark.parametrize(
    ("workload", "field"),
    [
        (deployment(resources={"limits": ["x"]}), "spec.template.spec.containers[0].resources.limits"),
        (deployment({"nodeSelector": "x"}), "spec.template.spec.nodeSelector"),
        (deployment({"resourceClaims": "x"}), "spec.template.spec.resourceClaims"),
    ],
    ids=["limits-list", "node-selector-string", "resource-claims-string"],
)
def test_wrong_field_types_are_a_finding_naming_the_field_not_a_traceback(workload: dict[str, Any], field: str) -> None:
    code, doc, err = report([workload, NODE])
    assert code == 0, err
    (row,) = doc["workloads"]
    assert row["path"] == "blocked"
    assert any(f["path"] == field and "must be" in f["reason"] for f in row["findings"]), row["findings"]
    assert any("Deployment/ml/d" in line and field in line for line in doc["capacity"]["notPlaced"])


def test_a_node_whose_status_is_not_an_object_is_refused_naming_it() -> None:
    code, _, err = report([deployment(), {**NODE, "status": "x"}])
    assert code == 1
    assert "Traceback" not in err
    assert "Node n1: status: must be an object" in err


def test_simulate_refuses_resource_claims_that_are_not_a_list() -> None:
    pod = {"resourceClaims": "x"}
    workload = deployment(pod)
    workload["spec"]["template"]["spec"]["containers"][0]["resources"] = {}
    code, _, err = run([workload, NODE], "simulate")
    assert code == 1
    assert "Deployment ml/d" in err and "spec.template.spec.resourceClaims must be a list" in err, err


def _huge_lws() -> list[dict[str, Any]]:
    (lws,) = _docs("lws.yaml")
    lws["spec"]["replicas"] = 10**6
    lws["spec"]["leaderWorkerTemplate"]["size"] = 10**6
    return [lws]


def _huge_ray() -> list[dict[str, Any]]:
    serve = _docs("ray.yaml")[0]
    serve["spec"]["rayClusterConfig"]["workerGroupSpecs"][0].update(replicas=10**8, maxReplicas=10**8)
    return [serve]


def _train_job_nodes(nodes: Any) -> list[dict[str, Any]]:
    runtime, job = _docs("trainjob.yaml")[:2]
    job["spec"]["trainer"]["numNodes"] = nodes
    return [runtime, job]


def _huge_train_job() -> list[dict[str, Any]]:
    return _train_job_nodes(10**9)


@pytest.mark.parametrize(
    ("objects", "label", "count"),
    [
        ([deployment(replicas=10**7)], "Deployment/ml/d", 10**7),
        (_huge_lws(), "LeaderWorkerSet/ml/vllm", 10**12),
        (_huge_ray(), "RayService/ml/serve", 10**8 + 8),
        (_huge_train_job(), "TrainJob/ml/fine-tune", 10**9),
    ],
    ids=["deployment", "lws", "ray", "train-job"],
)
def test_a_workload_above_the_pod_bound_is_not_placed_and_the_run_finishes(
    objects: list[dict[str, Any]], label: str, count: int
) -> None:
    started = time.monotonic()
    code, doc, err = report([*objects, NODE])
    assert code == 0, err
    assert time.monotonic() - started < 20
    (line,) = [n for n in doc["capacity"]["notPlaced"] if n.startswith(label)]
    assert f"{count} pods" in line and f"bound of {MAX_WORKLOAD_PODS} pods a workload" in line, line


def test_the_bound_on_all_workloads_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pod_counts, "MAX_WORKLOAD_PODS", 10)
    monkeypatch.setattr(pod_counts, "MAX_TOTAL_PODS", 25)
    many = [deployment(replicas=10) for _ in range(3)]
    for i, d in enumerate(many):
        d["metadata"]["name"] = f"d{i}"
    code, doc, err = report([*many, NODE])
    assert code == 0, err
    assert doc["capacity"]["notPlaced"] == [
        "Deployment/ml/d2: 10 pods: the bound of 25 pods in all is reached (20 placed before; docs/capacity.md): "
        "not placed"
    ]
    assert [w["capacity"] and w["capacity"]["podCount"] for w in doc["workloads"]] == [10, 10, None]


def test_simulate_refuses_a_workload_above_the_pod_bound_naming_it() -> None:
    workload = deployment({"resourceClaims": [{"name": "g", "resourceClaimTemplateName": "t"}]}, replicas=10**7)
    workload["spec"]["template"]["spec"]["containers"][0]["resources"] = {"claims": [{"name": "g"}]}
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "ml"},
        "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}}},
    }
    started = time.monotonic()
    code, _, err = run([template, workload, NODE], "simulate")
    assert time.monotonic() - started < 20
    assert code == 2, err
    assert f"Deployment ml/d: not simulated: 10000000 pods, above the bound of {MAX_WORKLOAD_PODS}" in err, err


def _isvc() -> dict[str, Any]:
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "isvc", "namespace": "ml"},
        "spec": {"predictor": ["x"]},
    }


def _no_metadata() -> dict[str, Any]:
    return {**deployment(), "metadata": None}


def _spec_list() -> dict[str, Any]:
    return {**deployment(), "spec": []}


def _ray_groups_object() -> dict[str, Any]:
    serve = _docs("ray.yaml")[0]
    serve["spec"]["rayClusterConfig"]["workerGroupSpecs"] = {"a": 1}
    return serve


@pytest.mark.parametrize(
    ("workload", "kind", "field", "rule"),
    [
        (_isvc(), "InferenceService", "spec.predictor", "must be an object"),
        (_no_metadata(), "Deployment", "metadata", "must be an object with a name"),
        (_spec_list(), "Deployment", "spec", "must be an object"),
        (_ray_groups_object(), "RayService", "spec.rayClusterConfig.workerGroupSpecs", "must be a list"),
        (deployment(replicas="five"), "Deployment", "spec.replicas", "must be a non-negative integer"),
        (deployment(replicas=-1), "Deployment", "spec.replicas", "must be a non-negative integer"),
        (deployment(replicas=True), "Deployment", "spec.replicas", "must be a non-negative integer"),
        (deployment(replicas=1e9), "Deployment", "spec.replicas", "must be a non-negative integer"),
        (_train_job_nodes("x")[1], "TrainJob", "spec.trainer.numNodes", "must be a non-negative integer"),
        (deployment(), "Deployment", "spec.template.spec", "must be an object"),
    ],
    ids=[
        "predictor-list",
        "metadata-null",
        "spec-list",
        "ray-groups-object",
        "five",
        "minus-one",
        "true",
        "float",
        "train-job-nodes",
        "pod-spec-list",
    ],
)
def test_a_malformed_workload_is_a_row_with_a_finding_naming_the_field(
    workload: dict[str, Any], kind: str, field: str, rule: str
) -> None:
    if field == "spec.template.spec":  # the plan says it; the report does not say it again
        workload["spec"]["template"]["spec"] = [1]
    code, doc, err = report([workload, NODE])
    assert code == 0, err
    (row,) = doc["workloads"]
    assert row["kind"] == kind and row["path"] == "blocked"
    (found,) = [f for f in row["findings"] if f["path"] == field]
    assert found["outcome"] == "unsupported" and rule in found["reason"], found
    code, text, _ = run([workload, NODE], "report", "--kubernetes-version", "1.36")
    assert "converts cleanly" not in text


def test_a_resource_quota_whose_hard_is_not_an_object_is_refused_naming_it() -> None:
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "ml"}}
    code, _, err = report([{**quota, "spec": {"hard": ["x"]}}, deployment(), NODE])
    assert code == 1
    assert "ResourceQuota ml/q: spec.hard: must be an object" in err and "Traceback" not in err


def _claims_only(**fields: Any) -> dict[str, Any]:
    workload = deployment({"resourceClaims": [{"name": "g", "resourceClaimTemplateName": "t"}]})
    workload["spec"]["template"]["spec"]["containers"][0]["resources"] = {"claims": [{"name": "g"}]}
    workload["spec"].update(fields)
    return workload


@pytest.mark.parametrize(
    ("workload", "field"),
    [
        ({**deployment(), "spec": [1]}, "spec: must be an object"),
        (_claims_only(template=[1]), "spec.template: must be an object"),
        (_claims_only(replicas="five"), "spec.replicas: must be a non-negative integer"),
    ],
    ids=["spec-list", "template-list", "replicas-five"],
)
def test_simulate_refuses_a_workload_it_cannot_read_naming_the_field(workload: dict[str, Any], field: str) -> None:
    code, _, err = run([workload, NODE], "simulate")
    assert code == 1 and "Traceback" not in err
    assert f"Deployment ml/d (-#1): {field}" in err, err


def test_a_selector_over_the_api_limit_is_unsupported_in_convert_and_report_alike() -> None:
    values = [f"NVIDIA-H100-80GB-HBM3-V{i:05d}" for i in range(30)]
    term = {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": values}]}
    workload = deployment(
        {
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
            }
        }
    )
    code, out, err = run([workload], "convert")
    assert code == 0 and "CELSelectorExpressionMaxLength" in err and "unsupported" in err
    assert [d["kind"] for d in yaml.safe_load_all(out) if d] == ["Deployment"]  # unchanged, no template
    assert "resourceClaims" not in out
    code, doc, _ = report([workload, NODE])
    (found,) = [f for w in doc["workloads"] for f in w["findings"] if f.get("code") == "over-api-limit"]
    assert found["outcome"] == "unsupported" and "CELSelectorExpressionMaxLength" in found["reason"]
