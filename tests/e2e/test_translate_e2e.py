"""translate's output through the real API server and scheduler.

- every DeviceClass of the catalog and every template generated from the examples is
  created for real (the API server validates the objects and compiles every CEL selector),
  in each served resource.k8s.io version;
- every converted workload passes a server-side dry-run create;
- the real scheduler runs generated selectors against devices that lack the attributes or
  carry other types (a CEL runtime error would abort the pod's scheduling) and binds the
  converted pod to the node whose devices match.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_bridge.kube.errors import AlreadyExists
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.plan.pod_plan import Options, plan_pod
from dra_bridge.translate.plan.workloads import convert_object
from tests.e2e.kubeapi import KubeClient, api_path, create_fake_node, wait_for_object

pytestmark = pytest.mark.e2e

EXAMPLES = sorted((Path(__file__).parents[1] / "data" / "examples").glob("*.yaml"))
V1 = "resource.k8s.io/v1"
PLURALS = {
    "Pod": "pods",
    "Deployment": "deployments",
    "StatefulSet": "statefulsets",
    "Job": "jobs",
    "ResourceClaimTemplate": "resourceclaimtemplates",
}


@pytest.fixture(scope="module")
def device_classes(catalog: Catalog, kube: KubeClient) -> Iterator[list[str]]:
    names = []
    for cls in catalog.device_classes(["1g.5gb", "1g.10gb", "3g.40gb"]):
        obj = {"apiVersion": V1, **cls}
        with contextlib.suppress(AlreadyExists):
            kube.create(api_path(V1, "deviceclasses"), obj)
        names.append(cls["metadata"]["name"])
    yield names
    for name in names:
        kube.delete(api_path(V1, "deviceclasses", name=name), ignore_missing=True)


@pytest.mark.server_version
@pytest.mark.parametrize("version", ["v1", "v1beta2", "v1beta1"])
def test_every_generated_template_is_accepted_by_the_api_server(
    catalog: Catalog, kube: KubeClient, namespace: str, device_classes: list[str], version: str
) -> None:
    api_version = f"resource.k8s.io/{version}"
    created = 0
    for path in EXAMPLES:
        for obj in yaml.safe_load_all(path.read_text()):
            if not obj:
                continue
            result = convert_object(obj, catalog, Options(api_version=api_version), include_custom_resources=True)
            for template in result.templates:
                template = {**template, "metadata": {**template["metadata"], "namespace": namespace}}
                try:
                    kube.create(api_path(api_version, "resourceclaimtemplates", namespace), template)
                    created += 1
                except AlreadyExists:
                    pass
                back = kube.get(
                    api_path(api_version, "resourceclaimtemplates", namespace, template["metadata"]["name"])
                )
                assert (
                    back["spec"]["spec"]["devices"]["requests"][0]["name"]
                    == template["spec"]["spec"]["devices"]["requests"][0]["name"]
                )
            if version == "v1" and obj["kind"] in PLURALS and obj["kind"] != "ResourceClaimTemplate":
                body = {**result.obj, "metadata": {**result.obj["metadata"], "namespace": namespace}}
                group = "v1" if obj["kind"] == "Pod" else obj["apiVersion"]
                kube.create(api_path(group, PLURALS[obj["kind"]], namespace), body, dry_run=True)
    assert created >= 8


def _device(
    name: str, attributes: dict[str, Any], memory: str | None = None, resource: str = "nvidia.com/gpu"
) -> dict[str, Any]:
    attrs = {"dra-bridge.io/resourceName": {"string": resource}}
    attrs.update({f"gpu.nvidia.com/{k}": v for k, v in attributes.items()})
    dev: dict[str, Any] = {"name": name, "attributes": attrs}
    if memory:
        dev["capacity"] = {"gpu.nvidia.com/memory": {"value": memory}}
    return dev


def _publish(kube: KubeClient, node: str, devices: list[dict[str, Any]]) -> None:
    kube.create(
        api_path(V1, "resourceslices"),
        {
            "apiVersion": V1,
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-dra-bridge.io"},
            "spec": {
                "driver": "dra-bridge.io",
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        },
    )


@pytest.fixture
def gpu_nodes(kube: KubeClient) -> Iterator[dict[str, str]]:
    tag = uuid.uuid4().hex[:6]
    nodes = {"a100": f"a100-{tag}", "bare": f"bare-{tag}", "odd": f"odd-{tag}"}
    for node in nodes.values():
        create_fake_node(kube, node)
    a100 = {
        "productName": {"string": "NVIDIA A100-SXM4-40GB"},
        "type": {"string": "gpu"},
        "architecture": {"string": "Ampere"},
        "cudaComputeCapability": {"version": "8.0.0"},
        "driverVersion": {"version": "550.107.2"},
    }
    _publish(kube, nodes["a100"], [_device(f"gpu-{i}", a100, "40960Mi") for i in range(2)])
    _publish(kube, nodes["bare"], [_device(f"gpu-{i}", {}) for i in range(2)])
    odd = {
        "productName": {"int": 7},
        "type": {"int": 1},
        "architecture": {"bool": True},
        "cudaComputeCapability": {"string": "8.0"},
    }
    _publish(kube, nodes["odd"], [_device(f"gpu-{i}", odd, "1") for i in range(2)])
    yield nodes
    for node in nodes.values():
        kube.delete(api_path(V1, "resourceslices", name=f"{node}-dra-bridge.io"), ignore_missing=True)
        kube.delete(api_path("v1", "nodes", name=node), ignore_missing=True)


@pytest.mark.server_version
def test_scheduler_runs_generated_selectors_and_binds_to_the_matching_node(
    catalog: Catalog, kube: KubeClient, namespace: str, device_classes: list[str], gpu_nodes: dict[str, str]
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "legacy", "namespace": namespace},
        "spec": {
            "nodeSelector": {
                "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
                "nvidia.com/gpu.memory": "40960",
                "nvidia.com/gpu.family": "ampere",
            },
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "nvidia.com/gpu.compute.major", "operator": "Gt", "values": ["7"]},
                                    {
                                        "key": "nvidia.com/cuda.driver-version.full",
                                        "operator": "In",
                                        "values": ["550.107.02"],
                                    },
                                ]
                            }
                        ]
                    }
                }
            },
            "containers": [
                {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": {"nvidia.com/gpu": 2}}}
            ],
        },
    }
    plan = plan_pod(pod, catalog, Options(), namespace)
    assert plan.changed and "nodeSelector" not in plan.pod["spec"] and "affinity" not in plan.pod["spec"]
    for template in plan.templates:
        kube.create(api_path(V1, "resourceclaimtemplates", namespace), template)
    kube.create(api_path("v1", "pods", namespace), plan.pod)
    bound = wait_for_object(
        kube,
        api_path("v1", "pods", namespace, "legacy"),
        lambda p: p["spec"].get("nodeName") and p["status"].get("resourceClaimStatuses"),
        90,
        "the converted pod to be bound with its claim allocated",
    )
    assert bound["spec"]["nodeName"] == gpu_nodes["a100"]
    claim = kube.get(
        api_path(V1, "resourceclaims", namespace, bound["status"]["resourceClaimStatuses"][0]["resourceClaimName"])
    )
    results = claim["status"]["allocation"]["devices"]["results"]
    assert {r["pool"] for r in results} == {gpu_nodes["a100"]} and len(results) == 2


@pytest.mark.server_version
def test_version_selectors_skip_devices_whose_attributes_have_another_type(
    catalog: Catalog, kube: KubeClient, namespace: str, device_classes: list[str], gpu_nodes: dict[str, str]
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "versions", "namespace": namespace},
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "nvidia.com/gpu.compute.major", "operator": "Gt", "values": ["7"]}
                                ]
                            }
                        ]
                    }
                }
            },
            "containers": [
                {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": {"nvidia.com/gpu": 1}}}
            ],
        },
    }
    plan = plan_pod(pod, catalog, Options(), namespace)
    for template in plan.templates:
        kube.create(api_path(V1, "resourceclaimtemplates", namespace), template)
    kube.create(api_path("v1", "pods", namespace), plan.pod)
    bound = wait_for_object(
        kube,
        api_path("v1", "pods", namespace, "versions"),
        lambda p: p["spec"].get("nodeName"),
        90,
        "the pod to be bound",
    )
    assert bound["spec"]["nodeName"] == gpu_nodes["a100"]
