"""Fakes for the bridge's component tests: a kubelet serving the real PodResources v1 protocol
(our generated stubs, grpc.aio) on a unix socket in a temp dir, and the shared in-memory API
(kube.fake) allowed only the agent's declared calls."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from dra_bridge.bridge.access import API_CALLS
from dra_bridge.bridge.podresources import api_pb2, api_pb2_grpc
from dra_bridge.kube.fake import FakeKube
from dra_bridge.kube.resources import EVENTS, NODES, RESOURCE_SLICES
from dra_bridge.translate.inventory.pool import internal_form

Obj = dict[str, Any]


class FakeKubelet(api_pb2_grpc.PodResourcesListerServicer):
    """Serves ``devices`` (list of (resource, id, [numa])), ``held`` ({pod: {container: [(resource, id)]}})
    and ``dynamic`` ({pod: {container: [(claim namespace, claim name, driver, pool, device)]}})."""

    @staticmethod
    def entry(resource: str, device_id: str, numa: list[int] | None = None) -> api_pb2.ContainerDevices:
        """One kubelet entry per (resource, device, NUMA node), as the kubelet sends them."""
        topology = api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=n) for n in numa]) if numa is not None else None
        return api_pb2.ContainerDevices(resource_name=resource, device_ids=[device_id], topology=topology)

    def __init__(self) -> None:
        self.devices: list[tuple[str, str, list[int]]] = []
        self.held: dict[str, dict[str, list[tuple[str, str]]]] = {}
        self.dynamic: dict[str, dict[str, list[tuple[str, str, str, str, str]]]] = {}
        self.calls = 0

    async def GetAllocatableResources(self, request: Any, context: Any) -> api_pb2.AllocatableResourcesResponse:
        self.calls += 1
        entries = []
        for resource, device_id, numa in self.devices:
            # one entry per NUMA node: a device on two NUMA nodes appears twice (the kubelet's
            # containerDevicesFromResourceDeviceInstances)
            entries += [self.entry(resource, device_id, [n]) for n in numa] or [self.entry(resource, device_id)]
        return api_pb2.AllocatableResourcesResponse(devices=entries, cpu_ids=[0, 1])

    async def List(self, request: Any, context: Any) -> api_pb2.ListPodResourcesResponse:
        pods = []
        for pod in sorted(set(self.held) | set(self.dynamic)):
            ns, name = pod.split("/")
            held, dynamic = self.held.get(pod, {}), self.dynamic.get(pod, {})
            pods.append(
                api_pb2.PodResources(
                    namespace=ns,
                    name=name,
                    containers=[
                        api_pb2.ContainerResources(
                            name=c,
                            devices=[self.entry(r, d) for r, d in held.get(c, [])],
                            dynamic_resources=[
                                api_pb2.DynamicResource(
                                    claim_namespace=cns,
                                    claim_name=cname,
                                    claim_resources=[
                                        api_pb2.ClaimResource(driver_name=drv, pool_name=pool, device_name=dev)
                                    ],
                                )
                                for cns, cname, drv, pool, dev in dynamic.get(c, [])
                            ],
                        )
                        for c in sorted(set(held) | set(dynamic))
                    ],
                )
            )
        return api_pb2.ListPodResourcesResponse(pod_resources=pods)

    async def Get(self, request: Any, context: Any) -> api_pb2.GetPodResourcesResponse:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "not in the fake")
        raise AssertionError("context.abort returned")  # pragma: no cover


class KubeletServer:
    """Start/stop the fake kubelet on ``<kubelet dir>/pod-resources/kubelet.sock``."""

    def __init__(self, kubelet_dir: Path) -> None:
        self.dir = kubelet_dir
        self.socket = kubelet_dir / "pod-resources" / "kubelet.sock"
        self.fake = FakeKubelet()
        self.server: grpc.aio.Server | None = None
        (kubelet_dir / "device-plugins").mkdir(parents=True, exist_ok=True)

    async def start(self) -> None:
        self.socket.parent.mkdir(parents=True, exist_ok=True)
        self.server = grpc.aio.server()
        api_pb2_grpc.add_PodResourcesListerServicer_to_server(self.fake, self.server)
        self.server.add_insecure_port(f"unix://{self.socket}")
        await self.server.start()

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop(None)
            self.server = None
        if self.socket.exists():
            os.unlink(self.socket)

    def plugin_socket(self, name: str, present: bool = True) -> None:
        path = self.dir / "device-plugins" / name
        if present:
            path.touch()
        elif path.exists():
            path.unlink()


@pytest.fixture
async def kubelet(tmp_path: Path) -> AsyncIterator[KubeletServer]:
    # unix socket paths are limited to ~107 bytes: keep the kubelet dir short
    short = Path(f"/tmp/kl-{os.getpid()}-{id(tmp_path) % 100000}")
    short.mkdir(parents=True, exist_ok=True)
    server = KubeletServer(short)
    await server.start()
    yield server
    await server.stop()
    for p in sorted(short.rglob("*"), reverse=True):
        p.unlink() if not p.is_dir() else p.rmdir()
    short.rmdir()


class FakeApi(FakeKube):
    """The shared in-memory API (kube.fake) allowed exactly the agent's declared calls, with
    views on what the agent touches: slices and Nodes by name, Events in order."""

    def __init__(self, served: list[str] | None = None) -> None:
        super().__init__(
            allowed=API_CALLS,
            served=served if served is not None else ["resource.k8s.io/v1", "resource.k8s.io/v1beta1"],
        )

    @property
    def slices(self) -> dict[str, Obj]:
        return self.objects[RESOURCE_SLICES.plural]

    @property
    def nodes(self) -> dict[str, Obj]:
        return self.objects[NODES.plural]

    @property
    def events(self) -> list[Obj]:
        return sorted(self.objects[EVENTS.plural].values(), key=lambda e: int(e["metadata"]["resourceVersion"]))

    def delete_by_hand(self, name: str) -> None:
        """What ``kubectl delete resourceslice`` (or a restarting kubelet) does."""
        self.remove(RESOURCE_SLICES, name)

    def add_node(self, name: str, labels: dict[str, str] | None = None, capacity: dict[str, str] | None = None) -> None:
        self.put(
            NODES,
            {
                "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels or {}},
                "status": {"capacity": capacity or {}, "allocatable": capacity or {}, "conditions": []},
            },
        )

    def devices(self) -> list[Obj]:
        """Every published device (internal form), in slice-name order."""
        out = []
        for name in sorted(self.slices):
            out += internal_form(self.slices[name])["spec"]["devices"]
        return out


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


# The agent fixtures (an agent factory, one that recorded an inventory in legacy mode, its clock).
from tests.bridge.agent_fixtures import clock, legacy, make_agent  # noqa: E402, F401
