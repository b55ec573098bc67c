"""Benchmark: the report's capacity check (translate.capacity.check_capacity) on a big cluster.

Scenario: N nodes x 8 GPUs of 4 models (GFD product label, ``nvidia.com/gpu`` allocatable,
one ResourceSlice each with unique uuids), W workloads of 1-8 replicas, each pod one converted
claim of 1, 2, 4 or 8 GPUs (weights 4:3:2:1) asking for a model by CEL selector (one workload
in ten for a model no node has) and the same legacy request; pods placed cumulatively under
DRA and under the legacy model, so the cluster fills up and the last pods get a reason
(``not-enough-devices``, ``no-matching-device``) from the diagnosis.

Printed: pods/s of the whole check (both models, per node pool sums), its CPU time, and the
ratio to the legacy model alone on the same pods (a count per node: the baseline measured in
the same process). Times are CPU seconds (``time.process_time``), best of ``--repeat``.

    python bench/bench_capacity.py [--nodes 2000] [--pods 6000] [--repeat 2] [--smoke]

``--smoke`` (or ``DRA_BENCH_SMOKE=1``): 40 nodes, 600 pods, one run; CI runs it.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from typing import Any

from dra_bridge.translate.alloc import parse_gates
from dra_bridge.translate.capacity import (
    ClaimDemand,
    ClusterNode,
    NodeConstraints,
    PodDemand,
    WorkloadDemand,
    check_capacity,
)
from dra_bridge.translate.capacity.legacy import LegacyModel

DRIVER = "gpu.example.com"
MODELS = ("A100", "H100", "L40S", "B200")
CLASSES = {"gpu": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}], "config": []}}
SIZES = (1, 1, 1, 1, 2, 2, 2, 4, 4, 8)


def cluster(count: int) -> tuple[list[ClusterNode], list[tuple[str, dict[str, Any]]]]:
    nodes, slices = [], []
    for n in range(count):
        name, model = f"node-{n:05d}", MODELS[n % len(MODELS)]
        devices = [
            {
                "name": f"gpu-{i}",
                "attributes": {
                    "productName": {"string": model},
                    "uuid": {"string": f"GPU-{n:05d}-{i}"},
                    "index": {"int": i},
                },
            }
            for i in range(8)
        ]
        nodes.append(ClusterNode(name, {"nvidia.com/gpu.product": model}, allocatable={"nvidia.com/gpu": 8}))
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


def workloads(pods: int, seed: int = 12) -> list[WorkloadDemand]:
    rng = random.Random(seed)
    out: list[WorkloadDemand] = []
    made = 0
    while made < pods:
        replicas = min(rng.randint(1, 8), pods - made)
        size = rng.choice(SIZES)
        model = rng.choice(MODELS) if rng.random() < 0.9 else "MI300X"
        selector = f'device.attributes["{DRIVER}"].productName == "{model}"'
        spec = {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "gpu",
                            "allocationMode": "ExactCount",
                            "count": size,
                            "selectors": [{"cel": {"expression": selector}}],
                        },
                    }
                ],
                "constraints": [],
                "config": [],
            }
        }
        name = f"train-{len(out):05d}"
        constraints = NodeConstraints(node_selector={"nvidia.com/gpu.product": model})
        members = tuple(
            PodDemand(
                f"{name}-{r}",
                (ClaimDemand(f"{name}-{r}-gpu", spec),),
                {"nvidia.com/gpu": size},
                NodeConstraints(),
                constraints,
            )
            for r in range(replicas)
        )
        out.append(WorkloadDemand("ml", name, "Deployment", members))
        made += replicas
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=6000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", default=os.environ.get("DRA_BENCH_SMOKE") == "1")
    args = parser.parse_args()
    if args.smoke:
        args.nodes, args.pods, args.repeat = 40, 600, 1
    nodes, slices = cluster(args.nodes)
    demand = workloads(args.pods)
    check_s = legacy_s = float("inf")
    fits = legacy_fits = 0
    for _ in range(args.repeat):
        start = time.process_time()
        result = check_capacity(demand, nodes, slices, CLASSES, parse_gates(None))
        check_s = min(check_s, time.process_time() - start)
        fits = sum(1 for w in result.workloads for p in w.pods if p.fits)
        legacy_fits = sum(1 for w in result.workloads for p in w.pods if p.legacy_fits)
        start = time.process_time()
        legacy = LegacyModel(nodes)
        for workload in demand:
            for pod in workload.pods:
                legacy.place(pod.legacy_requests, pod.legacy)
        legacy_s = min(legacy_s, time.process_time() - start)
    print(
        f"capacity check: {args.pods} pods ({len(demand)} workloads) on {args.nodes} nodes x 8 GPUs: "
        f"{check_s:.2f} s CPU, {args.pods / check_s:.0f} pods/s; {fits} fit under DRA, {legacy_fits} under legacy"
    )
    print(f"legacy model alone: {legacy_s:.2f} s CPU; ratio check/legacy {check_s / max(legacy_s, 1e-9):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
