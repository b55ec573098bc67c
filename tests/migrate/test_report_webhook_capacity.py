"""The capacity check places the pods the webhook will convert: a custom resource left for the
webhook (RayCluster, RayService, LeaderWorkerSet, JobSet, PyTorchJob, InferenceService) is
planned as the webhook plans each of its pods, and those pods are placed on the DRA side too,
never left out of the totals as not converted."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.migrate.test_report_pod_counts import DATA, capacity, nodes, report


@pytest.mark.parametrize("name", ["ray", "lws", "training", "kserve"])
def test_pods_the_webhook_converts_are_placed_on_the_dra_side(tmp_path: Path, name: str) -> None:
    doc = report("-f", str(DATA / f"{name}.yaml"), "-f", nodes(tmp_path, 2))
    webhook = [w for w in doc["workloads"] if (w["path"], w["via"]) == ("needs-conversion", "webhook")]
    assert webhook
    for w in webhook:
        cap = w["capacity"]
        assert cap["code"] != "not-converted" and cap["fits"] is not None, (w["name"], cap)
        assert cap["podsFit"] == cap["legacyPodsFit"], (w["name"], cap)  # whole GPUs: as many fit either way
    assert doc["capacity"]["totals"]["notConverted"] == 0


def test_a_leader_worker_set_left_for_the_webhook_does_not_fit_on_dra_either(tmp_path: Path) -> None:
    cap = capacity(report("-f", str(DATA / "lws.yaml"), "-f", nodes(tmp_path, 2)))["vllm"]
    assert (cap["podCount"], cap["podsFit"], cap["fits"]) == (12, 2, False)
    assert cap["pods"][0]["devices"], cap["pods"][0]  # its claims got devices


def test_a_train_jobs_trainer_pods_are_placed_as_the_webhook_converts_them(tmp_path: Path) -> None:
    doc = report("-f", str(DATA / "trainjob.yaml"), "-f", nodes(tmp_path, 2))
    tuned = next(w for w in doc["workloads"] if w["name"] == "fine-tune")
    assert (tuned["path"], tuned["via"]) == ("needs-conversion", "webhook")
    cap = tuned["capacity"]
    assert (cap["podCount"], cap["podsFit"], cap["legacyPodsFit"], cap["fits"]) == (4, 2, 2, False)
