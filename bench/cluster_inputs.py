"""The generated cluster that ``bench_report.py`` and ``bench_capacity.py`` both read (and the
capacity check's growth test, tests/translate/capacity/test_capacity_growth.py).

``objects(workloads, nodes)``: ``nodes`` Nodes of 8 ``nvidia.com/gpu`` (allocatable) of two
products (GFD's product label, alternating), then ``workloads`` GPU Deployments: pod ``w`` asks
for 1, 2, 4 or 8 GPUs (``w % 4``) with ``1 + w % 4`` replicas, a quarter pinned to a product by
node selector, in 20 namespaces. Deterministic; the issue's shape is one node per ten
workloads (:func:`nodes_for`). As ``(source, object)`` pairs, what ``build_report`` reads.

Not a benchmark itself (no ``bench_`` prefix: CI's smoke loop does not run it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

PRODUCTS = ("NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB")
SWEEP = (1_000, 10_000, 50_000)
"""Workload counts of the size sweep (``--sweep``)."""
SMALL = " (smoke sizes: fixed costs, such as compiling CEL, dominate; the exponent says little)"


def nodes_for(workloads: int) -> int:
    """One node per ten workloads (at least one)."""
    return max(1, workloads // 10)


def objects(workloads: int, nodes: int) -> list[tuple[str, Any]]:
    """Deterministic Nodes and Deployments (module docstring)."""
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


def growth_exponent(sizes: Sequence[float], times: Sequence[float]) -> float:
    """The slope of log(time) against log(size), least squares: 1 is linear, 2 quadratic."""
    xs = [math.log(s) for s in sizes]
    ys = [math.log(max(t, 1e-9)) for t in times]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
