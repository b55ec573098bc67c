"""A cluster at scale, objects only: 5,000 Nodes, 20,000 Pods and 5,000 ResourceSlices on an
API server of its own (etcd and kube-apiserver only, ``ControlPlane(objects_only=True)``).

    cluster = start_scale_cluster(bin_dir)     every object in place; cluster.stop() at the end
    cluster.control_plane                      its ControlPlane (kubeconfig, client(), ...)
    cluster.setup_seconds                      start-up, seeding and the check, wall seconds
    cluster.seed(objects) / .unseed(prefix)    more objects written into etcd, or removed

No kubelet, no scheduler, no controller-manager: nothing taints, evicts, schedules or collects
(the Pods are bound by ``spec.nodeName``; their owners, ``Runner``s of a group the server does
not serve, need not exist). Its own API server, so the session's control plane and its tests
never see these objects, and no controller loads the 2-core machine with 5,000 NotReady nodes.

What it holds (module constants):

- :data:`NODES` Nodes ``scale-node-NNNNN``, each with ``nvidia.com/gpu: 8`` (capacity and
  allocatable), status conditions and images as a kubelet reports them (what a reader must
  drop as it reads);
- :data:`GPU_PODS` GPU pods (one ``nvidia.com/gpu`` each) and :data:`PLAIN_PODS` pods without
  devices, :data:`PER_OWNER` to an owner, in :data:`NAMESPACES` namespaces ``scale-NN``,
  Running on the Nodes in turn;
- one ResourceSlice per Node (driver :data:`DRIVER`, 8 devices with attributes and capacity).

Fast because the objects are written straight into etcd, as JSON in transactions of
:data:`TXN_OPS` puts, before the API server starts (its storage decoder reads JSON as well as
its own protobuf, and defaults each object as it decodes it; its watch cache lists them at
start-up): a few seconds, where 30,000 creates through the API server took over 3 minutes on
the shared 2-core machine. Objects written later (:meth:`ScaleCluster.seed`) reach the API
server through its watch on etcd. Each object must therefore be valid as written: the API
server validates nothing it did not write.
"""

from __future__ import annotations

import base64
import json
import time
import urllib.request
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubeapi import api_path

NODES = 5000
GPU_PODS = 4000
PLAIN_PODS = 16000
PER_OWNER = 100
NAMESPACES = 20
DRIVER = "gpu.scale.dra-bridge.io"
DEVICES_PER_SLICE = 8
TXN_OPS = 128  # etcd's --max-txn-ops default
CREATED = "2026-01-01T00:00:00Z"
SLICES_PATH = "/apis/resource.k8s.io/v1/resourceslices"

Obj = dict[str, Any]


def namespace_name(i: int) -> str:
    return f"scale-{i:02d}"


def node_name(n: int) -> str:
    return f"scale-node-{n:05d}"


def node(n: int) -> Obj:
    """A Node as a kubelet leaves it (labels, capacity, conditions, images)."""
    gpus = {"nvidia.com/gpu": "8", "cpu": "64", "memory": "512Gi", "pods": "110"}
    return {
        "metadata": {
            "name": node_name(n),
            "labels": {
                "kubernetes.io/hostname": node_name(n),
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                "pool": f"pool-{n % 10}",
            },
        },
        "status": {
            "capacity": gpus,
            "allocatable": gpus,
            "conditions": [
                {"type": t, "status": "False", "reason": f"Kubelet{t}", "message": f"kubelet has no {t}"}
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
            ],
            "images": [
                {
                    "names": [
                        f"registry.example.com/team-{i}/image@sha256:{uuid.uuid5(uuid.NAMESPACE_DNS, str(i)).hex}"
                    ],
                    "sizeBytes": 100_000_000 + i,
                }
                for i in range(10)
            ],
        },
    }


def _owner(i: int, kind: str) -> Obj:
    return {
        "apiVersion": "scale.dra-bridge.io/v1",
        "kind": "Runner",
        "name": f"{kind}-{i}",
        "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, f"scale-{kind}-{i}")),
        "controller": True,
    }


def pod(name: str, owner: int, *, gpu: bool, node_index: int) -> Obj:
    """A Pod of owner ``owner`` bound to Node ``node_index`` (GPU: one ``nvidia.com/gpu``)."""
    kind = "gpu" if gpu else "web"
    resources = {"limits": {"nvidia.com/gpu": "1"}} if gpu else {"requests": {"cpu": "100m", "memory": "64Mi"}}
    return {
        "metadata": {"name": name, "labels": {"app": f"{kind}-{owner}"}, "ownerReferences": [_owner(owner, kind)]},
        "spec": {
            "nodeName": node_name(node_index % NODES),
            "automountServiceAccountToken": False,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": resources}],
        },
    }


