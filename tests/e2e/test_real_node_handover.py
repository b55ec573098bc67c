"""The whole hand-over on one real node, in one test (issue 11), run once and last (mark ``handover``).

Legacy: two test device plugins register with the real kubelet, one resource each: NVIDIA's
``cdi-cri`` strategy for ``nvidia.com/gpu`` (3 GPUs) and its ``envvar`` strategy for
``nvidia.com/mig-1g.10gb`` (2 MIG devices). A legacy pod gets devices of both through the
kubelet's device-plugin path; its containers see the plugins' edits, PodResources shows what
the kubelet assigned, and the bridge records the inventory. Hand-over: the node is labelled for
DRA while the plugins still run (every interlock refuses, and nothing raises the alarm: nothing
was published or prepared), then both plugins stop together; the bridge publishes once the
kubelet's capacity reaches 0. DRA: in each of 10 fresh pods a container fed from two claims and
three requests sees all its devices (GPUs and a MIG device, identity and device nodes from the
toolkit's CDI edits), another container referencing one request sees only its device; a legacy
Deployment in a namespace the webhook enforces is converted, its claim allocated by the real
scheduler, prepared by the bridge, its container sees the MIG device. Leaving DRA mode
withdraws the slices and waits for the prepared-claim count on the Node to reach 0.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from dra_bridge.bridge.podresources.client import PodResourcesClient, socket_path
from dra_bridge.bridge.report import EVENT_NAMESPACE
from dra_bridge.bridge.state import InventoryStore
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.names import CONVERTED_LABEL
from tests.deviceplugins.toolkit_cdi import write_toolkit_spec
from tests.e2e.bridge_node import (
    DRIVER,
    V1,
    bridge_kubeconfig,
    claim_of,
    device_classes,
    our_slices,
    prepared_claims,
    published_ids,
    set_mode,
    start_bridge,
)
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubeapi import KubeClient, Obj, api_path, wait_for
from tests.e2e.node_pods import cleanup, log_of, seen_device_nodes, seen_env, seen_uuids, shows
from tests.e2e.realnode import RealNode
from tests.e2e.webhook_cluster import least_privilege_webhook, mode_label_for

pytestmark = [pytest.mark.e2e, pytest.mark.real_node, pytest.mark.handover]

GPU, MIG = "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"
GPUS = [f"GPU-5e1f0c2a-0000-4000-8000-00000000000{i}" for i in (1, 2, 3)]
MIGS = [f"MIG-7c4d2e1b-0000-4000-8000-00000000000{i}" for i in (1, 2)]
TOOLKIT_ORDER = GPUS + MIGS  # the fake toolkit spec's index order: /dev/nvidia<index>
GPU_CLASS, MIG_CLASS = "nvidia-gpu.dra-bridge.io", "nvidia-mig-1g.10gb.dra-bridge.io"
HANDOVER_SECONDS = 300 + 240  # the kubelet keeps a departed plugin's capacity for 5 minutes
PLUGIN_SPEC = "k8s.device-plugin.nvidia.com-gpu.json"


def start_device_plugin(
    node: RealNode, tmp_path: Path, strategy: str, resource: str, devices: list[str]
) -> subprocess.Popen[bytes]:
    log = (tmp_path / f"device-plugin-{strategy}.log").open("ab")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.deviceplugins.serve",
            "--strategy",
            strategy,
            "--resource",
            resource,
            "--devices",
            ",".join(devices),
            "--kubelet-dir",
            "/var/lib/kubelet/device-plugins",
            "--cdi-dir",
            str(node.cdi_dir),
            "--identity-dir",
            str(tmp_path / "identity"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    return proc


def capacity(kube: KubeClient, node: str) -> dict[str, str]:
    status = kube.get(api_path("v1", "nodes", name=node))["status"]
    return {r: str(status.get("capacity", {}).get(r, "0")) for r in (GPU, MIG)}


def prepared_condition(kube: KubeClient, node: str) -> str:
    for c in kube.get(api_path("v1", "nodes", name=node))["status"].get("conditions", []):
        if c["type"] == "DRABridgePreparedClaims":
            return str(c["message"])
    return ""


def kubelet_assignments(node: RealNode) -> dict[str, list[str]]:
    """PodResources ``List`` of the real kubelet: device ID -> ``namespace/pod/container``."""

    async def held() -> dict[str, list[str]]:
        client = PodResourcesClient(socket_path(node.root_dir))
        try:
            return await client.held_devices()
        finally:
            await client.close()

    return asyncio.run(held())


def container(node: RealNode, name: str, limits: dict[str, int] | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {
        "name": name,
        "image": node.env["BUSYBOX_IMAGE"],
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", shows()],
    }
    if limits:
        c["resources"] = {"limits": limits}
    return c


def multi_claim_pod(node: RealNode, name: str) -> tuple[list[Obj], Obj]:
    """Two claims: ``pair`` (request g1: one GPU, g2: two GPUs) and ``single`` (m: one MIG
    device). Container ``both`` takes both claims, container ``one`` only request g1."""

    def request(n: str, cls: str, count: int) -> dict[str, Any]:
        return {"name": n, "exactly": {"deviceClassName": cls, "count": count}}

    templates = [
        {
            "apiVersion": V1,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "pair"},
            "spec": {"spec": {"devices": {"requests": [request("g1", GPU_CLASS, 1), request("g2", GPU_CLASS, 2)]}}},
        },
        {
            "apiVersion": V1,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "single"},
            "spec": {"spec": {"devices": {"requests": [request("m", MIG_CLASS, 1)]}}},
        },
    ]
    both, one = container(node, "both"), container(node, "one")
    both["resources"] = {"claims": [{"name": "pair"}, {"name": "single"}]}
    one["resources"] = {"claims": [{"name": "pair", "request": "g1"}]}
    pod = {
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "resourceClaims": [
                {"name": "pair", "resourceClaimTemplateName": "pair"},
                {"name": "single", "resourceClaimTemplateName": "single"},
            ],
            "containers": [both, one],
        },
    }
    return templates, pod


def device_nodes(uuids: list[str]) -> set[str]:
    """What the toolkit's edits give a container holding ``uuids``: their nodes and nvidiactl."""
    return {f"nvidia{TOOLKIT_ORDER.index(u)}" for u in uuids} | {"nvidiactl"}


