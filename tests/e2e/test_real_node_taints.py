"""Health that withdraws, on the real node and the 1.36 API server (``DRADeviceTaints`` on).

Two (fake) NVIDIA GPUs served through the container toolkit's spec, as in
``test_real_node_bridge.py``. A pod runs on GPU X; X turns unhealthy (the test hook
``DRA_BRIDGE_TEST_UNHEALTHY_FILE`` stands in for a failing GPU): its slice device gets the
``dra-bridge.io/unhealthy`` NoSchedule taint, kept by the API server, and the running pod keeps
running. Once that pod is gone, X is free but tainted: a new pod gets the other GPU. X healthy
again: the taint goes. Then X's toolkit CDI device stops resolving (the spec regenerated without
it: the health fact without NVML): X is tainted again, still published, and untainted once it
resolves. Everything is removed afterwards.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dra_bridge.bridge.kubeletplugin.node_plugin import UNHEALTHY_FILE_ENV
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.inventory.device_taints import TAINT_KEY
from tests.deviceplugins.toolkit_cdi import write_toolkit_spec
from tests.e2e.bridge_node import (
    bridge_kubeconfig,
    device_classes,
    our_slices,
    published_ids,
    seed_inventory,
    set_mode,
    start_bridge,
)
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubeapi import KubeClient, api_path, wait_for
from tests.e2e.node_pods import cleanup
from tests.e2e.realnode import RealNode
from tests.e2e.test_real_node_bridge import UUIDS, allocated_uuids, run_converted

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]


def tainted(kube: KubeClient, node: str) -> dict[str, list[str]]:
    """Device name -> its taint keys, for the node's devices that have any."""
    return {
        d["name"]: [t["key"] for t in d["taints"]]
        for s in our_slices(kube, node)
        for d in s["spec"]["devices"]
        if d.get("taints")
    }


def test_an_unhealthy_device_is_tainted_and_a_new_pod_gets_another(
    catalog: Catalog,
    real_node: RealNode,
    kube: KubeClient,
    control_plane: ControlPlane,
    namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    began = time.monotonic()
    node = real_node.name
    state = tmp_path / "state"
    unhealthy = tmp_path / "unhealthy"
    unhealthy.write_text("")
    monkeypatch.setenv(UNHEALTHY_FILE_ENV, str(unhealthy))
    seed_inventory(state, node, [("nvidia.com/gpu", u) for u in UUIDS])
    toolkit = write_toolkit_spec(real_node.cdi_dir, UUIDS, tmp_path / "identity")
    bridge = None
    try:
        with (
            bridge_kubeconfig(control_plane, kube, namespace, tmp_path / "bridge.kubeconfig") as kc,
            device_classes(kube, catalog),
        ):
            flags = ["--unhealthy-taint-after=1", "--healthy-untaint-after=1"]
            bridge = start_bridge(real_node, kc, state, tmp_path / "bridge.log", flags)
            set_mode(kube, node, "dra")
            published = wait_for(lambda: bridge.check_alive() or published_ids(kube, node), 30, "slices published")
            _, claim = run_converted(kube, real_node, namespace, "first")
            (uuid,) = allocated_uuids(claim, published, node)
            (name,) = [n for n, u in published.items() if u == uuid]

            unhealthy.write_text(uuid + "\n")
            assert wait_for(lambda: bridge.check_alive() or tainted(kube, node), 30, "the taint") == {name: [TAINT_KEY]}
            time.sleep(2)  # the running pod keeps its device and keeps running
            assert kube.get(api_path("v1", "pods", namespace, "first"))["status"]["phase"] == "Running"
            kube.delete(api_path("v1", "pods", namespace, "first"))
            wait_for(lambda: not kube.exists(api_path("v1", "pods", namespace, "first")), 60, "first pod gone")

            _, claim2 = run_converted(kube, real_node, namespace, "second")  # the tainted GPU is free
            assert allocated_uuids(claim2, published, node) == [u for u in UUIDS if u != uuid]

            unhealthy.write_text("")
            wait_for(lambda: bridge.check_alive() or not tainted(kube, node) or None, 30, "the taint removed")

            # no NVML here: the toolkit's spec regenerated without X makes X unhealthy; it stays
            # published and is tainted, never withdrawn at once, and resolving again lifts the taint
            write_toolkit_spec(real_node.cdi_dir, [u for u in UUIDS if u != uuid], tmp_path / "identity")
            found = wait_for(lambda: bridge.check_alive() or tainted(kube, node), 30, "the unresolved device's taint")
            assert found == {name: [TAINT_KEY]} and name in published_ids(kube, node)
            write_toolkit_spec(real_node.cdi_dir, UUIDS, tmp_path / "identity")
            wait_for(lambda: bridge.check_alive() or not tainted(kube, node) or None, 30, "its taint removed")
            log = bridge.log_text()
            assert "Traceback" not in log and "device taints kept by the API server" in log, log
            print(f"\ntainted, avoided and untainted in {time.monotonic() - began:.1f}s")
    finally:
        cleanup(kube, real_node, namespace, bridge, toolkit)
