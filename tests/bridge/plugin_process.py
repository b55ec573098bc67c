"""The DRA plugin in its own process, for the crash tests: ``python -m tests.bridge.plugin_process
ROOT CLAIMS_JSON BOOT_ID`` serves the plugin on ROOT's layout against a fake API holding the
claims, prints ``ready`` and runs until killed."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from dra_bridge.bridge.kubeletplugin.node_plugin import start_plugin
from dra_bridge.bridge.ports import StaticView
from tests.bridge.draplugin_fixtures import INVENTORY, NODE, fake_api, layout


async def main(root: Path, claims: Path, boot_id: str) -> None:
    paths = layout(root)

    async def version() -> str:
        return "resource.k8s.io/v1"

    plugin = await start_plugin(
        paths,
        fake_api(json.loads(claims.read_text())),
        NODE,
        StaticView(INVENTORY),
        boot_id=lambda: boot_id,
    )
    print("ready", flush=True)
    await asyncio.Event().wait()
    await plugin.stop()  # never reached: the test kills the process (and the reference keeps the servers)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]))
