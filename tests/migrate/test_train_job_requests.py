"""A Kubeflow Trainer v2 TrainJob's GPUs (``spec.trainer.resourcesPerNode``) are a legacy device
request in every command, with or without its runtime in the input: convert names them (left
for the webhook, which converts the trainer pods), the report does not call it nothing-to-do and
``--fail-on legacy-request`` counts it, simulate refuses it by name."""

from __future__ import annotations

import io
import json
from typing import Any

import yaml

from dra_bridge.migrate.cli import main
from tests.migrate.test_simulate_cluster import _cluster

GPU = "nvidia.com/gpu"
WHERE = f"spec.trainer.resourcesPerNode.limits[{GPU}]"
TRAIN_JOB: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "llama-ft", "namespace": "ml"},
    "spec": {
        "runtimeRef": {"name": "torch-distributed"},  # not in the input
        "trainer": {"numNodes": 4, "resourcesPerNode": {"limits": {GPU: 2}}},
    },
}


def _command(args: list[str], objects: list[dict[str, Any]]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([*args, "-f", "-"], stdin=io.StringIO(yaml.safe_dump_all(objects)), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_convert_names_the_train_jobs_gpu_request_and_leaves_it_for_the_webhook() -> None:
    code, _, err = _command(["convert", "--include-custom-resources", "--fail-on", "left-for-webhook"], [TRAIN_JOB])
    assert code == 3, err
    (line,) = [line for line in err.splitlines() if WHERE in line]
    assert "left-for-webhook" in line and f"{GPU}: 2" in line


def test_the_report_counts_the_train_jobs_request() -> None:
    code, out, err = _command(["report", "-o", "json", "--no-capacity"], [TRAIN_JOB])
    assert code == 0, err
    (w,) = json.loads(out)["workloads"]
    assert (w["outcome"], w["path"], w["via"]) == ("left-for-webhook", "needs-conversion", "webhook")
    assert [f["path"] for f in w["findings"]] == [WHERE]
    code, _, err = _command(["report", "--no-capacity", "--fail-on", "legacy-request"], [TRAIN_JOB])
    assert code == 3 and "legacy-request" in err


def test_simulate_refuses_the_train_job_by_name() -> None:
    code, out, err = _command(["simulate", "-o", "json"], [*_cluster(), TRAIN_JOB])
    assert code == 2
    assert json.loads(out)["refused"][0]["object"] == "TrainJob ml/llama-ft"
    assert f"TrainJob ml/llama-ft: not simulated: {WHERE}" in err
