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

from dra_bridge.bridge.fresh_source import FreshSource
from dra_bridge.bridge.kubeletplugin.cdi_specs import SpecIndex
from dra_bridge.bridge.spec_files import MAX_SPEC_BYTES
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


def alias_bomb(levels: int) -> str:
    """A ``containerEdits`` key (unknown to CDI, so the CDI rules let it through) whose value is
    nine copies of the level below, ``levels`` deep: 9**levels strings from a few hundred bytes."""
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join("      " + line for line in lines)


async def test_a_yaml_alias_bomb_in_the_edits_is_refused_not_expanded(tmp_path: Path) -> None:
    etc = tmp_path / "etc-cdi"
    etc.mkdir()
    spec = etc / "nvidia.yaml"
    spec.write_text(
        "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: '0'\n  containerEdits:\n"
        f"    env: ['A=1']\n    x:\n{alias_bomb(7)}\n- name: GPU-aaaa\n  containerEdits:\n    env: ['A=1']\n"
    )
    inventory, refusal = await source(tmp_path, etc).inventory(None, {})
    assert inventory.empty
    assert f"{spec}: expands to more than 1,000,000 values beyond its size" in refusal, refusal


async def test_an_invalid_or_non_utf8_toolkit_spec_is_named_in_the_refusal(tmp_path: Path) -> None:
    etc = tmp_path / "etc-cdi"
    etc.mkdir()
    invalid, latin1 = etc / "a-nvidia.yaml", etc / "b-nvidia.yaml"
    invalid.write_text("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n")
    latin1.write_bytes(b"cdiVersion: 0.5.0\nkind: nvidia.com/gpu\n# caf\xe9\n")
    (etc / "other.yaml").write_text("cdiVersion: 0.5.0\nkind: example.com/nic\ndevices: []\n")  # not the toolkit's
    inventory, refusal = await source(tmp_path, etc).inventory(None, {})
    assert inventory.empty and "no NVIDIA container toolkit CDI spec" in refusal
    assert f"{invalid} breaks the CDI rules: " in refusal and f"{latin1} is unreadable: not UTF-8" in refusal
    assert "other.yaml" not in refusal


def test_the_kubelet_plugin_s_cdi_index_reads_specs_by_the_same_bounds(tmp_path: Path) -> None:
    """The CDI index the kubelet plugin asks whether a claim's CDI names resolve read every spec
    whole with yaml.safe_load: an alias bomb or a file of any size in a CDI directory was parsed
    on each change. It now reads through bridge.spec_files: such a file defines nothing, and the
    good spec beside it still resolves."""
    cdi = tmp_path / "cdi"
    cdi.mkdir()
    good = "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: GPU-aaaa\n  containerEdits:\n    env: ['A=1']\n"
    (cdi / "good.yaml").write_text(good)
    bomb = good.replace("kind: nvidia.com/gpu", "kind: example.com/bomb") + f"    x:\n{alias_bomb(7)}\n"
    (cdi / "bomb.yaml").write_text(bomb)
    (cdi / "big.yaml").write_text(good.replace("nvidia.com/gpu", "example.com/big") + "#" * (MAX_SPEC_BYTES + 1))
    index = SpecIndex([cdi])
    assert index.resolves(["nvidia.com/gpu=GPU-aaaa", "example.com/bomb=GPU-aaaa", "example.com/big=GPU-aaaa"]) == {
        "nvidia.com/gpu=GPU-aaaa": True,
        "example.com/bomb=GPU-aaaa": False,
        "example.com/big=GPU-aaaa": False,
    }
