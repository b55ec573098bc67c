"""The capacity check counts the pods each workload really creates (docs/capacity.md, "Pod
counts"): replicas of every pod template, Ray worker groups, LWS groups, training jobs,
JobSets, KServe components; pods asking for no device are not counted; no nodes, no check."""

from __future__ import annotations

import io
import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from dra_bridge.migrate.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "pod-counts"
SCHEMA = json.loads(files("dra_bridge.translate").joinpath("data/report-v2.schema.json").read_text())


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["report", *argv, "--kubernetes-version", "1.36"], stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def nodes(tmp: Path, count: int, gpus: int = 8) -> str:
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"n{i}", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
            "status": {"allocatable": {"nvidia.com/gpu": str(gpus)}},
        }
        for i in range(count)
    ]
    path = tmp / "nodes.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def report(*argv: str) -> dict[str, Any]:
    code, out, err = run(*argv, "-o", "json")
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    return doc


def capacity(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w["name"]: w["capacity"] for w in doc["workloads"]}


def test_ray_counts_every_worker_replica_and_not_the_gpu_less_head(tmp_path: Path) -> None:
    cap = capacity(report("-f", str(DATA / "ray.yaml"), "-f", nodes(tmp_path, 2)))
    serve = cap["serve"]
    assert serve["podCount"] == 8, serve  # workers 1 + 2 + 5; the head asks for no GPU
    assert len(serve["pods"]) == 8 and serve["legacyPodsFit"] == 8
    assert [(s["role"], s["pods"]) for s in serve["podSources"]] == [("head", 1), ("one", 1), ("two", 2), ("five", 5)]
    assert [s["devices"] for s in serve["podSources"]] == [False, True, True, True]
    assert serve["podSources"][2]["from"] == "spec.rayClusterConfig.workerGroupSpecs[1].replicas 2"
    assert [p["name"] for p in serve["pods"]][:2] == ["serve-one-0", "serve-two-0"]
    auto = cap["auto"]
    assert auto["podCount"] == 2  # minReplicas 2 under the in-tree autoscaler, not replicas 4
    assert any("enableInTreeAutoscaling" in n and "minReplicas" in n for n in auto["podNotes"])


def test_lws_is_replicas_times_size(tmp_path: Path) -> None:
    cap = capacity(report("-f", str(DATA / "lws.yaml"), "-f", nodes(tmp_path, 2)))["vllm"]
    assert cap["podCount"] == 12
    assert [(s["role"], s["pods"]) for s in cap["podSources"]] == [("leader", 3), ("worker", 9)]
    assert cap["legacyPodsFit"] == 2  # two nodes of 8 GPUs hold 2 of the 12 pods of 8 GPUs


def test_training_jobs_jobsets_and_bounded_jobs(tmp_path: Path) -> None:
    cap = capacity(report("-f", str(DATA / "training.yaml"), "-f", nodes(tmp_path, 4)))
    assert cap["ddp"]["podCount"] == 4
    assert [(s["role"], s["pods"]) for s in cap["ddp"]["podSources"]] == [("master", 1), ("worker", 3)]
    assert cap["sweep"]["podCount"] == 6
    assert cap["sweep"]["podSources"][0]["from"] == (
        "spec.replicatedJobs[0].replicas 2 x spec.replicatedJobs[0].template.spec.parallelism 3"
    )
    assert cap["bounded"]["podCount"] == 2 and len(cap["bounded"]["pods"]) == 2
    assert "completions 2" in cap["bounded"]["podSources"][0]["from"]


def test_kserve_counts_min_replicas_and_says_scale_to_zero(tmp_path: Path) -> None:
    cap = capacity(report("-f", str(DATA / "kserve.yaml"), "-f", nodes(tmp_path, 1)))
    assert cap["llm"]["podCount"] == 3 and cap["llm"]["podNotes"] == []
    assert cap["idle"]["podCount"] == 1
    assert any("scales to zero" in n for n in cap["idle"]["podNotes"])


def test_fit_column_counts_real_pods(tmp_path: Path) -> None:
    code, out, err = run("-f", str(DATA / "lws.yaml"), "-f", nodes(tmp_path, 2), "-o", "wide")
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith("LeaderWorkerSet/ml/vllm"))
    assert "2/12" in row.split(), row


def test_no_nodes_skips_the_capacity_section_in_one_line() -> None:
    doc = report("-f", str(DATA / "lws.yaml"))
    assert doc["capacity"] == {"skipped": "no nodes in the input"}
    assert all(w["capacity"] is None for w in doc["workloads"])
    code, out, _ = run("-f", str(DATA / "lws.yaml"))
    assert code == 0
    lines = [line for line in out.splitlines() if "capacity" in line]
    assert lines == ["capacity: skipped: no nodes in the input"], out
    _, md, _ = run("-f", str(DATA / "lws.yaml"), "-o", "markdown")
    assert "capacity: skipped: no nodes in the input" in md
    _, html, _ = run("-f", str(DATA / "lws.yaml"), "-o", "html")
    assert '<dd data-total="capacity">skipped: no nodes in the input</dd>' in html


def test_train_job_counts_num_nodes_and_never_guesses_gpus_per_pod(tmp_path: Path) -> None:
    doc = report("-f", str(DATA / "trainjob.yaml"), "-f", nodes(tmp_path, 2))
    cap = capacity(doc)
    tuned = cap["fine-tune"]  # 4 nodes; resourcesPerNode's 8 GPUs replace the runtime's 2
    assert tuned["podCount"] == 4 and tuned["legacyPodsFit"] == 2
    assert tuned["podSources"][0]["from"] == "spec.trainer.numNodes 4"
    assert {p["legacyCode"] for p in tuned["pods"][2:]} == {"not-enough-devices"}
    assert cap["elsewhere"] is None and cap["torch-local"] is None  # a runtime creates no pods itself
    assert doc["capacity"]["notPlaced"] == [
        "TrainJob/ml/elsewhere: GPUs per pod unknown: ClusterTrainingRuntime torch-distributed is not in the "
        "input; 3 pods (spec.trainer.numNodes 3)"
    ]
