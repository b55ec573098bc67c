"""The kubelet's plugin APIs the bridge serves: our own ``.proto`` files and their committed stubs.

- ``registration.proto`` (package ``pluginregistration``, service ``Registration``: ``GetInfo``,
  ``NotifyRegistrationStatus``): the plugin-watcher handshake;
- ``dra_v1.proto`` / ``dra_v1beta1.proto`` (packages ``k8s.io.kubelet.pkg.apis.dra.v1`` and
  ``...v1beta1``, service ``DRAPlugin``: ``NodePrepareResources``, ``NodeUnprepareResources``);
- ``dra_health_v1alpha1.proto`` (package ``v1alpha1``, service ``DRAResourceHealth``: the server
  stream ``NodeWatchResources``): device health for the kubelet (KEP-4680).

Re-typed from the kubelet's own definitions under
https://github.com/kubernetes/kubelet/tree/master/pkg/apis (``pluginregistration/v1``, ``dra/v1``,
``dra/v1beta1``, ``dra-health/v1alpha1``: package names, field numbers and RPC names;
``tests/bridge/test_kubeletapi.py`` pins them). The stubs (``*_pb2.py``, ``*_pb2.pyi``,
``*_pb2_grpc.py``) are generated with grpcio-tools and committed, exactly as
:mod:`bridge.podresources`'s: copy the ``.proto`` files to ``SRC/dra_bridge/bridge/kubeletapi/``
and run ``python -m grpc_tools.protoc -I SRC --python_out=OUT --pyi_out=OUT --grpc_python_out=OUT
dra_bridge/bridge/kubeletapi/NAME.proto``; ``tests/bridge/test_units.py`` regenerates every stub and
fails when one differs.
"""

from __future__ import annotations

__all__: list[str] = []
