"""The flags of ``dra-migrate convert`` and ``report`` that set plan options, derived from the one
options model (``translate.plan.options``, docs/design.md D26).

    add_option_flags(parser, command)        each option whose spec names a flag for ``command``
    option_values(args, command) -> dict     the Options attributes those flags set

A boolean option is a switch, a choice takes its ``choices`` (default: the model's), a list is
repeatable; a text option left out keeps the model's default.
"""

from __future__ import annotations

import argparse
from typing import Any

from dra_bridge.migrate.errors import UsageError
from dra_bridge.translate.plan.options import Command, flag_specs


def add_option_flags(parser: argparse.ArgumentParser, command: Command) -> None:
    """Add the option flags of ``command`` to ``parser``."""
    for spec in flag_specs(command):
        kwargs: dict[str, Any] = {"dest": spec.attribute, "help": spec.doc}
        if spec.metavar:
            kwargs["metavar"] = spec.metavar
        match spec.kind:
            case "bool":
                kwargs |= {"action": "store_true"}
            case "choice":
                kwargs |= {"choices": spec.choices, "default": spec.default}
            case "names":
                kwargs |= {"action": "append", "default": []}
            case _:
                kwargs |= {"default": None}
        parser.add_argument(spec.flag, **kwargs)


def option_values(args: argparse.Namespace, command: Command) -> dict[str, Any]:
    """The Options attributes set by ``command``'s option flags in ``args`` (a text option left
    out is absent: the model's default applies; a repeated value counts once). UsageError for a
    list item its spec's ``valid`` refuses, naming the flag and the rule."""
    out: dict[str, Any] = {}
    for spec in flag_specs(command):
        value = getattr(args, spec.attribute)
        if value is None and spec.kind == "text":
            continue
        if isinstance(value, list):
            bad = [v for v in value if spec.valid is not None and not spec.valid(v)]
            if bad:
                raise UsageError(f"{spec.flag} {bad[0]!r}: {spec.rule}")
            value = tuple(dict.fromkeys(value))
        out[spec.attribute] = value
    return out


__all__ = ["add_option_flags", "option_values"]
