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
from typing import Any

import pytest

from dra_bridge.bridge.state import InventoryStore
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
from tests.e2e.realnode import RealNode

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]

UUIDS = ["GPU-0a1b2c3d-0000-4000-8000-000000000001", "GPU-0a1b2c3d-0000-4000-8000-000000000002"]
SHOW = "cat /run/fake-nvidia/*; ls /dev/ | grep nvidia | sed 's/^/dev:/'"


def converted(node: RealNode, name: str, script: str) -> tuple[Obj, Obj]:
    """``dra-migrate convert`` of a one-GPU pod: (ResourceClaimTemplate, Pod)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "main", "image": node.env["BUSYBOX_IMAGE"], "imagePullPolicy": "Never",
                        "command": ["sh", "-c", script], "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
    out = subprocess.run([str(Path(sys.executable).parent / "dra-migrate"), "convert", "-o", "json"],
                         input=json.dumps(pod), capture_output=True, text=True, check=True, timeout=60)
    items = json.loads(out.stdout)["items"]
    (template,) = [i for i in items if i["kind"] == "ResourceClaimTemplate"]
    (converted_pod,) = [i for i in items if i["kind"] == "Pod"]
    return template, converted_pod


def run_converted(kube: KubeClient, node: RealNode, namespace: str, name: str) -> tuple[Obj, Obj]:
    """Create the converted pod (which shows its GPUs, then sleeps); wait until it runs and has
    printed. Returns the running pod and its allocated claim."""
    template, pod = converted(node, name, f"{SHOW}; echo done; exec sleep 3600")
    if not kube.exists(api_path(V1, "resourceclaimtemplates", namespace, template["metadata"]["name"])):
        kube.create(api_path(V1, "resourceclaimtemplates", namespace), template)  # the same for every 1-GPU pod
    kube.create(api_path("v1", "pods", namespace), pod)
    running = wait_for_object(kube, api_path("v1", "pods", namespace, name),
                              lambda p: p.get("status", {}).get("phase") == "Running", 60, f"pod {name} Running")
    claim = claim_of(kube, namespace, running, pod["spec"]["resourceClaims"][0]["name"])
    wait_for(lambda: log_of(kube, namespace, name).endswith("done\n"), 30, f"pod {name}'s output")
    return running, claim


def log_of(kube: KubeClient, namespace: str, name: str) -> str:
    text: str | None = kube.request("GET", api_path("v1", "pods", namespace, name) + "/log")
    return text or ""  # an empty log decodes as None


def allocated_uuids(claim: Obj, published: dict[str, str], node: str) -> list[str]:
    results = claim["status"]["allocation"]["devices"]["results"]
    assert all(r["driver"] == DRIVER and r["pool"] == node for r in results), results
    return sorted(published[r["device"]] for r in results)


def seen_uuids(log: str) -> list[str]:
    return sorted(line for line in log.splitlines() if line.startswith("GPU-"))


def slice_uids(kube: KubeClient, node: str) -> set[str]:
    return {s["metadata"]["uid"] for s in our_slices(kube, node)}


def test_kubelet_prepares_through_the_bridge_and_survives_its_restart(
        real_node: RealNode, kube: KubeClient, control_plane: ControlPlane, namespace: str,
        tmp_path: Path) -> None:
    began = time.monotonic()
    node = real_node.name
    state = tmp_path / "state"
    seed_inventory(state, node, [("nvidia.com/gpu", u) for u in UUIDS])
    toolkit = write_toolkit_spec(real_node.cdi_dir, UUIDS, tmp_path / "identity")
    bridge = None
    try:
        with bridge_kubeconfig(control_plane, kube, namespace, tmp_path / "bridge.kubeconfig") as kc, \
                device_classes(kube):
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
            after = wait_for(lambda: bridge.check_alive() or ((s := slice_uids(kube, node)) and s != before and s),
                             30, "slices published again after the kubelet's restart")
            assert len(after) == len(before)
            assert sorted(published_ids(kube, node).values()) == UUIDS
            (status,) = kube.get(api_path("v1", "pods", namespace, "first"))["status"]["containerStatuses"]
            real_node.ctr("tasks", "kill", "--signal", "SIGKILL", status["containerID"].split("://", 1)[1])
            wait_for_object(kube, api_path("v1", "pods", namespace, "first"),
                            lambda p: any(c["restartCount"] >= 1 and "running" in c["state"]
                                          for c in p["status"]["containerStatuses"]), 60, "container restarted")
            log = wait_for(lambda: (t := log_of(kube, namespace, "first")).endswith("done\n") and t, 30,
                           "the restarted container's output")
            assert seen_uuids(log) == [uuid], log

            # a new pod after the restart: the plugin registered again, the other GPU is prepared
            _, claim2 = run_converted(kube, real_node, namespace, "second")
            (uuid2,) = allocated_uuids(claim2, published_ids(kube, node), node)
            assert uuid2 != uuid and seen_uuids(log_of(kube, namespace, "second")) == [uuid2]
            assert set(prepared_claims(state)) == {claim["metadata"]["uid"], claim2["metadata"]["uid"]}

            # deleting the pods unprepares their claims
            for name in ("first", "second"):
                kube.delete(api_path("v1", "pods", namespace, name))
            wait_for(lambda: bridge.check_alive() or prepared_claims(state) == {}, 60,
                     "the kubelet's NodeUnprepareResources", observe=lambda: prepared_claims(state))
            assert "Traceback" not in bridge.log_text(), bridge.log_text()
            print(f"whole test {time.monotonic() - began:.1f}s; kubelet restart "
                  f"{real_node.timings['restart_kubelet']:.1f}s")
    finally:
        cleanup(kube, real_node, namespace, bridge, toolkit)


def cleanup(kube: KubeClient, node: RealNode, namespace: str, bridge: Any, *specs: Path) -> None:
    for pod in kube.list(api_path("v1", "pods", namespace)):
        kube.delete(api_path("v1", "pods", namespace, pod["metadata"]["name"]), ignore_missing=True)
    wait_for(lambda: not kube.list(api_path("v1", "pods", namespace)), 60, "pods gone")
    set_mode(kube, node.name, None)
    if bridge is not None:
        bridge.stop()
    for s in our_slices(kube, node.name):
        kube.delete(api_path(V1, "resourceslices", name=s["metadata"]["name"]), ignore_missing=True)
    for spec in specs:
        spec.unlink(missing_ok=True)


GPUS3 = [f"GPU-5e1f0c2a-0000-4000-8000-00000000000{i}" for i in (1, 2, 3)]
HANDOVER_SECONDS = 300 + 240  # the kubelet keeps a departed plugin's capacity for 5 minutes


def start_device_plugin(node: RealNode, tmp_path: Path, identity: Path) -> subprocess.Popen[bytes]:
    log = (tmp_path / "device-plugin.log").open("ab")
    proc = subprocess.Popen([sys.executable, "-m", "tests.deviceplugins.serve", "--strategy", "cdi-cri",
                             "--resource", "nvidia.com/gpu", "--devices", ",".join(GPUS3),
                             "--kubelet-dir", "/var/lib/kubelet/device-plugins", "--cdi-dir", str(node.cdi_dir),
                             "--identity-dir", str(identity)],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    return proc


def capacity(kube: KubeClient, node: str) -> str:
    status = kube.get(api_path("v1", "nodes", name=node))["status"]
    return str(status.get("capacity", {}).get("nvidia.com/gpu", "0"))


def prepared_condition(kube: KubeClient, node: str) -> str:
    for c in kube.get(api_path("v1", "nodes", name=node))["status"].get("conditions", []):
        if c["type"] == "DRABridgePreparedClaims":
            return str(c["message"])
    return ""


def multi_claim_pod(node: RealNode, name: str) -> tuple[list[Obj], Obj]:
    """Two claims (``pair``: requests g1 and g2; ``single``: g3); container ``both`` takes both
    claims, container ``one`` only request g1 of ``pair``."""
    def request(n: str) -> dict[str, Any]:
        return {"name": n, "exactly": {"deviceClassName": "nvidia-gpu.dra-bridge.io", "count": 1}}

    templates = [{"apiVersion": V1, "kind": "ResourceClaimTemplate", "metadata": {"name": "pair"},
                  "spec": {"spec": {"devices": {"requests": [request("g1"), request("g2")]}}}},
                 {"apiVersion": V1, "kind": "ResourceClaimTemplate", "metadata": {"name": "single"},
                  "spec": {"spec": {"devices": {"requests": [request("g3")]}}}}]
    container = {"image": node.env["BUSYBOX_IMAGE"], "imagePullPolicy": "Never",
                 "command": ["sh", "-c", f"{SHOW}; echo done; exec sleep 3600"]}
    pod = {"metadata": {"name": name}, "spec": {
        "terminationGracePeriodSeconds": 0,
        "resourceClaims": [{"name": "pair", "resourceClaimTemplateName": "pair"},
                           {"name": "single", "resourceClaimTemplateName": "single"}],
        "containers": [{"name": "both", **container, "resources": {"claims": [{"name": "pair"}, {"name": "single"}]}},
                       {"name": "one", **container, "resources": {"claims": [{"name": "pair", "request": "g1"}]}}]}}
    return templates, pod


def container_log(kube: KubeClient, namespace: str, pod: str, container: str) -> str:
    text: str | None = kube.request("GET", api_path("v1", "pods", namespace, pod) + f"/log?container={container}")
    return text or ""


@pytest.mark.handover
@pytest.mark.timeout(HANDOVER_SECONDS + 180)
def test_the_whole_hand_over_on_one_real_node(
        real_node: RealNode, kube: KubeClient, control_plane: ControlPlane, namespace: str,
        tmp_path: Path) -> None:
    began = time.monotonic()
    node = real_node.name
    state, identity = tmp_path / "state", tmp_path / "identity"
    # the bridge looks for plugin sockets in <kubelet dir>/device-plugins; this kubelet's is hard-coded
    (real_node.root_dir / "device-plugins").unlink(missing_ok=True)
    (real_node.root_dir / "device-plugins").symlink_to("/var/lib/kubelet/device-plugins")
    toolkit = write_toolkit_spec(real_node.cdi_dir, GPUS3, identity)
    plugin = start_device_plugin(real_node, tmp_path, identity)
    bridge = None
    try:
        with bridge_kubeconfig(control_plane, kube, namespace, tmp_path / "bridge.kubeconfig") as kc, \
                device_classes(kube):
            bridge = start_bridge(real_node, kc, state, tmp_path / "bridge.log")
            # 1. legacy: the real kubelet's device-plugin path gives a pod the devices; the bridge records them
            wait_for(lambda: capacity(kube, node) == "3", 30, "the plugin's capacity on the Node")
            legacy = {"metadata": {"name": "legacy"}, "spec": {"terminationGracePeriodSeconds": 0, "containers": [{
                "name": "main", "image": real_node.env["BUSYBOX_IMAGE"], "imagePullPolicy": "Never",
                "command": ["sh", "-c", f"{SHOW}; echo done; exec sleep 3600"],
                "resources": {"limits": {"nvidia.com/gpu": 3}}}]}}
            kube.create(api_path("v1", "pods", namespace), legacy)
            wait_for(lambda: log_of(kube, namespace, "legacy").endswith("done\n"), 60, "the legacy pod's output")
            legacy_seen = seen_uuids(log_of(kube, namespace, "legacy"))
            assert legacy_seen == GPUS3, log_of(kube, namespace, "legacy")
            wait_for(lambda: bridge.check_alive() or sorted(InventoryStore(state).load().device_ids()) == GPUS3,
                     30, "the bridge's recorded inventory")
            assert our_slices(kube, node) == []

            # 2. hand-over: the pods go, the plugin stops, the node is labelled for DRA
            kube.delete(api_path("v1", "pods", namespace, "legacy"))
            wait_for(lambda: not kube.exists(api_path("v1", "pods", namespace, "legacy")), 60, "legacy pod gone")
            plugin.terminate()
            assert plugin.wait(15) == 0
            set_mode(kube, node, "dra")
            stopped = time.monotonic()
            time.sleep(5)
            assert capacity(kube, node) != "0" and our_slices(kube, node) == []  # the kubelet keeps the capacity
            assert "node-capacity" in bridge.log_text(), bridge.log_text()[-3000:]
            published = wait_for(lambda: bridge.check_alive() or published_ids(kube, node), HANDOVER_SECONDS,
                                 "slices published once the capacity reached 0", interval=2.0)
            waited = time.monotonic() - stopped
            assert capacity(kube, node) == "0"
            assert sorted(published.values()) == GPUS3
            print(f"\npublished {waited:.0f}s after the plugin stopped")

            # 3. DRA: in each of 10 fresh pods, the container with two claims and three requests
            #    sees all three GPUs, the one with request g1 only its device
            templates, pod = multi_claim_pod(real_node, "dra")
            for t in templates:
                kube.create(api_path(V1, "resourceclaimtemplates", namespace), t)
            for i in range(10):
                name = f"dra-{i}"
                kube.create(api_path("v1", "pods", namespace), {**pod, "metadata": {"name": name}})
                wait_for(lambda n=name: all(container_log(kube, namespace, n, c).endswith("done\n")
                                            for c in ("both", "one")), 60, f"pod {name}'s output")
                pair = claim_of(kube, namespace, {"metadata": {"name": name}}, "pair")
                g1 = [r for r in pair["status"]["allocation"]["devices"]["results"] if r["request"] == "g1"]
                assert seen_uuids(container_log(kube, namespace, name, "both")) == legacy_seen
                assert seen_uuids(container_log(kube, namespace, name, "one")) == [published[g1[0]["device"]]]
                assert len(prepared_claims(state)) == 2
                if i < 9:
                    kube.delete(api_path("v1", "pods", namespace, name))
                    wait_for(lambda: bridge.check_alive() or prepared_claims(state) == {}, 60,
                             "unprepared", observe=lambda: prepared_claims(state))
            assert not list(real_node.cdi_dir.glob(f"{DRIVER}-claim_*"))

            # 4. leaving DRA mode: slices withdrawn at once, the count reaches 0 once the pod goes
            set_mode(kube, node, None)
            wait_for(lambda: our_slices(kube, node) == [], 30, "slices withdrawn")
            wait_for(lambda: prepared_condition(kube, node).startswith("2 prepared claim(s)"), 30,
                     "the count of prepared claims on the Node")
            kube.delete(api_path("v1", "pods", namespace, "dra-9"))
            wait_for(lambda: prepared_condition(kube, node).startswith("0 prepared claim(s)"), 60,
                     "the count to reach 0")
            assert prepared_claims(state) == {}
            print(f"hand-over test {time.monotonic() - began:.0f}s")
    finally:
        if plugin.poll() is None:
            plugin.terminate()
            plugin.wait(15)
        cleanup(kube, real_node, namespace, bridge, toolkit, real_node.cdi_dir / "k8s.device-plugin.nvidia.com-gpu.json")
