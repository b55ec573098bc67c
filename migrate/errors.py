"""Exceptions of ``dra-migrate``, and the exit codes the command line maps them to.

The tree (one per package, docs/design.md D18; third-party errors are chained with
``raise ... from``, never re-exported)::

    MigrateError                   base of every error dra-migrate reports: exit 1
    ├── InputFileError             a manifest, catalog, PodResources dump or node-labels file
    │                              cannot be read, does not parse (names the file, and the line
    │                              or field), or holds something other than the command reads
    └── UsageError                 a command-line value is wrong (a --mig-profile or
                                   --api-version value; argparse reports unknown options itself)

Errors of the ``translate`` package (``TranslateError``; its ``InputError`` is a malformed
object, this ``InputFileError`` a file the command cannot use) that reach the command line
also exit 1. Findings are not exceptions: they are printed, and ``--fail-on LEVEL`` turns those at
LEVEL or worse into exit 3.
"""

from __future__ import annotations

#: Exit codes (README, MIGRATION.md); a stdout closed early exits kube.streams.EXIT_CLOSED_OUTPUT (141).
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_FINDINGS = 3


class MigrateError(Exception):
    """Base class of every error raised by the ``migrate`` package."""


class InputFileError(MigrateError):
    """An input file cannot be read or parsed, or is not what the command reads."""


class UsageError(MigrateError):
    """A command-line value is invalid."""
