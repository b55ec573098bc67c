"""The device plugin comes back while a claim is prepared (docs/design.md D34), on the real node.

The bridge publishes a seeded inventory of two GPUs and the real kubelet prepares a converted
pod's claim on one. Then a device plugin registers with the real kubelet offering the same two
device IDs: the agent raises the alarm (log, a ``DeviceOfferedAgain`` Event on the Node) and
withdraws the slices, and NodePrepareResources for a fresh claim on the other GPU (called on the
bridge's socket as the kubelet calls it) is refused with an error naming the device and that the
kubelet offers it. The plugin registers under its own resource name, so the capacity the kubelet
keeps for 5 minutes after it stops is no ``nvidia.com/gpu`` that the next test would wait for.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dra_bridge.bridge.report import EVENT_NAMESPACE
from dra_bridge.translate.catalog import Catalog
from tests.bridge.draplugin_fixtures import Kubelet
from tests.deviceplugins.toolkit_cdi import write_toolkit_spec
from tests.e2e.bridge_node import (
    DRIVER,
    V1,
    bridge_kubeconfig,
    device_classes,
    our_slices,
    prepared_claims,
    published_ids,
    seed_inventory,
    set_mode,
    start_bridge,
)
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubeapi import KubeClient, api_path, wait_for
from tests.e2e.node_pods import cleanup
from tests.e2e.realnode import RealNode
from tests.e2e.test_real_node_bridge import allocated_uuids, run_converted

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]

UUIDS = ["GPU-3d2c1b0a-0000-4000-8000-000000000001", "GPU-3d2c1b0a-0000-4000-8000-000000000002"]
RETURNING = "example.com/returning-gpu"


def offered_again(kube: KubeClient, node: str) -> list[str]:
    return [
        str(e.get("message"))
        for e in kube.list(api_path("v1", "events", EVENT_NAMESPACE))
        if e.get("reason") == "DeviceOfferedAgain" and e.get("involvedObject", {}).get("name") == node
    ]


def test_a_returning_device_plugin_raises_the_alarm_and_prepare_refuses_its_devices(
    catalog: Catalog, real_node: RealNode, kube: KubeClient, control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    began = time.monotonic()
    node = real_node.name
    state = tmp_path / "state"
    seed_inventory(state, node, [("nvidia.com/gpu", u) for u in UUIDS])
    toolkit = write_toolkit_spec(real_node.cdi_dir, UUIDS, tmp_path / "identity")
    bridge, plugin = None, None
    try:
        with (
            bridge_kubeconfig(control_plane, kube, namespace, tmp_path / "bridge.kubeconfig") as kc,
            device_classes(kube, catalog),
        ):
            bridge = start_bridge(real_node, kc, state, tmp_path / "bridge.log")
            set_mode(kube, node, "dra")
            published = wait_for(lambda: bridge.check_alive() or published_ids(kube, node), 30, "slices published")
            _, claim = run_converted(kube, real_node, namespace, "first")
            (held,) = allocated_uuids(claim, published, node)
            assert list(prepared_claims(state)) == [claim["metadata"]["uid"]]
            (other,) = [u for u in UUIDS if u != held]
            (other_name,) = [n for n, u in published.items() if u == other]

            log = (tmp_path / "device-plugin.log").open("ab")
            plugin = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.deviceplugins.serve",
                    "--strategy",
                    "envvar",
                    "--resource",
                    RETURNING,
                    "--socket-name",
                    "returning-gpu.sock",
                    "--devices",
                    ",".join(UUIDS),
                    "--kubelet-dir",
                    "/var/lib/kubelet/device-plugins",
                    "--cdi-dir",
                    str(tmp_path / "plugin-cdi"),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            log.close()
            messages = wait_for(
                lambda: bridge.check_alive() or offered_again(kube, node), 60, "the DeviceOfferedAgain Event"
            )
            assert any(held in m for m in messages), messages
            assert "ALARM" in bridge.log_text()
            wait_for(lambda: bridge.check_alive() or not our_slices(kube, node), 30, "the slices withdrawn")

            # a fresh claim on the other GPU, allocated before the withdrawal: the last line refuses it
            second = kube.create(
                api_path(V1, "resourceclaims", namespace),
                {
                    "metadata": {"name": "second"},
                    "spec": {
                        "devices": {
                            "requests": [{"name": "gpu", "exactly": {"deviceClassName": "nvidia-gpu.dra-bridge.io"}}]
                        }
                    },
                },
            )
            second["status"] = {
                "allocation": {
                    "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": node, "device": other_name}]}
                }
            }
            second = kube.replace_status(api_path(V1, "resourceclaims", namespace, "second"), second)
            uid = second["metadata"]["uid"]

            async def prepare() -> str:
                client = Kubelet(real_node.root_dir / "plugins" / DRIVER / "dra.sock")
                try:
                    return str((await client.prepare((uid, "second"))).claims[uid].error)
                finally:
                    await client.close()

            error = asyncio.run(prepare())
            assert other in error and ("offered by the kubelet" in error or "does not publish" in error), error
            assert uid not in prepared_claims(state)
            print(f"\nalarm, Event and refusal {time.monotonic() - began:.1f}s after the start")
    finally:
        if plugin is not None:
            plugin.terminate()
            plugin.wait(15)
        cleanup(kube, real_node, namespace, bridge, toolkit)
        for e in kube.list(api_path("v1", "events", EVENT_NAMESPACE)):  # leave no alarm for the next test
            if e.get("involvedObject", {}).get("name") == node and e.get("reason") == "DeviceOfferedAgain":
                kube.delete(api_path("v1", "events", EVENT_NAMESPACE, e["metadata"]["name"]), ignore_missing=True)
