"""The flag-table convention: flag > prefixed twin > deprecated unprefixed name > default."""

from __future__ import annotations

import argparse
import logging

import pytest

from dra_bridge.kube.flags import Flag, FlagTable


def table() -> FlagTable:
    return FlagTable(
        "DRA_TEST_",
        (Flag("node_name", "the node.", "''"), Flag("port", "a port", "8", "N", int)),
        legacy=frozenset({"node_name"}),
    )


def parse(t: FlagTable, argv: list[str]) -> argparse.Namespace:
    return t.add_to(argparse.ArgumentParser()).parse_args(argv)


def test_a_flag_wins_over_its_twin_which_wins_over_the_former_name() -> None:
    t = table()
    env = {"DRA_TEST_NODE_NAME": "twin", "NODE_NAME": "old", "DRA_TEST_PORT": "9"}
    assert t.values(parse(t, ["--node-name", "flag"]), env) == {"node_name": "flag", "port": "9"}
    assert t.values(parse(t, []), env) == {"node_name": "twin", "port": "9"}
    assert t.values(parse(t, ["--port", "7"]), {}) == {"port": 7}


def test_the_former_name_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    t = table()
    with caplog.at_level(logging.WARNING), pytest.warns(DeprecationWarning, match="NODE_NAME is deprecated"):
        assert t.values(parse(t, []), {"NODE_NAME": "old"}) == {"node_name": "old"}
        assert t.values(parse(t, []), {"NODE_NAME": "old"}) == {"node_name": "old"}
    assert caplog.text.count("deprecated") == 1
    assert t.values(parse(t, []), {"PORT": "1"}) == {}, "only names in legacy are read without the prefix"


def test_help_comes_from_the_table() -> None:
    t = table()
    helps = {a.dest: a.help for a in t.add_to(argparse.ArgumentParser())._actions}
    assert helps["node_name"] == "the node (env DRA_TEST_NODE_NAME; formerly NODE_NAME, deprecated). Default: ''."
    assert helps["port"] == "a port (env DRA_TEST_PORT). Default: 8."
    assert t.twin("port") == "--port/DRA_TEST_PORT"


def _helps(parser: argparse.ArgumentParser) -> list[str]:
    """The --help of ``parser`` and of each of its subcommands."""
    texts = [parser.format_help()]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            texts += [sub.format_help() for sub in action.choices.values()]
    return texts


def test_help_is_plain_text_without_rst_markup() -> None:
    from dra_bridge.bridge.cli import _parser as bridge_parser
    from dra_bridge.kube.flags import Parser
    from dra_bridge.migrate.cli import _parser as migrate_parser
    from dra_bridge.webhook.cli import _certs_parser
    from dra_bridge.webhook.settings import build_parser as webhook_parser

    def certs_parser() -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = Parser(prog="dra-webhook")
        _certs_parser(parser.add_subparsers(dest="command"))
        return parser

    for build in (bridge_parser, migrate_parser, webhook_parser, certs_parser):
        for text in _helps(build()):
            assert "``" not in text, text
    assert "dra-bridge: the node agent's command line" in bridge_parser().format_help()


def test_the_parser_drops_double_back_quotes_from_help() -> None:
    from dra_bridge.kube.flags import Parser

    parser = Parser(prog="p", description="``p`` does ``x``")
    parser.add_argument("--y", help="like ``z``")
    text = parser.format_help()
    assert "p does x" in text and "like z" in text and "``" not in text
