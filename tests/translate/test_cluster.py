"""Cluster-state rules: DaemonSet pods per node mode, quota safety."""

from __future__ import annotations

from typing import Any

from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.plan.cluster_state import daemonset_node, held_back
from dra_bridge.translate.plan.pod_plan import plan_pod
from tests.factories import gpu, make_container, make_pod

CATALOG = load_catalog()
KEY = "nvidia-gpu.dra-bridge.io.deviceclass.resource.k8s.io/devices"


def _pinned(node: str) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
            }
        }
    }


def _converted() -> tuple[dict[str, Any], dict[str, Any]]:
    pod = make_pod([make_container("c", gpu(1))], affinity=_pinned("n1"))
    return plan_pod(pod, CATALOG).pod, pod["spec"]


def test_daemonset_pods_convert_only_on_nodes_handed_over_to_dra() -> None:
    migrated, spec = _converted()
    assert daemonset_node(spec) == "n1"
    legacy = held_back(migrated, spec, "DaemonSet", lambda n: None, frozenset(), CATALOG)
    assert [f.outcome for f in legacy] == ["kept-legacy"]
    assert held_back(migrated, spec, "DaemonSet", {"n1": "dra"}.get, frozenset(), CATALOG) == []
    assert held_back(migrated, spec, "ReplicaSet", lambda n: None, frozenset(), CATALOG) == []


def test_a_quota_on_the_legacy_resource_alone_keeps_the_pod_legacy() -> None:
    migrated, spec = _converted()
    only_legacy = frozenset({"requests.nvidia.com/gpu"})
    assert [f.outcome for f in held_back(migrated, spec, "", lambda n: None, only_legacy, CATALOG)] == ["kept-legacy"]
    ignored = held_back(migrated, spec, "", lambda n: None, only_legacy, CATALOG, ignore_legacy_quota=True)
    assert [f.outcome for f in ignored] == ["partial"]
    both = held_back(migrated, spec, "", lambda n: None, only_legacy | {KEY}, CATALOG)
    assert [f.outcome for f in both] == ["partial"] and "Pending" in both[0].reason
    assert held_back(migrated, spec, "", lambda n: None, frozenset({"pods"}), CATALOG) == []


def test_an_unknown_quota_keeps_the_pod_legacy_and_says_why() -> None:
    from dra_bridge.translate.plan.cluster_state import QuotaUnknown

    migrated, spec = _converted()
    unknown = QuotaUnknown("missing permission list core/resourcequotas")
    held = held_back(migrated, spec, "", lambda n: None, unknown, CATALOG)
    assert [(f.path, f.outcome) for f in held] == [("(quota-view)", "kept-legacy")]
    assert "list core/resourcequotas" in held[0].reason and "nvidia.com/gpu" in held[0].legacy
    ignored = held_back(migrated, spec, "", lambda n: None, unknown, CATALOG, ignore_legacy_quota=True)
    assert [(f.path, f.outcome) for f in ignored] == [("(quota-view)", "partial")]