def results_of(claim: Obj, published: dict[str, str], request: str | None = None) -> list[str]:
    """The recorded device IDs allocated to a claim (or to one of its requests), sorted."""
    results = claim["status"]["allocation"]["devices"]["results"]
    assert all(r["driver"] == DRIVER for r in results), results
    return sorted(published[r["device"]] for r in results if request in (None, r["request"]))


def legacy_phase(kube: KubeClient, node: RealNode, namespace: str, state: Path, bridge: Any) -> None:
    """1. Legacy: the real kubelet's device-plugin path; the bridge records, publishes nothing."""
    wait_for(lambda: capacity(kube, node.name) == {GPU: "3", MIG: "2"}, 30, "both plugins' capacity on the Node")
    kube.create(
        api_path("v1", "pods", namespace),
        {
            "metadata": {"name": "legacy"},
            "spec": {
                "terminationGracePeriodSeconds": 0,
                "containers": [container(node, "cdi", {GPU: 3}), container(node, "envvar", {MIG: 2})],
            },
        },
    )
    wait_for(
        lambda: all(log_of(kube, namespace, "legacy", c).endswith("done\n") for c in ("cdi", "envvar")),
        60,
        "the legacy pod's output",
    )
    cdi, envvar = log_of(kube, namespace, "legacy", "cdi"), log_of(kube, namespace, "legacy", "envvar")
    assert seen_uuids(cdi) == GPUS, cdi  # the cdi-cri plugin's own CDI spec
    assert seen_env(envvar) == MIGS and seen_uuids(envvar) == [], envvar  # NVIDIA_VISIBLE_DEVICES only
    held = kubelet_assignments(node)
    assert {d: held.get(d) for d in GPUS} == {d: [f"{namespace}/legacy/cdi"] for d in GPUS}, held
    assert {d: held.get(d) for d in MIGS} == {d: [f"{namespace}/legacy/envvar"] for d in MIGS}, held
    wait_for(
        lambda: bridge.check_alive() or sorted(InventoryStore(state).load().device_ids()) == sorted(TOOLKIT_ORDER),
        30,
        "the bridge's recorded inventory",
    )
    assert our_slices(kube, node.name) == []


