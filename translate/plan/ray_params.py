"""Ray's GPU count, pinned where a converted template no longer carries the limit (pure).

    pin_num_gpus(kind, group, original_pod, path) -> Finding | None

KubeRay starts each Ray node with ``ray start --num-gpus=N``, where N is the group's
``rayStartParams.num-gpus`` or, when that is unset, the Ray container's (the first
container's) limit of the first resource whose name ends in ``gpu`` (``generateRayStartCommand``
and ``addWellKnownAcceleratorResources`` in ray-operator/controllers/ray/common/pod.go,
https://github.com/ray-project/kuberay/blob/master/ray-operator/controllers/ray/common/pod.go ;
a group's top-level ``resources`` overrides both). A converted template asks for its GPUs
through a claim, so KubeRay would start the node with no GPUs: ``dra-migrate convert
--include-custom-resources`` writes the original limit into ``rayStartParams.num-gpus``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dra_bridge.translate.errors import CountError
from dra_bridge.translate.findings import Finding
from dra_bridge.translate.plan.device_counts import parse_count

RAY_KINDS = ("RayCluster", "RayJob", "RayService")


def is_gpu_key(name: str) -> bool:
    """A resource KubeRay counts as GPUs (its ``IsGPUResourceKey``: the name ends in ``gpu``)."""
    return name.endswith("gpu")


def ray_gpu_limit(pod: Mapping[str, Any]) -> int:
    """The Ray container's GPU limit as KubeRay reads it (0 when none)."""
    spec = pod.get("spec")
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    first = containers[0] if isinstance(containers, list) and containers else None
    resources = first.get("resources") if isinstance(first, Mapping) else None
    limits = resources.get("limits") if isinstance(resources, Mapping) else None
    if not isinstance(limits, Mapping):
        return 0
    for key in sorted(str(k) for k in limits):
        if not is_gpu_key(key):
            continue
        try:
            count = parse_count(limits[key])
        except CountError:
            continue
        if count:
            return count
    return 0


def pin_num_gpus(kind: str, group: Any, original_pod: Mapping[str, Any], path: str) -> Finding | None:
    """Write ``rayStartParams.num-gpus`` into the Ray node group ``group`` (the converted copy,
    the mapping holding ``template``; ``path``: its finding-path prefix) from ``original_pod``'s
    limit, where KubeRay would have derived it; the finding says so (None: nothing to pin)."""
    if kind not in RAY_KINDS or not isinstance(group, dict):
        return None
    params = group.get("rayStartParams")
    resources = group.get("resources")
    if isinstance(params, Mapping) and "num-gpus" in params:
        return None
    if isinstance(resources, Mapping) and any(is_gpu_key(str(k).lower()) for k in resources):
        return None
    count = ray_gpu_limit(original_pod)
    if not count:
        return None
    group["rayStartParams"] = {**(params if isinstance(params, Mapping) else {}), "num-gpus": str(count)}
    return Finding(
        f"{path}rayStartParams[num-gpus]",
        str(count),
        "translated",
        f"pinned to the original GPU limit ({count}): KubeRay derives ray start --num-gpus from the "
        "Ray container's limit, which the claim replaces",
    )
