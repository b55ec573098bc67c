"""The capacity check (translate/capacity/): converted and legacy pods placed cumulatively, first fit."""

from __future__ import annotations

from typing import Any

import pytest

from dra_bridge.translate.alloc import parse_gates
from dra_bridge.translate.capacity import (
    ClaimDemand,
    ClusterNode,
    Held,
    NodeConstraints,
    PodDemand,
    WorkloadDemand,
    check_capacity,
    cluster_devices,
    cluster_node,
    legacy_requests,
    placement_order,
    pod_priority,
    workload_demand,
)
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.errors import InputError
from dra_bridge.translate.inventory.pool import render_slice
from dra_bridge.translate.plan.pod_plan import Options
from dra_bridge.translate.plan.workloads import convert_object
from tests.capacity_scenarios import (
    H100,
    MIXED,
    MIXED_PODS,
    TOLERATE,
    V1,
    catalog_classes,
    gfd_node,
    gpu_pod,
)
from tests.factories import gpu, make_container
from tests.topology_scenarios import TWO_NUMA_X4

FEATURES = parse_gates(None)


def _demand(
    catalog: Catalog, legacy: dict[str, Any], options: Options = Options(), priority: int = 0
) -> WorkloadDemand:
    result = convert_object(legacy, catalog, options)
    converted = result.obj if result.templates else None
    return workload_demand(legacy, converted, {t["metadata"]["name"]: t for t in result.templates}, priority)


def _check(
    catalog: Catalog, node_objects: Any, workloads: list[WorkloadDemand], slices: Any = (), **kwargs: Any
) -> Any:
    nodes = [cluster_node(n) for n in node_objects]
    devices = cluster_devices(nodes, list(slices), catalog, kwargs.pop("inventories", None))
    return check_capacity(workloads, nodes, devices.slices, catalog_classes(catalog), FEATURES, **kwargs)


def _deployment(name: str, replicas: int, gpus: int, **spec: Any) -> dict[str, Any]:
    pod = gpu_pod("x", gpus, **spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"replicas": replicas, "template": {"metadata": {}, "spec": pod["spec"]}},
    }


# ------------------------------------------------------------------ the mixed cluster, one verdict per pod


def test_mixed_cluster_verdicts_and_reasons(catalog: Catalog) -> None:
    workloads = [_demand(catalog, p.legacy, priority=len(MIXED_PODS) - i) for i, p in enumerate(MIXED_PODS)]
    result = _check(catalog, MIXED, workloads)
    pods = [p for w in result.workloads for p in w.pods]
    assert [(p.name, p.fits, p.code) for p in pods] == [(p.name, p.fits, p.code) for p in MIXED_PODS]
    by_name = {p.name: p for p in pods}
    assert by_name["h100-four"].node == "h100-0" and by_name["h100-three"].node == "h100-1"
    assert len(by_name["h100-four"].devices) == 4
    assert "needs 2 devices of class nvidia-gpu.dra-bridge.io and selector" in by_name["h100-two"].reason
    assert "at most 1 free on one eligible node (h100-1: 4 match there)" in by_name["h100-two"].reason
    assert (
        "no device of the 3 eligible nodes matches class nvidia-gpu.dra-bridge.io and selector"
        in by_name["b200"].reason
    )
    assert by_name["l4-tolerating"].node == "l4-0"
    # the legacy model gives the same placements here: nothing differs
    assert [(p.legacy_fits, p.legacy_node) for p in pods] == [(p.fits, p.node) for p in pods]
    assert not any(p.differs for p in pods)
    assert by_name["b200"].legacy_code == "node-selection"
    assert by_name["any-one"].legacy_code == "not-enough-devices"
    assert "needs 1 nvidia.com/gpu: at most 0 left" in by_name["any-one"].legacy_reason


def test_pools_count_devices_and_usage_per_product(catalog: Catalog) -> None:
    workloads = [_demand(catalog, p.legacy) for p in MIXED_PODS]
    result = _check(catalog, MIXED, workloads)
    pools = {p.pool: p for p in result.pools}
    assert set(pools) == {"NVIDIA-A100-SXM4-40GB", H100, "NVIDIA-L4"}
    h100 = pools[H100]
    assert (h100.nodes, h100.devices, h100.used_before, h100.used_after) == (2, 8, 0, 8)
    assert h100.legacy_allocatable == {"nvidia.com/gpu": 8} and h100.legacy_used_after == {"nvidia.com/gpu": 8}
    assert result.as_json()["totals"]["pods"] == len(MIXED_PODS)


def test_pool_label_is_configurable_and_nodes_without_it_pool_together(catalog: Catalog) -> None:
    nodes = [gfd_node("a", H100, 2, labels={"pool": "train"}), gfd_node("b", H100, 2)]
    result = _check(catalog, nodes, [], pool_label="pool")
    assert [(p.pool, p.nodes, p.devices) for p in result.pools] == [("", 1, 2), ("train", 1, 2)]


