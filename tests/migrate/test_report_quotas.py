"""``dra-migrate report`` and ResourceQuotas (docs/design.md D27): a quota that would not count a
converted pod is a plan rule (the workload is ``blocked``, as the webhook keeps its pods legacy),
and every quota on a legacy device resource is listed, also without workloads of its namespace."""

from __future__ import annotations

import io
import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from dra_bridge.migrate.cli import main
from tests.factories import gpu, make_container, make_pod

SCHEMA = json.loads(files("dra_bridge.translate").joinpath("data/report-v2.schema.json").read_text())
CLUSTER = str(Path(__file__).resolve().parents[1] / "data" / "report")
BRIDGE_KEY = "nvidia-gpu.dra-bridge.io.deviceclass.resource.k8s.io/devices"
VENDOR_KEY = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"


def _quota(namespace: str, hard: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpu", "namespace": namespace},
        "spec": {"hard": hard},
    }


def _report(tmp_path: Path, objects: list[dict[str, Any]], *extra: str) -> dict[str, Any]:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    out, err = io.StringIO(), io.StringIO()
    code = main(["report", "-f", str(path), "-o", "json", "--no-capacity", *extra], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    doc: dict[str, Any] = json.loads(out.getvalue())
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    return doc


def _pod() -> dict[str, Any]:
    return make_pod([make_container("c", gpu(1))], name="trainer", namespace="team-a")


def test_a_quota_on_our_class_only_blocks_the_workload_under_the_vendor_target(tmp_path: Path) -> None:
    doc = _report(tmp_path, [_pod(), _quota("team-a", {BRIDGE_KEY: "8"})], "--target", "vendor")
    (w,) = doc["workloads"]
    assert (w["path"], w["outcome"], w["templates"]) == ("blocked", "kept-legacy", [])
    assert any(f["path"] == "(quota)" and VENDOR_KEY in f["reason"] for f in w["findings"]), w["findings"]
    assert VENDOR_KEY in w["pathReason"]
    (w,) = _report(tmp_path, [_pod(), _quota("team-a", {BRIDGE_KEY: "8", VENDOR_KEY: "8"})], "--target", "vendor")[
        "workloads"
    ]
    assert w["path"] == "needs-conversion"


def test_a_quota_on_the_legacy_resource_only_blocks_the_workload_as_the_webhook_does(tmp_path: Path) -> None:
    doc = _report(tmp_path, [_pod(), _quota("team-a", {"requests.nvidia.com/gpu": "8"})])
    (w,) = doc["workloads"]
    assert (w["path"], w["outcome"]) == ("blocked", "kept-legacy")
    assert BRIDGE_KEY in w["pathReason"]
    assert all(r["code"] != "quota-stops-counting" for r in w["risks"])
    allowed = tmp_path / "policy.yaml"
    allowed.write_text("apiVersion: policy.dra-bridge.io/v1\ndefaults:\n  ignoreLegacyQuota: true\n")
    doc = _report(tmp_path, [_pod(), _quota("team-a", {"requests.nvidia.com/gpu": "8"})], "--policy", str(allowed))
    assert doc["workloads"][0]["path"] == "needs-conversion"


def test_every_quota_on_a_legacy_device_resource_is_listed_also_without_workloads() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["report", "-f", CLUSTER, "-o", "json", "--no-capacity"], stdout=out, stderr=err) == 0, err.getvalue()
    quotas = {q["namespace"]: q for q in json.loads(out.getvalue())["quotas"]}
    assert quotas["team-c"] == {
        "namespace": "team-c",
        "name": "gpus",
        "legacyKeys": ["requests.nvidia.com/gpu"],
        "classKeys": [],
        "missingKeys": [BRIDGE_KEY],
        "workloads": 0,
    }
    assert quotas["team-a"]["missingKeys"] == [] and quotas["team-a"]["workloads"] > 0
    text = io.StringIO()
    assert main(["report", "-f", CLUSTER, "--no-capacity"], stdout=text, stderr=io.StringIO()) == 0
    (line,) = [ln for ln in text.getvalue().splitlines() if "team-c" in ln]
    assert "ResourceQuota/team-c/gpus" in line and BRIDGE_KEY in line and "no workload" in line
