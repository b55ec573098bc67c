"""``dra-bridge`` (bridge/cli.py) as its entry point: configuration errors and the log level."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from dra_bridge.bridge.cli import main
from dra_bridge.bridge.settings import Settings


@pytest.fixture(autouse=True)
def _root_level() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    yield
    root.setLevel(level)


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["--log-level", "bogus", "inventory"], {}),
        (["inventory", "--log-level", "bogus"], {}),
        (["inventory"], {"DRA_BRIDGE_LOG_LEVEL": "bogus"}),
        (["--log-level", "bogus", "--node-name", "n"], {}),
    ],
    ids=["flag-before-command", "flag-after-command", "env", "flag-without-command"],
)
def test_unknown_log_level_is_a_configuration_error(
    argv: list[str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--log-level/DRA_BRIDGE_LOG_LEVEL" in err and "'bogus'" in err and "DEBUG" in err


@pytest.mark.parametrize(
    ("argv", "env", "level"),
    [
        ([], {}, logging.INFO),
        ([], {"DRA_BRIDGE_LOG_LEVEL": "debug"}, logging.DEBUG),
        (["--log-level", "ERROR"], {"DRA_BRIDGE_LOG_LEVEL": "debug"}, logging.ERROR),
        (["--log-level", "warning"], {}, logging.WARNING),
    ],
    ids=["default-info", "env-debug", "flag-error-over-env", "flag-warning-lower-case"],
)
def test_log_level_flag_wins_over_env_which_wins_over_default(
    argv: list[str], env: dict[str, str], level: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOG_LEVEL", raising=False)
    monkeypatch.delenv("DRA_BRIDGE_LOG_LEVEL", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    # no kubelet in tmp_path: inventory fails after logging is configured
    assert main([*argv, "inventory", "--kubelet-dir", str(tmp_path)]) == 1
    assert logging.getLogger().level == level
    assert Settings.from_args(argv, env).log_level.upper() == logging.getLevelName(level)


def test_docs_flag_table_matches_help() -> None:
    """docs/bridge.md's flag table lists exactly ``dra-bridge --help``'s flags, env twins and defaults."""
    import re

    from dra_bridge.bridge.cli import _parser

    doc = (Path(__file__).resolve().parents[2] / "docs" / "bridge.md").read_text("utf-8")
    section = doc.split("## Flags", 1)[1].split("\n## ", 1)[0]
    documented = {
        m[0]: (m[1], m[2])
        for m in re.findall(r"^\| `(--[a-z-]+)` \| `([A-Z_]+)` \| `([^`]*)` \|", section, re.MULTILINE)
    }
    helped = {}
    for action in _parser()._actions:
        if not action.option_strings or action.dest in ("help", "version") or action.help == argparse.SUPPRESS:
            continue  # help and version: no settings; SUPPRESS: a removed flag, kept only to refuse it by name
        help_text = " ".join((action.help or "").split())
        twin = re.search(r"\(env ([A-Z_]+)[;)]", help_text)
        default = re.search(r"Default: (.*)\.$", help_text)
        assert twin and default, help_text
        assert twin[1] == "DRA_BRIDGE_" + action.dest.upper()  # the variable Settings.from_namespace reads
        helped[action.option_strings[0]] = (twin[1], default[1])
    assert documented == helped


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--health-port", "70000"], "--health-port/DRA_BRIDGE_HEALTH_PORT"),
        (["--health-port", "-1"], "--health-port/DRA_BRIDGE_HEALTH_PORT"),
        (["--resource-api-version", "v2"], "--resource-api-version/DRA_BRIDGE_RESOURCE_API_VERSION"),
    ],
    ids=["port-too-high", "port-negative", "unknown-api-version"],
)
def test_out_of_range_values_are_configuration_errors(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--node-name", "n", *argv]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and flag in err


@pytest.mark.parametrize("given", ["v1beta1", "resource.k8s.io/v1beta1"])
def test_resource_api_version_takes_the_short_or_the_full_form(given: str) -> None:
    settings = Settings.from_args(["--resource-api-version", given], {}).validate(need_node=False)
    assert settings.resource_api_version == "resource.k8s.io/v1beta1"


def test_help_texts_carry_no_rest_markup(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert "--kubelet-dir" in out and "``" not in out


@pytest.mark.parametrize(
    ("old", "new", "value"),
    [
        ("LOG_LEVEL", "log_level", "debug"),
        ("KUBELET_DIR", "kubelet_dir", "/opt/kubelet"),
        ("CATALOG", "catalog", "/etc/catalog.yaml"),
    ],
    ids=["log-level", "kubelet-dir", "catalog"],
)
def test_the_former_unprefixed_names_still_work_with_a_deprecation_warning(
    old: str, new: str, value: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from dra_bridge.bridge.settings import FLAGS

    FLAGS._warned.clear()
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated: use DRA_BRIDGE_{old}"):
        assert getattr(Settings.from_env({old: value}), new) == value
    assert f"{old} is deprecated" in caplog.text
    caplog.clear()
    assert getattr(Settings.from_env({old: value}), new) == value
    assert "deprecated" not in caplog.text, "warned once"
    assert getattr(Settings.from_env({old: value, f"DRA_BRIDGE_{old}": "x.io"}), new) == "x.io"
