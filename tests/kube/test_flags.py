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
