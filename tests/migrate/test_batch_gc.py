"""A command's run keeps the collector off the heap it started with and collects the youngest
generation less often (issue 25: convert's cost, 12-15% of it the collector's), and gives the
process its settings back, frozen objects included, however the run ends."""

from __future__ import annotations

import gc
import io
import weakref
from pathlib import Path
from typing import Any

import pytest

from dra_bridge.migrate import cli
from dra_bridge.migrate.batch_gc import YOUNG_THRESHOLD, batch_collection

EXAMPLE = Path(__file__).parents[1] / "data" / "examples" / "01-pod-limits-only-toleration.yaml"


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_the_run_walks_neither_the_start_up_heap_nor_each_700_allocations() -> None:
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with batch_collection():
        assert gc.get_freeze_count() > 1000  # the test process's objects: out of the walks
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_garbage_from_before_the_run_is_collected_after_it_and_garbage_made_during_it_still_is() -> None:
    old = _Cycle()
    old_ref = weakref.ref(old)
    del old
    with batch_collection():
        gc.collect()
        assert old_ref() is not None  # frozen: not walked while the command runs
        new = _Cycle()
        new_ref = weakref.ref(new)
        del new
        gc.collect()
        assert new_ref() is None
    gc.collect()
    assert old_ref() is None


def test_a_caller_that_froze_objects_itself_keeps_them_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        cli.main(["convert", "-f", str(EXAMPLE)], stdout=io.StringIO(), stderr=io.StringIO())
        assert gc.get_freeze_count() >= frozen
    finally:
        gc.unfreeze()


def test_a_caller_that_turned_collection_off_keeps_it_off() -> None:
    before = gc.get_threshold()
    gc.set_threshold(0)
    try:
        with batch_collection():
            assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*before)


def test_a_raised_threshold_is_kept_as_it_was() -> None:
    before = gc.get_threshold()
    gc.set_threshold(50_000, *before[1:])
    try:
        with batch_collection():
            assert gc.get_threshold()[0] == 50_000
    finally:
        gc.set_threshold(*before)


@pytest.mark.parametrize(
    "argv",
    [
        ["convert", "-f", str(EXAMPLE)],
        ["report", "-f", str(EXAMPLE)],
        ["convert", "-f", "/nonexistent/pods.yaml"],  # an error: the settings come back too
    ],
    ids=["convert", "report", "convert-error"],
)
def test_each_command_runs_under_it_and_gives_the_settings_back(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[int, int]] = []
    command = cli._command

    def spy(*args: Any) -> int:
        seen.append((gc.get_threshold()[0], gc.get_freeze_count()))
        return command(*args)

    monkeypatch.setattr(cli, "_command", spy)
    before = gc.get_threshold()
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(argv, stdout=out, stderr=err)
    assert (code == 0) == ("nonexistent" not in argv[-1]), err.getvalue()
    assert len(seen) == 1
    assert seen[0][0] == YOUNG_THRESHOLD and seen[0][1] > 1000
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
