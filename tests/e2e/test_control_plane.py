"""Smoke tests of the test control plane, all through the real API."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from dra_bridge.kube.errors import Invalid
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubeapi import (
    KubeClient,
    api_path,
    create_fake_node,
    gfd_labels,
    wait_for_object,
)

pytestmark = pytest.mark.e2e

RESOURCE_V1 = "resource.k8s.io/v1"
DRIVER = "gpu.example.com"


def _uid() -> str:
    return uuid.uuid4().hex[:6]


@pytest.fixture
def fake_node(kube: KubeClient) -> Iterator[str]:
    name = f"node-{_uid()}"
    create_fake_node(kube, name, labels=gfd_labels())
    yield name
    kube.delete(api_path("v1", "nodes", name=name), ignore_missing=True)


def _pod(name: str, node_selector: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": node_selector or {},
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
            **spec,
        },
    }


def _slice(node: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE_V1,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


@pytest.mark.server_version
def test_control_plane_identity(control_plane: ControlPlane, kube: KubeClient) -> None:
    assert control_plane.version.startswith("v1.")
    assert control_plane.etcd_version.startswith("3.")
    info = kube.get("/version")
    assert info["gitVersion"] == control_plane.version
    assert control_plane.kubeconfig.is_file()
    groups = kube.get("/apis/resource.k8s.io")
    served = {v["version"] for v in groups["versions"]}
    for version in ("v1", "v1beta1", "v1beta2"):
        if f"resource.k8s.io/{version}=true" in control_plane.runtime_config:
            assert version in served, groups
        if f"resource.k8s.io/{version}=false" in control_plane.runtime_config:
            assert version not in served, groups


def test_fake_node_is_schedulable(kube: KubeClient, namespace: str, fake_node: str) -> None:
    node = kube.get(api_path("v1", "nodes", name=fake_node))
    assert not node["spec"].get("taints"), node["spec"]
    kube.create(
        api_path("v1", "pods", namespace),
        _pod("plain", {"kubernetes.io/hostname": fake_node}),
    )
    pod = wait_for_object(
        kube,
        api_path("v1", "pods", namespace, "plain"),
        lambda p: p["spec"].get("nodeName"),
        60,
        "the scheduler to bind a plain pod to the fake node",
    )
    assert pod["spec"]["nodeName"] == fake_node


@pytest.mark.server_version
def test_claim_from_template_is_allocated_and_pod_bound(kube: KubeClient, namespace: str, fake_node: str) -> None:
    cls = f"gpu-{_uid()}"
    kube.create(
        api_path(RESOURCE_V1, "deviceclasses"),
        {
            "apiVersion": RESOURCE_V1,
            "kind": "DeviceClass",
            "metadata": {"name": cls},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        },
    )
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {"productName": {"string": "H100"}},
            "capacity": {"memory": {"value": "80Gi"}},
        }
        for i in range(2)
    ]
    slice_obj = kube.create(api_path(RESOURCE_V1, "resourceslices"), _slice(fake_node, devices))
    try:
        kube.create(
            api_path(RESOURCE_V1, "resourceclaimtemplates", namespace),
            {
                "apiVersion": RESOURCE_V1,
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": "one-gpu"},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": cls}}]}}},
            },
        )
        pod = _pod("with-claim", resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])
        pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
        kube.create(api_path("v1", "pods", namespace), pod)

        pod_path = api_path("v1", "pods", namespace, "with-claim")
        pod = wait_for_object(
            kube,
            pod_path,
            lambda p: p["spec"].get("nodeName") and p["status"].get("resourceClaimStatuses"),
            90,
            "the claim to be generated and the pod bound",
        )
        assert pod["spec"]["nodeName"] == fake_node
        claim_name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        claim = kube.get(api_path(RESOURCE_V1, "resourceclaims", namespace, claim_name))
        results = claim["status"]["allocation"]["devices"]["results"]
        assert len(results) == 1
        assert results[0]["driver"] == DRIVER
        assert results[0]["pool"] == fake_node
        assert results[0]["device"] in {"gpu-0", "gpu-1"}
        assert results[0]["request"] == "gpu"
        reserved = claim["status"].get("reservedFor", [])
        assert any(r.get("name") == "with-claim" for r in reserved), claim["status"]
    finally:
        kube.delete(api_path("v1", "pods", namespace, "with-claim"), ignore_missing=True)
        kube.delete(api_path(RESOURCE_V1, "resourceslices", name=slice_obj["metadata"]["name"]), ignore_missing=True)
        kube.delete(api_path(RESOURCE_V1, "deviceclasses", name=cls), ignore_missing=True)


@pytest.mark.server_version
def test_api_server_rejects_slice_with_too_many_devices(kube: KubeClient) -> None:
    devices = [{"name": f"gpu-{i}"} for i in range(129)]
    with pytest.raises(Invalid) as info:
        kube.create(api_path(RESOURCE_V1, "resourceslices"), _slice(f"node-{_uid()}", devices))
    err = info.value
    assert err.status == 422, err
    assert err.reason == "Invalid", err
    assert "spec.devices" in err.detail, err.detail
    assert "128" in err.detail, err.detail


@pytest.mark.server_version
def test_v1beta1_claim_template_round_trip(control_plane: ControlPlane, kube: KubeClient, namespace: str) -> None:
    v1beta1 = "resource.k8s.io/v1beta1"
    if f"{v1beta1}=true" not in control_plane.runtime_config:
        pytest.skip(f"{v1beta1} not enabled in --runtime-config={control_plane.runtime_config}")
    request = {"name": "gpu", "deviceClassName": "gpu.example.com", "count": 2, "allocationMode": "ExactCount"}
    created = kube.create(
        api_path(v1beta1, "resourceclaimtemplates", namespace),
        {
            "apiVersion": v1beta1,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "flat"},
            "spec": {"spec": {"devices": {"requests": [request]}}},
        },
    )
    back = kube.get(api_path(v1beta1, "resourceclaimtemplates", namespace, "flat"))
    for obj in (created, back):
        (req,) = obj["spec"]["spec"]["devices"]["requests"]
        assert req["deviceClassName"] == "gpu.example.com"
        assert req["count"] == 2
        assert "exactly" not in req
    # The same object read through v1 has the nested shape.
    v1 = kube.get(api_path(RESOURCE_V1, "resourceclaimtemplates", namespace, "flat"))
    (req,) = v1["spec"]["spec"]["devices"]["requests"]
    assert req["exactly"]["deviceClassName"] == "gpu.example.com"
    assert req["exactly"]["count"] == 2
