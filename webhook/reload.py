"""Files that are re-read when their content changes, keeping the last good value.

    watched = Watched(path, parse)          # parse(text, source) -> T, raises on bad input
    watched.check() -> bool                 # True when a new value was loaded
    watched.value, watched.error            # the value in force; why the newest file was refused

Change detection is a SHA-256 of the file's bytes (mtime is unreliable on Kubernetes
ConfigMap/Secret volumes, which swap a symlink). A file that cannot be read or parsed keeps
the last good value in force and records the reason in ``error`` (docs/design.md D8).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from dra_bridge.webhook.errors import WebhookError

logger = logging.getLogger(__name__)
T = TypeVar("T")


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
            raw = self.path.read_bytes()
        except OSError as exc:
            self._digest = b""
            return self._refuse(f"{self.path}: cannot read: {exc.strerror or exc}")
        digest = hashlib.sha256(raw).digest()
        if digest == self._digest:
            return False
        self._digest = digest
        try:
            value = self._parse(raw.decode("utf-8"), str(self.path))
        except (WebhookError, ValueError) as exc:
            return self._refuse(str(exc))
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
