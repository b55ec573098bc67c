"""Atomic file writes for node-local state: the old file or the new one, never a torn one.

:func:`write_atomic` writes a temp file in the target's directory (named ``.<name>-*.tmp``, so
the kubelet's plugin watcher and CDI runtimes, which skip dot files or read only ``.json`` /
``.yaml``, never see it), fsyncs it, renames it over the target and fsyncs the directory
(docs/design.md D19). Raises OSError.

:func:`read_state` is the reading side: the UTF-8 text of a regular file of at most
:data:`MAX_STATE_FILE_BYTES` (opened without blocking, so a FIFO is refused, not waited on; a
link to ``/dev/zero`` is refused, not read into memory; :mod:`kube.regular_files`), None when
there is none; OSError saying why otherwise.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from dra_bridge.kube.errors import FileRefused
from dra_bridge.kube.regular_files import read_regular_text

#: The largest state file read (docs/bridge.md "State files"): thousands of devices or claims
#: take a few MB at most.
MAX_STATE_FILE_BYTES = 16 << 20


def read_state(path: Path) -> str | None:
    """The UTF-8 text of the state file ``path``; None when it does not exist; OSError (its text
    the reason) when it is not a regular file, is larger than MAX_STATE_FILE_BYTES or not UTF-8
    (:func:`kube.regular_files.read_regular_text`)."""
    try:
        return read_regular_text(path, MAX_STATE_FILE_BYTES)
    except FileRefused as exc:
        if exc.kind == "missing":
            return None
        if exc.kind == "unreadable" and exc.os_error is not None:  # cannot open or read it: as it is
            raise exc.os_error from None
        raise OSError(_state_phrase(exc)) from None


def _state_phrase(exc: FileRefused) -> str:
    if exc.kind == "not-regular":
        return "not a regular file (a device, a FIFO or a socket)"
    if exc.kind == "too-large":
        return f"larger than {MAX_STATE_FILE_BYTES >> 20} MiB"
    if exc.kind == "not-utf8":
        return f"not UTF-8 (byte {exc.offset})"
    return exc.phrase  # is a directory


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
