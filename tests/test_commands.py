"""What the three commands share: ``--version`` from the installed distribution, and one exit code
for a usage error (kube.flags.EXIT_USAGE, 1: ``dra-migrate`` keeps 2 and 3 for what a run finds)."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Sequence

import pytest

from dra_bridge.bridge.cli import main as bridge_main
from dra_bridge.kube.flags import EXIT_USAGE
from dra_bridge.migrate.cli import main as migrate_main
from dra_bridge.webhook.cli import main as webhook_main

Main = Callable[[Sequence[str]], int]
COMMANDS: dict[str, Main] = {"dra-migrate": migrate_main, "dra-webhook": webhook_main, "dra-bridge": bridge_main}


def run(command: str, argv: list[str]) -> int | str | None:
    """The exit code of ``command argv``, run in process (argparse exits with SystemExit)."""
    try:
        return COMMANDS[command](argv)
    except SystemExit as exc:
        return exc.code


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_prints_the_installed_version(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(command, ["--version"]) == 0
    assert capsys.readouterr().out == f"{command} {importlib.metadata.version('dra-bridge')}\n"


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("dra-migrate", ["--bogus"]),
        ("dra-migrate", ["convert", "--bogus"]),
        ("dra-migrate", []),
        ("dra-webhook", ["--bogus"]),
        ("dra-webhook", ["serve", "--bogus"]),
        ("dra-webhook", ["certs", "--service", "svc", "--out", "x"]),
        ("dra-bridge", ["--bogus"]),
        ("dra-bridge", ["inventory", "--bogus"]),
        ("dra-bridge", ["run", "--poll-interval", "soon"]),
    ],
    ids=lambda v: v if isinstance(v, str) else " ".join(v) or "no-arguments",
)
def test_a_usage_error_exits_with_the_same_code_in_every_command(
    command: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert EXIT_USAGE == 1
    assert run(command, argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith(command) and ": error: " in err.splitlines()[-1], err
    assert "Traceback" not in err
