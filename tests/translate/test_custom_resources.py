"""GPU requests inside custom resources are never unseen: KServe InferenceServices (pod specs
without the template wrapper) and Argo workflows (containers without any pod spec)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_bridge.migrate.cli import main
from dra_bridge.migrate.errors import EXIT_FINDINGS
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.plan.custom_resources import stray_gpu_requests
from dra_bridge.translate.plan.workloads import convert_object

DATA = Path(__file__).parents[1] / "data" / "custom-resources"
KSERVE = list(yaml.safe_load_all((DATA / "kserve-inferenceservice.yaml").read_text()))
ARGO = list(yaml.safe_load_all((DATA / "argo-workflows.yaml").read_text()))


def _legacy_left(catalog: Catalog, obj: Any) -> list[str]:
    """Paths of every legacy GPU request still in ``obj``'s resources blocks (any depth)."""
    return [f.path for f in stray_gpu_requests(obj, catalog, [])]


def _paths(findings: Any, outcome: str) -> set[str]:
    return {f.path for f in findings if f.outcome == outcome}


def test_inference_services_are_left_for_the_webhook_by_default(catalog: Catalog) -> None:
    llama, triton = (convert_object(obj, catalog) for obj in KSERVE)
    assert (llama.obj, triton.obj) == (KSERVE[0], KSERVE[1]) and llama.templates == triton.templates == ()
    assert _paths(llama.findings, "left-for-webhook") == {
        "spec.predictor.model.resources.limits[nvidia.com/gpu]",
        "spec.predictor.workerSpec.containers[0].resources.limits[nvidia.com/gpu]",
    }
    assert _paths(triton.findings, "left-for-webhook") == {  # the GFD label becomes a selector too
        "spec.predictor.containers[0].resources.limits[nvidia.com/gpu]",
        "spec.predictor.nodeSelector[nvidia.com/gpu.product]",
    }
    assert all(f.remedy == "include-custom-resources" for f in llama.findings + triton.findings)


def test_inference_services_convert_on_request_and_keep_the_kserve_shape(catalog: Catalog) -> None:
    llama = convert_object(KSERVE[0], catalog, include_custom_resources=True)
    predictor = llama.obj["spec"]["predictor"]
    assert _legacy_left(catalog, llama.obj) == [] and len(llama.templates) == 2  # model server, workers
    assert set(predictor["model"]) == set(KSERVE[0]["spec"]["predictor"]["model"]), "no name added, nothing lost"
    assert "containers" not in predictor, "the model server stays in model"
    claims = {c["name"] for c in predictor["resourceClaims"]}
    assert {c["name"] for c in predictor["model"]["resources"]["claims"]} <= claims
    assert predictor["model"]["resources"]["limits"] == {"cpu": "8", "memory": "64Gi"}
    assert "dra-bridge.io/conversion" in predictor["annotations"], "the record goes where KServe takes pod annotations"
    assert predictor["annotations"]["prometheus.io/scrape"] == "true" and predictor["minReplicas"] == 1
    worker = predictor["workerSpec"]
    assert worker["pipelineParallelSize"] == 2 and worker["resourceClaims"]
    assert worker["containers"][0]["resources"]["claims"]
    assert _paths(llama.findings, "partial") >= {"spec.predictor", "spec.predictor.workerSpec"}
    triton = convert_object(KSERVE[1], catalog, include_custom_resources=True)
    assert triton.obj["spec"]["transformer"] == KSERVE[1]["spec"]["transformer"]
    assert triton.obj["spec"]["predictor"]["containers"][0]["resources"]["claims"] and len(triton.templates) == 1
    assert "nodeSelector" not in triton.obj["spec"]["predictor"], "the GFD label became a device selector"
    for done in (llama, triton):  # converting again changes nothing
        again = convert_object(done.obj, catalog, include_custom_resources=True)
        assert again.obj == done.obj and again.templates == ()


@pytest.mark.parametrize("include", [False, True], ids=["default", "include-custom-resources"])
def test_argo_templates_get_a_finding_not_a_conversion(catalog: Catalog, include: bool) -> None:
    results = [convert_object(obj, catalog, include_custom_resources=include) for obj in ARGO]
    assert [r.obj for r in results] == ARGO and all(r.templates == () for r in results)
    workflow, template, cron = (_paths(r.findings, "left-for-webhook") for r in results)
    assert workflow == {"spec.templates[2].container.resources.limits[nvidia.com/gpu]"}
    assert template == {
        "spec.templates[0].script.resources.limits[nvidia.com/gpu]",
        "spec.templates[1].containerSet.containers[0].resources.limits[nvidia.com/mig-1g.10gb]",
    }
    assert cron == {
        "spec.workflowSpec.templates[0].initContainers[0].resources.limits[nvidia.com/gpu]",
        "spec.workflowSpec.templates[0].container.resources.limits[nvidia.com/gpu]",
    }
    for r in results:
        assert {f.outcome for f in r.findings} == {"left-for-webhook"}
        assert all("resourceClaims" in f.reason and f.remedy is None for f in r.findings)


def test_any_custom_resource_asking_for_a_gpu_outside_a_pod_spec_gets_a_finding(catalog: Catalog) -> None:
    obj = {
        "apiVersion": "example.com/v1",
        "kind": "Trainer",
        "metadata": {"name": "t", "namespace": "n"},
        "spec": {"worker": {"image": "x", "resources": {"requests": {"nvidia.com/gpu": 1}}}},
    }
    result = convert_object(obj, catalog, include_custom_resources=True)
    assert result.obj == obj and _paths(result.findings, "left-for-webhook") == {
        "spec.worker.resources.requests[nvidia.com/gpu]"
    }


@pytest.mark.parametrize(
    "predictor",
    [
        {"containers": 5, "model": {"resources": {"limits": {"nvidia.com/gpu": 1}}}},
        {"containers": "c", "model": "m"},
        {"model": {"resources": {"limits": {"nvidia.com/gpu": "x"}}}},
        {"workerSpec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}, "annotations": 3},
        [],
        "p",
    ],
    ids=["containers-not-a-list", "strings", "bad-count", "unnamed-worker-and-odd-annotations", "list", "string"],
)
def test_odd_inference_services_give_findings_not_tracebacks(catalog: Catalog, predictor: Any) -> None:
    obj = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "odd", "namespace": "n"},
        "spec": {"predictor": predictor},
    }
    for include in (False, True):
        result = convert_object(obj, catalog, include_custom_resources=include)
        assert result.templates == () or include
        assert all(f.path.startswith("spec.predictor") for f in result.findings)


@pytest.mark.parametrize("name", ["kserve-inferenceservice.yaml", "argo-workflows.yaml"], ids=["kserve", "argo"])
def test_fail_on_left_for_webhook_catches_them(name: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["convert", "-f", str(DATA / name), "--fail-on", "left-for-webhook"],
        stdin=io.StringIO(),
        stdout=out,
        stderr=err,
    )
    assert code == EXIT_FINDINGS and "left-for-webhook" in err.getvalue()
