"""Devices and pods that are not the migration's: accelerator resources the catalog does not know,
other extended resources, and pods another GPU controller owns.

    unknown_device_resource(name, device_domains, path, legacy) -> Finding | None   (per value)
    other_extended_resource(name, path, legacy) -> Finding                          (per value)
    other_gpu_controller(meta, spec, path) -> Finding | None                        (per pod)
    controller_scheduler_without_dra(obj, dra_schedulers) -> Finding | None         (per workload)

Each is a stay-legacy rule in the shape of :mod:`translate.plan.stay_legacy`'s checks (facts in,
the finding that keeps the pod as it is, or None, out), called by the demand collection, the pod
plan and the workload converter.
An accelerator resource outside the catalog keeps the whole pod legacy: converting the pod's
other devices would leave one of its devices on a plugin nobody hands over. A pod another
controller owns stays that controller's: instaslice gates MIG pods and gives each its own
extended resource (``org.instaslice/...``), and the GPU Operator's validation pods exist to prove
the device plugin works (converted, they would validate the bridge instead). A Volcano Job's pods
run under its ``spec.schedulerName`` (``volcano`` when unset), which its task templates do not
carry: that scheduler must support DRA, as for a pod's own ``schedulerName`` (docs/design.md D24).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dra_bridge.translate.findings import (
    OTHER_EXTENDED_RESOURCE,
    OTHER_GPU_CONTROLLER,
    UNKNOWN_DEVICE_RESOURCE,
    Finding,
    Remedy,
)
from dra_bridge.translate.names import (
    GPU_OPERATOR_VALIDATOR_ACCOUNT,
    GPU_OPERATOR_VALIDATOR_APPS,
    SLICING_CONTROLLER_DOMAINS,
    VOLCANO_JOB_GROUP,
    VOLCANO_SCHEDULER,
    is_accelerator_resource,
)
from dra_bridge.translate.plan.stay_legacy import DEFAULT_SCHEDULERS


def unknown_device_resource(name: str, device_domains: Sequence[str], path: str, legacy: str) -> Finding | None:
    """An extended resource of an accelerator domain that the catalog does not know (the caller
    looked it up): the pod stays on its device plugin until a catalog entry names it."""
    if not is_accelerator_resource(name, tuple(device_domains)):
        return None
    return Finding(
        path,
        legacy,
        "kept-legacy",
        f"{name} is an accelerator resource the translation catalog does not know: the pod stays on its device plugin",
        Remedy.ADD_CATALOG_ENTRY,
        name,
        code=UNKNOWN_DEVICE_RESOURCE,
    )


def other_extended_resource(name: str, path: str, legacy: str) -> Finding:
    """Any other extended resource (SR-IOV, RDMA, KubeVirt, fuse): not a device the migration moves."""
    return Finding(
        path,
        legacy,
        "ignored",
        f"{name} is not an accelerator resource (another device plugin's): left as it is",
        code=OTHER_EXTENDED_RESOURCE,
    )


def _slicing_controller(name: str) -> str | None:
    domain = name.split("/", 1)[0]
    return domain if "/" in name and domain in SLICING_CONTROLLER_DOMAINS else None


def _slicing_controller_site(spec: Mapping[str, Any], path: str) -> tuple[str, str, str] | None:
    """(path, value, controller domain) of the first gate or resource of a slicing controller."""
    for i, gate in enumerate(spec.get("schedulingGates") or []):
        name = str(gate.get("name") or "") if (type(gate) is dict or isinstance(gate, Mapping)) else ""
        domain = _slicing_controller(name)
        if domain:
            return f"{path}spec.schedulingGates[{i}]", name, domain
    for fld in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(fld) or []):
            resources = c.get("resources") if (type(c) is dict or isinstance(c, Mapping)) else None
            limits = resources.get("limits") if (type(resources) is dict or isinstance(resources, Mapping)) else None
            for name in limits if (type(limits) is dict or isinstance(limits, Mapping)) else ():
                if type(name) is str and "/" not in name:
                    continue  # cpu, memory: no domain
                domain = _slicing_controller(str(name))
                if domain:
                    return f"{path}spec.{fld}[{i}].resources.limits[{name}]", str(name), domain
    return None


def other_gpu_controller(meta: Mapping[str, Any], spec: Mapping[str, Any], path: str) -> Finding | None:
    """A pod another GPU controller owns: a slicing controller's scheduling gate or per-pod
    resource, or one of the GPU Operator's validation pods (``app`` label or service account)."""
    site = _slicing_controller_site(spec, path)
    if site is not None:
        where, value, domain = site
        return Finding(
            where,
            value,
            "kept-legacy",
            f"another slicing controller ({domain}, instaslice) owns this pod's GPUs: it stays as it is",
            code=OTHER_GPU_CONTROLLER,
        )
    labels = meta.get("labels") if isinstance(meta.get("labels"), Mapping) else {}
    app = str((labels or {}).get("app") or "")
    account = str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "")
    if app not in GPU_OPERATOR_VALIDATOR_APPS and account != GPU_OPERATOR_VALIDATOR_ACCOUNT:
        return None
    return Finding(
        f"{path}metadata.labels[app]" if app in GPU_OPERATOR_VALIDATOR_APPS else f"{path}spec.serviceAccountName",
        app if app in GPU_OPERATOR_VALIDATOR_APPS else account,
        "kept-legacy",
        "a GPU Operator validation pod: it proves the device plugin works, so it stays on the device "
        "plugin (converted, it would validate the bridge instead)",
        code=OTHER_GPU_CONTROLLER,
    )


def controller_scheduler_without_dra(obj: Mapping[str, Any], dra_schedulers: Sequence[str]) -> Finding | None:
    """A workload whose controller schedules its pods with another scheduler that the templates do
    not name: a Volcano Job (``spec.schedulerName``, ``volcano`` when unset), unless declared."""
    if str(obj.get("apiVersion") or "").split("/", 1)[0] != VOLCANO_JOB_GROUP or obj.get("kind") != "Job":
        return None
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    scheduler = str((spec or {}).get("schedulerName") or VOLCANO_SCHEDULER)
    if scheduler in DEFAULT_SCHEDULERS or scheduler in dra_schedulers:
        return None
    return Finding(
        "spec.schedulerName",
        scheduler,
        "kept-legacy",
        f"the Job's pods run under scheduler {scheduler!r}, which may not support DRA: they stay on the device plugin",
        Remedy.DECLARE_DRA_SCHEDULER,
        scheduler,
    )
