"""The watch-fed ClusterView: what events do to the node-mode, quota and KEP-5004 caches."""

from __future__ import annotations

from webhook.cluster import ClusterView


def node(name: str, mode: str | None) -> dict[str, object]:
    return {"metadata": {"name": name, "labels": {"dra-bridge.io/mode": mode} if mode else {}}}


def quota(ns: str, name: str, *keys: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": ns}, "spec": {"hard": {k: "4" for k in keys}}}


def test_node_mode_follows_label_changes_and_deletion() -> None:
    view = ClusterView()
    view.replace("Node", [node("n1", "legacy"), node("n2", None)])
    assert (view.node_mode("n1"), view.node_mode("n2")) == ("legacy", None)
    view.apply("Node", "MODIFIED", node("n1", "dra"))
    assert view.node_mode("n1") == "dra"
    view.apply("Node", "DELETED", node("n1", "dra"))
    assert view.node_mode("n1") is None


def test_quota_keys_are_the_union_of_a_namespaces_quotas() -> None:
    view = ClusterView()
    view.replace("ResourceQuota", [quota("a", "q1", "requests.nvidia.com/gpu"), quota("a", "q2", "pods"),
                                   quota("b", "q1", "cpu")])
    assert view.quota_keys("a") == {"requests.nvidia.com/gpu", "pods"}
    view.apply("ResourceQuota", "DELETED", quota("a", "q1"))
    assert view.quota_keys("a") == {"pods"}


def test_relist_forgets_objects_deleted_while_disconnected() -> None:
    view = ClusterView()
    view.replace("Node", [node("n1", "dra")])
    view.replace("Node", [])
    assert view.node_mode("n1") is None and "Node" in view.synced


def kep_class(name: str, expression: str) -> dict[str, object]:
    return {"metadata": {"name": name},
            "spec": {"extendedResourceName": "nvidia.com/gpu", "selectors": [{"cel": {"expression": expression}}]}}


def gpu_slice(node_name: str, product: str) -> dict[str, object]:
    return {"metadata": {"name": f"{node_name}-gpu"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node_name,
                     "devices": [{"name": "gpu-0", "attributes": {"productName": {"string": product}}}]}}


def test_kep5004_counts_classes_that_select_a_device_on_a_dra_node() -> None:
    view = ClusterView()
    view.replace("Node", [node("n1", "dra"), node("n2", None)])
    view.replace("ResourceSlice", [gpu_slice("n1", "A100"), gpu_slice("n2", "T4")])
    view.replace("DeviceClass", [kep_class("t4-only", 'device.attributes["gpu.nvidia.com"].productName == "T4"'),
                                 {"metadata": {"name": "plain"}, "spec": {}}])
    assert dict(view.kep5004()) == {}  # T4 devices exist only on a legacy node
    view.apply("DeviceClass", "ADDED", kep_class("gpu.nvidia.com", 'device.driver == "gpu.nvidia.com"'))
    assert dict(view.kep5004()) == {"nvidia.com/gpu": "gpu.nvidia.com"}
    view.apply("Node", "MODIFIED", node("n1", "legacy"))
    assert dict(view.kep5004()) == {}


def test_kep5004_ignores_selectors_that_fail_at_runtime() -> None:
    view = ClusterView()
    view.replace("Node", [node("n1", "dra")])
    view.replace("ResourceSlice", [gpu_slice("n1", "A100")])
    view.replace("DeviceClass", [kep_class("broken", 'device.attributes["x.com"].missing == "y"')])
    assert dict(view.kep5004()) == {}
