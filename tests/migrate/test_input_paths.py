"""A directory, or ``-``, given where dra-migrate reads one file (--policy, --catalog,
--podresources, --node-labels): one line saying what it is; ``-`` is standard input only for -f."""

from __future__ import annotations

from pathlib import Path

import pytest

from dra_bridge.migrate.errors import EXIT_ERROR
from tests.migrate.test_cli_hostile import EXAMPLE
from tests.migrate.test_convert_inputs import run

PODRESOURCES = '{"devices": []}'


def _errors(err: str) -> int:
    """Lines of ``err`` that are not the warning about a dump without devices."""
    return sum(1 for line in err.splitlines() if not line.startswith("warning: "))


def _commands(given: str, tmp_path: Path) -> dict[str, list[str]]:
    dump = tmp_path / "n.podresources.json"
    dump.write_text(PODRESOURCES, encoding="utf-8")
    return {
        "report-policy": ["report", "-f", EXAMPLE, "--policy", given],
        "convert-policy": ["convert", "-f", EXAMPLE, "--policy", given],
        "convert-catalog": ["convert", "-f", EXAMPLE, "--catalog", given],
        "classes-catalog": ["classes", "--catalog", given],
        "slices-podresources": ["slices", "--node", "n", "--podresources", given],
        "slices-node-labels": ["slices", "--node", "n", "--podresources", str(dump), "--node-labels", given],
        "slices-catalog": ["slices", "--node", "n", "--podresources", str(dump), "--catalog", given],
    }


COMMANDS = [
    "report-policy",
    "convert-policy",
    "convert-catalog",
    "classes-catalog",
    "slices-podresources",
    "slices-node-labels",
    "slices-catalog",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_directory_is_one_line_saying_so(command: str, tmp_path: Path) -> None:
    code, out, err = run(*_commands(str(tmp_path), tmp_path)[command])
    assert code == EXIT_ERROR and out == ""
    assert err.endswith(f": {tmp_path}: is a directory: give a file\n") and "internal error" not in err, err
    assert _errors(err) == 1, err


@pytest.mark.parametrize("command", COMMANDS)
def test_a_dash_says_that_only_f_reads_standard_input(command: str, tmp_path: Path) -> None:
    code, out, err = run(*_commands("-", tmp_path)[command], stdin=PODRESOURCES)
    assert code == EXIT_ERROR and out == ""
    assert err.endswith(": -: only -f reads standard input: give the file's path here\n"), err
    assert _errors(err) == 1, err


def test_a_fifo_given_as_f_still_offers_standard_input(tmp_path: Path) -> None:
    code, _, err = run("convert", "-f", "/dev/null")
    assert code == EXIT_ERROR and "or - to read standard input" in err, err
    code, _, err = run("convert", "-f", EXAMPLE, "--catalog", "/dev/null")
    assert code == EXIT_ERROR and "not a regular file" in err and "standard input" not in err, err
