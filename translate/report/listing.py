"""Which workloads a live report lists: the GPU workloads; the others are counted.

    is_gpu_workload(path, findings, risks, legacy, pods) -> bool

A live cluster holds many workloads that never touch a device (kube-system, web services):
listing them would bury the GPU workloads. A workload is a GPU workload when it has a path
other than ``nothing-to-do``, a finding, a risk (e.g. ``NVIDIA_VISIBLE_DEVICES`` set by hand),
a legacy device request, or a DRA claim in one of its pod specs (``spec.resourceClaims``, a
container's ``resources.claims``: already migrated). ``dra-migrate report --all-workloads``
lists every one; a file report lists every workload it was given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _has_claims(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return False
    if spec.get("resourceClaims"):
        return True
    for field in ("containers", "initContainers"):
        for container in spec.get(field) or []:
            resources = container.get("resources") if isinstance(container, Mapping) else None
            if isinstance(resources, Mapping) and resources.get("claims"):
                return True
    return False


def is_gpu_workload(
    path: str, findings: Sequence[object], risks: Sequence[object], legacy: Sequence[object], pods: Sequence[Any]
) -> bool:
    """True when the workload is listed in a live report (see the module docstring); ``pods``:
    its pod templates and pods as read."""
    if path != "nothing-to-do" or findings or risks or legacy:
        return True
    return any(isinstance(p, Mapping) and _has_claims(p) for p in pods)
