"""Benchmark of the webhook under hostile connections: its RSS, and ordinary reviews meanwhile.

A real ``dra-webhook serve`` child process (its defaults: ``--max-connections 256`` and the
timeouts of docs/webhook.md "Limits and hardening"; an unreachable API server, ``--api-version
v1``) answers dry-run enforce reviews (the full translation, nothing created) from one
kept-alive client at RATE reviews/s, like the API server's connection, in three phases of one run:

(0) baseline: no hostile connection; the reviews' p50/p99;
(1) slow: HOSTILE connections opened evenly over SPREAD seconds (default 2000 over 120 s);
(2) burst: HOSTILE connections opened at once.

A hostile connection is, in turn: TLS then silent; half-open (TCP, TLS never started);
slowloris (TLS, then a request head one byte a second, never finished). They are opened by a
second process, at a lower priority (nice 10: on a small machine the attacker's own TLS handshakes
would otherwise take the server's CPU, which a remote attacker's do not), so that the reviews'
client measures the server and not its own loop. For (1) and
(2): the server's peak RSS (target under 256 Mi, the chart's limit) and the reviews' p99
(target under 50 ms), with the ratio to the baseline.

``--smoke`` (or ``DRA_BENCH_SMOKE=1``): 50 connections over 1 s and a burst of 50, about 8 s
in all; the same lines, targets printed only (exit status 0 unless the script crashes).
Otherwise the exit status is 1 when a target is not met.
Usage: python bench/bench_webhook_connections.py [--hostile N] [--spread S] [--rate R] [--baseline S]
       [--settle S] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
from bench_webhook import percentiles, pod_review

from dra_bridge.webhook.certs import write_certs

RSS_TARGET_MIB = 256.0
P99_TARGET_MS = 50.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class PeakRss:
    """Samples a process's RSS every 50 ms in a thread; ``peak`` since the last ``reset``."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            with contextlib.suppress(OSError):
                self.peak = max(self.peak, rss_mib(self.pid))

    def reset(self) -> None:
        self.peak = rss_mib(self.pid)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


async def _hostile_one(kind: int, port: int, ctx: ssl.SSLContext, hold: float) -> None:
    opened: list[asyncio.StreamWriter] = []
    try:
        # kind 1, half-open: TCP only; the others start TLS
        tls = None if kind == 1 else ctx
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port, ssl=tls), 10)
        opened.append(writer)
        if kind in (0, 1):  # silent until the server closes it
            await asyncio.wait_for(reader.read(), hold)
            return
        head = b"POST /mutate/enforce HTTP/1.1\r\nHost: webhook\r\nX-Padding: " + b"a" * 4000
        for i in range(int(hold)):  # slowloris: a byte a second, never the end of the head
            writer.write(head[i : i + 1])
            await writer.drain()
            await asyncio.sleep(1)
    except (OSError, ssl.SSLError, TimeoutError, asyncio.IncompleteReadError):
        pass  # the server closed it: what it should do
    finally:
        for writer in opened:
            writer.transport.abort()


def _hostile(port: int, cafile: str, count: int, spread: float, hold: float, done: Any) -> None:
    """Open ``count`` hostile connections over ``spread`` seconds (0: at once), each held up to ``hold`` s.
    At a lower priority: an attacker's handshakes run on its own machine, not on the server's cores."""
    os.nice(10)

    async def main() -> None:
        ctx = ssl.create_default_context(cafile=cafile)
        tasks = []
        start = time.monotonic()
        for i in range(count):
            delay = start + (spread * i / count) - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(_hostile_one(i % 3, port, ctx, hold)))
        await asyncio.gather(*tasks)

    asyncio.run(main())
    done.set()


async def reviews(url: str, ctx: ssl.SSLContext, body: bytes, rate: float, seconds: float) -> tuple[list[float], int]:
    """Latencies (s) of reviews sent at ``rate``/s for ``seconds`` over one kept-alive connection."""
    samples: list[float] = []
    errors = 0
    connector = aiohttp.TCPConnector(ssl=ctx, limit=1)
    timeout = aiohttp.ClientTimeout(total=10)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        start = time.perf_counter()
        for i in range(max(1, int(rate * seconds))):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            t0 = time.perf_counter()
            try:
                async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as resp:
                    await resp.read()
                    errors += resp.status != 200
            except (aiohttp.ClientError, OSError, TimeoutError):
                errors += 1
            samples.append(time.perf_counter() - t0)
    return samples, errors


