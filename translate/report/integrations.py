"""Risks from the software around a workload: Kueue, pod-resources readers, KubeRay, KServe (pure).

    integration_risks(obj, pod, demands, catalog, at) -> [Risk]

Codes (``Risk.code``):

``kueue-quota``
    the workload (or its pod template) carries ``kueue.x-k8s.io/queue-name``: Kueue admits it
    against its ClusterQueue's quota. Converted pods ask through ResourceClaimTemplates, which
    Kueue counts only with its DRA integration: the ``DynamicResourceAllocation`` feature gate
    (``KueueDRAIntegration`` from Kueue 0.18) and a ``resources.deviceClassMappings`` entry that
    maps each DeviceClass to the resource name the ClusterQueue's quotas use; alpha: ExactCount
    requests only, no CEL selectors (https://kueue.sigs.k8s.io/docs/tasks/manage/setup_dra/).
``pod-resources-reader``
    a hostPath volume of ``/var/lib/kubelet/pod-resources`` (the kubelet's pod-resources socket,
    as DCGM exporter reads it to label GPU metrics with pods): the kubelet lists a converted
    pod's devices as DRA claims (driver, pool, device), not as device-plugin device IDs, so the
    reader must resolve them through ResourceSlices (dcgm-exporter: ``KUBERNETES_ENABLE_DRA``
    and read access to ``resourceslices``, https://github.com/NVIDIA/gpu-operator/pull/2706),
    else converted pods lose their GPU-to-pod attribution. Reported whether or not the reader
    asks for a GPU itself; not for our own agent (``app.kubernetes.io/name: dra-bridge``).
``ray-num-gpus``
    a Ray node group (RayCluster, RayJob, RayService) with a GPU limit and no
    ``rayStartParams.num-gpus``: KubeRay derives ``ray start --num-gpus`` from that limit
    (:mod:`translate.plan.ray_params`); ``convert --include-custom-resources`` pins it, pods the
    webhook converts already carry it in their start command.
``kserve-requests-only``
    a KServe InferenceService container with a device resource in requests but not in limits:
    KServe's defaulter fills only CPU and memory, so the pods it builds ask for the device in
    requests only, which the API server refuses for an extended resource, with or without DRA.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.plan.custom_resources import AT_POD, PodPath
from dra_bridge.translate.plan.demand import ContainerDemand, containers
from dra_bridge.translate.plan.ray_params import RAY_KINDS, ray_gpu_limit
from dra_bridge.translate.report.risks import Risk

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
POD_RESOURCES_DIR = "/var/lib/kubelet/pod-resources"


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def _kueue(
    obj: Mapping[str, Any], pod: Mapping[str, Any], demands: Sequence[ContainerDemand], at: PodPath
) -> list[Risk]:
    own = _labels(obj).get(KUEUE_QUEUE_LABEL)
    queue = own or _labels(pod).get(KUEUE_QUEUE_LABEL)
    if not queue or not demands:
        return []
    label = f"metadata.labels[{KUEUE_QUEUE_LABEL}]"
    classes = ", ".join(sorted({d.mapping.device_class for d in demands if d.mapping.device_class}))
    resources = ", ".join(sorted({d.mapping.resource_name for d in demands}))
    return [
        Risk(
            "kueue-quota",
            label if own else at(label),
            f"Kueue admits it through LocalQueue {queue}: once converted, its GPUs are in ResourceClaimTemplates, "
            "which Kueue counts only with its DRA integration (feature gate DynamicResourceAllocation, "
            f"KueueDRAIntegration from 0.18) and resources.deviceClassMappings mapping {classes} to the "
            f"resource name its ClusterQueue's quotas use (today {resources}); otherwise they go uncounted",
        )
    ]


def _pod_resources(obj: Mapping[str, Any], spec: Mapping[str, Any], at: PodPath) -> list[Risk]:
    if _labels(obj).get("app.kubernetes.io/name") == "dra-bridge":  # our own agent reads it for itself
        return []
    volumes = spec.get("volumes")
    out = []
    for i, vol in enumerate(volumes if isinstance(volumes, list) else []):
        host = vol.get("hostPath") if isinstance(vol, Mapping) else None
        where = str(host.get("path") or "").rstrip("/") if isinstance(host, Mapping) else ""
        if where == POD_RESOURCES_DIR or where.startswith(POD_RESOURCES_DIR + "/"):
            out.append(
                Risk(
                    "pod-resources-reader",
                    at(f"spec.volumes[{i}]"),
                    f"reads the kubelet's pod-resources socket ({where}), as DCGM exporter does to tie GPUs to "
                    "pods: converted pods' devices are listed there as DRA claims, not device-plugin IDs, so it "
                    "must resolve them through ResourceSlices (dcgm-exporter: KUBERNETES_ENABLE_DRA) or "
                    "GPU-to-pod attribution is lost",
                )
            )
    return out


def _groups(node: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(node, Mapping):
        if isinstance(node.get("template"), Mapping):
            yield node
        for value in node.values():
            yield from _groups(value)
    elif isinstance(node, list):
        for value in node:
            yield from _groups(value)


def _ray(obj: Mapping[str, Any], pod: Mapping[str, Any], at: PodPath) -> list[Risk]:
    if obj.get("kind") not in RAY_KINDS:
        return []
    count = ray_gpu_limit(pod)
    group = next((g for g in _groups(obj) if g["template"] is pod), None)
    params = group.get("rayStartParams") if group is not None else None
    if not count or (isinstance(params, Mapping) and "num-gpus" in params):
        return []
    return [
        Risk(
            "ray-num-gpus",
            at("").removesuffix("template") + "rayStartParams",
            f"KubeRay derives ray start --num-gpus from the Ray container's GPU limit ({count}), which a "
            f'converted template no longer has: convert --include-custom-resources pins num-gpus: "{count}" '
            "(pods the webhook converts keep it: KubeRay wrote it into their start command)",
        )
    ]


def _kserve(obj: Mapping[str, Any], spec: Mapping[str, Any], catalog: Catalog, at: PodPath) -> list[Risk]:
    if obj.get("kind") != "InferenceService":
        return []
    out = []
    for fld, index, _role, c in containers(spec):
        resources = c.get("resources") if isinstance(c.get("resources"), Mapping) else None
        requests = resources.get("requests") if isinstance(resources, Mapping) else None
        limits = resources.get("limits") if isinstance(resources, Mapping) else None
        limits = limits if isinstance(limits, Mapping) else {}
        for name in requests if isinstance(requests, Mapping) else {}:
            if catalog.lookup(str(name)) is not None and name not in limits:
                out.append(
                    Risk(
                        "kserve-requests-only",
                        at(f"spec.{fld}[{index}].resources.requests[{name}]"),
                        f"{name} in requests only: KServe fills in limits for CPU and memory alone, so the pods "
                        "it builds ask for the device without a limit, which the API server refuses for an "
                        "extended resource (with or without DRA): put it in limits",
                    )
                )
    return out


def integration_risks(
    obj: Mapping[str, Any],
    pod: Mapping[str, Any],
    demands: Sequence[ContainerDemand],
    catalog: Catalog,
    at: PodPath = AT_POD,
) -> list[Risk]:
    """The risks of one pod template ``pod`` (``at``: where its values are in ``obj``) from the
    software around it."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    return [
        *_kueue(obj, pod, demands, at),
        *_pod_resources(obj, spec, at),
        *_ray(obj, pod, at),
        *_kserve(obj, spec, catalog, at),
    ]
