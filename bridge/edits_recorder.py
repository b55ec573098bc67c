"""Record the device plugins' Allocate answers while the node is legacy (docs/design.md D10).

    recorder = EditsRecorder(kubelet_dir, catalog)
    new = await recorder.update(inventory)     # an Inventory with new ``edits``, or None

For each recorded resource whose catalog entry marks its plugin's Allocate free of side effects
(``edits.allocate``, :mod:`translate.catalog_edits`) and whose socket
``<kubelet dir>/device-plugins/<socket>`` exists, ask ``Allocate`` once per device, one device
per call (never ``ListAndWatch``: NVIDIA's plugin feeds every stream from one health channel, so a
second stream steals the kubelet's health events, ``ListAndWatch`` in
https://github.com/NVIDIA/k8s-device-plugin/blob/main/internal/plugin/server.go), and keep the
composing part of the answers
(:func:`translate.allocate_edits.compose`). A resource is asked again only when its recorded
device IDs change. A plugin that is down, restarting or answering an error is logged (once per
new reason) and asked again on a later tick; it never stops the agent nor publishing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import grpc

from dra_bridge.bridge.deviceplugin.client import DevicePluginClient, plugin_dir, to_json
from dra_bridge.bridge.errors import DevicePluginError
from dra_bridge.bridge.state import Inventory
from dra_bridge.translate.allocate_edits import ResourceEdits, compose
from dra_bridge.translate.catalog import Catalog

logger = logging.getLogger(__name__)

CALL_TIMEOUT = 2.0
"""Seconds one Allocate call may take."""


class EditsRecorder:
    """Asks the catalogued plugins of one node (see the module docstring)."""

    def __init__(self, kubelet_dir: str | Path, catalog: Catalog, timeout: float = CALL_TIMEOUT) -> None:
        self.dir, self.catalog, self.timeout = plugin_dir(kubelet_dir), catalog, timeout
        self.failures: dict[str, str] = {}
        """The last failure per resource (logged once); empty once its plugin answered."""

    def present_sockets(self) -> frozenset[str]:
        """Every file name in ``<kubelet dir>/device-plugins/`` (sockets need not end in
        ``.sock``: AMD's is ``amd.com_gpu``); empty when the directory is missing."""
        try:
            return frozenset(p.name for p in self.dir.iterdir() if not p.is_dir())
        except (FileNotFoundError, NotADirectoryError):
            return frozenset()

    def catalogued_sockets(self, resources: Iterable[str]) -> dict[str, str]:
        """Resource name -> its plugin's socket file name, where the catalog names one."""
        out = {}
        for resource in resources:
            mapping = self.catalog.lookup(resource)
            if mapping is not None and mapping.edits is not None and mapping.edits.socket:
                out[resource] = mapping.edits.socket
        return out

    async def _ask(self, resource: str, socket: Path, ids: list[str]) -> ResourceEdits | None:
        client = DevicePluginClient(socket, self.timeout)
        try:
            answers = {i: to_json(await client.allocate([i])) for i in ids}
        except (DevicePluginError, grpc.RpcError, OSError, ValueError) as exc:
            if self.failures.get(resource) != str(exc):
                logger.warning("cannot record the Allocate answers of %s, will retry: %s", resource, exc)
            self.failures[resource] = str(exc)
            return None
        finally:
            await client.close()
        self.failures.pop(resource, None)
        edits = compose(answers)
        kept = sum(1 for e in edits["devices"].values() if e)
        logger.info(
            "recorded the Allocate answers of %s from %s: %d of %d device(s) with edits that compose%s",
            resource,
            socket.name,
            kept,
            len(ids),
            f"; dropped: {'; '.join(edits['dropped'])}" if edits["dropped"] else "",
        )
        return edits

    async def record(self, inventory: Inventory) -> dict[str, ResourceEdits]:
        """The recorded edits of ``inventory``'s resources, asked again where its devices changed."""
        ids: dict[str, set[str]] = {}
        for d in inventory.devices:
            ids.setdefault(d["resourceName"], set()).add(d["deviceID"])
        out = {r: e for r, e in inventory.edits.items() if r in ids}
        for resource, wanted in sorted(ids.items()):
            mapping = self.catalog.lookup(resource)
            source = mapping.edits if mapping is not None else None
            known = out.get(resource)
            if source is None or not source.ask_allocate or (known is not None and set(known["devices"]) == wanted):
                continue
            socket = self.dir / source.socket
            if not socket.exists():
                continue  # the plugin is not running (yet): asked on a later tick
            edits = await self._ask(resource, socket, sorted(wanted))
            if edits is not None:
                out[resource] = edits
        return out

    async def update(self, inventory: Inventory) -> Inventory | None:
        """``inventory`` with its edits recorded again, or None when nothing changed."""
        edits = await self.record(inventory)
        return replace(inventory, edits=edits) if edits != inventory.edits else None