def start_server(tmp: Path) -> tuple[subprocess.Popen[bytes], int, Path]:
    certs = write_certs(tmp, "bench", "webhook", ("127.0.0.1",))
    kubeconfig = tmp / "kubeconfig"
    unreachable = f"https://127.0.0.1:{free_port()}"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        f'clusters: [{{name: c, cluster: {{server: "{unreachable}", insecure-skip-tls-verify: true}}}}]\n'
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    policy = tmp / "policy.yaml"
    policy.write_text("defaults: {ignoreLegacyQuota: true}\n")  # the quota view never syncs here
    port = free_port()
    exe = shutil.which("dra-webhook", path=str(Path(sys.executable).parent)) or "dra-webhook"
    argv = [exe, "serve", "--tls-cert-file", str(certs.cert), "--tls-key-file", str(certs.key)]
    argv += ["--kubeconfig", str(kubeconfig), "--api-version", "v1", "--policy", str(policy)]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "ERROR"]
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return server, port, certs.ca_cert
        time.sleep(0.1)
    server.kill()
    raise SystemExit("dra-webhook serve did not start listening within 30 s")


def dry_run_review() -> bytes:
    review = json.loads(pod_review())
    review["request"]["dryRun"] = True
    return json.dumps(review).encode()


def phase(name: str, samples: list[float], errors: int, rss: float | None, base_p99: float | None) -> bool:
    p50, p99 = percentiles(samples)
    line = f"{name}: {len(samples)} reviews, p50 {p50:.2f} ms, p99 {p99:.2f} ms, errors {errors}"
    if base_p99 is None or rss is None:
        print(line)
        return True
    ok_rss, ok_p99 = rss < RSS_TARGET_MIB, p99 < P99_TARGET_MS and not errors
    print(
        f"{line} ({p99 / base_p99:.1f}x the baseline p99); target p99 < {P99_TARGET_MS:g} ms: "
        f"{'met' if ok_p99 else 'NOT MET'}; peak RSS {rss:.1f} MiB, target < {RSS_TARGET_MIB:g} MiB: "
        f"{'met' if ok_rss else 'NOT MET'}"
    )
    return ok_rss and ok_p99


def run_phase(
    target: tuple[str, ssl.SSLContext, bytes, float], port: int, cafile: str, count: int, spread: float, settle: float
) -> tuple[list[float], int]:
    """Reviews (``target``: url, TLS context, body, rate) while a child process opens ``count``
    hostile connections over ``spread`` s, and ``settle`` s after."""
    url, ctx, body, rate = target
    done = multiprocessing.Event()
    hold = spread + settle + 20.0  # each outlives every server timeout unless the server closes it
    opener = multiprocessing.Process(target=_hostile, args=(port, cafile, count, spread, hold, done), daemon=True)
    opener.start()
    try:
        return asyncio.run(reviews(url, ctx, body, rate, spread + settle))
    finally:
        opener.terminate()
        opener.join(5)


#: The defaults, and those of ``--smoke``.
FULL = {"hostile": 2000, "spread": 120.0, "rate": 50.0, "baseline": 10.0, "settle": 15.0}
SMOKE = {"hostile": 50, "spread": 1.0, "rate": 50.0, "baseline": 1.0, "settle": 1.0}


def main() -> int:
    """Run the three phases; exit status 1 when a target is missed (never in smoke mode)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--hostile", type=int, help="hostile connections per phase (default 2000)")
    p.add_argument("--spread", type=float, help="(1) opens them over this many seconds (default 120)")
    p.add_argument("--rate", type=float, help="ordinary reviews per second (default 50)")
    p.add_argument("--baseline", type=float, help="(0) lasts this many seconds (default 10)")
    p.add_argument(
        "--settle", type=float, help="(1) and (2) go on this many seconds after the last one is opened (default 15)"
    )
    p.add_argument(
        "--smoke",
        action="store_true",
        default=os.environ.get("DRA_BENCH_SMOKE") == "1",
        help="a short run (about 10 s) whose missed targets do not change the exit status",
    )
    args = p.parse_args()
    for key, value in (SMOKE if args.smoke else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.smoke:
        print("smoke mode: short measurements; targets are reported, not enforced")
    with tempfile.TemporaryDirectory() as tmp:
        server, port, cafile = start_server(Path(tmp))
        rss = PeakRss(server.pid)
        try:
            ctx = ssl.create_default_context(cafile=str(cafile))
            url, body = f"https://127.0.0.1:{port}/mutate/enforce", dry_run_review()
            asyncio.run(reviews(url, ctx, body, args.rate, 0.5))  # warm up
            print(f"server: dra-webhook serve pid {server.pid}, RSS at rest {rss_mib(server.pid):.1f} MiB")
            samples, errors = asyncio.run(reviews(url, ctx, body, args.rate, args.baseline))
            phase(f"(0) baseline, {args.rate:g} reviews/s for {args.baseline:g} s", samples, errors, None, None)
            base_p99 = max(percentiles(samples)[1], 1e-3)
            met = True
            for name, spread in ((f"over {args.spread:g} s", args.spread), ("at once", 0.0)):
                rss.reset()
                samples, errors = run_phase(
                    (url, ctx, body, args.rate), port, str(cafile), args.hostile, spread, args.settle
                )
                label = f"({1 if spread else 2}) {args.hostile} hostile connections {name}"
                met = phase(label, samples, errors, rss.peak, base_p99) and met
        finally:
            rss.stop()
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    if args.smoke:
        return 0
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
