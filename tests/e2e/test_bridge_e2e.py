"""The bridge agent against the real control plane (kube-apiserver, controller-manager, scheduler).

One scenario on a kubelet-less fake Node, with the agent's real loop (``Agent.run``: ticks plus
the publisher's resync) talking to the real API server through kubernetes-asyncio, and a fake
kubelet serving the real PodResources protocol on a unix socket:

1. legacy mode records the device plugin's inventory (three GPUs; NVML facts give two models);
2. hand-over (plugin gone, ``dra-bridge.io/mode=dra``): the slices appear after the settle period;
3. a claim whose selector is what translate builds for a GFD ``gpu.product`` nodeSelector is
   allocated by the real scheduler on the H100, not on an L4;
4. steady state: no API writes at all (slices, Node status, Events) for 5 minutes of wall
   clock (``DRA_BRIDGE_STEADY_SECONDS``, default 300) with the poll interval shortened to
   0.25 s: 1,200 polls and resyncs, as many as 10 hours at the default 30 s;
5. a GPU that NVML no longer sees is withdrawn: the slice is updated, the pool generation bumped;
6. a slice deleted by hand comes back (watch or resync; a third test proves the watch alone);
7. a slice of another driver listing one of our UUIDs stops publication (and says why on the Node).

A second test applies the ValidatingAdmissionPolicies documented in docs/bridge.md: the agent's
service-account token, bound to a pod on node A, may write slices of node A only, and set the
status of Node A only.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import math
import os
import re
import shutil
import ssl
import urllib.parse
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_bridge.bridge.access import API_CALLS
from dra_bridge.bridge.agent import Agent
from dra_bridge.bridge.node_condition import HEARTBEAT_INTERVAL
from dra_bridge.bridge.podresources.client import PodResourcesClient
from dra_bridge.bridge.publisher import Publisher
from dra_bridge.bridge.settings import Settings
from dra_bridge.bridge.state import InventoryStore
from dra_bridge.kube.api import ApiServer
from dra_bridge.kube.client import connect
from dra_bridge.kube.errors import KubeError
from dra_bridge.kube.resources import rbac_rules
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.cel import selector_text as ex
from dra_bridge.translate.inventory.allocatable import InventoryDevice
from dra_bridge.translate.inventory.device_facts import NvmlFacts
from dra_bridge.translate.inventory.slices import build_devices
from dra_bridge.translate.names import NODE_MODE_LABEL as MODE_LABEL
from tests.bridge.conftest import KubeletServer
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubeapi import KubeClient, api_path, create_fake_node, wait_for

STEADY_SECONDS = float(os.environ.get("DRA_BRIDGE_STEADY_SECONDS", "300"))
pytestmark = pytest.mark.e2e

V1 = "resource.k8s.io/v1"
H100: NvmlFacts = {
    "productName": "NVIDIA H100 80GB HBM3",
    "architecture": "Hopper",
    "cudaComputeCapability": "9.0",
    "driverVersion": "580.126.20",
    "cudaDriverVersion": "13.0",
    "memoryBytes": 81559 << 20,
}
L4: NvmlFacts = {
    "productName": "NVIDIA L4",
    "architecture": "Ada Lovelace",
    "cudaComputeCapability": "8.9",
    "driverVersion": "580.126.20",
    "cudaDriverVersion": "13.0",
    "memoryBytes": 23034 << 20,
}


async def wait(fn: Callable[[], Any], timeout: float, what: str) -> Any:
    return await asyncio.to_thread(wait_for, fn, timeout, what, interval=0.1)


def our_slices(kube: KubeClient, node: str) -> list[dict[str, Any]]:
    return kube.list(api_path(V1, "resourceslices"), field_selector=f"spec.nodeName={node},spec.driver=dra-bridge.io")


def device_ids(slices: list[dict[str, Any]]) -> list[str]:
    return sorted(d["attributes"]["dra-bridge.io/deviceID"]["string"] for s in slices for d in s["spec"]["devices"])


@pytest.fixture
async def kubelet_dir() -> AsyncIterator[KubeletServer]:
    short = Path(f"/tmp/kle2e-{os.getpid()}-{uuid.uuid4().hex[:6]}")
    server = KubeletServer(short)
    await server.start()
    yield server
    await server.stop()
    shutil.rmtree(short, ignore_errors=True)


@pytest.mark.steady_state
@pytest.mark.timeout(STEADY_SECONDS + 240)
# The agent's life on one node in seven numbered steps (legacy, hand-over, an allocation, the
# steady state, a lost GPU, a deleted slice, a conflicting driver), each on what the one before
# left: a linear scenario; split, the agent, kubelet and publisher would be passed along.
async def test_agent_publishes_and_the_scheduler_allocates_on_the_right_device(  # noqa: PLR0915
    catalog: Catalog,
    control_plane: ControlPlane,
    kube: KubeClient,
    namespace: str,
    kubelet_dir: KubeletServer,
    tmp_path: Path,
) -> None:
    node = f"bridge-e2e-{uuid.uuid4().hex[:6]}"
    create_fake_node(kube, node, labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})
    kubelet = kubelet_dir
    kubelet.fake.devices = [
        ("nvidia.com/gpu", "GPU-aaaa0001", [0]),
        ("nvidia.com/gpu", "GPU-bbbb0002", [0]),
        ("nvidia.com/gpu", "GPU-cccc0003", [1]),
    ]
    kubelet.plugin_socket("nvidia-gpu.sock")
    nvml: dict[str, NvmlFacts] = {
        "GPU-aaaa0001": {**H100},
        "GPU-bbbb0002": {**L4},
        "GPU-cccc0003": {**L4},
    }
    settings = Settings(
        node_name=node,
        kubelet_dir=str(kubelet.dir),
        state_dir=str(tmp_path / "state"),
        poll_interval=0.25,
        settle_period=1.0,
        kubeconfig=str(control_plane.kubeconfig),
    )
    client = await connect(settings.kubeconfig)
    api = ApiServer(client)
    publisher = Publisher(api, node, catalog.bridge_driver)
    agent = Agent(
        settings,
        catalog,
        PodResourcesClient(kubelet.socket),
        InventoryStore(settings.state_dir),
        api,
        publisher,
        nvml_probe=lambda: nvml,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(agent.run(stop))
    node_path = api_path("v1", "nodes", name=node)
    created_class: list[str] = []
    try:
        # 1. legacy: record, publish nothing
        await wait(lambda: len(InventoryStore(settings.state_dir).load().devices) == 3, 10, "inventory recorded")
        assert our_slices(kube, node) == []

        # 2. hand-over
        kubelet.plugin_socket("nvidia-gpu.sock", present=False)
        kubelet.fake.devices = []
        kube.patch(node_path, {"metadata": {"labels": {MODE_LABEL: "dra"}}})
        slices = await wait(lambda: our_slices(kube, node), 15, "slices published")
        assert device_ids(slices) == ["GPU-aaaa0001", "GPU-bbbb0002", "GPU-cccc0003"]
        assert slices[0]["metadata"]["ownerReferences"][0]["kind"] == "Node"
        assert publisher.api_version == V1  # discovery picked the newest served version

        # 3. a claim with translate's product selector lands on the H100
        for cls in catalog.device_classes([]):
            if cls["metadata"]["name"] == "nvidia-gpu.dra-bridge.io" and not kube.exists(
                api_path(V1, "deviceclasses", name="nvidia-gpu.dra-bridge.io")
            ):
                kube.create(api_path(V1, "deviceclasses"), {"apiVersion": V1, **cls})
                created_class.append(cls["metadata"]["name"])
        selector = ex.product_in("gpu.nvidia.com", "productName", ["NVIDIA-H100-80GB-HBM3"])
        claim = {
            "apiVersion": V1,
            "kind": "ResourceClaim",
            "metadata": {"name": "gpu"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": "nvidia-gpu.dra-bridge.io",
                                "selectors": [{"cel": {"expression": selector}}],
                            },
                        }
                    ]
                }
            },
        }
        kube.create(api_path(V1, "resourceclaims", namespace), claim)
        kube.create(
            api_path("v1", "pods", namespace),
            {
                "metadata": {"name": "p"},
                "spec": {
                    "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}],
                },
            },
        )
        allocated = await wait(
            lambda: kube.get(api_path(V1, "resourceclaims", namespace, "gpu")).get("status", {}).get("allocation"),
            30,
            "claim allocated",
        )
        (result,) = allocated["devices"]["results"]
        by_name = {d["name"]: d for s in our_slices(kube, node) for d in s["spec"]["devices"]}
        assert result["driver"] == "dra-bridge.io" and result["pool"] == node
        assert by_name[result["device"]]["attributes"]["dra-bridge.io/deviceID"]["string"] == "GPU-aaaa0001"

        # 4. steady state: zero writes, but the condition's heartbeat every HEARTBEAT_INTERVAL
        await asyncio.sleep(1.0)
        before = (
            publisher.stats.writes,
            agent.node_writes - agent.heartbeats,
            [s["metadata"]["resourceVersion"] for s in our_slices(kube, node)],
        )
        beats = agent.heartbeats
        await asyncio.sleep(STEADY_SECONDS)
        after = (
            publisher.stats.writes,
            agent.node_writes - agent.heartbeats,
            [s["metadata"]["resourceVersion"] for s in our_slices(kube, node)],
        )
        assert after == before, "a steady state must make no API writes"
        assert agent.heartbeats - beats <= math.ceil(STEADY_SECONDS / HEARTBEAT_INTERVAL)

        # 5. NVML lost a GPU: slice updated, generation bumped
        generation = our_slices(kube, node)[0]["spec"]["pool"]["generation"]
        del nvml["GPU-cccc0003"]
        slices = await wait(
            lambda: (s := our_slices(kube, node)) and len(device_ids(s)) == 2 and s, 10, "slice updated"
        )
        assert slices[0]["spec"]["pool"]["generation"] == generation + 1

        # 6. deleted by hand: comes back
        kube.delete(api_path(V1, "resourceslices", name=slices[0]["metadata"]["name"]))
        await wait(lambda: len(device_ids(our_slices(kube, node))) == 2, 10, "slice re-created")

        # 7. another driver lists our UUID: publication stops
        kube.create(
            api_path(V1, "resourceslices"),
            {
                "apiVersion": V1,
                "kind": "ResourceSlice",
                "metadata": {"name": f"{node}-vendor"},
                "spec": {
                    "driver": "gpu.nvidia.com",
                    "nodeName": node,
                    "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0", "attributes": {"uuid": {"string": "GPU-aaaa0001"}}}],
                },
            },
        )
        await wait(lambda: our_slices(kube, node) == [], 10, "publication stopped")
        assert "other-driver" in agent.health.interlocks
        events = kube.list(api_path("v1", "events", "default"), field_selector=f"involvedObject.name={node}")
        assert any(e["reason"] == "PublicationRefused" and "other-driver" in e["message"] for e in events)
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await client.close()
        kube.delete(api_path(V1, "resourceslices", name=f"{node}-vendor"), ignore_missing=True)
        kube.delete(node_path, ignore_missing=True)
        for name in created_class:
            kube.delete(api_path(V1, "deviceclasses", name=name), ignore_missing=True)


DOC = Path(__file__).resolve().parents[2] / "docs" / "bridge.md"


def documented_policy(namespace: str) -> list[dict[str, Any]]:
    """The YAML block of docs/bridge.md with the namespace filled in."""
    (block,) = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S)
    return [d for d in yaml.safe_load_all(block.replace("<namespace>", namespace)) if d]


def token_request(kube: KubeClient, ns: str, sa: str, pod: dict[str, Any]) -> str:
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {
            "expirationSeconds": 600,
            "boundObjectRef": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod["metadata"]["name"],
                "uid": pod["metadata"]["uid"],
            },
        },
    }
    result = kube.create(f"/api/v1/namespaces/{ns}/serviceaccounts/{sa}/token", body)
    token: str = result["status"]["token"]
    return token


def as_token(
    cp: ControlPlane, token: str, method: str, path: str, body: Any = None, content_type: str = "application/json"
) -> tuple[int, Any]:
    url = urllib.parse.urlsplit(cp.server)
    ctx = ssl.create_default_context(cafile=str(cp.ca_file))
    conn = http.client.HTTPSConnection(url.hostname or "127.0.0.1", url.port or 443, context=ctx, timeout=30)
    try:
        conn.request(
            method,
            path,
            body=json.dumps(body) if body is not None else None,
            headers={"Authorization": f"Bearer {token}", "Content-Type": content_type, "Accept": "application/json"},
        )
        resp = conn.getresponse()
        raw = resp.read()
    finally:
        conn.close()
    return resp.status, json.loads(raw) if raw else None


def make_slice(name: str, node: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "driver": "dra-bridge.io",
        "pool": {"name": node or "all", "generation": 0, "resourceSliceCount": 1},
        "devices": [],
    }
    if node:
        spec["nodeName"] = node
    else:
        spec["allNodes"] = True
    return {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


@pytest.mark.server_version
def test_documented_policy_pins_slice_writes_to_the_agents_node(
    control_plane: ControlPlane, kube: KubeClient, namespace: str
) -> None:
    suffix = uuid.uuid4().hex[:6]
    node_a, node_b = f"vap-a-{suffix}", f"vap-b-{suffix}"
    for n in (node_a, node_b):
        create_fake_node(kube, n)
    kube.create(api_path("v1", "serviceaccounts", namespace), {"metadata": {"name": "dra-bridge"}})
    role = f"dra-bridge-e2e-{suffix}"
    kube.create(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles", {"metadata": {"name": role}, "rules": rbac_rules(API_CALLS)}
    )
    kube.create(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        {
            "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": "dra-bridge", "namespace": namespace}],
        },
    )
    pod = kube.create(
        api_path("v1", "pods", namespace),
        {
            "metadata": {"name": "agent"},
            "spec": {
                "serviceAccountName": "dra-bridge",
                "nodeName": node_a,
                "containers": [{"name": "c", "image": "busybox"}],
            },
        },
    )
    docs = documented_policy(namespace)
    assert [d["kind"] for d in docs] == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"] * 2
    names = []
    for i, (policy, binding) in enumerate(zip(docs[::2], docs[1::2], strict=True)):
        name = f"{role}-{i}"
        policy["metadata"]["name"] = binding["metadata"]["name"] = binding["spec"]["policyName"] = name
        kube.create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", policy)
        kube.create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", binding)
        names.append(name)
    token = token_request(kube, namespace, "dra-bridge", pod)
    created: list[str] = []
    try:

        def refused_for_b() -> Any:
            status, body = as_token(
                control_plane, token, "POST", api_path(V1, "resourceslices"), make_slice(f"{node_b}-probe", node_b)
            )
            if status < 300:
                created.append(f"{node_b}-probe")
                kube.delete(api_path(V1, "resourceslices", name=f"{node_b}-probe"), ignore_missing=True)
                return None
            return (status, body)

        status, body = wait_for(refused_for_b, 30, "the policy to take effect")
        assert status in (403, 422) and node_a in body["message"], body
        status, body = as_token(
            control_plane, token, "POST", api_path(V1, "resourceslices"), make_slice(f"{node_a}-own", node_a)
        )
        assert status == 201, body
        created.append(f"{node_a}-own")
        status, body = as_token(
            control_plane, token, "POST", api_path(V1, "resourceslices"), make_slice(f"all-{suffix}", None)
        )
        assert status in (403, 422), body
        status, body = as_token(control_plane, token, "DELETE", api_path(V1, "resourceslices", name=f"{node_a}-own"))
        assert status == 200, body

        # nodes/status, as the agent writes it (strategic merge patch of one condition)
        def condition(node: str) -> tuple[int, Any]:
            patch = {
                "status": {
                    "conditions": [
                        {
                            "type": "DRABridgePreparedClaims",
                            "status": "False",
                            "reason": "NoPreparedClaims",
                            "message": "e2e",
                        }
                    ]
                }
            }
            return as_token(
                control_plane,
                token,
                "PATCH",
                f"/api/v1/nodes/{node}/status",
                patch,
                "application/strategic-merge-patch+json",
            )

        status, body = wait_for(
            lambda: (lambda r: r if r[0] >= 300 else None)(condition(node_b)),
            30,
            "the nodes/status policy to take effect",
        )
        assert status in (403, 422) and f"may only set the status of Node {node_a}" in body["message"], body
        status, body = condition(node_a)
        assert status == 200, body
        conditions = kube.get(api_path("v1", "nodes", name=node_a))["status"]["conditions"]
        assert any(c["type"] == "DRABridgePreparedClaims" and c["message"] == "e2e" for c in conditions)
    finally:
        for name in created:
            kube.delete(api_path(V1, "resourceslices", name=name), ignore_missing=True)
        for path in (
            *(f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/{n}" for n in names),
            *(f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{n}" for n in names),
            f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{role}",
            f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{role}",
            api_path("v1", "nodes", name=node_a),
            api_path("v1", "nodes", name=node_b),
        ):
            with contextlib.suppress(KubeError):
                kube.delete(path, ignore_missing=True)


async def test_the_watch_brings_a_deleted_slice_back_long_before_the_resync(
    catalog: Catalog, control_plane: ControlPlane, kube: KubeClient
) -> None:
    """The publisher alone against the real API server, resync one hour: a slice deleted by
    hand (as a restarting kubelet does) is back within seconds, through the watch."""
    node = f"watch-e2e-{uuid.uuid4().hex[:6]}"
    create_fake_node(kube, node)
    client = await connect(str(control_plane.kubeconfig))
    publisher = Publisher(ApiServer(client), node, "dra-bridge.io")
    publisher.update(
        build_devices(
            [InventoryDevice(resourceName="nvidia.com/gpu", deviceID=f"GPU-w{i}", numaNodes=[0]) for i in range(2)],
            catalog,
        )[0]
    )
    stop = asyncio.Event()
    tasks = [asyncio.create_task(publisher.run(stop, resync=3600)), asyncio.create_task(publisher.watch(stop))]
    try:
        (first,) = await wait(lambda: our_slices(kube, node), 15, "slice published")
        await asyncio.sleep(1.0)
        assert publisher.stats.writes == 1, "our own create, seen by the watch, must not cause a write"
        kube.delete(api_path(V1, "resourceslices", name=first["metadata"]["name"]))
        (back,) = await wait(
            lambda: (s := our_slices(kube, node)) and s[0]["metadata"]["uid"] != first["metadata"]["uid"] and s,
            10,
            "slice re-created by the watch",
        )
        assert device_ids([back]) == ["GPU-w0", "GPU-w1"] and publisher.stats.creates == 2
    finally:
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await client.close()
        for s in our_slices(kube, node):
            kube.delete(api_path(V1, "resourceslices", name=s["metadata"]["name"]), ignore_missing=True)
        kube.delete(api_path("v1", "nodes", name=node), ignore_missing=True)