def resource_slice(n: int) -> Obj:
    """Node ``n``'s slice: :data:`DEVICES_PER_SLICE` GPUs with attributes and capacity."""
    devices = [
        {
            "name": f"gpu-{d}",
            "attributes": {
                "index": {"int": d},
                "uuid": {"string": str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{n}-{d}"))},
                "productName": {"string": "NVIDIA H100 80GB HBM3"},
                "driverVersion": {"version": "570.124.6"},
            },
            "capacity": {"memory": {"value": "80Gi"}},
        }
        for d in range(DEVICES_PER_SLICE)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name(n)}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name(n),
            "pool": {"name": node_name(n), "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _prepared(obj: Obj, api_version: str, kind: str) -> Obj:
    """``obj`` as the API server would have stored it: its type, a uid and a creation time."""
    meta = obj["metadata"]
    uid = uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}/{meta.get('namespace', '')}/{meta['name']}")
    meta = {**meta, "uid": str(uid), "creationTimestamp": CREATED}
    return {"apiVersion": api_version, "kind": kind, **obj, "metadata": meta}


def etcd_key(obj: Obj) -> str:
    """Where kube-apiserver keeps ``obj`` in etcd (``--etcd-prefix=/registry``)."""
    meta = obj["metadata"]
    folder = {"Node": "minions", "Namespace": "namespaces", "Pod": "pods", "ResourceSlice": "resourceslices"}
    namespaced = f"{meta['namespace']}/" if obj["kind"] == "Pod" else ""
    return f"/registry/{folder[obj['kind']]}/{namespaced}{meta['name']}"


def _b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


def _etcd(etcd_url: str, call: str, body: Obj) -> None:
    request = urllib.request.Request(f"{etcd_url}/v3/kv/{call}", json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=60) as resp:
        answer = json.load(resp)
    if call == "txn" and not answer.get("succeeded", True):
        raise AssertionError(f"etcd txn failed: {str(answer)[:300]}")


def seed(etcd_url: str, objects: Iterable[Obj]) -> int:
    """Write each object (JSON, as :func:`_prepared` makes it) straight into etcd, in
    transactions of :data:`TXN_OPS`; the count. A running API server sees them through its watch
    on etcd; one started later lists them."""
    count, batch = 0, []
    for obj in objects:
        batch.append({"requestPut": {"key": _b64(etcd_key(obj)), "value": _b64(json.dumps(obj))}})
        count += 1
        if len(batch) == TXN_OPS:
            _etcd(etcd_url, "txn", {"success": batch})
            batch = []
    if batch:
        _etcd(etcd_url, "txn", {"success": batch})
    return count


def unseed(etcd_url: str, key_prefix: str) -> None:
    """Delete every key under ``key_prefix`` from etcd (the API server's watch sees the deletes)."""
    end = key_prefix[:-1] + chr(ord(key_prefix[-1]) + 1)
    _etcd(etcd_url, "deleterange", {"key": _b64(key_prefix), "range_end": _b64(end)})


def pod_objects(prefix: str, count: int, *, gpu: bool, namespace: str | None = None) -> Iterator[Obj]:
    """``count`` Pods ``<prefix>-N`` ready to :func:`seed`, :data:`PER_OWNER` to an owner, spread
    over the namespaces (or all in ``namespace``), Running on the Nodes in turn."""
    for i in range(count):
        owner = i // PER_OWNER
        obj = pod(f"{prefix}-{i}", owner, gpu=gpu, node_index=i)
        obj["metadata"]["namespace"] = namespace or namespace_name(owner % NAMESPACES)
        obj["status"] = {"phase": "Running", "qosClass": "BestEffort" if gpu else "Burstable"}
        yield _prepared(obj, "v1", "Pod")


def namespace_object(name: str) -> Obj:
    body = {"metadata": {"name": name}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
    return _prepared(body, "v1", "Namespace")


def _objects() -> Iterator[Obj]:
    for i in range(NAMESPACES):
        yield namespace_object(namespace_name(i))
    for n in range(NODES):
        yield _prepared(node(n), "v1", "Node")
        yield _prepared(resource_slice(n), "resource.k8s.io/v1", "ResourceSlice")
    yield from pod_objects("gpu", GPU_PODS, gpu=True)
    yield from pod_objects("web", PLAIN_PODS, gpu=False)


@dataclass
class ScaleCluster:
    control_plane: ControlPlane
    setup_seconds: float = 0.0
    seed_seconds: float = 0.0

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(namespace_name(i) for i in range(NAMESPACES))

    def seed(self, objects: Iterable[Obj]) -> int:
        """:func:`seed` into this cluster's etcd."""
        return seed(self.control_plane.etcd_url, objects)

    def unseed(self, key_prefix: str) -> None:
        """:func:`unseed` from this cluster's etcd."""
        unseed(self.control_plane.etcd_url, key_prefix)

    def stop(self, *, keep_workdir: bool = False) -> None:
        self.control_plane.stop(keep_workdir=keep_workdir)


def start_scale_cluster(bin_dir: Path) -> ScaleCluster:
    """etcd seeded with every object of the module docstring, then the objects-only API server
    over it, ready once its watch cache holds them all."""
    began = time.monotonic()
    timings: dict[str, float] = {}

    def fill(etcd_url: str) -> None:
        started = time.monotonic()
        seed(etcd_url, _objects())
        timings["seed"] = time.monotonic() - started

    cp = ControlPlane(bin_dir=bin_dir, objects_only=True, before_apiserver=fill)
    cp.start(timeout=180)
    cluster = ScaleCluster(cp, seed_seconds=timings["seed"])
    try:
        kube = cp.client()
        for path in (api_path("v1", "nodes"), SLICES_PATH):
            assert len(kube.list(path)) == NODES, path
        first = kube.request("GET", api_path("v1", "pods"), query={"limit": 1})["metadata"]
        assert first.get("remainingItemCount", 0) + 1 == GPU_PODS + PLAIN_PODS
    except BaseException:
        cp.stop()
        raise
    cluster.setup_seconds = time.monotonic() - began
    return cluster