def handover_phase(
    kube: KubeClient, node: RealNode, namespace: str, bridge: Any, plugins: list[subprocess.Popen[bytes]]
) -> dict[str, str]:
    """2. The pods go; the node is labelled while the plugins run; the plugins stop together."""
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))  # Events of this phase only
    kube.delete(api_path("v1", "pods", namespace, "legacy"))
    wait_for(lambda: not kube.exists(api_path("v1", "pods", namespace, "legacy")), 60, "legacy pod gone")
    set_mode(kube, node.name, "dra")
    time.sleep(4)  # eight ticks of the agent
    assert our_slices(kube, node.name) == []
    log = bridge.log_text()
    assert "plugin-socket" in log and "node-capacity" in log, log[-3000:]
    assert "ALARM" not in log and not [
        e
        for e in kube.list(api_path("v1", "events", EVENT_NAMESPACE))
        if e.get("reason") == "DeviceOfferedAgain" and e["metadata"].get("creationTimestamp", "") >= since
    ], log[-3000:]
    for plugin in plugins:
        plugin.terminate()
    assert [p.wait(15) for p in plugins] == [0, 0]
    stopped = time.monotonic()
    time.sleep(3)
    assert capacity(kube, node.name) != {GPU: "0", MIG: "0"}  # the kubelet keeps the capacity
    assert our_slices(kube, node.name) == []
    published: dict[str, str] = wait_for(
        lambda: bridge.check_alive() or published_ids(kube, node.name),
        HANDOVER_SECONDS,
        "slices published once the capacity reached 0",
        interval=2.0,
    )
    print(f"\npublished {time.monotonic() - stopped:.0f}s after the plugins stopped")
    assert capacity(kube, node.name) == {GPU: "0", MIG: "0"}
    assert sorted(published.values()) == sorted(TOOLKIT_ORDER)
    return published


def dra_pods_phase(
    kube: KubeClient, node: RealNode, namespace: str, state: Path, bridge: Any, published: dict[str, str]
) -> None:
    """3. Ten fresh pods, one after the other; the last one stays."""
    templates, pod = multi_claim_pod(node, "dra")
    for t in templates:
        kube.create(api_path(V1, "resourceclaimtemplates", namespace), t)
    for i in range(10):
        name = f"dra-{i}"
        kube.create(api_path("v1", "pods", namespace), {**pod, "metadata": {"name": name}})

        def finished(n: str = name) -> bool:
            return all(log_of(kube, namespace, n, c).endswith("done\n") for c in ("both", "one"))

        wait_for(finished, 60, f"pod {name}'s output")
        pair = claim_of(kube, namespace, {"metadata": {"name": name}}, "pair")
        single = claim_of(kube, namespace, {"metadata": {"name": name}}, "single")
        both, one = log_of(kube, namespace, name, "both"), log_of(kube, namespace, name, "one")
        want = results_of(pair, published) + results_of(single, published)
        assert results_of(pair, published) == GPUS and results_of(single, published)[0] in MIGS
        assert seen_uuids(both) == sorted(want) and seen_device_nodes(both) == device_nodes(want), both
        g1 = results_of(pair, published, "g1")
        assert seen_uuids(one) == g1 and seen_device_nodes(one) == device_nodes(g1), one
        assert seen_env(both) == ["void"], both  # the toolkit's spec-level edit
        assert len(prepared_claims(state)) == 2
        if i < 9:
            kube.delete(api_path("v1", "pods", namespace, name))
            wait_for(
                lambda: bridge.check_alive() or prepared_claims(state) == {},
                60,
                "unprepared",
                observe=lambda: prepared_claims(state),
            )
    assert not list(node.cdi_dir.glob(f"{DRIVER}-claim_*")), "NVIDIA devices need no spec of ours"


