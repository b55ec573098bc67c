"""One convention for settings: a flag table, each flag with an environment twin under one prefix.

    TABLE = FlagTable("DRA_BRIDGE_", (Flag("node_name", "the Node this agent serves", "''"), ...),
                      legacy=frozenset({"node_name"}))
    TABLE.add_to(parser)                    --node-name ... (help: text, env twin, default)
    TABLE.values(args, env) -> {name: raw}  a given flag, else DRA_BRIDGE_NODE_NAME, else the
                                            deprecated unprefixed NODE_NAME (one warning), else absent
    TABLE.twin("node_name") -> "--node-name/DRA_BRIDGE_NODE_NAME"   for error messages

Every command parses with :class:`Parser` (a usage error exits :data:`EXIT_USAGE`, 1; help
written to a closed stdout exits :data:`kube.streams.EXIT_CLOSED_OUTPUT`, quietly) and
offers ``--version`` (:func:`add_version`: the installed distribution's version).

One prefix per command: ``DRA_WEBHOOK_`` (dra-webhook serve), ``DRA_BRIDGE_`` (dra-bridge),
``DRA_MIGRATE_`` (reserved for dra-migrate). A flag given on the command line wins over its
environment twin, which wins over the default. Names in ``legacy`` are also read without the
prefix (the bridge's former ``NODE_NAME``, ``KUBELET_DIR``, ``CATALOG``, ``LOG_LEVEL``, ...):
the first use of each logs a deprecation warning and issues a DeprecationWarning. Help
texts come from the table: nothing reads source code back.

    seconds(raw, twin, zero=False) -> float   a number of seconds, finite and > 0 (>= 0 with
                                              ``zero``), else FlagValueError naming ``twin``:
                                              every seconds setting of the three commands
                                              (nan passes a ``<= 0`` check, inf never elapses)

Help text is plain text: the ``double back-quotes`` of reStructuredText in a description are
dropped (:class:`Parser`), so docstrings can be shared with help.
"""

from __future__ import annotations

import argparse
import errno
import importlib.metadata
import logging
import math
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

from dra_bridge.kube.errors import KubeError
from dra_bridge.kube.streams import EXIT_CLOSED_OUTPUT, silence

logger = logging.getLogger(__name__)

WEBHOOK_PREFIX = "DRA_WEBHOOK_"
BRIDGE_PREFIX = "DRA_BRIDGE_"
MIGRATE_PREFIX = "DRA_MIGRATE_"
#: The exit code of a usage error (an unknown or missing flag, a value argparse cannot parse) in
#: all three commands; ``dra-migrate`` keeps 2 and 3 for what a run finds.
EXIT_USAGE = 1
DISTRIBUTION = "dra-bridge"


class FlagValueError(KubeError, ValueError):
    """A setting's value that does not fit it; the message names the flag and its twin (a
    ValueError too, so a caller parsing a value catches it with the rest)."""


def seconds(raw: object, twin: str, *, zero: bool = False) -> float:
    """``raw`` (a string as given, or a number) as seconds: a finite number above zero, or zero
    too where ``zero``; FlagValueError naming ``twin`` (``--flag/ENV_TWIN``) otherwise."""
    bound = "0 or more" if zero else "more than 0"
    try:
        value = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise FlagValueError(f"{twin} {raw!r}: not a number of seconds") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise FlagValueError(f"{twin} {raw!r}: must be a finite number of seconds, {bound}")
    return value


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors exit :data:`EXIT_USAGE` (argparse's own is 2), with the
    usage and one ``PROG: error: MESSAGE`` line on stderr; its subcommands' parsers are Parsers too."""

    def format_help(self) -> str:
        """argparse's help as plain text: reStructuredText's ````literal```` quotes dropped."""
        return super().format_help().replace("``", "")

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        """As argparse's, but output to a closed or broken stream (``--help | head``) exits
        :data:`~kube.streams.EXIT_CLOSED_OUTPUT` quietly instead of being ignored (kube.streams)."""
        if not message:
            return
        try:
            if file is None:  # Python found the descriptor closed at start
                raise BrokenPipeError(errno.EPIPE, "the output stream is closed")
            file.write(message)
            flush = getattr(file, "flush", None)
            if flush is not None:
                flush()
        except BrokenPipeError:
            if file is not None:
                silence(file)
            raise SystemExit(EXIT_CLOSED_OUTPUT) from None


def add_version(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """Add ``--version``: prints ``COMMAND VERSION`` (the installed ``dra-bridge`` distribution's
    metadata; ``unknown`` when it is not installed) and exits 0."""
    try:
        version = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    parser.add_argument(
        "--version", action="version", version=f"{command} {version}", help="print the version and exit"
    )
    return parser


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
            parser.add_argument(
                flag.option,
                dest=flag.name,
                default=default,
                metavar=flag.metavar,
                type=flag.type,
                help=self.help_text(flag),
            )
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
