"""Capacity scenarios as data (issue 12, "Capacity"): nodes, converted pods and what fits, shared by the
table tests (``tests/translate/test_capacity.py``) and the real-scheduler cross-check
(``tests/e2e/test_capacity_e2e.py``).

``MIXED``: four nodes as GPU Feature Discovery labels them, with ``nvidia.com/gpu`` allocatable
(the bridge's slices are built from that, as ``dra-migrate report`` does for a node without
slices): two H100 nodes x 4, one A100 node x 2, and one L4 node x 2 tainted
``dedicated=inference:NoSchedule``. ``MIXED_PODS``: converted pods in the order the check
places them, each with the verdict the check gives when they are placed one by one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dra_bridge.translate.capacity import device_classes
from dra_bridge.translate.catalog import Catalog

V1 = "resource.k8s.io/v1"
H100, A100, L4 = "NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-40GB", "NVIDIA-L4"


def catalog_classes(catalog: Catalog) -> dict[str, dict[str, Any]]:
    """The catalog's DeviceClasses as the capacity check reads them (``{name: v1 spec}``)."""
    return device_classes([{"apiVersion": V1, **c} for c in catalog.device_classes()])


def gfd_node(
    name: str,
    product: str,
    gpus: int,
    *,
    taints: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    memory: str = "81559",
) -> dict[str, Any]:
    """A Node object as a GPU node reports itself: GFD labels and ``nvidia.com/gpu`` allocatable."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": product,
                "nvidia.com/gpu.count": str(gpus),
                "nvidia.com/gpu.memory": memory,
                **(labels or {}),
            },
        },
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}},
    }


def gpu_pod(name: str, gpus: int, namespace: str = "team-a", **spec: Any) -> dict[str, Any]:
    """A legacy pod asking for ``gpus`` ``nvidia.com/gpu`` (plus ``spec`` fields)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"limits": {"nvidia.com/gpu": gpus}},
                }
            ],
            **spec,
        },
    }


@dataclass(frozen=True)
class CapacityPod:
    """A legacy pod and the verdict (``fits``) the check gives in its scenario."""

    legacy: dict[str, Any]
    fits: bool
    code: str = "fits"

    @property
    def name(self) -> str:
        return str(self.legacy["metadata"]["name"])


def _product(product: str) -> dict[str, Any]:
    return {"nodeSelector": {"nvidia.com/gpu.product": product}}


TAINT = {"key": "dedicated", "value": "inference", "effect": "NoSchedule"}
TOLERATE: dict[str, Any] = {
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "inference", "effect": "NoSchedule"}]
}

MIXED = (
    gfd_node("a100-0", A100, 2, memory="40960"),
    gfd_node("h100-0", H100, 4),
    gfd_node("h100-1", H100, 4),
    gfd_node("l4-0", L4, 2, taints=[TAINT], memory="23034"),
)
MIXED_PODS = (
    CapacityPod(gpu_pod("h100-four", 4, **_product(H100)), True),
    CapacityPod(gpu_pod("h100-three", 3, **_product(H100)), True),
    CapacityPod(gpu_pod("h100-two", 2, **_product(H100)), False, "not-enough-devices"),
    CapacityPod(gpu_pod("h100-one", 1, **_product(H100)), True),
    CapacityPod(gpu_pod("a100-two", 2, **_product(A100)), True),
    CapacityPod(gpu_pod("any-one", 1), False, "not-enough-devices"),
    CapacityPod(gpu_pod("l4-tolerating", 1, **TOLERATE), True),
    CapacityPod(gpu_pod("l4-two", 2, **_product(L4), **TOLERATE), False, "not-enough-devices"),
    CapacityPod(gpu_pod("b200", 1, **_product("NVIDIA-B200")), False, "no-matching-device"),
)
