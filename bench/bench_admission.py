"""Benchmark: pod creation through the real kube-apiserver with the webhook, a no-op webhook, and none.

Starts the test control plane (objects only: no kubelet), our DeviceClasses and two fake
GPU nodes with bridge slices, ``dra-webhook serve`` registered in enforce mode for one
labelled namespace (tests/e2e/webhook_cluster.py: the same stack as the webhook's e2e tests),
and, on the same stack, a no-op mutating webhook (it allows every pod unchanged: the cost of
any webhook call) for another. Then creates pods one at a time, in interleaved rounds, in a
namespace of each kind, interleaved pod by pod: ``none`` (no webhook called), ``noop`` and
``enforce``; pods of **one
workload** (one spec: its ResourceClaimTemplate exists after the first) and of **distinct
workloads** (each pod's container named apart: a template each). Prints per case the
throughput (pods/s), p50 and p99 of a create, and the loss of throughput and the added p99
against ``none`` and against ``noop``. Target: at most 10% throughput loss against ``none``
for pods of one workload (printed: ``met``/``MISSED``).

    python bench/bench_admission.py [--pods 60] [--rounds 5] [--smoke]

``--smoke`` (or ``DRA_BENCH_SMOKE=1``): the no-op webhook's answer only, without the
control plane (CI's smoke loop stays a few seconds); the full run takes about two minutes.
Exit status 0 unless it crashes: a missed target is printed.
"""

from __future__ import annotations

import argparse
import base64
import http.server
import json
import os
import socket
import ssl
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from dra_bridge.webhook.certs import write_certs

ROOT = Path(__file__).resolve().parents[1]
TARGET_LOSS = 0.10
CASES = ("none", "noop", "enforce")


def noop_answer(review: dict[str, Any]) -> dict[str, Any]:
    """The no-op webhook's AdmissionReview answer: allowed, no patch."""
    uid = (review.get("request") or {}).get("uid", "")
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": uid, "allowed": True}}


class _NoOp(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # headers and body go out as two writes: without this, Nagle and delayed ACKs add ~40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        data = json.dumps(noop_answer(body)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


def start_noop(workdir: Path) -> tuple[http.server.ThreadingHTTPServer, int, bytes]:
    """The no-op webhook on loopback over TLS: (server, port, CA certificate)."""
    certs = write_certs(workdir / "noop-certs", "bench", "noop", ("127.0.0.1",))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NoOp)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(certs.cert), str(certs.key))
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1], certs.ca_cert.read_bytes()


def pod(name: str, container: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"},
            "containers": [
                {
                    "name": container,
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                }
            ],
        },
    }


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(cp: Any, workdir: Path, pods: int, rounds: int) -> dict[tuple[str, str], list[float]]:
    """Seconds per create, per (namespace kind, workload shape)."""
    from tests.e2e.kubeapi import api_path, create_namespace
    from tests.e2e.webhook_cluster import MODE_LABEL, running_cluster, webhook_entry, webhook_namespace

    kube = cp.client()
    server, port, ca = start_noop(workdir)
    mwc = f"bench-noop-{uuid.uuid4().hex[:6]}"
    times: dict[tuple[str, str], list[float]] = {(c, s): [] for c in CASES for s in ("one", "distinct")}
    with running_cluster(cp, kube, workdir) as cluster:
        entry = webhook_entry("noop.bench.dra-bridge.io", port, "/", ca, "noop")
        entry["clientConfig"]["caBundle"] = base64.b64encode(ca).decode()
        kube.create(
            api_path("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations"),
            {"apiVersion": "admissionregistration.k8s.io/v1", "metadata": {"name": mwc}, "webhooks": [entry]},
        )
        try:
            spaces = {"noop": webhook_namespace(cluster, "noop"), "enforce": webhook_namespace(cluster, "enforce")}
            spaces["none"] = f"bench-none-{cluster.suffix}"
            create_namespace(kube, spaces["none"])
            cluster.namespaces.append(spaces["none"])
            assert MODE_LABEL  # the label the namespaces above carry
            time.sleep(2)  # the registrations reach the API server's webhook cache
            for shape in ("one", "distinct"):  # a warm-up pod per namespace: templates and connections
                for case in CASES:
                    kube.create(api_path("v1", "pods", spaces[case]), pod(f"warm-{shape}", "cuda"))
            for r in range(rounds):  # interleaved pod by pod: the machine's noise falls on every case alike
                for shape in ("one", "distinct"):
                    for i in range(pods):
                        container = "cuda" if shape == "one" else f"c{r}x{i}"
                        for case in CASES:
                            start = time.perf_counter()
                            kube.create(api_path("v1", "pods", spaces[case]), pod(f"p-{shape}-{r}-{i}", container))
                            times[(case, shape)].append(time.perf_counter() - start)
        finally:
            kube.delete(
                api_path("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", name=mwc),
                ignore_missing=True,
            )
            server.shutdown()
    return times


def show(times: dict[tuple[str, str], list[float]]) -> None:
    for shape, title in (("one", "pods of one workload"), ("distinct", "pods of distinct workloads")):
        rate = {c: len(times[(c, shape)]) / sum(times[(c, shape)]) for c in CASES}
        p99 = {c: percentile(times[(c, shape)], 0.99) * 1000 for c in CASES}
        print(f"{title}:")
        for case in CASES:
            p50 = statistics.median(times[(case, shape)]) * 1000
            print(f"  {case:8} {rate[case]:6.1f} pods/s  p50 {p50:6.1f} ms  p99 {p99[case]:6.1f} ms")
        for base in ("none", "noop"):
            loss = 1 - rate["enforce"] / rate[base]
            verdict = ""
            if shape == "one" and base == "none":
                verdict = f" (target <= {TARGET_LOSS:.0%}: {'met' if loss <= TARGET_LOSS else 'MISSED'})"
            added = p99["enforce"] - p99[base]
            print(f"  enforce vs {base}: throughput loss {loss:.1%}{verdict}, added p99 {added:+.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pods", type=int, default=60, help="pods per namespace, shape and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", default=os.environ.get("DRA_BENCH_SMOKE") == "1")
    args = parser.parse_args()
    if args.smoke:
        answer = noop_answer({"request": {"uid": "u"}})
        assert answer["response"] == {"uid": "u", "allowed": True}
        print("smoke mode: the no-op webhook's answer only (the control plane run is the full mode)")
        return 0
    sys.path.insert(0, str(ROOT))
    from tests.e2e.controlplane import ControlPlane, find_binaries

    cp = ControlPlane(bin_dir=find_binaries())
    cp.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            show(measure(cp, Path(tmp), args.pods, args.rounds))
    finally:
        cp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
