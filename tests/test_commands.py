"""What the three commands share: ``--version`` from the installed distribution, one exit code
for a usage error (kube.flags.EXIT_USAGE, 1: ``dra-migrate`` keeps 2 and 3 for what a run finds),
and ``--log-level`` with their logs set up by kube.logs."""

from __future__ import annotations

import importlib.metadata
import io
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

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


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("dra-migrate", ["--log-level", "verbose", "classes"]),
        ("dra-migrate", ["classes", "--log-level", "verbose"]),
        ("dra-webhook", ["--log-level", "verbose", "--tls-cert-file", "c", "--tls-key-file", "k"]),
        ("dra-bridge", ["--log-level", "verbose", "inventory"]),
    ],
    ids=["migrate-before-command", "migrate-after-command", "webhook", "bridge"],
)
def test_an_unknown_log_level_exits_1_naming_the_levels(
    command: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(command, argv) == 1
    err = capsys.readouterr().err
    assert "--log-level" in err and "DEBUG" in err and "WARNING" in err, err


def test_every_command_sets_up_its_logs_through_kube_logs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dra_bridge.bridge import cli as bridge_cli
    from dra_bridge.migrate import cli as migrate_cli
    from dra_bridge.webhook import cli as webhook_cli

    seen: dict[str, list[tuple[str, object]]] = {}

    def recorder(name: str) -> Callable[..., logging.Handler]:
        def configure(level: str = "INFO", stream: object = None) -> logging.Handler:
            seen.setdefault(name, []).append((level, stream))
            return logging.NullHandler()

        return configure

    for name, module in (("dra-migrate", migrate_cli), ("dra-webhook", webhook_cli), ("dra-bridge", bridge_cli)):
        monkeypatch.setattr(module, "configure_logs", recorder(name))

    async def serve(_: object) -> None:
        return None

    monkeypatch.setattr(webhook_cli, "serve", serve)
    out, err = io.StringIO(), io.StringIO()
    assert migrate_main(["classes", "--log-level", "debug"], stdout=out, stderr=err) == 0
    assert webhook_main(["--log-level", "warning", "--tls-cert-file", "c", "--tls-key-file", "k"]) == 0
    monkeypatch.delenv("DRA_BRIDGE_LOG_LEVEL", raising=False)
    monkeypatch.delenv("LOG_LEVEL", raising=False)
    assert bridge_main(["--log-level", "error", "inventory", "--kubelet-dir", str(tmp_path)]) == 1  # no kubelet
    assert seen["dra-migrate"] == [("DEBUG", err)]  # stderr: stdout keeps the output
    assert seen["dra-webhook"][-1] == ("warning", None)
    assert seen["dra-bridge"] == [("INFO", None), ("error", None)]  # INFO while the settings are read
    assert out.getvalue().startswith("apiVersion: resource.k8s.io/v1")


FORGED = "/tmp/dra-bridge-test\nFORGED line\x1b[31m"


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("dra-bridge", ["--node-name", "n1", "--kubeconfig", FORGED, "run"]),
        ("dra-migrate", ["report", "-f", FORGED]),
    ],
    ids=["bridge-kubeconfig", "migrate-input-file"],
)
def test_an_error_naming_what_the_caller_gave_is_one_escaped_line(
    command: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(command, argv) == 1
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if line.startswith(f"{command}: "))
    assert "FORGED" in line and "\\nFORGED line\\x1b[31m" in line, err
    assert "\x1b" not in err and not any(line.startswith("FORGED") for line in err.splitlines())


def test_the_agent_logs_what_reading_its_settings_says_in_the_common_format(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NODE_NAME", "n1")  # the deprecated twin: a warning while the settings are read
    monkeypatch.setenv("DRA_BRIDGE_KUBELET_DIR", "/nonexistent-kubelet")
    with pytest.warns(DeprecationWarning, match="NODE_NAME"):
        assert run("dra-bridge", ["inventory"]) == 1
    warning = next(line for line in capsys.readouterr().err.splitlines() if "NODE_NAME is deprecated" in line)
    assert " WARNING dra_bridge.kube.flags: " in warning


@pytest.mark.parametrize("level", [" debug ", "Warning"], ids=["padded", "mixed-case"])
def test_every_command_reads_a_log_level_the_same_way(level: str, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert migrate_main(["--log-level", level, "classes"], stdout=out, stderr=err) == 0
    certs = ["certs", "--log-level", level, "--namespace", "ns", "--service", "svc", "--out", str(tmp_path)]
    assert run("dra-webhook", certs) == 0
