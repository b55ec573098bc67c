"""Risks the translation alone cannot see, per workload and per node (pure).

    workload_risks(unit_obj, pod, demands, catalog, custom, at) -> [Risk]
    mixed_allocator_nodes(nodes, slices, catalog) -> {node name: [legacy resources]}

Codes (``Risk.code``):

``gpu-count-in-env``
    the GPU count reaches the container through the downward API (``resourceFieldRef`` on the
    legacy resource, in env or a downwardAPI volume: it reads 0 once the limit is gone), or an
    env var whose name mentions GPUs holds the container's count (a copy that no one updates).
``visible-devices-by-hand``
    ``NVIDIA_VISIBLE_DEVICES`` or ``CUDA_VISIBLE_DEVICES`` is set in a container that asks for no
    device: it sees GPUs the scheduler did not give it, with or without DRA.
``pinned-to-node``
    ``spec.nodeName``: the scheduler never sees the pod, so no claim is allocated for it.
``operator-reads-limit``
    a custom resource's operator builds the pods and may derive settings (process counts,
    ``nproc_per_node``) from the GPU limit in its template, which a converted template no
    longer carries.
``mixed-allocators`` (per node)
    a node offers a legacy resource through a device plugin (allocatable above 0) while a DRA
    driver publishes ResourceSlices for it: two allocators may hand out the same GPUs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.plan.custom_resources import AT_POD, PodPath
from dra_bridge.translate.plan.demand import ContainerDemand, containers, is_extended
from dra_bridge.translate.plan.device_counts import parse_count

VISIBLE_DEVICES = ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
_GPU_ENV = re.compile(r"GPU", re.IGNORECASE)


@dataclass(frozen=True)
class Risk:
    """One risk: ``code`` (module docstring), where (``path`` in the object) and ``detail``."""

    code: str
    path: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        """JSON form."""
        return {"code": self.code, "path": self.path, "detail": self.detail}


def _env_risks(spec: Mapping[str, Any], demands: Sequence[ContainerDemand], at: PodPath) -> list[Risk]:
    out: list[Risk] = []
    counts: dict[tuple[str, int], int] = {}
    for d in demands:
        counts[(d.field, d.index)] = counts.get((d.field, d.index), 0) + d.count
    for fld, index, _role, c in containers(spec):
        where = f"spec.{fld}[{index}]"
        asks = counts.get((fld, index), 0)
        resources = c.get("resources") if isinstance(c.get("resources"), Mapping) else {}
        asks_any = any(
            is_extended(str(k))
            for part in ("limits", "requests")
            for k in (resources.get(part) or {} if isinstance(resources, Mapping) else {})
        )
        for j, env in enumerate(c.get("env") or []):
            if not isinstance(env, Mapping):
                continue
            name, value = str(env.get("name", "")), env.get("value")
            ref = (
                ((env.get("valueFrom") or {}).get("resourceFieldRef") or {})
                if isinstance(env.get("valueFrom"), Mapping)
                else {}
            )
            if isinstance(ref, Mapping) and is_extended(str(ref.get("resource", "")).split(".", 1)[-1]):
                out.append(
                    Risk(
                        "gpu-count-in-env",
                        at(f"{where}.env[{j}]"),
                        f"{name} reads {ref.get('resource')} "
                        "through the downward API: 0 once the limit moves to a claim",
                    )
                )
            elif name in VISIBLE_DEVICES and not asks_any and value not in (None, "", "void", "none"):
                out.append(
                    Risk(
                        "visible-devices-by-hand",
                        at(f"{where}.env[{j}]"),
                        f"{name}={value} set without a device request: the container sees GPUs nobody allocated to it",
                    )
                )
            elif asks and _GPU_ENV.search(name) and isinstance(value, str) and value.isdigit() and int(value) == asks:
                out.append(
                    Risk(
                        "gpu-count-in-env",
                        at(f"{where}.env[{j}]"),
                        f"{name}={value} copies the GPU count: keep it in step with the claim",
                    )
                )
    volumes = spec.get("volumes") if isinstance(spec.get("volumes"), list) else []
    for i, vol in enumerate(volumes or []):
        items = ((vol.get("downwardAPI") or {}).get("items") or []) if isinstance(vol, Mapping) else []
        for item in items if isinstance(items, list) else []:
            ref = item.get("resourceFieldRef") if isinstance(item, Mapping) else None
            if isinstance(ref, Mapping) and is_extended(str(ref.get("resource", "")).split(".", 1)[-1]):
                out.append(
                    Risk(
                        "gpu-count-in-env",
                        at(f"spec.volumes[{i}]"),
                        f"downwardAPI file {item.get('path')} reads {ref.get('resource')}: 0 once the limit "
                        "moves to a claim",
                    )
                )
    return out


def workload_risks(
    obj: Mapping[str, Any],
    pod: Mapping[str, Any],
    demands: Sequence[ContainerDemand],
    catalog: Catalog,
    custom: bool,
    at: PodPath = AT_POD,
) -> list[Risk]:
    """The risks of one planned pod template ``pod`` (``at``: where its values are in ``obj``);
    ``demands``: its legacy demands with a count above zero."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(spec, Mapping) and isinstance(meta, Mapping)
    out = _env_risks(spec, demands, at)
    if demands:
        if spec.get("nodeName"):
            out.append(
                Risk(
                    "pinned-to-node",
                    at("spec.nodeName"),
                    f"pinned to {spec['nodeName']}: the scheduler never sees it, so no claim is allocated",
                )
            )
        if custom:
            out.append(
                Risk(
                    "operator-reads-limit",
                    at(""),
                    f"{obj.get('kind')}'s operator builds its pods "
                    "and may derive settings (process counts) from the GPU limit",
                )
            )
    return out


def mixed_allocator_nodes(
    nodes: Sequence[Mapping[str, Any]], slices: Sequence[Mapping[str, Any]], catalog: Catalog
) -> dict[str, list[str]]:
    """Nodes offering a catalogued legacy resource (``status.allocatable`` above 0) that also
    have a ResourceSlice (``spec.nodeName``) with devices: node name -> those resources."""
    with_slices = set()
    for s in slices:
        spec = s.get("spec") if isinstance(s.get("spec"), Mapping) else {}
        if isinstance(spec, Mapping) and spec.get("nodeName") and spec.get("devices"):
            with_slices.add(str(spec["nodeName"]))
    out: dict[str, list[str]] = {}
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name") or "")
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        legacy = sorted(r for r, v in allocatable.items() if catalog.lookup(str(r)) and _positive(v))
        if name in with_slices and legacy:
            out[name] = legacy
    return out


def _positive(value: Any) -> bool:
    try:
        return parse_count(value) > 0
    except (ValueError, TypeError):
        return False
