"""Hostile inputs to ``report`` and ``simulate``: wrong field types, huge pod counts, malformed
objects. Never a traceback, never a run that does not finish, never "converts cleanly" for a
field the report cannot read."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
import yaml

from dra_bridge.migrate.cli import main

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
