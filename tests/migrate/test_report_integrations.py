"""``dra-migrate report``: the risks of the software around a workload (Kueue, pod-resources
readers, KubeRay, KServe), which the translation alone cannot see."""

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


def _risks(tmp_path: Path, obj: dict[str, Any]) -> dict[str, list[dict[str, str]]]:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump(obj))
    out, err = io.StringIO(), io.StringIO()
    assert main(["report", "-f", str(path), "-o", "json", "--no-capacity"], stdout=out, stderr=err) == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    risks: dict[str, list[dict[str, str]]] = {}
    for w in doc["workloads"]:
        for r in w["risks"]:
            risks.setdefault(r["code"], []).append(r)
    return risks


def _job(labels: dict[str, str]) -> dict[str, Any]:
    pod = make_pod([make_container("c", gpu(2))], name=None)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "team-a", "labels": labels},
        "spec": {"template": {"metadata": {}, "spec": {**pod["spec"], "restartPolicy": "Never"}}},
    }


def test_kueue_managed_workloads_say_what_kueue_must_count(tmp_path: Path) -> None:
    (risk,) = _risks(tmp_path, _job({"kueue.x-k8s.io/queue-name": "gpus"}))["kueue-quota"]
    assert "deviceClassMappings" in risk["detail"] and "nvidia-gpu.dra-bridge.io" in risk["detail"]
    assert "LocalQueue gpus" in risk["detail"]
    assert "kueue-quota" not in _risks(tmp_path, _job({}))


def test_readers_of_the_pod_resources_socket_are_named_even_without_a_gpu(tmp_path: Path) -> None:
    exporter: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "dcgm-exporter", "namespace": "gpu-operator"},
        "spec": {
            "selector": {"matchLabels": {"app": "dcgm"}},
            "template": {
                "metadata": {"labels": {"app": "dcgm"}},
                "spec": {
                    "containers": [{"name": "exporter", "image": "dcgm-exporter"}],
                    "volumes": [{"name": "pr", "hostPath": {"path": "/var/lib/kubelet/pod-resources/"}}],
                },
            },
        },
    }
    (risk,) = _risks(tmp_path, exporter)["pod-resources-reader"]
    assert risk["path"] == "spec.template.spec.volumes[0]" and "attribution" in risk["detail"]
    exporter["metadata"]["labels"] = {"app.kubernetes.io/name": "dra-bridge"}  # our own agent reads it for itself
    assert "pod-resources-reader" not in _risks(tmp_path, exporter)


def _ray(params: dict[str, str]) -> dict[str, Any]:
    template = {
        "spec": {"containers": [{"name": "ray", "image": "ray", "resources": {"limits": {"nvidia.com/gpu": 2}}}]}
    }
    head = {"spec": {"containers": [{"name": "ray", "image": "ray"}]}}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "ray", "namespace": "team-a"},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": head},
            "workerGroupSpecs": [{"groupName": "gpu", "rayStartParams": params, "template": template}],
        },
    }


def test_ray_groups_whose_gpu_count_kuberay_derives_from_the_limit(tmp_path: Path) -> None:
    (risk,) = _risks(tmp_path, _ray({}))["ray-num-gpus"]
    assert risk["path"] == "spec.workerGroupSpecs[0].rayStartParams"
    assert '--include-custom-resources pins num-gpus: "2"' in risk["detail"]
    assert "ray-num-gpus" not in _risks(tmp_path, _ray({"num-gpus": "2"}))


def test_kserve_specs_with_gpus_in_requests_only_say_the_pods_are_refused(tmp_path: Path) -> None:
    isvc = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "llm", "namespace": "team-a"},
        "spec": {
            "predictor": {
                "model": {
                    "modelFormat": {"name": "huggingface"},
                    "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"cpu": "4"}},
                }
            }
        },
    }
    (risk,) = _risks(tmp_path, isvc)["kserve-requests-only"]
    assert risk["path"].endswith("resources.requests[nvidia.com/gpu]") and "limits" in risk["detail"]
