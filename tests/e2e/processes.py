"""Child processes of the e2e harness: ports, process groups that die with pytest, log tails.

Shared by the control plane (``controlplane.py``), the real node (``realnode.py``), kube-proxy
(``serviceproxy.py``), the bridge and the webhook processes the tests start.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import IO

__all__ = ["Component", "die_with_parent", "free_port", "tail"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def die_with_parent() -> None:
    """Runs in the child before exec: own process group, SIGKILL when pytest dies."""
    os.setsid()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass
class Component:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    args: list[str]
    _log_fh: IO[bytes]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, grace: float = 10.0) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(grace)
        # The group may hold children even after the leader exited.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        self._log_fh.close()


def tail(path: Path, lines: int = 40) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64 * 1024))
            data = fh.read().decode(errors="replace")
    except OSError as err:
        return f"<cannot read {path}: {err}>"
    return "\n".join(data.splitlines()[-lines:])
