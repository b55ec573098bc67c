"""Fakes for the bridge's component tests: a kubelet serving the real PodResources v1 protocol
(our generated stubs, grpc.aio) on a unix socket in a temp dir, and an in-memory API server."""

from __future__ import annotations

import asyncio
import copy
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from bridge.errors import PublishError
from bridge.podresources import api_pb2, api_pb2_grpc
from translate.inventory.pool import internal_form

Obj = dict[str, Any]


def make_entry(resource: str, device_id: str, numa: list[int] | None = None) -> api_pb2.ContainerDevices:
    """One kubelet entry per (resource, device, NUMA node), as the kubelet sends them."""
    topology = api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=n) for n in numa]) if numa is not None else None
    return api_pb2.ContainerDevices(resource_name=resource, device_ids=[device_id], topology=topology)


class FakeKubelet(api_pb2_grpc.PodResourcesListerServicer):  # type: ignore[misc]
    """Serves ``devices`` (list of (resource, id, [numa])) and ``held`` ({pod: {container: [(resource, id)]}})."""

    def __init__(self) -> None:
        self.devices: list[tuple[str, str, list[int]]] = []
        self.held: dict[str, dict[str, list[tuple[str, str]]]] = {}
        self.calls = 0

    async def GetAllocatableResources(self, request: Any, context: Any) -> api_pb2.AllocatableResourcesResponse:
        self.calls += 1
        entries = []
        for resource, device_id, numa in self.devices:
            # one entry per NUMA node: a device on two NUMA nodes appears twice (node-apis.md 1.4)
            entries += [make_entry(resource, device_id, [n]) for n in numa] or [make_entry(resource, device_id)]
        return api_pb2.AllocatableResourcesResponse(devices=entries, cpu_ids=[0, 1])

    async def List(self, request: Any, context: Any) -> api_pb2.ListPodResourcesResponse:
        pods = []
        for pod, containers in self.held.items():
            ns, name = pod.split("/")
            pods.append(api_pb2.PodResources(namespace=ns, name=name, containers=[
                api_pb2.ContainerResources(name=c, devices=[make_entry(r, d) for r, d in devs])
                for c, devs in containers.items()
            ]))
        return api_pb2.ListPodResourcesResponse(pod_resources=pods)

    async def Get(self, request: Any, context: Any) -> api_pb2.GetPodResourcesResponse:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "not in the fake")


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


class FakeApi:
    """In-memory :class:`bridge.kube.KubeApi`: slices, Nodes, Events; counts writes; can fail."""

    def __init__(self, served: list[str] | None = None) -> None:
        self.served = served if served is not None else ["resource.k8s.io/v1", "resource.k8s.io/v1beta1"]
        self.slices: dict[str, Obj] = {}
        self.nodes: dict[str, Obj] = {}
        self.events: list[Obj] = []
        self.writes: list[tuple[str, str]] = []
        self.fail: str = ""
        self._rv = 0
        self._watchers: list[asyncio.Queue[tuple[str, Obj]]] = []

    def _notify(self, kind: str, obj: Obj) -> None:
        for queue in self._watchers:
            queue.put_nowait((kind, copy.deepcopy(obj)))

    def delete_by_hand(self, name: str) -> None:
        """What ``kubectl delete resourceslice`` (or a restarting kubelet) does."""
        self._notify("DELETED", self.slices.pop(name))

    async def watch_slices(self, api_version: str, field_selector: str, timeout: int) -> AsyncIterator[tuple[str, Obj]]:
        self._check()
        want = dict(part.split("=", 1) for part in field_selector.split(","))
        queue: asyncio.Queue[tuple[str, Obj]] = asyncio.Queue()
        self._watchers.append(queue)
        try:
            for s in list(self.slices.values()):
                queue.put_nowait(("ADDED", copy.deepcopy(s)))
            loop = asyncio.get_running_loop()
            end = loop.time() + timeout
            while (left := end - loop.time()) > 0:
                try:
                    kind, obj = await asyncio.wait_for(queue.get(), left)
                except TimeoutError:
                    return
                spec = obj["spec"]
                if spec.get("nodeName") == want["spec.nodeName"] and spec.get("driver") == want["spec.driver"]:
                    yield kind, obj
        finally:
            self._watchers.remove(queue)

    def _check(self) -> None:
        if self.fail:
            raise PublishError(self.fail, 503)

    def add_node(self, name: str, labels: dict[str, str] | None = None, capacity: dict[str, str] | None = None) -> None:
        self.nodes[name] = {"metadata": {"name": name, "uid": f"uid-{name}", "labels": labels or {}},
                            "status": {"capacity": capacity or {}, "allocatable": capacity or {}, "conditions": []}}

    async def served_resource_versions(self) -> list[str]:
        self._check()
        return list(self.served)

    async def list_slices(self, api_version: str, field_selector: str) -> list[Obj]:
        self._check()
        want = dict(part.split("=", 1) for part in field_selector.split(","))
        out = []
        for s in self.slices.values():
            spec = s["spec"]
            if all({"spec.nodeName": spec.get("nodeName"), "spec.driver": spec.get("driver")}[k] == v
                   for k, v in want.items()):
                out.append(copy.deepcopy(s))
        return out

    async def create_slice(self, api_version: str, body: Obj) -> Obj:
        self._check()
        name = body["metadata"]["name"]
        if name in self.slices:
            raise PublishError("AlreadyExists", 409)
        self._rv += 1
        stored = copy.deepcopy(body)
        stored["metadata"].update(resourceVersion=str(self._rv), uid=f"s{self._rv}")
        self.slices[name] = stored
        self.writes.append(("create", name))
        self._notify("ADDED", stored)
        return stored

    async def replace_slice(self, api_version: str, name: str, body: Obj) -> Obj:
        self._check()
        if name not in self.slices:
            raise PublishError("NotFound", 404)
        if body["metadata"].get("resourceVersion") != self.slices[name]["metadata"]["resourceVersion"]:
            raise PublishError("Conflict", 409)
        self._rv += 1
        stored = copy.deepcopy(body)
        stored["metadata"].update(resourceVersion=str(self._rv), uid=self.slices[name]["metadata"]["uid"])
        self.slices[name] = stored
        self.writes.append(("update", name))
        self._notify("MODIFIED", stored)
        return stored

    async def delete_slice(self, api_version: str, name: str) -> None:
        self._check()
        if (gone := self.slices.pop(name, None)) is not None:
            self.writes.append(("delete", name))
            self._notify("DELETED", gone)

    async def get_node(self, name: str) -> Obj:
        self._check()
        if name not in self.nodes:
            raise PublishError(f"node {name} not found", 404)
        return copy.deepcopy(self.nodes[name])

    async def patch_node_status(self, name: str, patch: Obj) -> None:
        self._check()
        conditions = self.nodes[name]["status"]["conditions"]
        for c in patch["status"]["conditions"]:
            conditions[:] = [x for x in conditions if x["type"] != c["type"]] + [c]
        self.writes.append(("patch-node", name))

    async def create_event(self, namespace: str, body: Obj) -> None:
        self._check()
        self.events.append(body)

    def devices(self) -> list[Obj]:
        """Every published device (internal form), in slice-name order."""
        out = []
        for name in sorted(self.slices):
            out += internal_form(self.slices[name])["spec"]["devices"]
        return out


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()
