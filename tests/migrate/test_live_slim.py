"""Live mode keeps only what the report reads of each object, as the pages arrive (issue 25):
node images, managed fields and status conditions are dropped; the rest stays as the server sent it."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from dra_bridge.kube.fake import FakeKube
from dra_bridge.kube.resources import NODES, PODS
from dra_bridge.migrate.access import API_CALLS
from dra_bridge.migrate.live import read_cluster, slim

MANAGED = [{"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {"f:images": {}}}}]
NODE: dict[str, Any] = {
    "metadata": {"name": "n1", "labels": {"nvidia.com/gpu.product": "H100"}, "managedFields": MANAGED},
    "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
    "status": {
        "allocatable": {"nvidia.com/gpu": "8"},
        "capacity": {"nvidia.com/gpu": "8"},
        "images": [{"names": [f"registry.example/image-{i}:v1"], "sizeBytes": 10**9} for i in range(50)],
        "conditions": [{"type": "Ready", "status": "True", "message": "kubelet is posting ready status"}],
        "nodeInfo": {"kubeletVersion": "v1.36.0"},
    },
}
POD: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "ns", "managedFields": MANAGED, "annotations": {"a": "b"}},
    "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
}


def test_slim_drops_images_managed_fields_and_conditions_only() -> None:
    node = slim({"apiVersion": "v1", "kind": "Node", **copy.deepcopy(NODE)})
    pod = slim({"apiVersion": "v1", "kind": "Pod", **copy.deepcopy(POD)})
    assert "managedFields" not in node["metadata"] and "managedFields" not in pod["metadata"]
    assert "images" not in node["status"] and "conditions" not in node["status"]
    assert "conditions" not in pod["status"]
    assert node["status"]["allocatable"] == NODE["status"]["allocatable"]
    assert node["status"]["nodeInfo"] == NODE["status"]["nodeInfo"] and node["spec"] == NODE["spec"]
    assert node["metadata"]["labels"] == NODE["metadata"]["labels"]
    assert pod["status"]["phase"] == "Running" and pod["spec"] == POD["spec"]
    assert pod["metadata"]["annotations"] == {"a": "b"}


def test_live_mode_keeps_the_slim_objects() -> None:
    fake = FakeKube(allowed=API_CALLS, served=["resource.k8s.io/v1"])
    fake.put(NODES, copy.deepcopy(NODE))
    fake.put(PODS, copy.deepcopy(POD))
    objects, _ = asyncio.run(read_cluster(fake))
    kept = {o["kind"]: o for _, o in objects}
    assert "images" not in kept["Node"]["status"] and "managedFields" not in kept["Node"]["metadata"]
    assert "conditions" not in kept["Pod"]["status"] and kept["Pod"]["status"]["phase"] == "Running"


def test_pods_of_one_spec_share_one_spec_object() -> None:
    fake = FakeKube(allowed=API_CALLS, served=["resource.k8s.io/v1"])
    owner = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": True}]
    for name in ("a", "b"):
        meta = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "7", "labels": {"app": "x"}}
        fake.put(
            PODS, {"metadata": {**meta, "ownerReferences": copy.deepcopy(owner)}, "spec": copy.deepcopy(POD["spec"])}
        )
    fake.put(PODS, {"metadata": {"name": "c", "namespace": "ns"}, "spec": {**POD["spec"], "nodeName": "n2"}})
    objects, _ = asyncio.run(read_cluster(fake))
    pods = {o["metadata"]["name"]: o for _, o in objects if o["kind"] == "Pod"}
    assert pods["a"]["spec"] == POD["spec"] and pods["a"]["spec"]["containers"] is pods["b"]["spec"]["containers"]
    a, b = pods["a"]["metadata"], pods["b"]["metadata"]
    assert a["labels"] is b["labels"] and a["ownerReferences"] is b["ownerReferences"] and a["labels"] == {"app": "x"}
    assert "uid" not in a and "resourceVersion" not in a and a["ownerReferences"] == owner
    assert pods["c"]["spec"] is not pods["a"]["spec"] and pods["c"]["spec"]["nodeName"] == "n2"


def test_bound_pods_share_their_workloads_spec_values_and_keep_only_the_phase() -> None:
    """Pods of one workload on different nodes differ in ``spec.nodeName`` and in most of their
    status: each keeps its node, the rest of its spec is the workload's (shared), and its status
    only the phase, so pods the report does not place cost almost nothing (issue 25)."""
    fake = FakeKube(allowed=API_CALLS, served=["resource.k8s.io/v1"])
    for name, node in (("a", "n1"), ("b", "n2")):
        status = {"phase": "Running", "podIP": f"10.0.0.{len(name)}", "startTime": f"2026-01-0{len(node)}T00:00:00Z"}
        fake.put(
            PODS,
            {
                "metadata": {"name": name, "namespace": "ns"},
                "spec": {**POD["spec"], "nodeName": node},
                "status": status,
            },
        )
    objects, _ = asyncio.run(read_cluster(fake))
    pods = {o["metadata"]["name"]: o for _, o in objects if o["kind"] == "Pod"}
    a, b = pods["a"], pods["b"]
    assert (a["spec"]["nodeName"], b["spec"]["nodeName"]) == ("n1", "n2")
    assert a["spec"]["containers"] is b["spec"]["containers"] and a["spec"]["containers"] == POD["spec"]["containers"]
    assert a["status"] == {"phase": "Running"} and a["status"] is b["status"]
