"""Restarts and surge rollouts of the agent on the real node (docs/design.md D43, D44), measured
from the API server's audit log (every ResourceSlice write by anyone: ``audit.SLICE_AUDIT_POLICY``).

- The agent is killed with SIGKILL while a converted pod runs and started again at once (well
  within the kubelet's 30 s): no ResourceSlice delete by anyone, the slices are the same objects,
  the pod runs on undisturbed, a new pod is prepared and deleting the pods unprepares them. The
  second start has a settle period of 120 s: the new pod runs long before that.
- The agent stays down longer than the kubelet's 30 s: the kubelet deletes the driver's slices
  (its ``deletecollection``, not ours); the agent, started again with a settle period of 120 s,
  publishes on its first tick.
- Two agents overlap as in a surge rollout (``--pod-uid``, each with its own ServiceAccount, so the
  audit log tells them apart): the new one takes over on its first tick without writing a slice,
  the old one writes none from then on, the kubelet's Prepare of a new pod goes to the new one, and
  the Node condition says one count throughout.

Each test removes what it created (pods, slices, the node's label and the agent's Node condition).
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from dra_bridge.translate.catalog import Catalog
from tests.deviceplugins.toolkit_cdi import write_toolkit_spec
from tests.e2e.audit import SliceWrite, service_account_user, slice_writes
from tests.e2e.bridge_node import (
    Bridge,
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
from tests.e2e.kubeapi import KubeClient, api_path, create_namespace, wait_for
from tests.e2e.node_pods import cleanup
from tests.e2e.realnode import RealNode
from tests.e2e.test_real_node_bridge import run_converted, slice_uids

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]

UUIDS = ["GPU-5e6f7a8b-0000-4000-8000-000000000001", "GPU-5e6f7a8b-0000-4000-8000-000000000002"]
CONDITION = "DRABridgePreparedClaims"
LONG_SETTLE = ["--settle-period=120"]  # a settle period no restart may wait for
DELETES = ("delete", "deletecollection")


def deletes(writes: list[SliceWrite]) -> list[SliceWrite]:
    return [w for w in writes if w.verb in DELETES]


def by(writes: list[SliceWrite], user: str) -> list[SliceWrite]:
    return [w for w in writes if w.user == user]


def condition(kube: KubeClient, node: str) -> dict[str, Any]:
    for c in kube.get(api_path("v1", "nodes", name=node))["status"].get("conditions") or []:
        if c["type"] == CONDITION:
            return dict(c)
    return {}


def remove_condition(kube: KubeClient, node: str) -> None:
    conditions = kube.get(api_path("v1", "nodes", name=node))["status"].get("conditions") or []
    for i, c in reversed(list(enumerate(conditions))):
        if c["type"] == CONDITION:
            kube.patch_status(
                api_path("v1", "nodes", name=node), [{"op": "remove", "path": f"/status/conditions/{i}"}], "json"
            )


def kill(bridge: Bridge) -> None:
    """SIGKILL: no clean-up at all (its sockets stay behind, as after an OOM kill)."""
    bridge.proc.kill()
    bridge.proc.wait(10)


def container_of(kube: KubeClient, namespace: str, pod: str) -> tuple[str, int, bool]:
    """The pod's container: (ID, restart count, running)."""
    (status,) = kube.get(api_path("v1", "pods", namespace, pod))["status"]["containerStatuses"]
    return status["containerID"], int(status["restartCount"]), "running" in status["state"]


@contextlib.contextmanager
def node_set_up(
    catalog: Catalog, node: RealNode, kube: KubeClient, cp: ControlPlane, namespace: str, tmp_path: Path
) -> Iterator[Path]:
    """The seeded inventory, the toolkit's CDI spec, the DeviceClasses and the agent's kubeconfig
    (ServiceAccount ``<namespace>/dra-bridge``); everything removed afterwards."""
    seed_inventory(tmp_path / "state", node.name, [("nvidia.com/gpu", u) for u in UUIDS])
    toolkit = write_toolkit_spec(node.cdi_dir, UUIDS, tmp_path / "identity")
    try:
        with (
            bridge_kubeconfig(cp, kube, namespace, tmp_path / "bridge.kubeconfig") as kc,
            device_classes(kube, catalog),
        ):
            yield kc
    finally:
        toolkit.unlink(missing_ok=True)
        remove_condition(kube, node.name)


