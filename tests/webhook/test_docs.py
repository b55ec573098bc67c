"""docs/webhook.md stays in step with the code: every serve flag and its env twin, the certs flags."""

from __future__ import annotations

import argparse
from pathlib import Path

from dra_bridge.webhook.cli import _certs_parser
from dra_bridge.webhook.settings import ENV_PREFIX, build_parser

DOC = (Path(__file__).resolve().parents[2] / "docs" / "webhook.md").read_text()


def flag_table_rows() -> list[str]:
    return [line for line in DOC.splitlines() if line.startswith("| `--")]


def test_the_flag_table_names_every_serve_flag_with_its_env_twin() -> None:
    rows = flag_table_rows()
    for action in build_parser()._actions:
        flag = action.option_strings[0]
        if flag in ("-h", "--version"):  # no settings, so no twins
            continue
        env = ENV_PREFIX + flag[2:].replace("-", "_").upper()
        assert any(f"`{flag}" in row and env in row for row in rows), flag


def test_every_certs_flag_is_documented() -> None:
    parser = argparse.ArgumentParser()
    _certs_parser(parser.add_subparsers())
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["certs"]
    for action in sub._actions:
        if action.option_strings[0] != "-h":
            assert f"`{action.option_strings[0]}" in DOC.split("`dra-webhook certs` flags")[1], action.option_strings


def test_startup_requirements_and_on_error_behaviour_are_stated() -> None:
    assert "Outside a cluster `--kubeconfig` is required" in DOC
    assert "discovery" in DOC and "exits 1" in DOC
    assert "connection refused" in DOC and 'kind="template"' in DOC
