"""Sharing the bridge cannot carry: GPUs served with MPS, and variables it does not carry over (pure).

docs/design.md D41. NVIDIA's device plugin with the ``mps`` sharing strategy hands each replica a
share of the GPU's memory and threads through the MPS control daemon it runs (``CUDA_MPS_*``
variables and mounts of the daemon's pipe and shared-memory directories, NVIDIA/k8s-device-plugin
``internal/plugin/mps.go``); served as plain shared GPUs those limits are lost. So a resource's
devices are not published (:func:`refuse_mps`, a warning naming the resource, how many and why)
when MPS is seen:

- in its recorded Allocate answer (:func:`translate.allocate_edits.compose` drops MPS variables and
  mounts and says so in ``dropped``), or
- for an NVIDIA resource, in the node's GFD label ``nvidia.com/gpu.sharing-strategy=mps``;

never from ``::n`` replica IDs alone: time-slicing uses them too. The variables the device plugin
sets for GPUDirect Storage, MOFED, GDRCopy or IMEX channels (:data:`NOT_CARRIED`) are not carried
over either (compose drops them); the same warning names those it dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dra_bridge.translate.allocate_edits import NOT_CARRIED, ResourceEdits
from dra_bridge.translate.inventory.allocatable import InventoryDevice
from dra_bridge.translate.names import GFD_PREFIX, NVIDIA_RESOURCE_PREFIX

SHARING_LABEL = f"{GFD_PREFIX}gpu.sharing-strategy"


def mps_reason(resource: str, recorded: Mapping[str, ResourceEdits], labels: Mapping[str, str]) -> str:
    """Why ``resource`` is served with MPS ("" when nothing says so)."""
    reasons = []
    if resource.startswith(NVIDIA_RESOURCE_PREFIX) and labels.get(SHARING_LABEL) == "mps":
        reasons.append(f"the node's label {SHARING_LABEL}=mps")
    found = recorded.get(resource)
    seen = [d for d in (found["dropped"] if found is not None else []) if d.startswith("MPS ")]
    if seen:
        reasons.append("its recorded Allocate answer (" + "; ".join(seen) + ")")
    return " and ".join(reasons)


def not_carried(resource: str, recorded: Mapping[str, ResourceEdits]) -> list[str]:
    """The :data:`NOT_CARRIED` variables ``resource``'s recorded answer set (dropped), sorted."""
    found = recorded.get(resource)
    dropped = found["dropped"] if found is not None else []
    return sorted(k for k in NOT_CARRIED if any(f" variable {k} " in f"{d} " for d in dropped))


def refuse_mps(
    devices: Sequence[InventoryDevice], recorded: Mapping[str, ResourceEdits], labels: Mapping[str, str]
) -> tuple[list[InventoryDevice], list[str]]:
    """The devices not served with MPS, in order, and one warning per resource that is."""
    kept: list[InventoryDevice] = []
    refused: dict[str, int] = {}
    reasons: dict[str, str] = {}
    for d in devices:
        resource = d["resourceName"]
        if resource not in reasons:
            reasons[resource] = mps_reason(resource, recorded, labels)
        if reasons[resource]:
            refused[resource] = refused.get(resource, 0) + 1
        else:
            kept.append(d)
    warnings = []
    for resource, count in sorted(refused.items()):
        extra = not_carried(resource, recorded)
        also = "; also not carried over: " + ", ".join(f"{k} ({NOT_CARRIED[k]})" for k in extra) if extra else ""
        warnings.append(
            f"resource {resource}: {count} device(s) not published: served with MPS ({reasons[resource]}), whose "
            f"memory and thread limits are lost when served as plain shared GPUs{also}"
        )
    return kept, warnings
