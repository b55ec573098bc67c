"""dra-migrate: the offline command line (convert, slices, classes).

``migrate.cli.main(argv, stdin=, stdout=, stderr=) -> exit code`` runs it in process; the
exit codes and the error tree are in :mod:`migrate.errors`, re-exported here.
"""

from dra_bridge.migrate.errors import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, InputFileError, MigrateError, UsageError

__all__ = ["EXIT_ERROR", "EXIT_FINDINGS", "EXIT_OK", "InputFileError", "MigrateError", "UsageError"]
