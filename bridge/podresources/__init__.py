"""The kubelet PodResources v1 API: our own ``api.proto`` and its committed generated stubs.

The stubs (``api_pb2.py``, ``api_pb2.pyi``, ``api_pb2_grpc.py``) are generated from
``api.proto`` with grpcio-tools and committed, so installing the package needs no code
generation; ``tests/bridge/test_units.py`` regenerates them into a temporary
directory and fails when they differ from the committed ones. To regenerate, copy
``api.proto`` to ``SRC/dra_bridge/bridge/podresources/`` and run
``python -m grpc_tools.protoc -I SRC --python_out=OUT --pyi_out=OUT --grpc_python_out=OUT
dra_bridge/bridge/podresources/api.proto`` (the path under SRC is the import path the
generated code uses). The generated code checks the
protobuf and grpcio runtime versions it was generated with.

The client lives in :mod:`bridge.podresources.client`.
"""

from __future__ import annotations

__all__: list[str] = []