# ------------------------------------------------------------------ order


def test_order_is_priority_then_namespace_then_name() -> None:
    def workload(ns: str, name: str, priority: int) -> WorkloadDemand:
        return WorkloadDemand(ns, name, "Pod", (), priority)

    ordered = placement_order(
        [workload("b", "a", 0), workload("a", "z", 0), workload("a", "b", 0), workload("z", "z", 10)]
    )
    assert [(w.namespace, w.name) for w in ordered] == [("z", "z"), ("a", "b"), ("a", "z"), ("b", "a")]


def test_higher_priority_takes_the_devices_first(catalog: Catalog) -> None:
    low = _demand(catalog, gpu_pod("aaa-low", 4), priority=0)
    high = _demand(catalog, gpu_pod("zzz-high", 4), priority=100)
    result = _check(catalog, [gfd_node("n", H100, 4)], [low, high])
    assert [(w.name, w.fits) for w in result.workloads] == [("zzz-high", True), ("aaa-low", False)]


def test_pod_priority_from_field_class_or_default() -> None:
    assert pod_priority({"priority": 7}) == 7
    assert pod_priority({"priorityClassName": "high"}, {"high": 1000}) == 1000
    assert pod_priority({"priorityClassName": "gone"}, {"high": 1000}, global_default=5) == 5


# ------------------------------------------------------------------ where DRA and legacy differ


def test_numa_alignment_fits_where_legacy_fits_only_by_count(catalog: Catalog) -> None:
    slices = [render_slice(s, V1) for s in TWO_NUMA_X4.slices(catalog, "numa")]
    node = gfd_node("numa", H100, 8)
    aligned = _demand(catalog, gpu_pod("aligned-5", 5), Options(alignment="numa"))
    result = _check(catalog, [node], [aligned], slices)
    pod = result.workloads[0].pods[0]
    assert (pod.fits, pod.code, pod.legacy_fits, pod.differs) == (False, "constraint", True, True)
    assert "not together: a claim constraint cannot be satisfied" in pod.reason
    assert "matchAttribute resource.kubernetes.io/numaNode" in pod.reason


def test_devices_from_node_capacity_carry_no_topology_so_aligned_pods_do_not_fit(catalog: Catalog) -> None:
    aligned = _demand(catalog, gpu_pod("aligned-2", 2), Options(alignment="numa"))
    pod = _check(catalog, [gfd_node("n", H100, 8)], [aligned]).workloads[0].pods[0]
    assert (pod.fits, pod.code, pod.legacy_fits) == (False, "constraint", True)


def test_inventory_dump_gives_numa_nodes_so_aligned_pods_fit(catalog: Catalog) -> None:
    inventory = list(TWO_NUMA_X4.inventory)
    aligned = _demand(catalog, gpu_pod("aligned-4", 4), Options(alignment="numa"))
    nodes = [cluster_node(gfd_node("n", H100, 8))]
    devices = cluster_devices(nodes, [], catalog, {"n": inventory})
    assert devices.sources == {"n": "inventory"}
    result = check_capacity([aligned], nodes, devices.slices, catalog_classes(catalog), FEATURES)
    assert result.workloads[0].pods[0].fits is True


def test_held_allocations_and_running_pods_count_before(catalog: Catalog) -> None:
    slices = [render_slice(s, V1) for s in TWO_NUMA_X4.slices(catalog, "numa")]
    gpu0 = slices[0]["spec"]["devices"][0]["name"]
    held = [
        {
            "devices": {
                "results": [{"request": "r", "driver": slices[0]["spec"]["driver"], "pool": "numa", "device": gpu0}]
            }
        }
    ]
    pod = _demand(catalog, gpu_pod("seven", 7))
    result = _check(
        catalog, [gfd_node("numa", H100, 8)], [pod], slices, held=Held(held, {"numa": {"nvidia.com/gpu": 2}})
    )
    fit = result.workloads[0].pods[0]
    assert (fit.fits, fit.legacy_fits, fit.differs) == (True, False, True)
    assert gpu0 not in {d.rsplit("/", 1)[1] for d in fit.devices}
    usage = result.pools[0]
    assert (usage.used_before, usage.used_after) == (1, 8)
    assert (usage.legacy_used_before, usage.legacy_used_after) == ({"nvidia.com/gpu": 2}, {"nvidia.com/gpu": 2})


# ------------------------------------------------------------------ node filters and other verdicts


