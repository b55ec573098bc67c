"""``dra-migrate report``: one verdict per workload (its path), with outcome agreeing, each row
naming where it came from, duplicates warned, quantities compared as Kubernetes compares them."""

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
from dra_bridge.translate.plan.device_counts import parse_count

DATA = Path(__file__).resolve().parents[1] / "data"
SCHEMA = json.loads(files("dra_bridge.translate").joinpath("data/report-v2.schema.json").read_text())


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def pod(name: str, resources: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": resources}], **spec},
    }


def report(tmp: Path, *docs: Any, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    path = tmp / "in.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    code, out, err = run("report", "-f", str(path), "-o", "json", *extra)
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    return doc


def only(doc: dict[str, Any]) -> dict[str, Any]:
    assert len(doc["workloads"]) == 1
    w: dict[str, Any] = doc["workloads"][0]
    return w


@pytest.mark.parametrize(("text", "count"), [("2000m", 2), ("2", 2), ("2.0", 2), ("1k", 1000), ("0", 0), (3, 3)])
def test_device_counts_are_kubernetes_quantities(text: object, count: int) -> None:
    assert parse_count(text) == count


def test_equal_quantities_are_equal(tmp_path: Path) -> None:
    w = only(
        report(tmp_path, pod("milli", {"requests": {"nvidia.com/gpu": "2000m"}, "limits": {"nvidia.com/gpu": "2"}}))
    )
    assert w["path"] == "needs-conversion" and w["outcome"] == "translated"
    assert w["legacy"] == [{"container": "c", "resource": "nvidia.com/gpu", "count": 2, "kind": "gpu"}]


def test_finding_paths_are_complete(tmp_path: Path) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "volc", "namespace": "ml"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {
                    "schedulerName": "volcano",
                    "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
                },
            },
        },
    }
    w = only(report(tmp_path, deployment))
    paths = [f["path"] for f in w["findings"]]
    assert "spec.template" in paths and not any(p.endswith(".") and p != "." for p in paths), paths
