"""Benchmark of what one hostile review costs the webhook (docs/design.md D33).

A maximal review is a ~3 MB pod (just under the 3 MiB body limit) whose required node affinity
lists 95,000 ``nvidia.com/gpu.product`` values. The server (the real app, plain HTTP, templates
not created) runs in a child process, with a task that measures its event loop's stall (how late
a 5 ms sleep wakes) and samples its RSS; the client is this process. Neither is pinned to a core:
on a busy machine a pinned process waits for its core, which would read as a stall.

(a) baseline: ordinary reviews (an example GPU pod), one at a time and C at once: answer time
    p50/p99 and the longest stall of the loop meanwhile;
(b) hostile: the same ordinary load, while M maximal reviews are sent, two at a time: the
    largest review's answer time (target <= 1 s), RSS growth over the baseline's (target
    < 128 MiB), the longest stall (target < 100 ms), each beside its baseline figure, and the
    ordinary reviews' p99 meanwhile.

Before translate's limits and the off-loop decision, a maximal review stalled the loop 4-17 s
and grew the server to about 1 GB. Exit status 1 when a target is not met.

``--smoke`` (or ``DRA_BENCH_SMOKE=1``): 2 maximal reviews and 60 ordinary ones, a few seconds;
it prints the same lines, but a missed target is only reported (exit status 0 unless the script
crashes), as the other benchmarks: CI runs it so the script cannot rot.
Usage: python bench/bench_webhook_review_cost.py [--maximal M] [--ordinary N] [--concurrency C] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing
import os
import statistics
import sys
import time
import uuid
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web

from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.review import MAX_BODY_BYTES
from dra_bridge.webhook.runtime import Runtime
from dra_bridge.webhook.server import make_app
from dra_bridge.webhook.templates import NullEnsurer

EXAMPLE = Path(__file__).parents[1] / "tests" / "data" / "examples" / "01-pod-limits-only-toleration.yaml"
TARGET_ANSWER_S = 1.0
TARGET_RSS_MIB = 128.0
TARGET_STALL_MS = 100.0
TICK_S = 0.005


def review(pod: dict[str, Any]) -> bytes:
    """An enforce AdmissionReview of ``pod`` in namespace team-a."""
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": str(uuid.uuid4()),
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "namespace": "team-a",
                "operation": "CREATE",
                "userInfo": {"username": "bench"},
                "object": pod,
                "oldObject": None,
                "dryRun": False,
            },
        }
    ).encode()


def ordinary_review() -> bytes:
    return review(yaml.safe_load(EXAMPLE.read_text()))


def maximal_review() -> bytes:
    """The largest review a body may be: node affinity with as many product values as fit."""
    pod = yaml.safe_load(EXAMPLE.read_text())
    values = [f"NVIDIA-H100-80GB-HBM3-{i:06d}" for i in range(95_000)]
    expr = {"key": "nvidia.com/gpu.product", "operator": "In", "values": values}
    term = {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}
    pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": term}}
    body = review(pod)
    assert len(body) <= MAX_BODY_BYTES, len(body)
    return body


def rss_mib() -> float:
    """This process's resident set (Linux /proc; 0 elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def serve(conn: Connection) -> None:
    """The child: the app on a free port, a loop watcher, and /bench/stats (stall, RSS) that
    resets its figures each time it is read."""
    logging.disable(logging.CRITICAL)
    runtime = Runtime("resource.k8s.io/v1", require_tls=False)
    app = make_app(runtime, Admitter(runtime.context, NullEnsurer(), runtime.metrics))
    figures = {"stall": 0.0, "rss": rss_mib()}

    async def stats(_request: web.Request) -> web.Response:
        out = dict(figures)
        figures.update(stall=0.0, rss=rss_mib())
        return web.json_response(out)

    async def watch() -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(TICK_S)
            figures["stall"] = max(figures["stall"], time.perf_counter() - start - TICK_S)
            figures["rss"] = max(figures["rss"], rss_mib())

    app.router.add_get("/bench/stats", stats)

    async def main() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        watcher = asyncio.get_running_loop().create_task(watch())
        conn.send(port)
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)  # until told to stop
        watcher.cancel()
        await runner.cleanup()

    asyncio.run(main())


