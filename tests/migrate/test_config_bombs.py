"""``dra-migrate --policy`` and ``--catalog`` refuse an alias bomb in one line, fast."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dra_bridge.migrate.errors import EXIT_ERROR
from tests.migrate.test_cli_hostile import EXAMPLE, _in_thread
from tests.translate.test_strict_yaml import HEADER, bomb


@pytest.mark.parametrize(
    ("command", "flag"),
    [("convert", "--policy"), ("report", "--policy"), ("convert", "--catalog"), ("classes", "--catalog")],
)
def test_a_config_alias_bomb_is_one_line(command: str, flag: str, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text((HEADER if flag == "--catalog" else "") + bomb(10))
    args = [command, flag, str(config)] + ([] if command == "classes" else ["-f", EXAMPLE])
    started = time.monotonic()
    code, out, err = _in_thread(*args)
    assert time.monotonic() - started < 10
    assert code == EXIT_ERROR and out == "", err
    assert err.startswith(f"dra-migrate: error: {config}: expands to more than") and err.count("\n") == 1, err