def webhook_phase(
    kube: KubeClient, node: RealNode, namespace: str, label: str, published: dict[str, str], taken: list[str]
) -> None:
    """4. A legacy Deployment where the webhook enforces: converted, allocated, prepared, running."""
    labels = {mode_label_for(label): "enforce"}
    kube.patch(api_path("v1", "namespaces", name=namespace), {"metadata": {"labels": labels}})
    probe = {"metadata": {"name": "probe"}, "spec": {"containers": [container(node, "main", {MIG: 1})]}}
    wait_for(
        lambda: (
            CONVERTED_LABEL
            in (kube.create(api_path("v1", "pods", namespace), probe, dry_run=True)["metadata"].get("labels") or {})
        ),
        30,
        "the API server to call the webhook",
    )
    template = {
        "metadata": {"labels": {"app": "served"}},
        "spec": {"terminationGracePeriodSeconds": 0, "containers": [container(node, "main", {MIG: 1})]},
    }
    kube.create(
        api_path("apps/v1", "deployments", namespace),
        {
            "metadata": {"name": "served"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "served"}}, "template": template},
        },
    )
    pods = wait_for(
        lambda: (
            [
                p
                for p in kube.list(api_path("v1", "pods", namespace), label_selector="app=served")
                if log_of(kube, namespace, p["metadata"]["name"]).endswith("done\n")
            ]
            or None
        ),
        90,
        "the Deployment's converted pod to run",
    )
    (served,) = pods
    assert CONVERTED_LABEL in served["metadata"]["labels"], served["metadata"]
    assert "limits" not in served["spec"]["containers"][0].get("resources", {}), served["spec"]["containers"][0]
    (entry,) = served["spec"]["resourceClaims"]
    claim = claim_of(kube, namespace, served, entry["name"])
    (mig,) = results_of(claim, published)
    assert mig in MIGS and mig not in taken
    log = log_of(kube, namespace, served["metadata"]["name"])
    assert seen_uuids(log) == [mig] and seen_device_nodes(log) == device_nodes([mig]), log


@pytest.mark.timeout(HANDOVER_SECONDS + 240)
def test_the_whole_hand_over_on_one_real_node(
    catalog: Catalog, real_node: RealNode, kube: KubeClient, control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    began = time.monotonic()
    node = real_node.name
    state = tmp_path / "state"
    # the bridge looks for plugin sockets in <kubelet dir>/device-plugins; this kubelet's is hard-coded
    (real_node.root_dir / "device-plugins").unlink(missing_ok=True)
    (real_node.root_dir / "device-plugins").symlink_to("/var/lib/kubelet/device-plugins")
    toolkit = write_toolkit_spec(real_node.cdi_dir, TOOLKIT_ORDER, tmp_path / "identity")
    plugins = [
        start_device_plugin(real_node, tmp_path, "cdi-cri", GPU, GPUS),
        start_device_plugin(real_node, tmp_path, "envvar", MIG, MIGS),
    ]
    label = f"handover-{uuid.uuid4().hex[:6]}"
    bridge = None
    try:
        with (
            bridge_kubeconfig(control_plane, kube, namespace, tmp_path / "bridge.kubeconfig") as kc,
            device_classes(kube, catalog, ["1g.10gb"]),
            least_privilege_webhook(control_plane, kube, tmp_path, label),
        ):
            bridge = start_bridge(real_node, kc, state, tmp_path / "bridge.log")
            legacy_phase(kube, real_node, namespace, state, bridge)
            published = handover_phase(kube, real_node, namespace, bridge, plugins)
            dra_pods_phase(kube, real_node, namespace, state, bridge, published)
            last = claim_of(kube, namespace, {"metadata": {"name": "dra-9"}}, "single")
            webhook_phase(kube, real_node, namespace, label, published, results_of(last, published))

            # 5. leaving DRA mode: slices withdrawn at once, the count reaches 0 once the pods go
            set_mode(kube, node, None)
            wait_for(lambda: our_slices(kube, node) == [], 30, "slices withdrawn")
            wait_for(
                lambda: prepared_condition(kube, node).startswith("3 prepared claim(s)"),
                30,
                "the count of prepared claims on the Node",
            )
            kube.delete(api_path("apps/v1", "deployments", namespace, "served"))
            kube.delete(api_path("v1", "pods", namespace, "dra-9"))
            wait_for(
                lambda: prepared_condition(kube, node).startswith("0 prepared claim(s)"), 60, "the count to reach 0"
            )
            assert prepared_claims(state) == {}
            assert "Traceback" not in bridge.log_text(), bridge.log_text()[-3000:]
            print(f"hand-over test {time.monotonic() - began:.0f}s")
    finally:
        for plugin in plugins:
            if plugin.poll() is None:
                plugin.terminate()
                plugin.wait(15)
        cleanup(kube, real_node, namespace, bridge, toolkit, real_node.cdi_dir / PLUGIN_SPEC)
