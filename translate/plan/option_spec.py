"""What one setting of the options model is called where it can be set (docs/design.md D26).

    OptionSpec               one field's policy key, flag, record key and doc line, its kind and rules
    about()                  a field's metadata: its OptionSpec
    Command, BOTH            the ``dra-migrate`` commands that take flags
    Kind                     a value's kind: how a policy key, a record key and a flag are read

The fields themselves and every table derived from them are :mod:`~translate.plan.options`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Command = Literal["convert", "report"]
#: The value's kind, which decides how a policy key, a record key and a flag are read.
Kind = Literal["bool", "choice", "names", "text", "number", "mapping"]
BOTH: tuple[Command, ...] = ("convert", "report")


@dataclass(frozen=True)
class OptionSpec:
    """What one field of :class:`~translate.plan.options.Options` is called where it can be set.

    ``doc``: one line (the flag's help, the policy key's description); ``policy_key``: its key in
    the webhook policy ("" none); ``flag`` and ``commands``: its ``dra-migrate`` flag and the
    commands that take it; ``record_key``: its key in the conversion record's ``options`` (""
    not recorded); ``recorded_with``: the field whose non-default value makes it written (an
    absent key then reads as the default, not as "not recorded"); ``choices``; ``what``: a
    list's or number's items in words (for errors); ``valid``: an extra rule on each item of a
    list, with ``rule`` saying it, and ``pattern`` / ``max_length`` the same rule for the chart's
    JSON Schema. ``attribute``, ``kind`` and ``default`` come from the field.
    """

    doc: str
    policy_key: str = ""
    flag: str = ""
    commands: tuple[Command, ...] = ()
    record_key: str = ""
    recorded_with: str = ""
    choices: tuple[str, ...] = ()
    metavar: str = ""
    what: str = ""
    valid: Callable[[str], bool] | None = None
    rule: str = ""
    pattern: str = ""
    max_length: int = 0
    attribute: str = ""
    kind: Kind = "text"
    default: Any = None

    def must(self) -> str:
        """What a value must be, for an error message (``must be ...``)."""
        match self.kind:
            case "bool":
                return "true or false"
            case "choice":
                if len(self.choices) == 2:
                    return f"{self.choices[0]} or {self.choices[1]}"
                return f"one of {', '.join(self.choices)}"
            case "names":
                return f"a list of {self.what}"
            case "number":
                return f"a {self.what}"
            case _:
                return "a non-empty string"

    def accepts(self, value: object) -> bool:
        """Whether ``value`` (as decoded from YAML or JSON) is of this option's kind."""
        match self.kind:
            case "bool":
                return isinstance(value, bool)
            case "choice":
                return value in self.choices
            case "names":
                return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
            case "number":
                return isinstance(value, int) and not isinstance(value, bool) and value >= 0
            case "text":
                return isinstance(value, str) and bool(value)
            case _:
                return isinstance(value, Mapping)


def about(spec: OptionSpec) -> dict[str, OptionSpec]:
    """A field's metadata: its :class:`OptionSpec`."""
    return {"option": spec}


__all__ = ["BOTH", "Command", "Kind", "OptionSpec", "about"]
