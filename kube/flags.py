"""One convention for settings: a flag table, each flag with an environment twin under one prefix.

    TABLE = FlagTable("DRA_BRIDGE_", (Flag("node_name", "the Node this agent serves", "''"), ...),
                      legacy=frozenset({"node_name"}))
    TABLE.add_to(parser)                    --node-name ... (help: text, env twin, default)
    TABLE.values(args, env) -> {name: raw}  a given flag, else DRA_BRIDGE_NODE_NAME, else the
                                            deprecated unprefixed NODE_NAME (one warning), else absent
    TABLE.twin("node_name") -> "--node-name/DRA_BRIDGE_NODE_NAME"   for error messages

One prefix per command: ``DRA_WEBHOOK_`` (dra-webhook serve), ``DRA_BRIDGE_`` (dra-bridge),
``DRA_MIGRATE_`` (reserved for dra-migrate). A flag given on the command line wins over its
environment twin, which wins over the default. Names in ``legacy`` are also read without the
prefix (the bridge's former ``NODE_NAME``, ``KUBELET_DIR``, ``CATALOG``, ``LOG_LEVEL``, ...):
the first use of each logs a deprecation warning and issues a DeprecationWarning. Help
texts come from the table: nothing reads source code back.
"""

from __future__ import annotations

import argparse
import logging
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

WEBHOOK_PREFIX = "DRA_WEBHOOK_"
BRIDGE_PREFIX = "DRA_BRIDGE_"
MIGRATE_PREFIX = "DRA_MIGRATE_"


@dataclass(frozen=True)
class Flag:
    """One setting: ``name`` (snake_case: the dest, ``--kebab-case`` flag, UPPER_SNAKE twin), its
    ``help``, the ``default`` as shown in help, an argparse ``metavar`` and ``type`` (a value that
    does not parse is then a usage error)."""

    name: str
    help: str
    default: str = ""
    metavar: str | None = None
    type: Callable[[str], Any] = str

    @property
    def option(self) -> str:
        """``--kebab-case``."""
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class FlagTable:
    """The flags of one command and the prefix of their environment twins (module docstring)."""

    prefix: str
    flags: tuple[Flag, ...]
    legacy: frozenset[str] = frozenset()
    _warned: set[str] = field(default_factory=set, compare=False, repr=False)

    def env(self, name: str) -> str:
        """The environment twin of flag ``name``."""
        return self.prefix + name.upper()

    def twin(self, name: str) -> str:
        """``--flag/ENV_TWIN``, the way error messages name a setting."""
        return f"--{name.replace('_', '-')}/{self.env(name)}"

    def help_text(self, flag: Flag) -> str:
        """The flag's help: text, environment twin (and the deprecated name), default."""
        former = f"; formerly {flag.name.upper()}, deprecated" if flag.name in self.legacy else ""
        default = f" Default: {flag.default}." if flag.default else ""
        return f"{flag.help.rstrip('.')} (env {self.env(flag.name)}{former}).{default}".replace("%", "%%")

    def add_to(self, parser: argparse.ArgumentParser, default: Any = None) -> argparse.ArgumentParser:
        """Add every flag to ``parser``, defaulting to ``default`` (None, so twins can apply; a
        subcommand's parser passes ``argparse.SUPPRESS`` so it hides no flag given before it)."""
        for flag in self.flags:
            parser.add_argument(flag.option, dest=flag.name, default=default, metavar=flag.metavar,
                                type=flag.type, help=self.help_text(flag))
        return parser

    def values(self, args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, Any]:
        """Each setting that was given: the flag's value, else its twin's, else its deprecated
        unprefixed variable's (see the module docstring); absent ones are left out."""
        out: dict[str, Any] = {}
        for flag in self.flags:
            given = getattr(args, flag.name, None)
            if given is None:
                given = env.get(self.env(flag.name))
            if given is None and flag.name in self.legacy and flag.name.upper() in env:
                given = env[flag.name.upper()]
                self._deprecated(flag.name)
            if given is not None:
                out[flag.name] = given
        return out

    def _deprecated(self, name: str) -> None:
        if name in self._warned:
            return
        self._warned.add(name)
        message = f"the environment variable {name.upper()} is deprecated: use {self.env(name)}"
        logger.warning("%s", message)
        warnings.warn(message, DeprecationWarning, stacklevel=3)
