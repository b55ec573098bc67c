"""Benchmark: convert N pods (default 10,000) and compare with a plain YAML load + dump.

Prints pods/s for ``dra-migrate convert``'s core (parse, plan, render, dump) and the ratio of
its time to the baseline (a YAML load + dump of the same input with the same loader and
dumper), both measured in this run. There is no target: the ratio is for comparing commits.

    python bench/bench_convert.py [N] [--smoke]

``--smoke`` (or ``DRA_BENCH_SMOKE=1``): 500 pods, a second or two; CI runs it so the script
cannot rot. Exit status 0 unless it crashes.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import yaml

from dra_bridge.migrate.manifests import dump
from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.plan.pod_plan import Options
from dra_bridge.translate.plan.workloads import convert_object
from dra_bridge.translate.strict_yaml import StrictLoader

EXAMPLES = Path(__file__).parents[1] / "tests" / "data" / "examples"


def corpus(n: int) -> str:
    """N pods cycling over the examples' pod templates, as one multi-document YAML text."""
    templates = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc["kind"] == "Pod":
                templates.append(doc)
            elif doc and doc["kind"] in ("Deployment", "Job", "StatefulSet"):
                templates.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": doc["metadata"]["name"], "namespace": "team-a"},
                        "spec": doc["spec"]["template"]["spec"],
                    }
                )
    pods = []
    for i in range(n):
        pod = dict(templates[i % len(templates)])
        pod["metadata"] = {**pod["metadata"], "name": f"{pod['metadata']['name']}-{i}"}
        pods.append(pod)
    return yaml.safe_dump_all(pods)


SMOKE_PODS = 500


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("n", type=int, nargs="?", help="pods to convert (default 10,000; 500 with --smoke)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        default=os.environ.get("DRA_BENCH_SMOKE") == "1",
        help=f"a short run ({SMOKE_PODS} pods) that CI uses to keep the script working",
    )
    args = parser.parse_args()
    n = args.n or (SMOKE_PODS if args.smoke else 10_000)
    text = corpus(n)
    catalog = load_catalog()
    options = Options()

    t0 = time.perf_counter()
    docs = list(yaml.load_all(text, Loader=StrictLoader))
    baseline_out = dump(docs, "yaml")
    baseline = time.perf_counter() - t0

    t0 = time.perf_counter()
    objects = []
    for doc in yaml.load_all(text, Loader=StrictLoader):
        result = convert_object(doc, catalog, options)
        objects += [*result.templates, result.obj]
    out = dump(objects, "yaml")
    converted = time.perf_counter() - t0

    assert baseline_out and out
    print(f"pods: {n}{' (smoke mode)' if args.smoke else ''}")
    print(f"baseline (YAML load + dump, libyaml): {baseline:.2f} s")
    print(f"convert (load + plan + render + dump): {converted:.2f} s = {n / converted:,.0f} pods/s")
    print(f"ratio convert / baseline: {converted / baseline:.2f}")


if __name__ == "__main__":
    main()
