"""Our own CDI specs through the real kubelet and containerd (``bridge_node.py``, ``realnode.py``).

Two vendor devices known by PCI address, their DRM nodes in a test-only sysfs root
(``DRA_BRIDGE_TEST_SYSFS_ROOT``) whose ``dev`` numbers are harmless host character devices
(``/dev/null``, ``/dev/zero``, ...: they stand in for GPUs). One resource's edits come from a catalog
recipe (``drmNodes: [card, render]``), the other's from an Allocate answer recorded while legacy
(a DRM node the answer named, replaced by the one sysfs shows for its PCI address, and a node
``/dev/kfd`` whose host path is ``/dev/zero``). A pod per resource: the real scheduler allocates, the
real kubelet calls our NodePrepareResources, containerd accepts our spec (type and numbers given,
canonical paths) and the container sees its nodes with the numbers sysfs gave. Everything is removed
afterwards (pods, slices, classes, specs, the node's mode).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from dra_bridge.bridge.drm_sysfs import SYSFS_ENV
from dra_bridge.bridge.state import Inventory, InventoryStore
from dra_bridge.translate.allocate_edits import ResourceEdits
from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.inventory.allocatable import InventoryDevice
from tests.bridge.draplugin_fixtures import fake_sysfs
from tests.e2e.bridge_node import (
    DRIVER,
    V1,
    bridge_kubeconfig,
    claim_of,
    device_classes,
    prepared_claims,
    published_ids,
    set_mode,
    start_bridge,
)
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubeapi import KubeClient, Obj, api_path, wait_for, wait_for_object
from tests.e2e.node_pods import cleanup, log_of
from tests.e2e.realnode import RealNode

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]

RECIPE, RECORDED = "example.com/recipe-gpu", "example.com/recorded-gpu"
RECIPE_PCI, RECORDED_PCI = "0000:0a:00.0", "0000:0b:00.0"
CATALOG = f"""apiVersion: catalog.dra-bridge.io/v1
kind: Catalog
resources:
  - {{name: {RECIPE}, kind: gpu, deviceClass: recipe-gpu.example.com, edits: {{drmNodes: [card, render]}}}}
  - {{name: {RECORDED}, kind: gpu, deviceClass: recorded-gpu.example.com}}
