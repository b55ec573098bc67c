"""Benchmark: the report's capacity check (translate.capacity.check_capacity) alone, on the report's inputs.

Reads the generated cluster of ``cluster_inputs.py``, the one ``bench_report.py`` reads (so the
two cannot drift apart): W GPU Deployments over one node per ten workloads, 8
``nvidia.com/gpu`` each. The report is built and its capacity section started once, untimed,
to take the very arguments it hands ``check_capacity`` (workloads, nodes, the slices the bridge
would publish, DeviceClasses, held devices); then, timed in CPU seconds (``time.process_time``,
best of ``--repeat``): the whole check (both models, per node pool sums) and, as the baseline
in the same process, the legacy model alone on the same pods (a count per node).

    python bench/bench_capacity.py [--workloads 5000] [--repeat 2] [--smoke] [--sweep]

``--sweep``: 1,000, 10,000 and 50,000 workloads, then the growth exponent of the check's time
(the slope of log(time) against log(W): 1 is linear). ``--smoke`` (or ``DRA_BENCH_SMOKE=1``):
200 workloads, one run (with ``--sweep``: 100, 200 and 400); CI runs it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any
from unittest import mock

from cluster_inputs import SMALL, SWEEP, growth_exponent, nodes_for, objects

import dra_bridge.translate.report.capacity as report_capacity_module
from dra_bridge.translate.capacity import CapacityResult, check_capacity
from dra_bridge.translate.capacity.legacy import LegacyModel
from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.report import Settings, build_report


class _Taken(Exception):
    """Raised by the stand-in check once it has the report's arguments."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        super().__init__("taken")
        self.args_, self.kwargs = args, kwargs


def report_arguments(workloads: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments ``report_capacity`` passes ``check_capacity`` for the generated cluster."""

    def take(*args: Any, **kwargs: Any) -> CapacityResult:
        raise _Taken(args, kwargs)

    catalog = load_catalog()
    report = build_report(objects(workloads, nodes_for(workloads)), catalog, Settings())
    try:
        with mock.patch.object(report_capacity_module, "check_capacity", take):
            report_capacity_module.report_capacity(report, catalog, {})
    except _Taken as taken:
        return taken.args_, taken.kwargs
    raise AssertionError("the report did not run the capacity check")


def measure(workloads: int, repeat: int) -> tuple[float, float, int, int]:
    """(check CPU s, legacy alone CPU s, pods, pods that fit under DRA)."""
    args, kwargs = report_arguments(workloads)
    demand, nodes = args[0], args[1]
    check_s = legacy_s = float("inf")
    fits = 0
    for _ in range(repeat):
        start = time.process_time()
        result = check_capacity(*args, **kwargs)
        check_s = min(check_s, time.process_time() - start)
        fits = sum(1 for w in result.workloads for p in w.pods if p.fits)
        start = time.process_time()
        legacy = LegacyModel(nodes, kwargs["held"].legacy)
        for workload in demand:
            for pod in workload.pods:
                legacy.place(pod.legacy_requests, pod.legacy)
        legacy_s = min(legacy_s, time.process_time() - start)
    return check_s, legacy_s, sum(len(w.pods) for w in demand), fits


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workloads", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--sweep", action="store_true", help="1k, 10k and 50k workloads, and the growth exponent")
    parser.add_argument("--smoke", action="store_true", default=os.environ.get("DRA_BENCH_SMOKE") == "1")
    args = parser.parse_args()
    if args.smoke:
        args.workloads, args.repeat = 200, 1
    sizes = ((100, 200, 400) if args.smoke else SWEEP) if args.sweep else (args.workloads,)
    times = []
    for workloads in sizes:
        check_s, legacy_s, pods, fits = measure(workloads, 1 if args.sweep else args.repeat)
        times.append(check_s)
        print(
            f"capacity check: {pods} pods ({workloads} workloads) on {nodes_for(workloads)} nodes x 8 GPUs"
            f"{' (smoke mode)' if args.smoke else ''}: {check_s:.2f} s CPU, {pods / check_s:.0f} pods/s, "
            f"{fits} fit under DRA; legacy model alone {legacy_s:.2f} s CPU; "
            f"ratio check/legacy {check_s / max(legacy_s, 1e-9):.1f}"
        )
    if len(sizes) > 1:
        small = SMALL if args.smoke else ""
        print(f"growth exponent of the check: {growth_exponent(sizes, times):.2f} (1 = linear){small}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
