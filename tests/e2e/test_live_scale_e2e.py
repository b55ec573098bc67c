"""``dra-migrate report`` in live mode at cluster scale: the objects-only cluster of
``scale_cluster.py`` (5,000 Nodes, 20,000 Pods, 5,000 ResourceSlices), read in pages of 500.

Printed: the report's wall time and peak RSS. Held: with twice the pods without devices, peak
RSS at most 10% above the first (a pod the report does not place costs almost nothing: slimmed
as its page arrives, its workload's spec shared, nothing kept per pod). The 1.36 pass only (no
``server_version`` mark): its behaviour does not depend on the server's version.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.e2e.kubeapi import api_path
from tests.e2e.scale_cluster import (
    GPU_PODS,
    NODES,
    PER_OWNER,
    PLAIN_PODS,
    ScaleCluster,
    namespace_object,
    pod_objects,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

MORE = "scale-more"
REPORT = (
    "import resource, sys\n"
    "from dra_bridge.migrate.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print('peak', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _report(cluster: ScaleCluster) -> tuple[float, int, dict[str, Any]]:
    """Wall seconds, peak RSS (KiB) and the JSON of ``dra-migrate report`` in a process of its own."""
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", REPORT, "report", "--kubeconfig", str(cluster.control_plane.kubeconfig), "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr[-3000:]
    peak = int(proc.stderr.rsplit("peak ", 1)[1].split()[0])
    return elapsed, peak, json.loads(proc.stdout)


def _pods_in(cluster: ScaleCluster, namespace: str) -> int:
    page = cluster.control_plane.client().request("GET", api_path("v1", "pods", namespace), query={"limit": 1})
    return len(page["items"]) + int(page["metadata"].get("remainingItemCount") or 0)


def test_live_report_memory_follows_what_it_keeps(scale_cluster: ScaleCluster) -> None:
    first_s, first_rss, doc = _report(scale_cluster)
    mine = [w for w in doc["workloads"] if w["namespace"].startswith("scale-")]
    assert len(mine) == GPU_PODS // PER_OWNER  # the GPU workloads, one per owner; the others counted
    assert doc["totals"]["notListed"] >= PLAIN_PODS // PER_OWNER
    scale_cluster.seed([namespace_object(MORE), *pod_objects("more", PLAIN_PODS, gpu=False, namespace=MORE)])
    try:
        deadline = time.monotonic() + 60
        while _pods_in(scale_cluster, MORE) < PLAIN_PODS:  # the API server's watch on etcd
            assert time.monotonic() < deadline, "the seeded pods never reached the API server"
            time.sleep(0.5)
        second_s, second_rss, _ = _report(scale_cluster)
    finally:
        scale_cluster.unseed(f"/registry/pods/{MORE}/")
        scale_cluster.unseed(f"/registry/namespaces/{MORE}")
    print(
        f"\nlive report of {NODES} nodes and {GPU_PODS + PLAIN_PODS} pods: {first_s:.1f} s, peak RSS "
        f"{first_rss / 1024:.0f} MiB; with {PLAIN_PODS} more pods without devices: {second_s:.1f} s, "
        f"{second_rss / 1024:.0f} MiB ({second_rss / first_rss - 1:+.1%}; at most +10%)"
    )
    assert second_rss <= 1.10 * first_rss
