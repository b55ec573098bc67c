"""The channel a bridge client keeps to one gRPC server on a unix socket (the kubelet's
PodResources, a device plugin): opened on first use, closed after a failure so the next call
reconnects (sockets are re-created whenever the kubelet or a plugin restarts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc


class UnixSocketClient:
    """One lazily opened ``grpc.aio`` channel to ``unix://<path>``; ``timeout``: seconds per call."""

    def __init__(self, path: str | Path, timeout: float = 5.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self._channel: grpc.aio.Channel | None = None

    def _ensure(self) -> grpc.aio.Channel:
        if self._channel is None:
            self._channel = grpc.aio.insecure_channel(f"unix://{self.path}")
        return self._channel

    async def _unary(self, path: str, request: Any, response_type: Any) -> Any:
        """One unary call to the method ``path`` (``/<package>.<Service>/<Method>``) with the generated messages."""
        call = self._ensure().unary_unary(
            path, request_serializer=type(request).SerializeToString, response_deserializer=response_type.FromString
        )
        return await call(request, timeout=self.timeout)

    async def close(self) -> None:
        """Close the channel (a later call opens a new one)."""
        if self._channel is not None:
            channel, self._channel = self._channel, None
            await channel.close()
