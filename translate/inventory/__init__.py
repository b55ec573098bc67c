"""A node's device-plugin inventory -> the ResourceSlices the bridge publishes (docs/design.md D5, D11).

Owns: grouping the kubelet's allocatable devices (:mod:`~translate.inventory.allocatable`),
what is known about each GPU from NVML or GFD labels (:mod:`~translate.inventory.device_facts`),
building the slice devices with the vendor driver's attributes (:mod:`~translate.inventory.slices`),
the API server's rules for slice values (:mod:`~translate.inventory.api_rules`), and splitting a
pool into slices and rendering them per API version (:mod:`~translate.inventory.pool`), and which
recorded devices a device ID or another driver's slice stands for, by UUID, PCI address or NVIDIA
index (:mod:`~translate.inventory.identity`), and a GPU's DRM nodes by its PCI address
(:mod:`~translate.inventory.drm`), and which devices are served with MPS, which the bridge cannot
carry (:mod:`~translate.inventory.mps`), and the taint of a device unhealthy long enough
(:mod:`~translate.inventory.device_taints`), and a never-legacy node's devices from the toolkit's
CDI spec or sysfs cards (:mod:`~translate.inventory.fresh`, docs/design.md D45).
"""

from dra_bridge.translate.inventory.allocatable import InventoryDevice, group_allocatable, split_replica
from dra_bridge.translate.inventory.api_rules import SliceDevice
from dra_bridge.translate.inventory.device_facts import NvmlFacts
from dra_bridge.translate.inventory.pool import internal_form, pool_slices, render_slice
from dra_bridge.translate.inventory.slices import SliceBuild, build_devices, build_slices, device_uuids

__all__ = [
    "InventoryDevice",
    "NvmlFacts",
    "SliceBuild",
    "SliceDevice",
    "build_devices",
    "build_slices",
    "device_uuids",
    "group_allocatable",
    "internal_form",
    "pool_slices",
    "render_slice",
    "split_replica",
]
