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
from dra_bridge.migrate.report_text import render_text
from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.plan.device_counts import parse_count
from dra_bridge.translate.report import Settings, build_report
from dra_bridge.translate.report.paths import PATH_OUTCOMES, PATHS

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


KSERVE_REQUESTS_ONLY = {
    "apiVersion": "serving.kserve.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "llm", "namespace": "ml"},
    "spec": {
        "predictor": {
            "model": {"modelFormat": {"name": "huggingface"}, "resources": {"requests": {"nvidia.com/gpu": 1}}}
        }
    },
}


def test_an_unsupported_request_is_blocked_never_nothing_to_do(tmp_path: Path) -> None:
    w = only(report(tmp_path, KSERVE_REQUESTS_ONLY))
    assert (w["outcome"], w["path"]) == ("unsupported", "blocked")
    assert "requests without limits" in w["pathReason"] and "no legacy device request" not in w["pathReason"]


def test_a_request_the_plan_refuses_as_invalid_says_so(tmp_path: Path) -> None:
    w = only(report(tmp_path, pod("bad", {"limits": {"nvidia.com/gpu": "abc"}})))
    assert w["path"] == "blocked" and "invalid quantity" in w["pathReason"]


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


def test_a_converted_pod_is_translated_not_ignored(tmp_path: Path) -> None:
    w = only(report(tmp_path, pod("two", {"limits": {"example.com/foo": 1, "nvidia.com/gpu": 1}})))
    assert {f["outcome"] for f in w["findings"]} == {"ignored", "translated"}
    assert (w["outcome"], w["path"], w["pathReason"]) == ("translated", "needs-conversion", "converts cleanly")


def test_every_path_has_its_outcomes_and_the_examples_agree_with_them() -> None:
    assert set(PATH_OUTCOMES) == set(PATHS)
    code, out, err = run("report", "-f", str(DATA / "examples"), "-f", str(DATA / "report"), "-o", "json")
    assert code == 0, err
    for w in json.loads(out)["workloads"]:
        assert w["outcome"] in PATH_OUTCOMES[w["path"]], (w["name"], w["outcome"], w["path"])
        assert "category" not in w


def test_rows_name_their_file_and_position_and_duplicates_warn(tmp_path: Path) -> None:
    first = pod("same", {"limits": {"nvidia.com/gpu": 1}})
    other_namespace = {**first, "metadata": {"name": "same", "namespace": "other"}}
    doc = report(tmp_path, first, other_namespace, first)
    sources = [(w["namespace"], w["source"]) for w in doc["workloads"]]
    where = str(tmp_path / "in.yaml")
    assert sources == [("ml", f"{where}#1"), ("other", f"{where}#2"), ("ml", f"{where}#3")]
    assert doc["warnings"] == [f"Pod/ml/same given twice: {where}#1 and {where}#3"]
    code, out, _ = run("report", "-f", str(tmp_path / "in.yaml"))
    assert code == 0 and f"{where}#3" in out and f"warning: Pod/ml/same given twice: {where}#1 and {where}#3" in out


def test_the_headline_counts_by_path(tmp_path: Path) -> None:
    doc = report(tmp_path, KSERVE_REQUESTS_ONLY, pod("ok", {"limits": {"nvidia.com/gpu": 1}}))
    assert doc["totals"]["paths"] == {p: {"blocked": 1, "needs-conversion": 1}.get(p, 0) for p in PATHS}
    assert "categories" not in doc["totals"] and all("workloads" not in p for p in doc["nodePools"])
    _, out, _ = run("report", "-f", str(tmp_path / "in.yaml"), "-o", "markdown")
    assert "2 workloads (2 pods): 0 nothing-to-do, 0 kep-5004, 1 needs-conversion, 0 not-enrolled, 1 blocked" in out


def test_a_live_report_lists_the_gpu_workloads_and_counts_the_others() -> None:
    plain = pod("web", {"limits": {"cpu": "1"}})
    claimed = pod("dra", {"claims": [{"name": "gpu"}]}, resourceClaims=[{"name": "gpu"}])
    by_hand = pod("sneaky", {})
    by_hand["spec"]["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    objects = [("cluster", o) for o in (pod("gpu", {"limits": {"nvidia.com/gpu": 1}}), plain, claimed, by_hand)]
    live = build_report(objects, load_catalog(), Settings(live=True, list_all=False))
    assert [w.unit.name for w in live.workloads] == ["gpu", "dra", "sneaky"]
    assert live.totals()["notListed"] == 1 and live.totals()["workloads"] == 3
    assert "1 other workloads without a GPU request not listed (--all-workloads lists them)" in render_text(
        live, "table"
    )
    every = build_report(objects, load_catalog(), Settings(live=True, list_all=True))
    assert [w.unit.name for w in every.workloads] == ["gpu", "web", "dra", "sneaky"]
    assert every.totals()["notListed"] == 0 and every.as_json()["workloads"][1]["source"] == "cluster"
