"""Shared devices (time-slicing or MPS replicas, catalog kind ``shared``) as DRA requests.

The device plugin advertises each shared GPU as N replicas (``nvidia.com/gpu.shared``,
"Shared Access to GPUs" in https://github.com/NVIDIA/k8s-device-plugin/blob/main/README.md) and a
container asking for ``count`` of them gets ``count`` replicas, which may come from different GPUs (the
plugin gives no more GPU time for more replicas).

    shared_request(mapping, count, target, path, legacy) -> (request count, finding)

- bridge target: ``count`` replicas the bridge publishes, from any GPUs, as the plugin gave them:
  ``partial``, since the vendor driver has no replicas (re-plan before moving to it);
- vendor target: one whole device of the vendor driver: ``partial``; the finding names the
  vendor driver's own ways to share a device (``VENDOR_SHARING``).

A plain ``nvidia.com/gpu`` on nodes whose ``gpu.product`` ends in ``-SHARED`` (time-slicing that
keeps the resource's name) asks for replicas too: :func:`shared_product_request` says what the
vendor target gives it (that many whole GPUs).

Shared requests greater than one that the plugin fails (``failRequestsGreaterThanOne``) never
get here: :func:`~translate.plan.stay_legacy.shared_count_over_one` keeps them legacy.
"""

from __future__ import annotations

from dra_bridge.translate.catalog import ResourceMapping, Target
from dra_bridge.translate.findings import Finding
from dra_bridge.translate.names import NVIDIA_DRIVER

#: How each vendor DRA driver shares one device (NVIDIA: its ``GpuConfig`` sharing and feature gates; other drivers:
#: none known).
VENDOR_SHARING: dict[str, str] = {
    NVIDIA_DRIVER: "NVIDIA GpuConfig sharing (TimeSlicing or MPS), one claim for several pods, or ConsumableShares",
}


def shared_product_request(
    mapping: ResourceMapping, count: int, target: Target, products: list[str], path: str, legacy: str
) -> Finding | None:
    """The finding for ``count`` > 1 whole-GPU requests on nodes selected by ``-SHARED``
    ``products`` under the vendor target: the replicas become that many whole GPUs."""
    if target != "vendor" or not products or count <= 1 or mapping.kind != "gpu" or mapping.gfd != "nvidia":
        return None
    driver = mapping.vendor.driver if mapping.vendor else ""
    how = VENDOR_SHARING.get(driver, f"see the {driver or 'vendor'} driver's sharing options")
    return Finding(
        path,
        legacy,
        "partial",
        f"on nodes that share each GPU by time-slicing ({products[0]}) this asks for {count} replicas, "
        f"maybe of one GPU; the vendor driver has no replicas: the claim gets {count} whole GPUs "
        f"(to share one: {how})",
    )


def shared_request(mapping: ResourceMapping, count: int, target: Target, path: str, legacy: str) -> tuple[int, Finding]:
    """The device count to request for ``count`` shared replicas on ``target``, and the finding
    that says what changes (see the module docstring)."""
    if target == "vendor":
        driver = mapping.vendor.driver if mapping.vendor else ""
        how = VENDOR_SHARING.get(driver, f"see the {driver or 'vendor'} driver's sharing options")
        return 1, Finding(path, legacy, "partial", f"one whole vendor device (no replicas); to share it: {how}")
    return count, Finding(
        path,
        legacy,
        "partial",
        f"{count} time-slicing replica{'s' if count != 1 else ''} of the bridge, maybe of "
        "different GPUs as with the plugin; the vendor driver has none: re-plan before moving",
    )
