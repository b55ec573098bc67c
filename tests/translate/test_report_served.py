"""translate/report/served.py and the per-release gate defaults: what a cluster serves decides
paths (KEP-5004's mapping by DRAExtendedResource, the capacity check's allocator features),
and a cluster serving no resource.k8s.io version blocks every path."""

from __future__ import annotations

from typing import Any

import pytest

from dra_bridge.translate.alloc import DEFAULT_GATES, release_defaults
from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.plan.pod_plan import Options
from dra_bridge.translate.report import Settings, build_report
from dra_bridge.translate.report.served import NO_DRA, Served, cluster_features, gates_from_metrics

METRICS = """# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="DRADeviceTaints",stage="BETA"} 1
kubernetes_feature_enabled{name="DRAExtendedResource",stage="BETA"} 0
kubernetes_feature_enabled{name="DRAPartitionableDevices",stage="BETA"} 1
kubernetes_feature_enabled{name="SomethingElse",stage=""} 1
apiserver_request_total{code="200"} 17
"""
GPU = {"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": 1}}}
KEP5004_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.example.com"},
    "spec": {"extendedResourceName": "nvidia.com/gpu"},
}


def _objects(*extra: dict[str, Any]) -> list[tuple[str, Any]]:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [GPU]},
    }
    return [("in.yaml", pod), ("in.yaml", KEP5004_CLASS), *(("in.yaml", o) for o in extra)]


@pytest.mark.parametrize(
    ("minor", "on"),
    [
        pytest.param(32, set(), id="1.32"),
        pytest.param(33, {"DRAResourceClaimDeviceStatus"}, id="1.33"),
        pytest.param(34, {"DRAAdminAccess", "DRAPrioritizedList", "DRAResourceClaimDeviceStatus"}, id="1.34"),
    ],
)
def test_release_defaults_follow_the_versioned_specs(minor: int, on: set[str]) -> None:
    assert {g for g, v in release_defaults(minor).items() if v} == on


def test_136_defaults_are_the_allocators_defaults() -> None:
    at136 = release_defaults(36)
    assert {g: at136[g] for g in DEFAULT_GATES} == DEFAULT_GATES and at136["DRAExtendedResource"]
    assert release_defaults(35)["DRAExtendedResource"] is False and release_defaults(37) == at136


def test_gates_from_the_feature_metric() -> None:
    assert gates_from_metrics(METRICS) == {
        "DRADeviceTaints": True,
        "DRAExtendedResource": False,
        "DRAPartitionableDevices": True,
        "SomethingElse": True,
    }
    live = cluster_features(36, METRICS)
    assert live.source == "metrics" and not live.extended_resource and live.allocator().device_taints
    assert live.gates["DRAConsumableCapacity"] is False  # not in the metric: the server lacks it
    fallback = cluster_features(34, None, "the API server's /metrics not read (403 Forbidden)")
    assert (fallback.source, fallback.note) == ("defaults", "the API server's /metrics not read (403 Forbidden)")
    assert not fallback.allocator().device_taints and not fallback.allocator().partitionable_devices
    assert cluster_features(36, "up 1\n").source == "defaults"  # no feature samples: defaults, said so


def _path(served: Served | None, minor: int = 36) -> tuple[str, str]:
    report = build_report(_objects(), load_catalog(), Settings(options=Options(kubernetes_minor=minor), served=served))
    (w,) = report.workloads
    return w.path.path, w.path.reason


def test_kep5004_follows_the_clusters_gate_not_the_release() -> None:
    assert _path(None)[0] == "kep-5004"  # 1.36's defaults
    path, why = _path(Served(cluster_features(36, METRICS), ("resource.k8s.io/v1",)))
    assert path == "needs-conversion" and "DRAExtendedResource disabled on the API server" in why
    on135 = METRICS.replace('"DRAExtendedResource",stage="BETA"} 0', '"DRAExtendedResource",stage="ALPHA"} 1')
    assert _path(Served(cluster_features(35, on135), ("resource.k8s.io/v1",)), minor=35)[0] == "kep-5004"


def test_a_cluster_serving_no_dra_blocks_every_path() -> None:
    no_dra = Served(cluster_features(34), ())
    assert _path(no_dra) == ("blocked", NO_DRA)
    claim = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "already-dra", "namespace": "ns"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
                }
            }
        },
    }
    plain = {**claim, "metadata": {"name": "cpu-only", "namespace": "ns"}}
    plain = {**plain, "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    report = build_report(_objects(claim, plain), load_catalog(), Settings(served=no_dra))
    paths = {w.unit.name: w.path.path for w in report.workloads}
    assert paths == {"p": "blocked", "already-dra": "blocked", "cpu-only": "nothing-to-do"}
    assert report.as_json()["inputs"]["servedApiVersions"] == []
