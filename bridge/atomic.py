"""Atomic file writes for node-local state: the old file or the new one, never a torn one.

:func:`write_atomic` writes a temp file in the target's directory (named ``.<name>-*.tmp``, so
the kubelet's plugin watcher and CDI runtimes, which skip dot files or read only ``.json`` /
``.yaml``, never see it), fsyncs it, renames it over the target and fsyncs the directory
(docs/design.md D19). Raises OSError.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def fsync_dir(directory: Path) -> None:
    """Make a rename or unlink in ``directory`` durable. Raises OSError."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` atomically (creating its directory). Raises OSError."""
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(directory)


def remove_durably(path: Path) -> bool:
    """Unlink ``path`` and fsync its directory; False when it did not exist. Raises OSError."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    fsync_dir(path.parent)
    return True
