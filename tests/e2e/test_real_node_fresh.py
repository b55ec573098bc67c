"""A node that was never legacy, on the real node (``bridge_node.py``, ``realnode.py``).

No device plugin ever ran on it and the agent's state directory is empty; the node is labelled
for DRA before the agent starts (a node pool's new node). With the container toolkit's (fake)
CDI spec naming each GPU by index and UUID (toolkit 1.16 on) the agent publishes from the spec
(an ``InventorySource`` Event names it) and a pod converted by ``dra-migrate convert`` runs
through containerd on the GPU it was allocated. With an index-only spec and no NVML (this host
has no driver) a new agent refuses the node with a ``PublicationRefused`` Event saying why, and
publishes nothing. Everything is removed afterwards.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from dra_bridge.translate.catalog import Catalog
from tests.deviceplugins.toolkit_cdi import write_toolkit_spec
from tests.e2e.bridge_node import bridge_kubeconfig, device_classes, our_slices, published_ids, set_mode, start_bridge
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubeapi import KubeClient, api_path, wait_for
from tests.e2e.node_pods import cleanup, log_of, seen_uuids
from tests.e2e.realnode import RealNode
from tests.e2e.test_real_node_bridge import UUIDS, allocated_uuids, run_converted

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]


def node_events(kube: KubeClient, node: str, reason: str, since: float) -> list[str]:
    """Messages of the node's Events of ``reason`` created at ``since`` or later (whole seconds)."""
    out = []
    for e in kube.list(api_path("v1", "events", "default"), field_selector=f"involvedObject.name={node}"):
        created = datetime.strptime(e["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        if e.get("reason") == reason and created.timestamp() >= int(since):
            out.append(str(e.get("message", "")))
    return out


def test_a_never_legacy_node_publishes_from_the_toolkit_spec_and_an_index_only_one_is_refused(
    catalog: Catalog, real_node: RealNode, kube: KubeClient, control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    began, since = time.monotonic(), time.time()
    node = real_node.name
    toolkit = write_toolkit_spec(real_node.cdi_dir, UUIDS, tmp_path / "identity")
    bridge = None
    try:
        with (
            bridge_kubeconfig(control_plane, kube, namespace, tmp_path / "bridge.kubeconfig") as kc,
            device_classes(kube, catalog),
        ):
            set_mode(kube, node, "dra")  # labelled before the agent starts, nothing recorded
            bridge = first = start_bridge(real_node, kc, tmp_path / "state", tmp_path / "bridge.log")
            published = wait_for(lambda: first.check_alive() or published_ids(kube, node), 30, "slices published")
            assert sorted(published.values()) == UUIDS
            assert not (tmp_path / "state" / "inventory.json").exists()
            source = wait_for(lambda: node_events(kube, node, "InventorySource", since), 10, "the source's Event")
            assert source == [
                f"inventory from the NVIDIA container toolkit CDI spec {toolkit}: 2 device(s), none recorded while legacy"
            ]

            _, claim = run_converted(kube, real_node, namespace, "fresh")
            (uuid,) = allocated_uuids(claim, published, node)
            assert seen_uuids(log_of(kube, namespace, "fresh")) == [uuid]  # containerd applied the toolkit's edits
            kube.delete(api_path("v1", "pods", namespace, "fresh"))
            wait_for(lambda: not kube.exists(api_path("v1", "pods", namespace, "fresh")), 60, "pod gone")
            print(f"\nfresh node published and ran a converted pod in {time.monotonic() - began:.1f}s")

            # another never-legacy node, its spec by index only, no NVML: refused, nothing published
            first.stop()
            for s in our_slices(kube, node):
                kube.delete(api_path("resource.k8s.io/v1", "resourceslices", name=s["metadata"]["name"]))
            write_toolkit_spec(real_node.cdi_dir, UUIDS, tmp_path / "identity", strategies=("index",))
            bridge = second = start_bridge(real_node, kc, tmp_path / "state2", tmp_path / "bridge2.log")
            refused = wait_for(
                lambda: (
                    second.check_alive()
                    or [m for m in node_events(kube, node, "PublicationRefused", since) if "index only" in m]
                ),
                30,
                "the refusal's Event",
            )
            assert "NVML does not load" in refused[0] and str(toolkit) in refused[0], refused
            assert our_slices(kube, node) == []
            for agent in (first, second):
                assert "Traceback" not in agent.log_text(), agent.log_text()
            print(f"index-only spec refused {time.monotonic() - began:.1f}s after the start")
    finally:
        cleanup(kube, real_node, namespace, bridge, toolkit)