@pytest.mark.parametrize(
    ("spec", "fits", "why"),
    [
        ({}, False, "1 taint dedicated=inference:NoSchedule"),
        (TOLERATE, True, ""),
        ({"nodeSelector": {"zone": "b"}}, False, "1 node selector"),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["other"]}
                                    ]
                                }
                            ]
                        }
                    }
                },
                **TOLERATE,
            },
            False,
            "1 node affinity",
        ),
    ],
    ids=["taint", "tolerated", "selector", "affinity"],
)
def test_node_filters_apply_to_both_models(catalog: Catalog, spec: dict[str, Any], fits: bool, why: str) -> None:
    node = gfd_node("n", H100, 2, taints=[{"key": "dedicated", "value": "inference", "effect": "NoSchedule"}])
    pod = _check(catalog, [node], [_demand(catalog, gpu_pod("p", 1, **spec))]).workloads[0].pods[0]
    assert (pod.fits, pod.legacy_fits) == (fits, fits)
    if not fits:
        assert pod.code == pod.legacy_code == "node-selection"
        assert why in pod.reason and why in pod.legacy_reason


def test_node_name_pods_stay_legacy_and_the_legacy_model_honours_node_name(catalog: Catalog) -> None:
    nodes = [gfd_node("a", H100, 2), gfd_node("b", H100, 2)]
    pod = _check(catalog, nodes, [_demand(catalog, gpu_pod("p", 1, nodeName="b"))]).workloads[0].pods[0]
    assert (pod.fits, pod.code, pod.legacy_node) == (None, "not-converted", "b")
    pod = _check(catalog, nodes, [_demand(catalog, gpu_pod("p", 1, nodeName="gone"))]).workloads[0].pods[0]
    assert pod.legacy_code == "node-selection" and "2 nodeName" in pod.legacy_reason


def test_extended_resource_taint_is_tolerated_as_the_admission_plugin_does(catalog: Catalog) -> None:
    node = gfd_node("n", H100, 2, taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}])
    pod = _check(catalog, [node], [_demand(catalog, gpu_pod("p", 1))]).workloads[0].pods[0]
    assert (pod.fits, pod.legacy_fits) == (True, True)


def test_unschedulable_node_is_skipped(catalog: Catalog) -> None:
    node = gfd_node("n", H100, 2)
    node["spec"]["unschedulable"] = True
    pod = _check(catalog, [node], [_demand(catalog, gpu_pod("p", 1))]).workloads[0].pods[0]
    assert "taint node.kubernetes.io/unschedulable:NoSchedule" in pod.reason and not pod.legacy_fits


def test_cel_runtime_error_is_an_error_verdict(catalog: Catalog) -> None:
    spec = {
        "devices": {
            "requests": [
                {
                    "name": "r",
                    "exactly": {
                        "deviceClassName": "nvidia-gpu.dra-bridge.io",
                        "allocationMode": "ExactCount",
                        "count": 1,
                        "selectors": [{"cel": {"expression": 'device.attributes["example.com"].missing == 1'}}],
                    },
                }
            ],
            "constraints": [],
            "config": [],
        }
    }
    demand = WorkloadDemand("team-a", "broken", "Pod", (PodDemand("broken", (ClaimDemand("broken-r", spec),), {}),))
    pod = _check(catalog, [gfd_node("n", H100, 1)], [demand]).workloads[0].pods[0]
    assert (pod.fits, pod.code) == (False, "error")
    assert "CEL runtime error" in pod.reason


def test_unknown_resource_is_not_converted_but_placed_by_the_legacy_model(catalog: Catalog) -> None:
    node = gfd_node("n", H100, 1)
    node["status"]["allocatable"]["example.com/fpga"] = "1"
    legacy = gpu_pod("fpga", 1)
    legacy["spec"]["containers"][0]["resources"]["limits"] = {"example.com/fpga": 1}
    pod = _check(catalog, [node], [_demand(catalog, legacy)]).workloads[0].pods[0]
    assert (pod.fits, pod.code, pod.legacy_fits, pod.legacy_node, pod.differs) == (
        None,
        "not-converted",
        True,
        "n",
        False,
    )


def test_shared_claim_is_allocated_once_and_its_pods_follow_it(catalog: Catalog) -> None:
    claim = {
        "apiVersion": V1,
        "kind": "ResourceClaim",
        "metadata": {"name": "shared", "namespace": "team-a"},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "nvidia-gpu.dra-bridge.io", "count": 2}}]
            }
        },
    }
    pods = []
    for name in ("first", "second"):
        pod = gpu_pod(name, 0)
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
        pods.append(workload_demand(pod, pod, {}, claims={"shared": claim}))
    nodes = [gfd_node("a", H100, 1), gfd_node("b", H100, 2)]
    result = _check(catalog, nodes, pods)
    first, second = (w.pods[0] for w in result.workloads)
    assert (first.fits, first.node, second.fits, second.node) == (True, "b", True, "b")
    assert first.devices == second.devices and len(first.devices) == 2
    assert result.pools[0].used_after == 2


