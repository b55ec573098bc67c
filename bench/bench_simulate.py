"""Benchmark: ``translate.alloc.simulate`` (claims/s) against a naive first-fit baseline in the same run.

Scenario: one node with G GPUs (8 attribute/capacity entries each, two product names), C
claims of one GPU each (a class selector plus a request selector on memory) referenced one
per Pod. The baseline allocates the same claims with no pools, no caches and no search:
for each claim, the first free device whose selectors match, each evaluated afresh with
``translate.cel.evaluate_selectors``. Ratio > 1: the engine is faster than the naive loop.

    python bench/bench_simulate.py [--gpus 64] [--claims 64] [--repeat 3] [--smoke]

``--smoke`` (or ``DRA_BENCH_SMOKE=1``): 16 GPUs, 16 claims, one repeat; CI runs it so the
script cannot rot. The 850 claims/s target of issue 12 is measured later with 50,000 pods;
here nothing fails on speed, only on a crash.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from dra_bridge.translate.alloc import parse_gates, simulate
from dra_bridge.translate.cel import evaluate_selectors

DRIVER = "gpu.example.com"
CLASS_CEL = f'device.driver == "{DRIVER}"'
REQUEST_CEL = f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'


def objects(gpus: int, claims: int) -> list[dict[str, Any]]:
    devices = [{"name": f"gpu-{i}", "attributes": {"productName": {"string": ["A100", "H100"][i % 2]},
                                                   "index": {"int": i}, "numa": {"int": i % 2},
                                                   "driverVersion": {"version": "580.1.0"}},
                "capacity": {"memory": {"value": "80Gi"}}} for i in range(gpus)]
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": CLASS_CEL}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "node-1"},
         "spec": {"driver": DRIVER, "nodeName": "node-1", "pool": {"name": "node-1", "generation": 1,
                                                                   "resourceSliceCount": 1}, "devices": devices}},
    ]
    for c in range(claims):
        docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                     "metadata": {"name": f"claim-{c}", "namespace": "ml"},
                     "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                         "deviceClassName": "gpu", "selectors": [{"cel": {"expression": REQUEST_CEL}}]}}]}}})
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"pod-{c}", "namespace": "ml"},
                     "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": f"claim-{c}"}]}})
    return docs


def naive(docs: list[dict[str, Any]]) -> int:
    """First fit with every selector evaluated afresh: the baseline."""
    devices = next(d for d in docs if d["kind"] == "ResourceSlice")["spec"]["devices"]
    used: set[str] = set()
    allocated = 0
    for doc in docs:
        if doc["kind"] != "ResourceClaim":
            continue
        for device in devices:
            if device["name"] not in used and evaluate_selectors([CLASS_CEL, REQUEST_CEL], device, DRIVER):
                used.add(device["name"])
                allocated += 1
                break
    return allocated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=64)
    parser.add_argument("--claims", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", default=os.environ.get("DRA_BENCH_SMOKE") == "1")
    args = parser.parse_args()
    if args.smoke:
        args.gpus, args.claims, args.repeat = 16, 16, 1
    docs = objects(args.gpus, args.claims)
    features = parse_gates(None)
    engine_s, naive_s = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        result = simulate(docs, features)
        engine_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        baseline = naive(docs)
        naive_s.append(time.perf_counter() - start)
    allocated = sum(1 for c in result.claims if c.outcome == "allocated")
    assert allocated == baseline == min(args.gpus, args.claims), (allocated, baseline)
    engine, plain = min(engine_s), min(naive_s)
    print(f"simulate: {args.claims} claims on {args.gpus} GPUs: {engine * 1000:.1f} ms "
          f"({args.claims / engine:.0f} claims/s); naive first fit: {plain * 1000:.1f} ms "
          f"({args.claims / plain:.0f} claims/s); ratio naive/simulate = {plain / engine:.2f}")


if __name__ == "__main__":
    main()
