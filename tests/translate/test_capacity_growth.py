"""The report's capacity check grows linearly with the cluster (issue 25).

Counted, not timed: the Python lines the check runs in translate.capacity and translate.alloc
(a deterministic count, whatever the machine's speed or its neighbours) for the report's
capacity section over the benchmarks' generated cluster (bench/cluster_inputs.py: GPU
Deployments, one node per ten workloads), at n and 2n workloads. Linear work doubles; work
per pod per node (a structure rebuilt or rescanned for every pod) makes the ratio approach 4.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from collections.abc import Mapping
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

import pytest

from dra_bridge.translate.alloc import parse_gates
from dra_bridge.translate.alloc.placement import FirstFit
from dra_bridge.translate.capacity import (
    ClaimDemand,
    ClusterNode,
    NodeConstraints,
    PodDemand,
    WorkloadDemand,
    check_capacity,
)
from dra_bridge.translate.capacity.legacy import LegacyModel
from dra_bridge.translate.capacity.shortage import Shortage
from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.report import Settings, build_report
from dra_bridge.translate.report.capacity import report_capacity

BENCH = Path(__file__).parents[2] / "bench" / "cluster_inputs.py"


def _inputs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cluster_inputs", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _counted_lines(workloads: int) -> tuple[int, dict[str, Any]]:
    """Lines run in translate.capacity and translate.alloc by report_capacity, and the totals."""
    inputs = _inputs()
    catalog = load_catalog()
    report = build_report(inputs.objects(workloads, inputs.nodes_for(workloads)), catalog, Settings())
    count = 0

    def local(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def start(frame: FrameType, event: str, arg: object) -> Any:
        name = frame.f_code.co_filename.replace("\\", "/")
        return local if "/translate/capacity/" in name or "/translate/alloc/" in name else None

    sys.settrace(start)
    try:
        report_capacity(report, catalog, {})
    finally:
        sys.settrace(None)
    assert report.capacity is not None
    return count, report.capacity["totals"]


def test_capacity_check_work_doubles_with_the_cluster() -> None:
    small, small_totals = _counted_lines(200)
    large, large_totals = _counted_lines(400)
    # The cluster is oversubscribed at both sizes: most pods fit nowhere and get a reason.
    assert large_totals["pods"] == 2 * small_totals["pods"]
    assert small_totals["unschedulable"] > small_totals["fit"]
    assert large / small < 2.3, f"{small} lines at 200 workloads, {large} at 400: ratio {large / small:.2f}"


DRIVER = "gpu.example.com"
MODELS = ("A100", "H100", "L40S")
CLASSES = {"gpu": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}], "config": []}}


def _cluster(count: int) -> tuple[list[ClusterNode], list[tuple[str, dict[str, Any]]]]:
    nodes, slices = [], []
    for n in range(count):
        name, model = f"node-{n:03d}", MODELS[n % len(MODELS)]
        taints = ({"key": "dedicated", "value": "x", "effect": "NoSchedule"},) if n % 7 == 3 else ()
        gpus = 8 if n % 5 else 4
        nodes.append(ClusterNode(name, {"product": model}, taints, allocatable={"nvidia.com/gpu": gpus}))
        devices = [{"name": f"gpu-{i}", "attributes": {"model": {"string": model}}} for i in range(gpus)]
        slices.append(
            (
                name,
                {
                    "driver": DRIVER,
                    "nodeName": name,
                    "devices": devices,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                },
            )
        )
    return nodes, slices


def _request(name: str, count: int, model: str) -> dict[str, Any]:
    selector = f'device.attributes["{DRIVER}"].model == "{model}"'
    return {
        "name": name,
        "exactly": {
            "deviceClassName": "gpu",
            "allocationMode": "ExactCount",
            "count": count,
            "selectors": [{"cel": {"expression": selector}}],
        },
    }


def _workloads(pods: int, seed: int) -> list[WorkloadDemand]:
    """Pods of 1-3 claims (one or two requests), some for a model no node has, some pinned,
    some tolerating the taint, some asking for two models at once (the full diagnosis's shape)."""
    rng = random.Random(seed)
    out: list[WorkloadDemand] = []
    made = 0
    while made < pods:
        replicas = min(rng.randint(1, 5), pods - made)
        size = rng.choice((1, 1, 2, 3, 4, 8))
        model = rng.choice(MODELS) if rng.random() < 0.9 else "B200"
        other = rng.choice(MODELS) if rng.random() < 0.2 else model
        requests = [_request("gpu", size, model)]
        if rng.random() < 0.3:
            requests.append(_request("more", rng.choice((1, 2)), other))
        claims_per_pod = rng.choice((1, 1, 2))
        tolerations = ({"key": "dedicated", "operator": "Exists"},) if rng.random() < 0.3 else ()
        selector = {"product": model} if rng.random() < 0.4 else {}
        constraints = NodeConstraints(node_selector=selector, tolerations=tolerations)
        name = f"w-{len(out):04d}"
        legacy = {"nvidia.com/gpu": size * claims_per_pod}
        members = tuple(
            PodDemand(
                f"{name}-{r}",
                tuple(
                    ClaimDemand(f"{name}-{r}-{c}", {"devices": {"requests": requests, "constraints": [], "config": []}})
                    for c in range(claims_per_pod)
                ),
                legacy,
                constraints,
                constraints,
            )
            for r in range(replicas)
        )
        out.append(WorkloadDemand(f"ns-{len(out) % 3}", name, "Deployment", members))
        made += replicas
    return out


def _scanned_legacy(self: LegacyModel, requests: Mapping[str, int], pod: NodeConstraints) -> tuple[Any, ...]:
    """The legacy model before issue 25: every eligible node scanned for every pod."""
    indices, why = self.eligible(pod)
    if not indices:
        return None, "node-selection", why
    candidates = [self.nodes[i] for i in indices]
    best: tuple[int, str, int, int] | None = None
    for node in candidates:
        used = self.used[node.name]
        short = [(requests[r] - (node.allocatable.get(r, 0) - used[r]), r) for r in sorted(requests)]
        missing = [(s, r) for s, r in short if s > 0]
        if not missing:
            for resource, count in requests.items():
                used[resource] += count
            return node.name, "fits", ""
        shortfall, resource = max(missing)
        if best is None or shortfall < best[0]:
            left = node.allocatable.get(resource, 0) - used[resource]
            best = (shortfall, resource, left, node.allocatable.get(resource, 0))
    assert best is not None
    _, resource, left, allocatable = best
    return (
        None,
        "not-enough-devices",
        (
            f"needs {requests[resource]} {resource}: at most {left} left on one "
            f"eligible node (of {allocatable} allocatable; {len(candidates)} eligible nodes)"
        ),
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_linear_check_answers_as_the_scan(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every pod's verdict, node, code and reason, both models, equal to the per-pod scans."""
    nodes, slices = _cluster(30)
    demand = _workloads(400, seed)
    fast = check_capacity(demand, nodes, slices, CLASSES, parse_gates(None)).as_json()
    first_fit = FirstFit.first_fit

    def ungrouped(self: FirstFit, claims: Any, candidates: Any = None, hold: bool = True, group: Any = None) -> Any:
        return first_fit(self, claims, candidates, hold)

    monkeypatch.setattr(FirstFit, "first_fit", ungrouped)
    monkeypatch.setattr(Shortage, "diagnose", lambda self, group, claims, candidates: None)
    monkeypatch.setattr(LegacyModel, "place", _scanned_legacy)
    scanned = check_capacity(demand, nodes, slices, CLASSES, parse_gates(None)).as_json()
    codes = {p["code"] for w in fast["workloads"] for p in w["pods"]}
    assert {"fits", "not-enough-devices", "no-matching-device", "node-selection"} <= codes
    assert fast == scanned
