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


def test_kep5004_classes_map_extended_resource_names() -> None:
    view = ClusterView()
    cls = {"metadata": {"name": "gpu.nvidia.com"}, "spec": {"extendedResourceName": "nvidia.com/gpu"}}
    view.replace("DeviceClass", [cls, {"metadata": {"name": "plain"}, "spec": {}}])
    assert dict(view.kep5004()) == {"nvidia.com/gpu": "gpu.nvidia.com"}
    view.apply("DeviceClass", "MODIFIED", {"metadata": {"name": "gpu.nvidia.com"}, "spec": {}})
    assert dict(view.kep5004()) == {}