async def ordinary_load(session: aiohttp.ClientSession, url: str, n: int, concurrency: int) -> list[float]:
    """Seconds per ordinary review, ``n`` in all, ``concurrency`` at once."""
    body = ordinary_review()
    times: list[float] = []

    async def one_client(count: int) -> None:
        for _ in range(count):
            start = time.perf_counter()
            async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as resp:
                assert resp.status == 200, resp.status
                await resp.read()
            times.append(time.perf_counter() - start)

    await asyncio.gather(*(one_client(n // concurrency) for _ in range(concurrency)))
    return times


async def maximal_load(session: aiohttp.ClientSession, url: str, m: int) -> list[float]:
    """Seconds per maximal review, ``m`` in all, two at a time."""
    body = maximal_review()
    times: list[float] = []

    async def one_client(count: int) -> None:
        for _ in range(count):
            start = time.perf_counter()
            async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as resp:
                answer = await resp.json()
                assert resp.status == 200 and "patch" not in answer["response"], answer
            times.append(time.perf_counter() - start)

    await asyncio.gather(one_client((m + 1) // 2), one_client(m // 2))
    return times


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def p99(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[98] if len(samples) > 1 else samples[0]


async def client(port: int, args: argparse.Namespace) -> bool:
    base = f"http://127.0.0.1:{port}"
    url = f"{base}/mutate/enforce"
    async with aiohttp.ClientSession() as session:

        async def stats() -> dict[str, float]:
            async with session.get(f"{base}/bench/stats") as resp:
                return dict(await resp.json())

        await ordinary_load(session, url, 40, 4)  # warm-up: imports, the catalog, the memo
        await stats()
        base_times = await ordinary_load(session, url, args.ordinary, args.concurrency)
        baseline = await stats()
        ordinary_task = asyncio.ensure_future(ordinary_load(session, url, args.ordinary, args.concurrency))
        max_times = await maximal_load(session, url, args.maximal)
        mixed_times = await ordinary_task
        hostile = await stats()
    base_p50 = statistics.median(base_times)
    largest = max(max_times)
    growth = hostile["rss"] - baseline["rss"]
    stall = hostile["stall"]
    print(f"ordinary review (baseline): p50 {ms(base_p50)} p99 {ms(p99(base_times))}, {len(base_times)} reviews")
    print(
        f"largest review answered in {ms(largest)} (target <= {TARGET_ANSWER_S * 1000:.0f} ms; "
        f"{largest / base_p50:.0f}x an ordinary review), {len(max_times)} maximal reviews"
    )
    print(
        f"RSS growth {growth:.1f} MiB (target < {TARGET_RSS_MIB:.0f} MiB; server at {hostile['rss']:.1f} MiB, "
        f"{baseline['rss']:.1f} MiB after the baseline)"
    )
    print(
        f"longest event-loop stall {ms(stall)} (target < {TARGET_STALL_MS:.0f} ms; baseline {ms(baseline['stall'])}, "
        f"{stall / max(baseline['stall'], 1e-4):.1f}x)"
    )
    print(
        f"ordinary reviews beside the maximal ones: p50 {ms(statistics.median(mixed_times))} "
        f"p99 {ms(p99(mixed_times))} ({p99(mixed_times) / p99(base_times):.1f}x the baseline p99)"
    )
    return largest <= TARGET_ANSWER_S and growth < TARGET_RSS_MIB and stall * 1000 < TARGET_STALL_MS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--maximal", type=int, default=10)
    parser.add_argument("--ordinary", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--smoke", action="store_true", default=os.environ.get("DRA_BENCH_SMOKE") == "1")
    args = parser.parse_args(argv)
    if args.smoke:
        args.maximal, args.ordinary = 2, 60
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(target=serve, args=(child,), daemon=True)
    server.start()
    try:
        port = parent.recv()
        met = asyncio.run(client(port, args))
    finally:
        parent.send("stop")
        server.join(10)
    if not met:
        print("a target was not met" + (" (smoke: reported only)" if args.smoke else ""))
    return 0 if met or args.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
