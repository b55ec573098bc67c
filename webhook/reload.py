"""Files that are re-read when their content changes, keeping the last good value; the loop that
re-reads them.

    watched = Watched(path, parse)          # parse(text, source) -> T, raises on bad input
    watched.check() -> bool                 # True when a new value was loaded
    watched.value, watched.error            # the value in force; why the newest file was refused
    read_bounded(path) -> bytes             # a regular file of at most MAX_FILE_BYTES, or ConfigFileError
    Reloader.run(check, interval, stop)     # check() every interval in a worker thread, supervised
    Reloader.alive() -> (bool, why)         # False once the loop ended, or a check hangs (liveness)

Change detection is a SHA-256 of the file's bytes (mtime is unreliable on Kubernetes
ConfigMap/Secret volumes, which swap a symlink). A file that cannot be read or parsed keeps
the last good value in force and records the reason in ``error`` (docs/design.md D8, D32):
whatever the parser raises, a value of the wrong type included. Reads are bounded: a file
larger than MAX_FILE_BYTES (a ConfigMap or a Secret cannot hold more), a FIFO or a device (a
link to ``/dev/zero``) is refused without reading past the bound, and opening never blocks.

The reload loop runs each check in a worker thread, so a slow disk or a large file never
stalls the event loop; an exception in a check is logged (one line) and the loop goes on. If
the loop ends anyway, or no check has finished for ``stale_after`` seconds, :meth:`Reloader.alive`
says so and ``/healthz`` fails: the kubelet restarts a webhook that no longer reloads.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from dra_bridge.kube.errors import FileRefused
from dra_bridge.kube.regular_files import read_regular
from dra_bridge.webhook.errors import ConfigFileError, WebhookError

logger = logging.getLogger(__name__)
T = TypeVar("T")
#: Largest watched file read: a ConfigMap or a Secret holds at most 1 MiB
#: (https://kubernetes.io/docs/concepts/configuration/configmap/#motivation).
MAX_FILE_BYTES = 1 << 20
#: A reload loop with no finished check for this long (and 20 intervals) is reported dead.
STALE_AFTER = 120.0


def read_bounded(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file at ``path`` (symbolic links followed, as ConfigMap volumes
    need); ConfigFileError naming the path when it is not a regular file, is larger than
    ``limit`` bytes or cannot be read. Never blocks on a FIFO, never reads past ``limit``
    (:func:`kube.regular_files.read_regular`)."""
    try:
        return read_regular(path, limit)
    except FileRefused as exc:
        if exc.kind == "directory":
            raise ConfigFileError(f"{path}: not a regular file (a FIFO, a device or a socket)") from exc
        raise ConfigFileError(str(exc)) from exc


def failure_text(exc: Exception) -> str:
    """One line for an exception: our own errors' messages as they are, others with their type."""
    text = str(exc) if isinstance(exc, WebhookError) else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())


class Watched(Generic[T]):
    """A value loaded from ``path`` with ``parse``; see the module docstring."""

    def __init__(self, path: Path, parse: Callable[[str, str], T], initial: T | None = None) -> None:
        self.path = path
        self._parse = parse
        self.value: T | None = initial
        self.error: str = ""
        self.reloads = 0
        self.failures = 0
        self._digest = b""

    def check(self) -> bool:
        """Load the file if its bytes changed; True when a new value came into force."""
        try:
            raw = read_bounded(self.path)
        except ConfigFileError as exc:
            self._digest = b""
            return self._refuse(str(exc))
        digest = hashlib.sha256(raw).digest()
        if digest == self._digest:
            return False
        self._digest = digest
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return self._refuse(
                f"{self.path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
                "re-encode it as UTF-8, e.g. iconv -t UTF-8"
            )
        try:
            value = self._parse(text, str(self.path))
        except Exception as exc:  # any failure to load keeps the last good value (docs/design.md D32)
            reason = failure_text(exc)
            return self._refuse(reason if str(self.path) in reason else f"{self.path}: {reason}")
        first = self.value is None
        self.value, self.error = value, ""
        self.reloads += 1
        logger.info("%s %s", "loaded" if first else "reloaded", self.path)
        return True

    def _refuse(self, reason: str) -> bool:
        if reason != self.error:
            self.failures += 1
            kept = "keeping the last good version" if self.value is not None else "nothing in force"
            logger.error("refused %s (%s)", reason, kept)  # reason starts with the path
        self.error = reason
        return False


class Reloader:
    """The supervised reload loop of one process; see the module docstring."""

    def __init__(self, stale_after: float = STALE_AFTER) -> None:
        self.stale_after = stale_after
        self.started = False
        self.stopped = ""
        self._interval = 0.0
        self._beat = 0.0

    async def run(self, check: Callable[[], None], interval: float, stop: asyncio.Event) -> None:
        """Run ``check`` in a worker thread every ``interval`` seconds until ``stop`` is set."""
        self.started, self.stopped, self._interval = True, "", interval
        self._beat = time.monotonic()
        try:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), interval)
                try:
                    await asyncio.to_thread(check)
                except Exception as exc:  # a bug in a check must not end the loop
                    logger.error("file check failed: %s", failure_text(exc))
                self._beat = time.monotonic()
        except BaseException as exc:
            if not stop.is_set():
                self.stopped = f"the file reload loop stopped: {type(exc).__name__}: {exc}"
                logger.error("%s", self.stopped)
            raise

    def alive(self) -> tuple[bool, str]:
        """(alive, why not): False once the loop has ended, or while no check has finished for
        ``stale_after`` seconds (and 20 intervals); True before it started."""
        if not self.started:
            return True, ""
        if self.stopped:
            return False, self.stopped
        idle = time.monotonic() - self._beat
        if idle > max(self.stale_after, 20 * self._interval):
            return False, f"no file check finished for {idle:.0f} s (a file read hangs?)"
        return True, ""
