"""The kubelet plugin-registration server (the plugin watcher's ``Registration`` service).

The API: https://github.com/kubernetes/kubelet/blob/master/pkg/apis/pluginregistration/v1/api.proto

Served on ``<kubelet dir>/plugins_registry/<driver>-reg.sock`` (``<driver>-<pod UID>-reg.sock``
with ``--pod-uid``): ``GetInfo`` answers
``{type: "DRAPlugin", name: <driver>, endpoint: <absolute path of dra.sock>,
supported_versions: ["v1.DRAPlugin", "v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth"]}`` (service
names, v1 first: a 1.34+ kubelet takes the first DRAPlugin it supports; the health stream is
optional, as the Go helper advertises it); ``NotifyRegistrationStatus`` records the kubelet's
verdict (``registered``, ``error``) and logs a refusal. A stale socket file is removed before
listening; the DRA service must be up first (:mod:`bridge.kubeletplugin.plugin`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import grpc

from dra_bridge.bridge.kubeletapi import registration_pb2, registration_pb2_grpc

logger = logging.getLogger(__name__)

PLUGIN_TYPE = "DRAPlugin"
SUPPORTED_VERSIONS = ("v1.DRAPlugin", "v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth")


class Registration(registration_pb2_grpc.RegistrationServicer):
    """``pluginregistration.Registration`` for one DRA driver."""

    def __init__(self, driver: str, endpoint: Path) -> None:
        self.driver, self.endpoint = driver, endpoint
        self.registered: bool | None = None
        """The kubelet's last verdict (None before the first)."""
        self.error = ""

    async def GetInfo(self, request: Any, context: Any) -> registration_pb2.PluginInfo:
        return registration_pb2.PluginInfo(
            type=PLUGIN_TYPE, name=self.driver, endpoint=str(self.endpoint), supported_versions=list(SUPPORTED_VERSIONS)
        )

    async def NotifyRegistrationStatus(self, request: Any, context: Any) -> registration_pb2.RegistrationStatusResponse:
        self.registered, self.error = bool(request.plugin_registered), str(request.error)
        if self.registered:
            logger.info("the kubelet registered DRA driver %s", self.driver)
        else:
            logger.error("the kubelet refused DRA driver %s: %s", self.driver, self.error)
        return registration_pb2.RegistrationStatusResponse()


async def listen(path: Path, add: list[tuple[Any, Any]]) -> grpc.aio.Server:
    """A started grpc.aio server on the unix socket ``path`` (a stale file removed first),
    serving each ``(add_XServicer_to_server, servicer)`` of ``add``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    server = grpc.aio.server()
    for adder, servicer in add:
        adder(servicer, server)
    server.add_insecure_port(f"unix://{path}")
    await server.start()
    return server


async def serve_registration(socket: Path, driver: str, endpoint: Path) -> tuple[grpc.aio.Server, Registration]:
    """Serve :class:`Registration` on ``socket`` (``<registry dir>/<driver>[-<pod UID>]-reg.sock``)."""
    servicer = Registration(driver, endpoint)
    server = await listen(socket, [(registration_pb2_grpc.add_RegistrationServicer_to_server, servicer)])
    return server, servicer
