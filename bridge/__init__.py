"""dra-bridge node agent: republishes a node's device-plugin inventory as ResourceSlices.

The I/O edge around :mod:`translate` (kubelet gRPC, node-local state, the API server). Modules:
``podresources`` (PodResources v1 proto, stubs, client), ``state`` (recorded inventory),
``interlocks`` (pure hand-over decisions), ``access`` (the API calls it makes), ``publisher``
(ResourceSlice reconciler, over the shared :mod:`kube` layer), ``nvml`` (optional), ``agent`` (the loop), ``health``,
``settings``, ``cli`` and ``errors``.
"""

from __future__ import annotations

from dra_bridge.bridge.errors import BridgeError, NvmlError, PodResourcesError, SettingsError, StateError

__all__ = ["BridgeError", "NvmlError", "PodResourcesError", "SettingsError", "StateError"]