"""
# card0/renderD128 are /dev/null and /dev/zero's numbers, card1 /dev/full's
DRM = {RECIPE_PCI: (("card0", 1, 3), ("renderD128", 1, 5)), RECORDED_PCI: (("card1", 1, 7),)}
ANSWER: ResourceEdits = {
    "devices": {
        RECORDED_PCI: {  # what the plugin answered while legacy: card5 was this GPU's node that boot
            "deviceNodes": [
                {"path": "/dev/dri/card5", "hostPath": "/dev/dri/card5", "permissions": "rw"},
                {"path": "/dev/kfd", "hostPath": "/dev/zero", "permissions": "rw"},
            ]
        }
    },
    "dropped": [],
}


def run_pod(kube: KubeClient, node: RealNode, namespace: str, name: str, device_class: str) -> tuple[Obj, str]:
    """A pod with one claim of ``device_class`` that lists its device nodes; (its claim, its log)."""
    kube.create(
        api_path(V1, "resourceclaimtemplates", namespace),
        {
            "metadata": {"name": name},
            "spec": {
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]}}
            },
        },
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": name}],
            "containers": [
                {
                    "name": "main",
                    "image": node.env["BUSYBOX_IMAGE"],
                    "imagePullPolicy": "Never",
                    "command": ["sh", "-c", "ls -l /dev/dri/ /dev/kfd 2>&1; echo done; exec sleep 3600"],
                    "resources": {"claims": [{"name": "gpu"}]},
                }
            ],
        },
    }
    kube.create(api_path("v1", "pods", namespace), pod)
    running = wait_for_object(
        kube,
        api_path("v1", "pods", namespace, name),
        lambda p: p.get("status", {}).get("phase") == "Running",
        60,
        f"pod {name} Running",
    )
    log = wait_for(lambda: (t := log_of(kube, namespace, name)).endswith("done\n") and t, 30, f"pod {name}'s output")
    return claim_of(kube, namespace, running, "gpu"), str(log)


def node_line(log: str, name: str) -> tuple[int, int] | None:
    """(major, minor) of the character device ``name`` in ``ls -l`` output, None when absent."""
    m = re.search(rf"^c\S*\s+\d+\s+\S+\s+\S+\s+(\d+),\s+(\d+)\s.*\b{re.escape(name)}$", log, re.MULTILINE)
    return (int(m.group(1)), int(m.group(2))) if m else None


def test_recipe_and_recorded_answer_specs_run_through_containerd(
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
    catalog_file = tmp_path / "catalog.yaml"
    catalog_file.write_text(CATALOG)
    catalog = load_catalog(CATALOG, str(catalog_file))
    monkeypatch.setenv(SYSFS_ENV, str(fake_sysfs(tmp_path / "sys", DRM)))
    InventoryStore(state).save(
        Inventory(
            node=node,
            recorded_at=time.time(),
            devices=(
                InventoryDevice(resourceName=RECIPE, deviceID=RECIPE_PCI, numaNodes=[]),
                InventoryDevice(resourceName=RECORDED, deviceID=RECORDED_PCI, numaNodes=[]),
            ),
            edits={RECORDED: ANSWER},
        )
    )
    bridge = None
    try:
        with (
            bridge_kubeconfig(control_plane, kube, namespace, tmp_path / "bridge.kubeconfig") as kc,
            device_classes(kube, catalog),
        ):
            bridge = start_bridge(real_node, kc, state, tmp_path / "bridge.log", [f"--catalog={catalog_file}"])
            set_mode(kube, node, "dra")
            published = wait_for(lambda: bridge.check_alive() or published_ids(kube, node), 30, "slices published")
            assert sorted(published.values()) == [RECIPE_PCI, RECORDED_PCI], published

            claim, log = run_pod(kube, real_node, namespace, "recipe", "recipe-gpu.example.com")
            assert [published[r["device"]] for r in claim["status"]["allocation"]["devices"]["results"]] == [RECIPE_PCI]
            assert (node_line(log, "card0"), node_line(log, "renderD128")) == ((1, 3), (1, 5)), log

            claim2, log2 = run_pod(kube, real_node, namespace, "recorded", "recorded-gpu.example.com")
            assert [published[r["device"]] for r in claim2["status"]["allocation"]["devices"]["results"]] == [
                RECORDED_PCI
            ]
            # the answer's card5 is never replayed: the node sysfs shows for the PCI address now
            assert (node_line(log2, "card1"), node_line(log2, "kfd"), node_line(log2, "card5")) == (
                (1, 7),
                (1, 5),
                None,
            ), log2
            specs = sorted(p.name for p in real_node.cdi_dir.glob(f"{DRIVER}-claim_*"))
            assert specs == sorted(f"{DRIVER}-claim_{c['metadata']['uid']}.json" for c in (claim, claim2)), specs
            checkpoint = prepared_claims(state)
            assert {d["pciAddress"] for c in checkpoint.values() for d in c["devices"]} == {RECIPE_PCI, RECORDED_PCI}
            assert "Traceback" not in bridge.log_text(), bridge.log_text()
            for name in ("recipe", "recorded"):
                kube.delete(api_path("v1", "pods", namespace, name))
            wait_for(
                lambda: bridge.check_alive() or prepared_claims(state) == {},
                60,
                "the kubelet's NodeUnprepareResources",
            )
            assert not list(real_node.cdi_dir.glob(f"{DRIVER}-claim_*")), "Unprepare removed our specs"
            print(f"\nrecipe and recorded-answer claims ran through containerd in {time.monotonic() - began:.1f}s")
    finally:
        cleanup(kube, real_node, namespace, bridge)
