"""The kubelet Device Plugin v1beta1 API: our own ``api.proto``, its committed generated stubs, a client.

The bridge calls a device plugin's ``Allocate`` for one device while the node is still legacy, to
learn the container edits the plugin hands the runtime (docs/design.md D10; a third process may
call ``Allocate``, which reserves nothing: docs/design.md D6); the test device plugins under
``tests/deviceplugins/`` serve the same API.

The stubs (``api_pb2.py``, ``api_pb2.pyi``, ``api_pb2_grpc.py``) are generated from ``api.proto``
with grpcio-tools and committed, so installing the package needs no code generation;
``tests/bridge/test_units.py`` regenerates them into a temporary directory and fails when they
differ from the committed ones. To regenerate, copy ``api.proto`` to
``SRC/dra_bridge/bridge/deviceplugin/`` and run ``python -m grpc_tools.protoc -I SRC
--python_out=OUT --pyi_out=OUT --grpc_python_out=OUT dra_bridge/bridge/deviceplugin/api.proto``
(the path under SRC is the import path the generated code uses).

The client lives in :mod:`bridge.deviceplugin.client`.
"""

from __future__ import annotations

__all__: list[str] = []
