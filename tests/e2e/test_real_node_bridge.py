"""The dra-bridge agent as the real kubelet's DRA plugin (``bridge_node.py``, ``realnode.py``).

On a node where no device plugin ever registered: the agent runs as ``dra-bridge run`` with a
recorded inventory seeded into its state dir, the node is labelled for DRA, our DeviceClasses
and the NVIDIA container toolkit's (fake) CDI spec are in place. A pod converted by
``dra-migrate convert`` gets a claim that the real scheduler allocates on our slices; the real
kubelet calls our NodePrepareResources; containerd applies the toolkit's CDI edits, so the
container reads the allocated GPU's UUID. The kubelet restarts: the slices are published
again, the prepared claim is still served (a killed container comes back with its device), a
new pod is prepared. Deleting the pods unprepares them (checkpoint entries gone).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dra_bridge.translate.catalog import Catalog
from tests.deviceplugins.toolkit_cdi import write_toolkit_spec
from tests.e2e.bridge_node import (
    DRIVER,
    V1,
    bridge_kubeconfig,
    check_health_stream,
    claim_of,
    device_classes,
    our_slices,
    prepared_claims,
    published_ids,
    seed_inventory,
    set_mode,
    start_bridge,
)
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubeapi import KubeClient, Obj, api_path, wait_for, wait_for_object
from tests.e2e.node_pods import cleanup, finished_log, log_of, seen_uuids, shows
from tests.e2e.realnode import RealNode

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]

UUIDS = ["GPU-0a1b2c3d-0000-4000-8000-000000000001", "GPU-0a1b2c3d-0000-4000-8000-000000000002"]


def converted(node: RealNode, name: str, script: str) -> tuple[Obj, Obj]:
    """``dra-migrate convert`` of a one-GPU pod: (ResourceClaimTemplate, Pod)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": node.env["BUSYBOX_IMAGE"],
                    "imagePullPolicy": "Never",
                    "command": ["sh", "-c", script],
                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                }
            ],
        },
    }
    out = subprocess.run(
        [str(Path(sys.executable).parent / "dra-migrate"), "convert", "-o", "json"],
        input=json.dumps(pod),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    items = json.loads(out.stdout)["items"]
    (template,) = [i for i in items if i["kind"] == "ResourceClaimTemplate"]
    (converted_pod,) = [i for i in items if i["kind"] == "Pod"]
    return template, converted_pod


def run_converted(kube: KubeClient, node: RealNode, namespace: str, name: str) -> tuple[Obj, Obj]:
    """Create the converted pod (which shows its GPUs, then sleeps); wait until it runs and has
    printed. Returns the running pod and its allocated claim."""
    template, pod = converted(node, name, shows())
    if not kube.exists(api_path(V1, "resourceclaimtemplates", namespace, template["metadata"]["name"])):
        kube.create(api_path(V1, "resourceclaimtemplates", namespace), template)  # the same for every 1-GPU pod
    kube.create(api_path("v1", "pods", namespace), pod)
    running = wait_for_object(
        kube,
        api_path("v1", "pods", namespace, name),
        lambda p: p.get("status", {}).get("phase") == "Running",
        60,
        f"pod {name} Running",
    )
    claim = claim_of(kube, namespace, running, pod["spec"]["resourceClaims"][0]["name"])
    wait_for(lambda: log_of(kube, namespace, name).endswith("done\n"), 30, f"pod {name}'s output")
    return running, claim


def allocated_uuids(claim: Obj, published: dict[str, str], node: str) -> list[str]:
    results = claim["status"]["allocation"]["devices"]["results"]
    assert all(r["driver"] == DRIVER and r["pool"] == node for r in results), results
    return sorted(published[r["device"]] for r in results)


def slice_uids(kube: KubeClient, node: str) -> set[str]:
    return {s["metadata"]["uid"] for s in our_slices(kube, node)}


def new_slice_uids(kube: KubeClient, node: str, before: set[str]) -> set[str] | None:
    """The node's slice UIDs once there are some and they differ from ``before``; None until then."""
    now = slice_uids(kube, node)
    return now if now and now != before else None


def test_kubelet_prepares_through_the_bridge_and_survives_its_restart(
    catalog: Catalog, real_node: RealNode, kube: KubeClient, control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    began = time.monotonic()
    node = real_node.name
    state = tmp_path / "state"
    seed_inventory(state, node, [("nvidia.com/gpu", u) for u in UUIDS])
    toolkit = write_toolkit_spec(real_node.cdi_dir, UUIDS, tmp_path / "identity")
    bridge = None
    try:
        with (
            bridge_kubeconfig(control_plane, kube, namespace, tmp_path / "bridge.kubeconfig") as kc,
            device_classes(kube, catalog),
        ):
            bridge = start_bridge(real_node, kc, state, tmp_path / "bridge.log")
            set_mode(kube, node, "dra")
            published = wait_for(lambda: bridge.check_alive() or published_ids(kube, node), 30, "slices published")
            assert sorted(published.values()) == UUIDS

            # the real scheduler allocates, the real kubelet prepares, containerd applies the toolkit's edits
            _, claim = run_converted(kube, real_node, namespace, "first")
            (uuid,) = allocated_uuids(claim, published, node)
            log = log_of(kube, namespace, "first")
            assert seen_uuids(log) == [uuid], log
            assert f"dev:nvidia{UUIDS.index(uuid)}" in log and "dev:nvidiactl" in log, log
            checkpoint = prepared_claims(state)
            assert list(checkpoint) == [claim["metadata"]["uid"]], checkpoint
            (device,) = checkpoint[claim["metadata"]["uid"]]["devices"]
            assert device["cdiDeviceIDs"] == [f"nvidia.com/gpu={uuid}"], device
            assert not list(real_node.cdi_dir.glob(f"{DRIVER}-claim_*")), "NVIDIA devices need no spec of ours"
            check_health_stream(kube, real_node, bridge, namespace, "first", uuid, toolkit)
            print(f"\nfirst pod prepared and running {time.monotonic() - began:.1f}s after the start")

            # the kubelet restarts: slices come back, the prepared claim is still served
            before = slice_uids(kube, node)
            real_node.restart_kubelet()
            after = wait_for(
                lambda: bridge.check_alive() or new_slice_uids(kube, node, before),
                30,
                "slices published again after the kubelet's restart",
            )
            assert len(after) == len(before)
            assert sorted(published_ids(kube, node).values()) == UUIDS
            (status,) = kube.get(api_path("v1", "pods", namespace, "first"))["status"]["containerStatuses"]
            real_node.ctr("tasks", "kill", "--signal", "SIGKILL", status["containerID"].split("://", 1)[1])
            wait_for_object(
                kube,
                api_path("v1", "pods", namespace, "first"),
                lambda p: any(
                    c["restartCount"] >= 1 and "running" in c["state"] for c in p["status"]["containerStatuses"]
                ),
                60,
                "container restarted",
            )
            log = wait_for(
                lambda: finished_log(kube, namespace, "first"),
                30,
                "the restarted container's output",
            )
            assert seen_uuids(log) == [uuid], log

            # a new pod after the restart: the plugin registered again, the other GPU is prepared
            _, claim2 = run_converted(kube, real_node, namespace, "second")
            (uuid2,) = allocated_uuids(claim2, published_ids(kube, node), node)
            assert uuid2 != uuid and seen_uuids(log_of(kube, namespace, "second")) == [uuid2]
            assert set(prepared_claims(state)) == {claim["metadata"]["uid"], claim2["metadata"]["uid"]}

            # deleting the pods unprepares their claims
            for name in ("first", "second"):
                kube.delete(api_path("v1", "pods", namespace, name))
            wait_for(
                lambda: bridge.check_alive() or prepared_claims(state) == {},
                60,
                "the kubelet's NodeUnprepareResources",
                observe=lambda: prepared_claims(state),
            )
            assert "Traceback" not in bridge.log_text(), bridge.log_text()
            print(
                f"whole test {time.monotonic() - began:.1f}s; kubelet restart "
                f"{real_node.timings['restart_kubelet']:.1f}s"
            )
    finally:
        cleanup(kube, real_node, namespace, bridge, toolkit)
