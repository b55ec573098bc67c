"""The load side of ``bench_admission.py``: keep-alive creates, closed loops, CPU and pinning.

- :class:`KeepAlive`: one persistent HTTPS connection (as a controller's client keeps one),
  reopened after an error; ``post`` returns the status.
- :func:`closed_loop`: ``workers`` threads, each on its own connection, creating for
  ``seconds``: completions, errors, latencies and the wall time (throughput = completions / wall).
- :func:`cpu_seconds`: user + system CPU of a process (``/proc/PID/stat``), to charge each case
  its CPU per create, which the neighbours on a shared machine disturb far less than a rate.
- :func:`split_cpus`: the two CPU sets of the deployment-like layout (control plane apart from
  the webhook and the client); :func:`pin` sets the calling thread's set (children inherit it).
- :func:`peer_ports`: the local ports of established loopback connections to a port (the API
  server's connections to a webhook: the same few ports across phases means they are reused).
"""

from __future__ import annotations

import http.client
import os
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class KeepAlive:
    """One persistent HTTPS connection to ``host:port``."""

    def __init__(self, host: str, port: int, ctx: ssl.SSLContext, timeout: float = 30.0) -> None:
        self._host, self._port, self._ctx, self._timeout = host, port, ctx, timeout
        self._conn: http.client.HTTPSConnection | None = None
        self.opened = 0

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        """POST ``body`` (JSON); the status and the answer. An error closes the connection."""
        if self._conn is None:
            self._conn = http.client.HTTPSConnection(self._host, self._port, context=self._ctx, timeout=self._timeout)
            self.opened += 1
        try:
            self._conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
            resp = self._conn.getresponse()
            return resp.status, resp.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


@dataclass
class Sample:
    """One closed-loop phase: creates answered 2xx, errors, each create's seconds, the wall time."""

    done: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)
    wall: float = 0.0
    first_error: str = ""


def closed_loop(conns: Sequence[KeepAlive], request: Callable[[int], tuple[str, bytes]], seconds: float) -> Sample:
    """Each connection's thread sends ``request(worker)`` (path, body) again as soon as the last
    one is answered, for ``seconds``: a closed loop at concurrency ``len(conns)``."""
    sample = Sample()
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def worker(index: int) -> None:
        conn, done, errors, latencies, first = conns[index], 0, 0, [], ""
        while time.perf_counter() < deadline:
            path, body = request(index)
            start = time.perf_counter()
            try:
                status, answer = conn.post(path, body)
            except (OSError, http.client.HTTPException) as exc:
                status, answer = 0, repr(exc).encode()
            if 200 <= status < 300:
                done += 1
                latencies.append(time.perf_counter() - start)
            else:
                errors += 1
                first = first or f"HTTP {status}: {answer[:300].decode(errors='replace')}"
        with lock:
            sample.done += done
            sample.errors += errors
            sample.latencies += latencies
            sample.first_error = sample.first_error or first

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(conns))]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sample.wall = time.perf_counter() - start
    return sample


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def split_cpus() -> tuple[set[int], set[int]] | None:
    """(control plane CPUs, webhook and client CPUs): the first half of ours and the rest;
    None with a single CPU (no layout to make)."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    half = len(cpus) // 2
    return set(cpus[:half]), set(cpus[half:])


def pin(cpus: set[int]) -> None:
    """Run the calling thread (and every process or thread it starts from now on) on ``cpus``."""
    os.sched_setaffinity(0, cpus)


def peer_ports(port: int) -> set[int]:
    """Local ports of ESTABLISHED TCP connections whose remote port is ``port``."""
    found: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            local, remote, state = cols[1], cols[2], cols[3]
            if state == "01" and int(remote.rsplit(":", 1)[1], 16) == port:
                found.add(int(local.rsplit(":", 1)[1], 16))
    return found
