"""``dra-bridge``: the node agent's command line.

Subcommands:
    run (default)        the agent loop (see :mod:`bridge.agent`)
    inventory            print the recorded inventory and what the kubelet offers now
    inventory --json     print the kubelet's ``AllocatableResourcesResponse`` in its protobuf JSON
                         mapping (the input of ``dra-migrate slices --podresources``)

Flags and their environment twins are in :mod:`bridge.settings`. Exit codes: 0 ok, 1 error
(message on stderr; also a usage error, kube.flags.EXIT_USAGE), 2 (EXIT_CHECKPOINT_UNREADABLE)
when ``inventory`` found the prepared-claims checkpoint unreadable (its line says why; the
agent reports it Unknown and prepares nothing until it is fixed). Logs go to stderr; only
``inventory`` writes to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from dra_bridge.bridge.errors import BridgeError
from dra_bridge.bridge.podresources.client import PodResourcesClient, socket_path
from dra_bridge.bridge.settings import Settings, build_parser
from dra_bridge.bridge.state import InventoryStore
from dra_bridge.kube.errors import KubeError
from dra_bridge.kube.flags import Parser, add_version
from dra_bridge.kube.logs import configure as configure_logs
from dra_bridge.kube.logs import escape
from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.errors import TranslateError

logger = logging.getLogger(__name__)
#: ``dra-bridge inventory``'s exit code when the prepared-claims checkpoint is unreadable.
EXIT_CHECKPOINT_UNREADABLE = 2


def _parser() -> argparse.ArgumentParser:
    parser = build_parser(add_version(Parser(prog="dra-bridge", description=__doc__.split("\n\n")[0]), "dra-bridge"))
    sub = parser.add_subparsers(dest="command")
    build_parser(sub.add_parser("run", help="run the agent (default)"), argparse.SUPPRESS)
    inv = build_parser(
        sub.add_parser("inventory", help="print what is recorded and what the kubelet offers now"), argparse.SUPPRESS
    )
    inv.add_argument("--json", action="store_true", help="print the kubelet's AllocatableResourcesResponse as JSON")
    return parser


async def inventory(settings: Settings, as_json: bool, out: TextIO) -> int:
    """Print the recorded inventory and the kubelet's current offer (or only the latter as JSON)."""
    client = PodResourcesClient(socket_path(settings.kubelet_dir))
    try:
        offered = await client.allocatable()
    finally:
        await client.close()
    if as_json:
        json.dump(offered, out, indent=2, sort_keys=True)
        out.write("\n")
        return 0
    recorded = InventoryStore(settings.state_dir).load()
    out.write(f"recorded ({InventoryStore(settings.state_dir).path}, {len(recorded.devices)} device(s)):\n")
    for d in recorded.devices:
        out.write(f"  {d['resourceName']}  {d['deviceID']}  numa={','.join(map(str, d['numaNodes'])) or '-'}\n")
    from dra_bridge.bridge.kubeletplugin.checkpoint import CheckpointStore
    from dra_bridge.translate.inventory.allocatable import group_allocatable

    now = group_allocatable(offered)
    out.write(f"offered by the kubelet now ({len(now)} device(s)):\n")
    for d in now:
        out.write(f"  {d['resourceName']}  {d['deviceID']}  numa={','.join(map(str, d['numaNodes'])) or '-'}\n")
    store = CheckpointStore(settings.state_dir)
    try:
        exists = store.path.exists()
        claims = len(store.load().claims)
    except BridgeError as exc:
        out.write(f"checkpoint ({store.path}): unreadable: {escape(str(exc))}\n")
        return EXIT_CHECKPOINT_UNREADABLE
    out.write(f"checkpoint ({store.path}): {'' if exists else 'none, '}{claims} prepared claim(s)\n")
    return 0


async def run(settings: Settings) -> int:
    """Build the agent from settings and run it until SIGTERM/SIGINT."""
    from dra_bridge.bridge.agent import Agent
    from dra_bridge.bridge.drm_sysfs import read_drm
    from dra_bridge.bridge.health import serve
    from dra_bridge.bridge.kubeletplugin.node_plugin import Collection, PluginPaths, start_plugin
    from dra_bridge.bridge.nvml import check_uuids, load_library, probe
    from dra_bridge.bridge.publisher import Publisher
    from dra_bridge.kube.api import ApiServer
    from dra_bridge.kube.client import connect
    from dra_bridge.translate.edit_sources import lookup

    if settings.nvml_driver_root:
        load_library(settings.nvml_driver_root)
    catalog_text = Path(settings.catalog).read_text("utf-8") if settings.catalog else None
    catalog = load_catalog(catalog_text, settings.catalog or "user catalog")
    client = await connect(settings.kubeconfig)
    api = ApiServer(client)
    publisher = Publisher(api, settings.node_name, catalog.bridge_driver, settings.resource_api_version)
    agent = Agent(
        settings,
        catalog,
        PodResourcesClient(socket_path(settings.kubelet_dir)),
        InventoryStore(settings.state_dir),
        api,
        publisher,
        nvml_probe=probe,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    paths = PluginPaths.from_settings(settings)
    plugin = await start_plugin(
        paths,
        api,
        settings.node_name,
        agent,  # the plugin's view of the hand-over half (bridge.ports.HandoverView)
        metrics=agent.metrics,
        edits=lookup(agent.recorded_edits, catalog, lambda: read_drm(paths.sysfs), lambda: agent.recorded.identities),
        nvml_check=check_uuids,
    )
    plugin.collection = Collection(agent.kubelet, settings.claim_grace_period)  # it reads PodResources List
    agent.plugin = plugin  # and the agent's of the plugin (bridge.ports.PluginView)
    runner = None
    if settings.health_port:
        runner = await serve(agent.health, agent.metrics, settings.health_port, 3 * settings.poll_interval + 30)
    logger.info(
        "dra-bridge agent for node %s, driver %s, kubelet %s",
        settings.node_name,
        catalog.bridge_driver,
        settings.kubelet_dir,
    )
    try:
        await agent.run(stop)
    finally:
        if runner is not None:
            await runner.cleanup()
        await plugin.stop()
        await client.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point."""
    args = _parser().parse_args(argv)
    configure_logs("INFO")  # until the settings say otherwise: what reading them logs is formatted too
    try:
        settings = Settings.from_namespace(args).validate(need_node=args.command != "inventory")
        configure_logs(settings.log_level)
        if args.command == "inventory":
            return asyncio.run(inventory(settings, args.json, sys.stdout))
        return asyncio.run(run(settings))
    except (BridgeError, KubeError, TranslateError, OSError) as exc:
        print(f"dra-bridge: {escape(str(exc))}", file=sys.stderr)  # a path or value the caller gave, escaped
        return 1


if __name__ == "__main__":
    sys.exit(main())
