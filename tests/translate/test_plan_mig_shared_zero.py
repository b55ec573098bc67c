"""Pod plans: the MIG single strategy, shared counts and zero counts (issue 10, items 6-8)."""

from __future__ import annotations

from typing import Any

import pytest

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.findings import Remedy
from dra_bridge.translate.plan.claim_templates import internal_from_template
from dra_bridge.translate.plan.pod_plan import Options, plan_pod
from tests.factories import gpu, make_container, make_pod


def outcomes(plan: Any) -> list[str]:
    return [f.outcome for f in plan.findings]


def held(plan: Any) -> int:
    return sum(r["count"] for t in plan.templates for r in internal_from_template(t)["requests"])


A100_MIG_1G = "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"


@pytest.mark.parametrize(
    ("target", "device_class"),
    [("bridge", "nvidia-mig-1g.5gb.dra-bridge.io"), ("vendor", "mig.nvidia.com")],
    ids=["bridge", "vendor"],
)
def test_mig_single_strategy_product_label_requests_the_profile_class(
    catalog: Catalog, target: Any, device_class: str
) -> None:
    pod = make_pod(gpus=2, nodeSelector={"nvidia.com/gpu.product": A100_MIG_1G})
    plan = plan_pod(pod, catalog.with_target(target))
    (request,) = internal_from_template(plan.templates[0])["requests"]
    assert (request["deviceClassName"], request["count"]) == (device_class, 2)
    assert plan.severity == 0 and "nodeSelector" not in plan.pod["spec"]
    assert plan.converted == {"nvidia.com/gpu"}
    assert "nvidia.com/gpu" not in plan.pod["spec"]["containers"][0]["resources"].get("limits", {})


@pytest.mark.parametrize(
    "products",
    [
        [A100_MIG_1G, "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb"],
        [A100_MIG_1G, "NVIDIA-A100-SXM4-40GB"],
    ],
    ids=["two-profiles", "mig-and-whole-gpus"],
)
def test_a_product_selection_no_one_mig_class_serves_stays_legacy(catalog: Catalog, products: list[str]) -> None:
    pod = make_pod(
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": products}]}
                    ]
                }
            }
        }
    )
    plan = plan_pod(pod, catalog)
    assert not plan.changed and "unsupported" in outcomes(plan)


def test_mig_single_strategy_without_a_profile_is_partial_on_the_bridge_target(catalog: Catalog) -> None:
    pod = make_pod(nodeSelector={"nvidia.com/mig.strategy": "single"})
    assert "partial" in outcomes(plan_pod(pod, catalog))
    vendor = plan_pod(pod, catalog.with_target("vendor"))
    assert internal_from_template(vendor.templates[0])["requests"][0]["deviceClassName"] == "mig.nvidia.com"
    assert vendor.severity == 0


def test_fail_requests_greater_than_one_keeps_shared_requests_over_one_on_the_plugin(catalog: Catalog) -> None:
    options = Options(fail_requests_greater_than_one=True)
    plan = plan_pod(make_pod([make_container("c", gpu(2, "nvidia.com/gpu.shared"))]), catalog, options)
    assert not plan.changed
    (kept,) = [f for f in plan.findings if f.outcome == "unsupported"]
    assert kept.remedy == Remedy.FAIL_REQUESTS_GREATER_THAN_ONE
    assert plan_pod(make_pod([make_container("c", gpu(1, "nvidia.com/gpu.shared"))]), catalog, options).changed
    assert plan_pod(make_pod([make_container("c", gpu(2, "nvidia.com/gpu.shared"))]), catalog).changed


def test_shared_findings_say_where_replicas_come_from_and_name_the_vendor_sharing_options(catalog: Catalog) -> None:
    pod = make_pod([make_container("c", gpu(3, "nvidia.com/gpu.shared"))])
    (bridge,) = [f for f in plan_pod(pod, catalog).findings if f.outcome == "partial"]
    assert "3 time-slicing replicas" in bridge.reason and "different GPUs" in bridge.reason
    (vendor,) = [f for f in plan_pod(pod, catalog.with_target("vendor")).findings if f.outcome == "partial"]
    assert all(word in vendor.reason for word in ("GpuConfig", "TimeSlicing", "MPS", "ConsumableShares"))


def test_zero_count_requests_are_dropped_with_a_finding(catalog: Catalog) -> None:
    pod = make_pod([make_container("c", {"nvidia.com/gpu": "0", "cpu": "1"}, {"nvidia.com/gpu": "0"})])
    plan = plan_pod(pod, catalog)
    assert plan.changed and plan.templates == () and plan.converted == {"nvidia.com/gpu"}
    assert plan.pod["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "1"}}
    (dropped,) = plan.findings
    assert dropped.outcome == "translated" and "zero" in dropped.reason
    assert plan.pod["spec"].get("resourceClaims") is None and "tolerations" not in plan.pod["spec"]
    assert not plan_pod(plan.pod, catalog).changed


def test_zero_counts_beside_real_requests_are_dropped_and_restored_on_revert(catalog: Catalog) -> None:
    pod = make_pod([make_container("a", gpu(1)), make_container("b", gpu(0, "amd.com/gpu"))])
    plan = plan_pod(pod, catalog)
    assert "resources" not in plan.pod["spec"]["containers"][1]
    assert any(f.legacy == "amd.com/gpu: 0" and "zero" in f.reason for f in plan.findings)
    assert held(plan) == 1 and plan.severity == 0
    assert plan.record is not None and plan.record.revert(plan.pod)["spec"]["containers"] == pod["spec"]["containers"]
