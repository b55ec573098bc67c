"""An exclusive lock between processes on one node: ``flock`` on a file, taken without blocking the
event loop. Two agent instances overlapping during a rolling update (``--pod-uid``) take it around
every NodePrepareResources / NodeUnprepareResources, so they never write the shared checkpoint at
once (the Go helper's ``serialize.lock``, kubeletplugin/draplugin.go).

    async with file_lock(state_dir / LOCK_FILE):
        ...                                   # no other process holds it here

Raises OSError when the file cannot be opened or locked.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator
from pathlib import Path

LOCK_FILE = "prepared-claims.lock"


def _acquire(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _close_when_taken(task: asyncio.Future[int]) -> None:
    if not task.cancelled() and task.exception() is None:
        os.close(task.result())


@contextlib.asynccontextmanager
async def file_lock(path: Path) -> AsyncIterator[None]:
    """Hold ``flock(LOCK_EX)`` on ``path`` (created if missing) for the block; closing the file
    releases it. A caller cancelled while waiting never leaves the lock held."""
    task = asyncio.ensure_future(asyncio.to_thread(_acquire, path))
    try:
        fd = await asyncio.shield(task)
    except asyncio.CancelledError:
        task.add_done_callback(_close_when_taken)
        raise
    try:
        yield
    finally:
        os.close(fd)
