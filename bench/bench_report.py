"""Benchmark: ``dra-migrate report`` with and without its capacity check (``--no-capacity``).

Reads the generated cluster of ``cluster_inputs.py`` (shared with ``bench_capacity.py``): W GPU
Deployments (1, 2, 4 or 8 GPUs a pod, 1-4 replicas, a quarter pinned to a product by node
selector) over N nodes x 8 GPUs of two products (node capacity: the bridge's slices are built
from it; by default one node per ten workloads). Times in CPU seconds, in the same process,
``build_report`` alone (the baseline: what ``--no-capacity`` runs) and ``report_capacity`` on
its result; prints both, the ratio of the check to the baseline (target at most 5x), pods
placed per second and the peak RSS.

    python bench/bench_report.py [--workloads 2000] [--nodes W/10] [--smoke] [--sweep]

``--sweep``: 1,000, 10,000 and 50,000 workloads, each in a process of its own (its peak RSS is
its own), then the growth exponent of each time (the slope of log(time) against log(W): 1 is
linear) and the targets at 50,000 (whole report under 60 s CPU and under 2 GiB; check at most
5x the report without it). ``--smoke`` (or ``DRA_BENCH_SMOKE=1``): 100 workloads over 10
nodes, and with ``--sweep`` 100, 200 and 400; CI runs it so the script cannot rot. Exit
status 0 unless it crashes: a missed target is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

from cluster_inputs import SMALL, SWEEP, growth_exponent, nodes_for, objects

from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.report import Settings, build_report
from dra_bridge.translate.report.capacity import report_capacity

TARGET_S, TARGET_GIB, TARGET_RATIO = 60.0, 2.0, 5.0


def measure(workloads: int, nodes: int) -> dict[str, Any]:
    """CPU seconds of the report without and with its check, the totals, peak RSS (MiB)."""
    catalog = load_catalog()
    data = objects(workloads, nodes)
    start = time.process_time()
    report = build_report(data, catalog, Settings())
    baseline = time.process_time() - start
    start = time.process_time()
    report_capacity(report, catalog, {})
    check = time.process_time() - start
    assert report.capacity is not None
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t = report.capacity["totals"]
    return {
        "workloads": workloads,
        "nodes": nodes,
        "pods": t["pods"],
        "fit": t["fit"],
        "baseline": baseline,
        "check": check,
        "rss": rss,
    }


def show(m: dict[str, Any], totals: str = "") -> None:
    pods_s = m["pods"] / max(m["check"], 1e-9)
    print(
        f"workloads={m['workloads']} pods={m['pods']} ({m['fit']} fit) nodes={m['nodes']} "
        f"devices={m['nodes'] * 8}{totals}: "
        f"baseline build_report (--no-capacity) {m['baseline']:.2f} s CPU; capacity check {m['check']:.2f} s"
        f" ({pods_s:.0f} pods/s); whole report {m['baseline'] + m['check']:.2f} s; "
        f"ratio check/baseline {m['check'] / max(m['baseline'], 1e-9):.1f}x (target <= {TARGET_RATIO:.0f}x); "
        f"peak RSS {m['rss']:.0f} MiB"
    )


def sweep(sizes: tuple[int, ...]) -> None:
    runs = []
    for size in sizes:
        out = subprocess.run(
            [sys.executable, __file__, "--workloads", str(size), "--json"], check=True, capture_output=True, text=True
        )
        runs.append(json.loads(out.stdout.splitlines()[-1]))
        show(runs[-1])
    for what in ("baseline", "check"):
        exponent = growth_exponent(sizes, [r[what] for r in runs])
        print(f"growth exponent of {what}: {exponent:.2f} (1 = linear){SMALL if sizes[-1] < SWEEP[-1] else ''}")
    last = runs[-1]
    whole, ratio = last["baseline"] + last["check"], last["check"] / max(last["baseline"], 1e-9)
    print(
        f"at {last['workloads']} workloads: whole report {whole:.1f} s CPU (target < {TARGET_S:.0f}), "
        f"{last['rss'] / 1024:.2f} GiB (target < {TARGET_GIB:.0f}), check {ratio:.1f}x the report "
        f"(target <= {TARGET_RATIO:.0f}x): "
        f"{'met' if whole < TARGET_S and last['rss'] < TARGET_GIB * 1024 and ratio <= TARGET_RATIO else 'MISSED'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--workloads", type=int, help="Deployments (default 2000; 100 with --smoke)")
    parser.add_argument("--nodes", type=int, help="nodes of 8 GPUs (default: one per ten workloads)")
    parser.add_argument("--sweep", action="store_true", help="1k, 10k and 50k workloads, and the growth exponent")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--smoke",
        action="store_true",
        default=os.environ.get("DRA_BENCH_SMOKE") == "1",
        help="a short run that CI uses to keep the script working",
    )
    args = parser.parse_args()
    if args.sweep:
        sweep((100, 200, 400) if args.smoke else SWEEP)
        return
    workloads = args.workloads or (100 if args.smoke else 2000)
    m = measure(workloads, args.nodes or nodes_for(workloads))
    if args.json:
        print(json.dumps(m))
        return
    show(m, " (smoke mode)" if args.smoke else "")


if __name__ == "__main__":
    main()