def test_deployment_replicas_fill_nodes_in_order(catalog: Catalog) -> None:
    result = _check(
        catalog, [gfd_node("a", H100, 4), gfd_node("b", H100, 4)], [_demand(catalog, _deployment("train", 5, 2))]
    )
    pods = result.workloads[0].pods
    assert [p.name for p in pods] == [f"train-{i}" for i in range(5)]
    assert [p.node for p in pods] == ["a", "a", "b", "b", None]
    assert result.workloads[0].fits is False and result.workloads[0].legacy_fits is False
    assert "needs 2 devices" in pods[4].reason


def test_given_slices_stand_and_nodes_without_slices_get_the_bridges(catalog: Catalog) -> None:
    slices = [render_slice(s, V1) for s in TWO_NUMA_X4.slices(catalog, "numa")]
    nodes = [cluster_node(gfd_node("numa", H100, 8)), cluster_node(gfd_node("plain", H100, 2))]
    devices = cluster_devices(nodes, slices, catalog)
    assert devices.sources == {"numa": "slices", "plain": "node"}
    assert len(next(s for s in devices.slices if s[1]["nodeName"] == "plain")[1]["devices"]) == 2


def test_single_strategy_mig_node_publishes_mig_devices(catalog: Catalog) -> None:
    node = gfd_node("mig", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", 7, labels={"nvidia.com/mig.strategy": "single"})
    legacy = gpu_pod("mig", 2, nodeSelector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"})
    pod = _check(catalog, [node], [_demand(catalog, legacy)]).workloads[0].pods[0]
    assert (pod.fits, pod.legacy_fits) == (True, True), pod.reason


# ------------------------------------------------------------------ demand and input errors


def test_legacy_requests_count_init_containers_and_sidecars_as_the_scheduler_does() -> None:
    spec = {
        "initContainers": [make_container("side", gpu(1), restart_policy="Always"), make_container("setup", gpu(4))],
        "containers": [make_container("a", gpu(1)), make_container("b", gpu(1))],
    }
    assert legacy_requests(spec) == {"nvidia.com/gpu": 5}
    assert legacy_requests({"containers": [make_container("a", gpu(0))]}) == {}


def test_bad_input_names_the_object_and_field(catalog: Catalog) -> None:
    node = gfd_node("n", H100, 1)
    node["status"]["allocatable"]["nvidia.com/gpu"] = "1.5"
    with pytest.raises(InputError, match=r"Node n: status.allocatable\[nvidia.com/gpu\]: .*not a whole number"):
        cluster_node(node)
    nodes = [cluster_node(gfd_node("n", H100, 1))]
    with pytest.raises(InputError, match="inventory dump for node gone: no Node object"):
        cluster_devices(nodes, [], catalog, {"gone": []})
    with pytest.raises(InputError, match="Node n: given twice"):
        check_capacity([], nodes * 2, [], catalog_classes(catalog), FEATURES)
    with pytest.raises(InputError, match=r"Job team-a/j: spec\.parallelism: must be a non-negative integer"):
        workload_demand(
            {"kind": "Job", "metadata": {"name": "j", "namespace": "team-a"}, "spec": {"parallelism": "2"}}, None, {}
        )
    with pytest.raises(InputError, match="kind DaemonSet: no pod count rule"):
        workload_demand({"kind": "DaemonSet", "metadata": {"name": "d"}, "spec": {}}, None, {})


def test_node_constraints_default_to_nothing() -> None:
    node = ClusterNode("n")
    assert NodeConstraints().node_name is None and node.allocatable == {}


def test_an_invalid_pool_rules_out_its_node_only() -> None:
    # node a's pool repeats a device name (invalid: upstream's ErrFailedAllocationOnNode), node b's is fine
    def pool(node: str, names: list[str]) -> tuple[str, dict[str, Any]]:
        return (
            node,
            {
                "driver": "gpu.example.com",
                "nodeName": node,
                "devices": [{"name": n} for n in names],
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            },
        )

    spec = {
        "devices": {
            "requests": [
                {"name": "r", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 2}}
            ],
            "constraints": [],
            "config": [],
        }
    }
    demand = WorkloadDemand("team-a", "p", "Pod", (PodDemand("p", (ClaimDemand("p-r", spec),), {}),))
    classes = {"gpu": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}], "config": []}}
    result = check_capacity(
        [demand],
        [ClusterNode("a"), ClusterNode("b")],
        [pool("a", ["g0", "g0", "g1"]), pool("b", ["g0", "g1"])],
        classes,
        FEATURES,
    )
    pod = result.workloads[0].pods[0]
    assert (pod.fits, pod.node, pod.devices) == (True, "b", ("gpu.example.com/b/g0", "gpu.example.com/b/g1"))
