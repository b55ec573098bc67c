"""Benchmark: ResourceSlices for N simulated nodes x G GPUs, computed by translate (pure).

Prints wall time and peak Python memory (tracemalloc) of ``translate.inventory.slices.build_slices`` for
every node, and, as a baseline measured in the same run, the time of ``json.dumps`` of the very
same output (what any agent pays at least once to send it). Ratios > 1 mean building costs more
than serialising.

    python bench/bench_slices.py [--nodes 1000] [--gpus 8] [--repeat 3] [--smoke]

``--smoke`` (or ``DRA_BENCH_SMOKE=1``): 200 nodes, one repeat, about a second; CI runs it
so the script cannot rot. There is no target; exit status 0 unless it crashes.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import tracemalloc
from typing import Any

from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.inventory.allocatable import InventoryDevice
from dra_bridge.translate.inventory.slices import build_slices

LABELS = {
    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
    "nvidia.com/gpu.family": "hopper",
    "nvidia.com/gpu.compute.major": "9",
    "nvidia.com/gpu.compute.minor": "0",
    "nvidia.com/gpu.memory": "81559",
    "nvidia.com/cuda.driver-version.full": "580.126.20",
    "nvidia.com/cuda.runtime-version.full": "13.0",
}


def inventories(nodes: int, gpus: int) -> list[tuple[str, list[InventoryDevice]]]:
    """Deterministic simulated inventories: node-00000 ... with GPUs on two NUMA nodes."""
    return [
        (
            f"node-{n:05d}",
            [
                InventoryDevice(
                    resourceName="nvidia.com/gpu",
                    deviceID=f"GPU-{n:08x}-0000-4000-8000-{g:012x}",
                    numaNodes=[g * 2 // gpus],
                )
                for g in range(gpus)
            ],
        )
        for n in range(nodes)
    ]


def run(nodes: int, gpus: int) -> tuple[float, list[Any]]:
    """Wall time of building every node's slices (no tracing: tracemalloc slows Python down)."""
    catalog = load_catalog()
    data = inventories(nodes, gpus)
    start = time.perf_counter()
    out = [build_slices(node, inv, catalog, LABELS).slices for node, inv in data]
    return time.perf_counter() - start, out


def peak_memory(nodes: int, gpus: int) -> int:
    """Peak traced bytes while building every node's slices and keeping them (a separate run)."""
    catalog = load_catalog()
    data = inventories(nodes, gpus)
    tracemalloc.start()
    out = [build_slices(node, inv, catalog, LABELS).slices for node, inv in data]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del out
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--nodes", type=int, help="simulated nodes (default 1000; 200 with --smoke)")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--repeat", type=int, help="runs, the best one counts (default 3; 1 with --smoke)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        default=os.environ.get("DRA_BENCH_SMOKE") == "1",
        help="a short run that CI uses to keep the script working",
    )
    args = parser.parse_args()
    args.nodes = args.nodes or (200 if args.smoke else 1000)
    args.repeat = args.repeat or (1 if args.smoke else 3)
    best_build, best_dump = float("inf"), float("inf")
    for _ in range(args.repeat):
        elapsed, out = run(args.nodes, args.gpus)
        best_build = min(best_build, elapsed)
        start = time.perf_counter()
        size = sum(len(json.dumps(slices)) for slices in out)
        best_dump = min(best_dump, time.perf_counter() - start)
    peak_mem = peak_memory(args.nodes, args.gpus)
    devices = args.nodes * args.gpus
    print(
        f"nodes={args.nodes} gpus/node={args.gpus} devices={devices} (best of {args.repeat})"
        f"{' (smoke mode)' if args.smoke else ''}"
    )
    print(
        f"build_slices: {best_build:.3f} s total, {best_build / args.nodes * 1e3:.3f} ms/node, "
        f"{best_build / devices * 1e6:.1f} us/device"
    )
    print(f"peak traced memory during build (separate run, output kept): {peak_mem / 2**20:.1f} MiB")
    print(f"baseline json.dumps of the same output ({size / 2**20:.1f} MiB of JSON): {best_dump:.3f} s")
    print(f"ratio build/json.dumps: {best_build / best_dump:.1f}x")


if __name__ == "__main__":
    main()