def publish_first(node: RealNode, kube: KubeClient, kc: Path, tmp_path: Path, pod_uid: str = "") -> Bridge:
    bridge = start_bridge(node, kc, tmp_path / "state", tmp_path / "bridge-1.log", pod_uid=pod_uid)
    set_mode(kube, node.name, "dra")
    published = wait_for(lambda: bridge.check_alive() or published_ids(kube, node.name), 30, "slices published")
    assert sorted(published.values()) == UUIDS
    return bridge


def test_a_sigkill_restart_within_30s_deletes_no_slice_and_disrupts_no_pod(
    catalog: Catalog, real_node: RealNode, kube: KubeClient, control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    node = real_node.name
    began = datetime.now(UTC)
    bridge = None
    try:
        with node_set_up(catalog, real_node, kube, control_plane, namespace, tmp_path) as kc:
            bridge = publish_first(real_node, kube, kc, tmp_path)
            before = slice_uids(kube, node)
            _, first = run_converted(kube, real_node, namespace, "first")
            container = container_of(kube, namespace, "first")

            kill(bridge)
            killed = time.monotonic()
            bridge = start_bridge(real_node, kc, tmp_path / "state", tmp_path / "bridge-2.log", LONG_SETTLE)
            running = bridge
            wait_for(lambda: running.check_alive() or "resuming publication" in running.log_text(), 10, "resumed")
            # the kubelet drops the plugin when its socket is replaced and registers it again: a pod
            # whose Prepare falls in between waits for the kubelet's own retry, so wait for it
            wait_for(lambda: running.check_alive() or "kubelet registered" in running.log_text(), 10, "registered")
            back = time.monotonic() - killed
            print(f"\nresumed and registered again {back:.1f}s after the SIGKILL")
            assert back < 30, "the restart took longer than the kubelet's 30 s"
            _, second = run_converted(kube, real_node, namespace, "second")  # Prepare works
            assert set(prepared_claims(tmp_path / "state")) == {first["metadata"]["uid"], second["metadata"]["uid"]}
            assert slice_uids(kube, node) == before  # the same objects: nobody deleted or re-created them
            assert container_of(kube, namespace, "first") == container  # the pod ran on undisturbed

            kube.delete(api_path("v1", "pods", namespace, "first"))  # Unprepare works too
            wait_for(
                lambda: (
                    running.check_alive() or set(prepared_claims(tmp_path / "state")) == {second["metadata"]["uid"]}
                ),
                60,
                "the kubelet's NodeUnprepareResources",
            )
            writes = slice_writes(control_plane.audit_log, began)
            assert deletes(writes) == [], writes
            assert "Traceback" not in bridge.log_text(), bridge.log_text()
    finally:
        cleanup(kube, real_node, namespace, bridge)


def test_a_restart_longer_than_the_kubelets_30s_republishes_on_its_first_tick(
    catalog: Catalog, real_node: RealNode, kube: KubeClient, control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    node = real_node.name
    began = datetime.now(UTC)
    bridge = None
    try:
        with node_set_up(catalog, real_node, kube, control_plane, namespace, tmp_path) as kc:
            bridge = publish_first(real_node, kube, kc, tmp_path)
            kill(bridge)
            killed = time.monotonic()
            wait_for(lambda: not our_slices(kube, node), 60, "the kubelet's wipe of the driver's slices")
            print(f"\nthe kubelet wiped the slices {time.monotonic() - killed:.1f}s after the SIGKILL")
            restarted = time.monotonic()
            bridge = start_bridge(real_node, kc, tmp_path / "state", tmp_path / "bridge-2.log", LONG_SETTLE)
            running = bridge
            published = wait_for(lambda: running.check_alive() or published_ids(kube, node), 15, "republished")
            took = time.monotonic() - restarted
            print(f"republished {took:.1f}s after the start (settle period 120 s)")
            assert sorted(published.values()) == UUIDS and took < 15
            writes = slice_writes(control_plane.audit_log, began)
            ours = service_account_user(namespace, "dra-bridge")
            assert deletes(by(writes, ours)) == [], writes  # the only deletes are the kubelet's
            assert [w.verb for w in deletes(writes)] == ["deletecollection"], writes
            assert deletes(writes)[0].user == f"system:node:{node}", writes
            assert "resuming publication" in bridge.log_text() and "Traceback" not in bridge.log_text()
    finally:
        cleanup(kube, real_node, namespace, bridge)


def test_a_surge_rollout_has_one_publisher_and_one_prepared_count(
    catalog: Catalog, real_node: RealNode, kube: KubeClient, control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    node = real_node.name
    # pod UIDs short enough for the node's long temp paths (a socket path has at most 107 bytes)
    old_uid, new_uid = f"old-{uuid.uuid4().hex[:8]}", f"new-{uuid.uuid4().hex[:8]}"
    other = f"e2e-{uuid.uuid4().hex[:8]}"  # the new agent's ServiceAccount lives here
    create_namespace(kube, other)
    began = datetime.now(UTC)
    old = new = None
    try:
        with (
            node_set_up(catalog, real_node, kube, control_plane, namespace, tmp_path) as kc,
            bridge_kubeconfig(control_plane, kube, other, tmp_path / "new.kubeconfig") as kc_new,
        ):
            old = publish_first(real_node, kube, kc, tmp_path, pod_uid=old_uid)
            _, first = run_converted(kube, real_node, namespace, "first")
            before = slice_uids(kube, node)

            new = start_bridge(real_node, kc_new, tmp_path / "state", tmp_path / "new.log", LONG_SETTLE, new_uid)
            running = new
            wait_for(
                lambda: running.check_alive() or "now publishes the node's slices" in running.log_text(), 15, "takeover"
            )
            assert json.loads((tmp_path / "state" / "owner.json").read_text())["podUID"] == new_uid
            taken = datetime.now(UTC)
            _, second = run_converted(kube, real_node, namespace, "second")  # the kubelet calls the newest
            assert second["metadata"]["uid"] in new.log_text() and second["metadata"]["uid"] not in old.log_text()
            assert set(prepared_claims(tmp_path / "state")) == {first["metadata"]["uid"], second["metadata"]["uid"]}
            two = "2 prepared claim(s) on this node"
            wait_for(
                lambda: condition(kube, node).get("message") == two,
                30,
                "the count 2",
                observe=lambda: condition(kube, node),
            )
            for _ in range(8):  # both instances tick (0.5 s) and write the condition: one count
                time.sleep(0.5)
                assert condition(kube, node).get("message") == two, condition(kube, node)
                assert old.alive() and new.alive()
            assert slice_uids(kube, node) == before

            writes = slice_writes(control_plane.audit_log, began)
            old_user = service_account_user(namespace, "dra-bridge")
            new_user = service_account_user(other, "dra-bridge")
            assert [w for w in by(writes, old_user) if w.received >= taken] == [], writes  # the old one: none
            assert by(writes, new_user) == [], writes  # the new one found its slices: no delete/create
            assert deletes(writes) == [], writes
            old.stop()  # the rollout ends: the old pod terminates
            assert (real_node.root_dir / "plugins" / "dra-bridge.io" / f"dra-{new_uid}.sock").exists()
            for b in (old, new):
                assert "Traceback" not in b.log_text(), b.log_text()
    finally:
        if old is not None:
            old.stop()
        cleanup(kube, real_node, namespace, new)
        kube.delete(api_path("v1", "namespaces", name=other), ignore_missing=True)
