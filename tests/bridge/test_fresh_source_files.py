"""The fresh-node source's CDI files as the agent meets them (bridge/fresh_source.py): a FIFO, a
device or an oversized file in a CDI directory is skipped, never read whole or waited on, and the
refusal names the file and why."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from dra_bridge.bridge.fresh_source import MAX_SPEC_BYTES, FreshSource
from dra_bridge.bridge.state import Inventory
from tests.bridge.agent_fixtures import NODE


def source(tmp_path: Path, *dirs: Path) -> FreshSource:
    return FreshSource(NODE, [str(d) for d in dirs], lambda *_: None, sysfs=tmp_path / "sys")


def within(seconds: float, call: Callable[[], Coroutine[Any, Any, tuple[Inventory, str]]]) -> tuple[Inventory, str]:
    """``call()`` run to its end in a thread of its own: fails when it takes longer than ``seconds``."""
    result: list[tuple[Inventory, str]] = []
    thread = threading.Thread(target=lambda: result.append(asyncio.run(call())), daemon=True)
    thread.start()
    thread.join(seconds)
    assert result, f"still running after {seconds} s"
    return result[0]


def test_a_fifo_and_a_device_in_a_cdi_directory_are_skipped_never_waited_on(tmp_path: Path) -> None:
    etc = tmp_path / "etc-cdi"
    etc.mkdir()
    fifo = etc / "nvidia.yaml"
    os.mkfifo(fifo)
    (etc / "zero.yaml").symlink_to("/dev/zero")
    fresh = source(tmp_path, etc)
    try:
        inventory, refusal = within(10, lambda: fresh.inventory(None, {}))
    finally:
        with contextlib.suppress(OSError):  # a reader waiting on the FIFO: a writer that closes ends its read
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert inventory.empty
    assert f"{fifo} is not a regular file" in refusal and f"{etc / 'zero.yaml'} is not a regular file" in refusal


async def test_a_spec_file_larger_than_the_bound_is_skipped_unread(tmp_path: Path) -> None:
    etc = tmp_path / "etc-cdi"
    etc.mkdir()
    big = etc / "nvidia.yaml"
    big.write_bytes(b"#" * (MAX_SPEC_BYTES + 1))
    inventory, refusal = await source(tmp_path, etc).inventory(None, {})
    assert inventory.empty and f"{big} is larger than 4 MiB" in refusal
