"""dra-migrate: the command line, offline (manifests in) and live (read from a cluster).

Commands (``cli``, the parser and ``main``): ``convert`` (manifests in, migrated manifests out),
``classes`` (our DeviceClasses), ``slices`` (``slices_cmd``: what the bridge would publish for a
node), ``simulate`` (``simulate_cmd``: which devices the scheduler would allocate) and ``report``
(``report_cmd``: what every workload would become, its path and risks, from files or, in live
mode, a cluster: ``live``, with its read-only API calls in ``access``). Around them: ``manifests``
(reading and writing YAML/JSON files and the catalog), ``input_files`` (a regular file's UTF-8
text, or one line saying why not; a ``-f`` directory's manifest files), ``inventory_dumps``
(``dra-bridge inventory`` dumps),
``option_flags`` (the plan-option flags of ``convert`` and ``report``, from the options model),
``enrolment_flags`` (``report``'s enrolment flags: the chart's webhook selector settings),
``remedies`` (remedy codes in the command's words), ``report`` (findings as a table),
``report_text`` and ``report_html`` (the report's renderers), ``convert_memo`` (``convert``'s
memo: objects alike but for their name converted once), ``batch_gc`` (the garbage collector's
settings for one command's run).

``migrate.cli.main(argv, stdin=, stdout=, stderr=) -> exit code`` runs it in process; the
exit codes and the error tree are in :mod:`migrate.errors`, re-exported here.
"""

from dra_bridge.migrate.errors import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, InputFileError, MigrateError, UsageError

__all__ = ["EXIT_ERROR", "EXIT_FINDINGS", "EXIT_OK", "InputFileError", "MigrateError", "UsageError"]
