"""Benchmark: first-fit placement of many pods' claims (translate.alloc.placement) against a naive baseline.

Scenario (issue 12): N nodes x 8 GPUs of 4 models (each device with a unique uuid, index,
NUMA node, driver version, memory), P pods of 1, 2, 4 and 8 GPUs (weights 4:3:2:1), each
with one claim whose request asks for a model by CEL selector (one pod in ten asks for a model
no node has), placed cumulatively on the first node that fits. Measured in one process:

- the engine: claims/s over all pods, wall time, peak memory (``ru_maxrss``), CEL evaluations;
- the overheads of a CEL selector on every claim (target <= 10% of the rate) and of a
  ``matchAttribute`` constraint (target <= 50%): the same pods without a request selector, with
  one true for every device (so the placements are the same), and with that selector plus a
  constraint on the product name (which every node meets);
- the naive baseline: every pod scans the nodes in order and evaluates every device's selectors
  afresh (``translate.cel.evaluate_selectors``), measured on the first pods (a subsample; a
  full run would take hours) and extrapolated linearly to all pods: a lower bound, since later
  pods scan more full nodes.

    python bench/bench_simulate.py [--nodes 2000] [--pods 50000] [--naive-pods 200] [--smoke]

Times are the process's CPU time (``time.process_time``: one core, single-threaded), so that
neighbours on a shared machine do not count; the wall time of the whole run is printed too.
Full mode (the defaults) exits 1 when a target is missed: under 60 s and at least 850
claims/s, under 2 GiB, the overheads above. ``--smoke`` (or ``DRA_BENCH_SMOKE=1``): 40 nodes,
1,000 pods; CI runs it so the script cannot rot, and only a crash fails it.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import time
from collections.abc import Sequence
from typing import Any

from dra_bridge.translate.alloc import Node, SelectorCache, parse_gates
from dra_bridge.translate.alloc.placement import PodPlacement, place
from dra_bridge.translate.cel import evaluate_selectors

DRIVER = "gpu.example.com"
MODELS = ("A100", "H100", "L40S", "B200")
CLASS_CEL = f'device.driver == "{DRIVER}"'
CLASSES = {"gpu": {"selectors": [{"cel": {"expression": CLASS_CEL}}], "config": []}}
SIZES = (1, 1, 1, 1, 2, 2, 2, 4, 4, 8)


def model_cel(model: str) -> str:
    return f'device.attributes["{DRIVER}"].productName == "{model}"'


def cluster(nodes: int) -> tuple[list[Node], list[tuple[str, dict[str, Any]]]]:
    out_nodes, slices = [], []
    for n in range(nodes):
        name = f"node-{n:05d}"
        model = MODELS[n % len(MODELS)]
        devices = [{"name": f"gpu-{i}", "attributes": {
            "productName": {"string": model}, "uuid": {"string": f"GPU-{n:05d}-{i}"}, "index": {"int": i},
            "numa": {"int": i // 4}, "driverVersion": {"version": "580.65.6"}},
            "capacity": {"memory": {"value": "80Gi"}}} for i in range(8)]
        out_nodes.append(Node(name, {"kubernetes.io/hostname": name}))
        slices.append((name, {"driver": DRIVER, "nodeName": name, "devices": devices,
                              "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}}))
    return out_nodes, slices


MEMORY_CEL = f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'


def pods(count: int, selector: str | None, constraint: bool, seed: int = 12) -> list[tuple[str, Any]]:
    """``selector``: "model" (one of MODELS, or one no node has for one pod in ten), "memory"
    (true for every device: the same placements as no selector at all) or None."""
    rng = random.Random(seed)
    out = []
    for p in range(count):
        size = rng.choice(SIZES)
        model = rng.choice(MODELS) if rng.random() < 0.9 else "MI300X"
        expression = model_cel(model) if selector == "model" else MEMORY_CEL
        exact: dict[str, Any] = {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": size,
                                 "selectors": [{"cel": {"expression": expression}}] if selector else []}
        devices: dict[str, Any] = {"requests": [{"name": "gpu", "exactly": exact}], "constraints": [], "config": []}
        if constraint:
            devices["constraints"] = [{"matchAttribute": f"{DRIVER}/productName"}]
        out.append((f"ml/pod-{p}", [(f"ml/pod-{p}-gpu", {"devices": devices})]))
    return out


def engine(nodes: list[Node], slices: Sequence[Any], workload: list[Any],
           repeat: int = 2) -> tuple[float, list[PodPlacement], int]:
    """The best of ``repeat`` runs, each from scratch (fresh allocators and selector cache)."""
    best = float("inf")
    for _ in range(repeat):
        cache = SelectorCache()
        start = time.process_time()
        placed = place(workload, nodes, slices, CLASSES, parse_gates(None), cache)
        best = min(best, time.process_time() - start)
    return best, placed, cache.evaluations


def naive(nodes: list[Node], slices: Sequence[Any], workload: list[Any]) -> tuple[float, int]:
    """Every pod: nodes in order, every device's selectors evaluated afresh, first node with enough."""
    used: set[tuple[str, str]] = set()
    start = time.process_time()
    fitted = 0
    for _, claims in workload:
        exact = claims[0][1]["devices"]["requests"][0]["exactly"]
        expressions = [CLASS_CEL] + [s["cel"]["expression"] for s in exact["selectors"]]
        for node, (_, spec) in zip(nodes, slices, strict=True):
            free = [d["name"] for d in spec["devices"] if (node.name, d["name"]) not in used
                    and evaluate_selectors(expressions, d, DRIVER)]
            if len(free) >= exact["count"]:
                used.update((node.name, name) for name in free[:exact["count"]])
                fitted += 1
                break
    return time.process_time() - start, fitted


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--naive-pods", type=int, default=200)
    parser.add_argument("--smoke", action="store_true", default=os.environ.get("DRA_BENCH_SMOKE") == "1")
    args = parser.parse_args()
    if args.smoke:
        args.nodes, args.pods, args.naive_pods = 40, 1000, 20
    wall = time.perf_counter()
    nodes, slices = cluster(args.nodes)
    total_gpus = 8 * args.nodes

    full = pods(args.pods, selector="model", constraint=False)
    engine(nodes[:4], slices[:4], full[:50], repeat=1)  # compiles the expressions (once per process)
    seconds, placed, evaluations = engine(nodes, slices, full)
    rate = args.pods / seconds
    fitted = sum(1 for p in placed if p.outcome == "allocated")
    taken = sum(len(p.allocations[0]["devices"]["results"]) for p in placed if p.allocations)
    # Overheads: the same placements with and without a selector (true for every device), and
    # with a matchAttribute constraint every node meets.
    plain_s, plain, _ = engine(nodes, slices, pods(args.pods, selector=None, constraint=False))
    memory_s, memory, _ = engine(nodes, slices, pods(args.pods, selector="memory", constraint=False))
    matched_s, matched, _ = engine(nodes, slices, pods(args.pods, selector="memory", constraint=True))
    assert [p.node for p in plain] == [p.node for p in memory] == [p.node for p in matched]
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    naive_s, naive_fitted = naive(nodes, slices, full[:args.naive_pods])
    assert naive_fitted == sum(1 for p in placed[:args.naive_pods] if p.outcome == "allocated")
    naive_total = naive_s / args.naive_pods * args.pods
    cel_overhead = 1 - plain_s / memory_s
    constraint_overhead = 1 - memory_s / matched_s

    print(f"placement: {args.pods} pods (1/2/4/8 GPUs, CEL selector each) on {args.nodes} nodes x 8 GPUs: "
          f"{seconds:.1f} s, {rate:.0f} claims/s; {fitted} pods placed ({taken} of {total_gpus} GPUs), "
          f"{args.pods - fitted} unsatisfiable; {evaluations} CEL evaluations; peak memory {peak_mib:.0f} MiB")
    print(f"same placements without / with a CEL selector on every claim: {plain_s:.1f} s / {memory_s:.1f} s: "
          f"CEL selector overhead {cel_overhead:.1%} of the rate (target <= 10%)")
    print(f"with a matchAttribute constraint too: {matched_s:.1f} s: constraint overhead {constraint_overhead:.1%} "
          "(target <= 50%)")
    print(f"naive evaluate-every-device: {naive_s:.2f} s for the first {args.naive_pods} pods, extrapolated "
          f">= {naive_total:.0f} s for {args.pods}; ratio naive/engine >= {naive_total / seconds:.1f}")
    print(f"whole run: {time.perf_counter() - wall:.1f} s wall")
    missed = [what for what, bad in [
        ("60 s / 850 claims/s", seconds > 60 or rate < 850), ("2 GiB", peak_mib > 2048),
        ("CEL overhead 10%", cel_overhead > 0.10), ("constraint overhead 50%", constraint_overhead > 0.50)] if bad]
    if missed and not args.smoke:
        print(f"targets missed: {', '.join(missed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
