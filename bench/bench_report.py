"""Benchmark: ``dra-migrate report`` with and without its capacity check (``--no-capacity``).

Generates W Deployments (1, 2, 4 or 8 GPUs a pod, 1-4 replicas, a quarter pinned to a GPU
product by node selector) over N nodes x 8 GPUs of two products (node capacity: the bridge's
slices are built from it), then times, in the same process, ``build_report`` alone (the
baseline: what ``--no-capacity`` runs) and ``build_report`` plus ``report_capacity``. Prints
both, the capacity check's share, pods placed per second and peak traced memory; the ratio
says what ``--no-capacity`` saves.

    python bench/bench_report.py [--workloads 2000] [--nodes 2500] [--smoke]

``--smoke`` (or ``DRA_BENCH_SMOKE=1``): 100 workloads over 120 nodes; CI runs it so the script
cannot rot. No target; exit status 0 unless it crashes.
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc
from typing import Any

from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.report import Settings, build_report
from dra_bridge.translate.report.capacity import report_capacity

PRODUCTS = ("NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB")


def objects(workloads: int, nodes: int) -> list[tuple[str, Any]]:
    """Deterministic nodes and Deployments."""
    out: list[tuple[str, Any]] = []
    for n in range(nodes):
        out.append(
            (
                "bench",
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": f"node-{n:05d}", "labels": {"nvidia.com/gpu.product": PRODUCTS[n % 2]}},
                    "status": {"allocatable": {"nvidia.com/gpu": "8"}},
                },
            )
        )
    for w in range(workloads):
        spec: dict[str, Any] = {
            "containers": [
                {"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": str((1, 2, 4, 8)[w % 4])}}}
            ]
        }
        if w % 4 == 1:
            spec["nodeSelector"] = {"nvidia.com/gpu.product": PRODUCTS[w % 2]}
        out.append(
            (
                "bench",
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": f"w-{w:05d}", "namespace": f"ns-{w % 20}"},
                    "spec": {
                        "replicas": 1 + w % 4,
                        "selector": {"matchLabels": {"app": f"w-{w}"}},
                        "template": {"metadata": {"labels": {"app": f"w-{w}"}}, "spec": spec},
                    },
                },
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--workloads", type=int, help="Deployments (default 2000; 100 with --smoke)")
    parser.add_argument("--nodes", type=int, help="nodes of 8 GPUs (default 2500; 120 with --smoke)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        default=os.environ.get("DRA_BENCH_SMOKE") == "1",
        help="a short run that CI uses to keep the script working",
    )
    args = parser.parse_args()
    workloads = args.workloads or (100 if args.smoke else 2000)
    nodes = args.nodes or (120 if args.smoke else 2500)
    catalog = load_catalog()
    data = objects(workloads, nodes)
    start = time.perf_counter()
    build_report(data, catalog, Settings())
    baseline = time.perf_counter() - start
    start = time.perf_counter()
    report = build_report(data, catalog, Settings())
    built = time.perf_counter() - start
    report_capacity(report, catalog, {})
    total = time.perf_counter() - start
    assert report.capacity is not None
    t = report.capacity["totals"]
    tracemalloc.start()
    again = build_report(data, catalog, Settings())
    report_capacity(again, catalog, {})
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"workloads={workloads} pods={t['pods']} nodes={nodes} devices={nodes * 8}"
        f"{' (smoke mode)' if args.smoke else ''}; {t['fit']} fit, {t['unschedulable']} do not"
    )
    print(f"baseline build_report (--no-capacity): {min(baseline, built):.2f} s")
    print(
        f"build_report + report_capacity: {total:.2f} s; capacity check {total - built:.2f} s, "
        f"{t['pods'] / max(total - built, 1e-9):.0f} pods/s"
    )
    print(
        f"ratio with/without capacity: {total / min(baseline, built):.1f}x; peak traced memory {peak / 2**20:.0f} MiB"
    )


if __name__ == "__main__":
    main()
