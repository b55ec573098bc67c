"""dra-bridge, the node agent: republishes a node's device-plugin inventory as ResourceSlices and
serves the DRA claims that land on the node as a DRA kubelet plugin.

The I/O edge around :mod:`translate` (kubelet gRPC, node-local files, the API server through
:mod:`kube`). Modules, one concern each:

- the loop and its decisions: ``agent`` (one tick: observe, decide, act, report), ``dra_devices``
  (what a ``dra`` node hands the publisher: the recorded devices re-checked, less those nobody
  could prepare, with the taints of unhealthy ones), ``observe``
  (reading the kubelet, the API server and the node into an ``observation``, the snapshot
  dataclass), ``decide`` (the pure decision step), ``interlocks`` (the interlock table and the
  alarm, pure, docs/design.md D6), ``report`` (Events, the Node condition, metrics),
  ``node_condition`` (what the prepared-claim condition says and when it is written: Unknown
  while the checkpoint is unreadable, a 5-minute heartbeat; pure, docs/design.md D29),
  ``publisher`` (the ResourceSlice reconciler, docs/design.md D17), ``publishing_record``
  ("publishing since T, with this inventory": a restart resumes, docs/design.md D43),
  ``owner_record`` (which instance publishes in a surge rollout, docs/design.md D44), ``access``
  (the API calls it makes);
- what the node has: ``podresources`` (the PodResources v1 API: proto, stubs, client), ``state``
  (the recorded inventory), ``fresh_source`` (a never-legacy node's inventory from the toolkit's CDI
  spec or sysfs, used only while nothing is recorded, docs/design.md D45), ``spec_files`` (CDI spec
  files read bounded, for it and the plugin's CDI index), ``deviceplugin`` (the
  Device Plugin v1beta1 API and a client),
  ``edits_recorder`` (the plugins' Allocate answers while legacy), ``nvml`` (optional NVML facts),
  ``pci_sysfs`` (PCIe root and NUMA node from sysfs), ``host_devices`` (block devices on the host),
  ``drm_sysfs`` (DRM card and render nodes by PCI address from sysfs);
- the DRA kubelet plugin (docs/design.md D10): ``kubeletapi`` (the registration, DRA and DRA health
  protos and stubs) and ``kubeletplugin`` (the plugin itself, a subpackage that never imports the
  hand-over half; it also collects checkpoint entries whose claim is gone); ``ports`` (the two
  narrow interfaces the halves see each other through);
- plumbing: ``unixgrpc`` (a gRPC channel on a unix socket), ``atomic`` (atomic file writes),
  ``file_lock`` (a lock between processes), ``health`` (readiness, liveness, metrics),
  ``settings``, ``cli`` and ``errors`` (the exception tree, re-exported here).
"""

from __future__ import annotations

from dra_bridge.bridge.errors import (
    BridgeError,
    CdiError,
    CheckpointError,
    DevicePluginError,
    NvmlError,
    PodResourcesError,
    SettingsError,
    StateError,
)

__all__ = [
    "BridgeError",
    "CdiError",
    "CheckpointError",
    "DevicePluginError",
    "NvmlError",
    "PodResourcesError",
    "SettingsError",
    "StateError",
]
