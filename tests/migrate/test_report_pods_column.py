"""The report's PODS column, the headline's pod total and ``totals.pods`` say the pods each
workload creates, by the capacity check's rule (:func:`translate.capacity.pod_counts.pod_counts`),
with or without ``--no-capacity`` and nodes; ``?`` (JSON null) where the count is unknown."""

from __future__ import annotations

import io
import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from dra_bridge.migrate.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "pod-counts"
SCHEMA = json.loads(files("dra_bridge.translate").joinpath("data/report-v2.schema.json").read_text())
GPU = {"limits": {"nvidia.com/gpu": 1}}


def _deployment(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ml"},
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "c", "image": "i", "resources": GPU}]}},
        },
    }


def _node() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n0", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
        "status": {"allocatable": {"nvidia.com/gpu": "64"}},
    }


def _run(args: list[str], objects: list[dict[str, Any]]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["report", "-f", "-", *args, "--kubernetes-version", "1.36"]
    code = main(argv, stdin=io.StringIO(yaml.safe_dump_all(objects)), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _table(args: list[str], objects: list[dict[str, Any]]) -> tuple[dict[str, str], str]:
    """The PODS cell per workload name, and the headline."""
    code, out, err = _run(args, objects)
    assert code == 0, err
    lines = out.splitlines()
    at = lines[0].index("PODS")
    cells = {
        line.split()[0].rsplit("/", 1)[-1]: line[at:].split()[0] for line in lines[1:] if line and "/" in line[:at]
    }
    headline = next(line for line in lines if " workloads, " in line)
    return cells, headline


def _json(args: list[str], objects: list[dict[str, Any]]) -> dict[str, Any]:
    code, out, err = _run([*args, "-o", "json"], objects)
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    return doc


@pytest.mark.parametrize("args", [[], ["--no-capacity"]], ids=["capacity", "no-capacity"])
@pytest.mark.parametrize("nodes", [True, False], ids=["nodes", "no-nodes"])
def test_a_deployment_of_three_replicas_shows_three_pods(args: list[str], nodes: bool) -> None:
    objects = [_deployment(3), *([_node()] if nodes else [])]
    cells, headline = _table(args, objects)
    assert cells == {"web": "3"}
    assert headline.startswith("1 workloads, 3 pods:"), headline
    doc = _json(args, objects)
    assert doc["totals"]["pods"] == 3
    assert doc["totals"]["podsUnknown"] == 0
    assert doc["workloads"][0]["podsCreated"] == 3


def _objects(*names: str) -> list[dict[str, Any]]:
    return [d for n in names for d in yaml.safe_load_all((DATA / n).read_text()) if d]


def test_custom_resources_show_the_pods_they_create() -> None:
    objects = _objects("ray.yaml", "lws.yaml", "training.yaml", "kserve.yaml")
    cells, headline = _table(["--no-capacity"], objects)
    expected = {
        "serve": "9",  # the head and workers 1 + 2 + 5
        "auto": "3",  # the head and minReplicas 2 (autoscaling)
        "vllm": "12",  # 3 groups of 4
        "ddp": "4",  # master 1, workers 3
        "sweep": "6",  # 2 Jobs of parallelism 3
        "bounded": "2",  # parallelism 4 bounded by completions 2
        "llm": "3",  # minReplicas 3
        "idle": "1",  # scales to zero: 1 while serving
    }
    assert cells == expected
    total = sum(int(n) for n in expected.values())
    assert headline.startswith(f"{len(expected)} workloads, {total} pods:"), headline
    doc = _json(["--no-capacity"], objects)
    assert doc["totals"]["pods"] == total
    assert {w["name"]: w["podsCreated"] for w in doc["workloads"]} == {k: int(v) for k, v in expected.items()}


def test_pods_column_agrees_with_capacity_pod_count_where_every_pod_asks_for_a_device() -> None:
    objects = [*_objects("lws.yaml", "training.yaml"), _node()]
    doc = _json([], objects)
    for w in doc["workloads"]:
        assert w["podsCreated"] == w["capacity"]["podCount"], w["name"]


def test_a_trainjob_whose_count_is_unknown_shows_a_question_mark() -> None:
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "guess", "namespace": "ml"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"resourcesPerNode": GPU}},
    }
    objects = [job, *_objects("trainjob.yaml"), _deployment(2)]
    cells, headline = _table([], objects)
    assert cells["guess"] == "?"  # numNodes from a runtime not in the input
    assert cells["fine-tune"] == "4" and cells["elsewhere"] == "3"  # numNodes given
    assert cells["torch-local"] == "0"  # a runtime creates pods only for its TrainJobs
    assert headline.startswith("5 workloads, 9 pods (and 1 workloads whose pods are not known):"), headline
    doc = _json([], objects)
    assert {w["name"]: w["podsCreated"] for w in doc["workloads"]}["guess"] is None
    assert doc["totals"]["pods"] == 9 and doc["totals"]["podsUnknown"] == 1
    code, out, _ = _run(["-o", "markdown"], objects)
    assert code == 0
    row = next(line for line in out.splitlines() if "TrainJob/ml/guess" in line)
    assert row.split(" | ")[2] == "?", row
