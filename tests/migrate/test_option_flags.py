"""The plan-option flags of convert and report are the options model's (docs/design.md D26)."""

from __future__ import annotations

import argparse
import io

import pytest

from dra_bridge.migrate.cli import _parser, main
from dra_bridge.translate.plan.options import Command, flag_specs, option_specs


def _flags(command: Command) -> dict[str, argparse.Action]:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {s: a for a in sub.choices[command]._actions for s in a.option_strings}


@pytest.mark.parametrize("command", ["convert", "report"])
def test_the_commands_take_the_models_flags(command: Command) -> None:
    flags = _flags(command)
    for spec in flag_specs(command):
        action = flags[spec.flag]
        assert action.dest == spec.attribute and action.help == spec.doc
        if spec.kind == "choice":
            assert tuple(action.choices or ()) == spec.choices
    option_flags = {s.flag for s in option_specs() if s.flag}
    assert {f for f in flags if f in option_flags} == {s.flag for s in flag_specs(command)}


def test_the_convert_flags_are_the_former_ones_and_the_new_ones() -> None:
    assert {s.flag for s in flag_specs("convert")} == {
        "--api-version",
        "--target",
        "--hami-slicing",
        "--dra-scheduler",
        "--fail-requests-greater-than-one",
        "--alignment",
        "--alignment-scope",
        "--convert-half-migrated",
        "--device-domain",
    }


def test_a_list_flag_value_its_rule_refuses_is_a_usage_error_naming_flag_and_rule() -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["convert", "-f", "-", "--device-domain", "Not A Domain"], stdin=io.StringIO(""), stdout=out, stderr=err
    )
    assert code == 1 and "--device-domain 'Not A Domain': a domain like xilinx.com" in err.getvalue()
