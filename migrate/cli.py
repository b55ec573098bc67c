"""``dra-migrate``: convert manifests, print what the bridge would publish, print our DeviceClasses.

Exit codes (``migrate.errors``; documented in README and MIGRATION.md):
    0  success (simulate: every claim allocated)
    1  error: unreadable or non-UTF-8 file, YAML error (file:line), invalid catalog, unknown
       option or bad option value, a source without any object unless ``--allow-empty`` (a
       :class:`~migrate.errors.MigrateError` or a ``TranslateError``)
    2  ``simulate``: some claim is not allocated (migrate.simulate_cmd)
    3  ``--fail-on LEVEL`` was given and a finding of that level or worse exists (``report``: a
       workload reaches LEVEL, migrate.report_cmd)
  141  standard output was closed before everything was written (a pipe into ``head``): nothing
       is printed (kube.streams.EXIT_CLOSED_OUTPUT); 130 after Ctrl-C (kube.streams.EXIT_INTERRUPTED)

:func:`main` takes its streams as arguments (the process's by default), so tests run the
command line in process.
"""

from __future__ import annotations

import argparse
import io
import logging
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import replace
from typing import Any, TextIO

from dra_bridge.kube.flags import Parser, add_version
from dra_bridge.kube.logs import LEVELS, escape, level_number
from dra_bridge.kube.logs import configure as configure_logs
from dra_bridge.kube.streams import guarded, standard_streams
from dra_bridge.migrate.batch_gc import batch_collection
from dra_bridge.migrate.convert_memo import NameMemo, Result
from dra_bridge.migrate.errors import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, InputFileError, MigrateError, UsageError
from dra_bridge.migrate.manifests import Document, Sources, Writer, dump, read_catalog
from dra_bridge.migrate.option_flags import add_option_flags, option_values
from dra_bridge.migrate.remedies import phrased
from dra_bridge.migrate.report import FindingsSpool
from dra_bridge.migrate.report_cmd import add_parser as add_report_parser
from dra_bridge.migrate.report_cmd import read_policy, run_report
from dra_bridge.migrate.simulate_cmd import run_simulate
from dra_bridge.migrate.slices_cmd import run_slices
from dra_bridge.translate.catalog import PROFILE_RE, Catalog
from dra_bridge.translate.errors import ApiVersionError, TranslateError
from dra_bridge.translate.findings import SEVERITY
from dra_bridge.translate.names import normalize_api_version
from dra_bridge.translate.plan.cluster_state import hold_for_quota, namespace_quota_keys
from dra_bridge.translate.plan.options import Options
from dra_bridge.translate.plan.workloads import Converted, convert_object
from dra_bridge.translate.policy import Policy
from dra_bridge.translate.report.model import pod_templates
from dra_bridge.translate.report.policy_options import switched_off, workload_options

FAIL_ON = ("left-for-webhook", "partial", "unsupported")


def _parser() -> argparse.ArgumentParser:
    parser = add_version(
        Parser(prog="dra-migrate", description="Migrate device-plugin GPU workloads to DRA."), "dra-migrate"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    conv = sub.add_parser("convert", help="convert manifests (stdout) and list findings (stderr)")
    conv.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        metavar="FILE|DIR|-",
        help="manifest file, directory (recursive .yaml/.yml/.json) or - for stdin; repeatable (default: stdin)",
    )
    add_option_flags(conv, "convert")
    conv.add_argument("--catalog", metavar="FILE", help="a user catalog that adds resources to the shipped one")
    conv.add_argument(
        "--policy",
        metavar="FILE",
        help="the webhook's policy (its file, or the ConfigMap holding it): convert each object with the "
        "settings the webhook would apply to its pods (they replace --hami-slicing, --alignment...)",
    )
    conv.add_argument(
        "-o",
        "--output",
        choices=("yaml", "json"),
        default="yaml",
        help="format of the converted objects on stdout (default yaml)",
    )
    conv.add_argument(
        "--include-custom-resources",
        action="store_true",
        help="also convert pod templates and pod specs inside custom resources (RayCluster, "
        "PyTorchJob, KServe InferenceService, ...); Argo templates have none and stay "
        "left-for-webhook",
    )
    conv.add_argument(
        "--allow-empty",
        action="store_true",
        help="accept a source with no objects (an empty file or directory) instead of exiting 1",
    )
    conv.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        help="exit 3 when a finding of this level or worse exists (unsupported includes kept-legacy)",
    )
    classes = sub.add_parser("classes", help="print our DeviceClasses (apply them before converted workloads)")
    classes.add_argument("--api-version", default="v1")
    classes.add_argument("--catalog", metavar="FILE")
    classes.add_argument(
        "--mig-profile",
        action="append",
        default=[],
        metavar="PROFILE",
        help="a MIG profile to render besides the catalog's list (e.g. 1g.18gb); repeatable",
    )
    slices = sub.add_parser("slices", help="print the ResourceSlices the bridge would publish for a node")
    slices.add_argument("--node", required=True)
    slices.add_argument(
        "--podresources",
        required=True,
        metavar="FILE",
        help="AllocatableResourcesResponse in protobuf JSON (dra-bridge inventory --json)",
    )
    slices.add_argument(
        "--node-labels",
        metavar="FILE",
        help="the node's labels: a YAML/JSON map, or a whole Node object (kubectl get node -o yaml)",
    )
    slices.add_argument("--api-version", default="v1")
    slices.add_argument("--catalog", metavar="FILE")
    sim = sub.add_parser(
        "simulate",
        help="allocate the claims of some manifests as the scheduler would "
        "(exit 0: all allocated, 2: some not, 1: input error)",
    )
    sim.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        metavar="FILE|DIR|-",
        help="Nodes, DeviceClasses, ResourceSlices, ResourceClaims, templates, Pods and workloads "
        "(convert's output included); repeatable (default: stdin)",
    )
    sim.add_argument(
        "--node",
        metavar="NAME",
        help="allocate on this node (its Node object gives the labels); "
        "default: each pod on the first Node in the input where its claims fit",
    )
    sim.add_argument(
        "--feature-gates",
        metavar="NAME=true|false,...",
        help="kube-scheduler's DRA gates over 1.36's defaults (DRAAdminAccess, DRAPrioritizedList, "
        "DRADeviceTaints, DRAConsumableCapacity, DRAPartitionableDevices, "
        "DRADeviceBindingConditions, ...)",
    )
    sim.add_argument(
        "-o",
        "--output",
        choices=("yaml", "json"),
        default="yaml",
        help="yaml: the claims with status.allocation; json: {claims: [{name, namespace, node, "
        "outcome, reason, allocation}], pods, refused, warnings}",
    )
    add_report_parser(sub)
    for each in (parser, *sub.choices.values()):  # before or after the subcommand
        each.add_argument(
            "--log-level",
            type=_log_level,
            metavar="|".join(LEVELS),
            default="INFO" if each is parser else argparse.SUPPRESS,
            help="lowest level logged, in any case (default INFO); logs go to stderr, stdout keeps the output",
        )
    return parser


def _api_version(value: str) -> str:
    try:
        return normalize_api_version(value)
    except ApiVersionError as exc:
        raise UsageError(f"--api-version: {exc}") from exc


def _convert(
    obj: dict[str, Any],
    catalog: Catalog,
    options: Options,
    policy: Policy | None,
    custom: bool,
    quotas: Mapping[str, frozenset[str]],
    aliased: bool = True,
) -> Converted:
    """One object, with the options the policy gives it (none: ``options``), kept as it is where
    the quotas of its namespace (``quotas``: as this run writes them) would not count it
    (docs/design.md D27). The output shares what the conversion leaves alone with ``obj`` unless
    ``obj`` is ``aliased`` (reaches a list or mapping twice: its output is copied, without anchors)."""
    templates = pod_templates(obj) if policy is not None else []
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    namespace = str((meta or {}).get("namespace") or "")
    keys = quotas.get(namespace, frozenset())
    if policy is None or not templates:
        return hold_for_quota(obj, convert_object(obj, catalog, options, custom, aliased), keys, catalog, False)
    judged, settings = workload_options(templates[0][1], obj, namespace, policy, options, {})
    if not settings.convert:
        return switched_off(obj, settings)
    converted = convert_object(obj, catalog, judged, custom, aliased)
    return hold_for_quota(obj, converted, keys, catalog, settings.ignore_legacy_quota)


def convert(args: argparse.Namespace, stdin: TextIO, out: TextIO, err: TextIO) -> int:
    """Run ``convert``: objects (with templates inserted before first use) to ``out``.

    Streams: each document is read, converted and written before the next is read (the
    ResourceQuotas first, in a pass of their own, when the input names the kind), to a
    temporary file that is copied to ``out`` once the whole input was read: an error writes
    nothing on stdout, and memory is bounded by the largest document, not the input."""
    options = Options(**option_values(args, "convert"))
    options = replace(options, api_version=_api_version(options.api_version))
    catalog = read_catalog(args.catalog, options.target)
    policy = read_policy(args.policy)
    seen: set[tuple[str, str]] = set()
    with (
        Sources(args.filename or ["-"], stdin) as sources,
        tempfile.TemporaryFile("w+", encoding="utf-8") as spool,
        FindingsSpool() as rows,
    ):
        quotas = namespace_quota_keys(
            convert_object(d.obj, catalog).obj
            for d in (_read(sources, args.allow_empty) if sources.mention("ResourceQuota") else ())
            if d.obj.get("kind") == "ResourceQuota"
        )
        writer, memo = Writer(spool, args.output), NameMemo()

        def work(doc: Document) -> Result:
            custom = args.include_custom_resources
            converted = _convert(doc.obj, catalog, options, policy, custom, quotas, doc.aliased)
            return converted, tuple(phrased(converted.findings))

        for doc in _read(sources, args.allow_empty):
            result, findings = memo.result(doc.obj, doc.aliased, lambda: work(doc))  # noqa: B023 (called at once)
            for template in result.templates:
                key = (str(template["metadata"].get("namespace", "")), template["metadata"]["name"])
                if key not in seen:
                    seen.add(key)
                    writer.write(template)
            writer.write(result.obj)
            name = _object_name(doc.obj) if findings else ""
            for finding in findings:
                rows.add(doc.source, name, finding)
        if not writer.count:
            err.write("dra-migrate: no objects in the input\n")
            return EXIT_OK
        writer.close()
        spool.seek(0)
        shutil.copyfileobj(spool, out, 1 << 16)
        rows.write(err)
    if args.fail_on and rows.worst >= SEVERITY[args.fail_on]:
        return EXIT_FINDINGS
    return EXIT_OK


def _read(sources: Sources, allow_empty: bool) -> Iterator[Document]:
    """Every document of every source, one at a time; InputFileError for a document that is not
    an object, and for a source without any unless ``allow_empty``."""
    for source in sources.sources:
        found = False
        for doc in sources.documents(source):
            if not isinstance(doc.obj, dict) or not isinstance(doc.obj.get("kind"), str):
                raise InputFileError(
                    f"{doc.source}: document {doc.index + 1} is not a Kubernetes object (a mapping with a kind)"
                )
            found = True
            yield doc
        if not found and not allow_empty:
            raise InputFileError(
                f"{source}: no Kubernetes objects ({sources.why_empty(source)}); pass --allow-empty if that is expected"
            )


def _object_name(obj: Any) -> str:
    if not isinstance(obj, dict):
        return "?"
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    name = str(meta.get("name") or meta.get("generateName") or "?")
    ns = meta.get("namespace")
    return f"{obj.get('kind', '?')}/{f'{ns}/' if ns else ''}{name}"


def classes(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``classes``: our DeviceClass objects in the chosen API version."""
    catalog = read_catalog(args.catalog)
    version = _api_version(args.api_version)
    bad = [p for p in args.mig_profile if not re.fullmatch(PROFILE_RE, p)]
    if bad:
        raise UsageError(f"--mig-profile {bad[0]!r}: a MIG profile as in resource names, like 1g.10gb or 1g.10gb.me")
    profiles = [*catalog.mig_profiles, *(p for p in args.mig_profile if p not in catalog.mig_profiles)]
    objs = [{"apiVersion": version, **c} for c in catalog.device_classes(profiles)]
    out.write(dump(objs, "yaml"))
    return EXIT_OK


def slices(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ``slices`` (implemented in migrate.slices_cmd, which reports its own errors)."""
    return run_slices(args.node, args.podresources, args.node_labels, args.api_version, args.catalog, out, err)


def _log_level(value: str) -> str:
    """``--log-level``, read as the services read theirs (:func:`kube.logs.level_number`)."""
    try:
        level_number(value)
    except ValueError as exc:  # argparse names the flag before the message, which quotes the value as typed
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value.strip().upper()


def main(
    argv: Sequence[str] | None = None,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Entry point of the ``dra-migrate`` console script; returns the exit code.

    ``argv`` defaults to ``sys.argv[1:]`` and the streams to the process's (looked up at the
    call, so pytest's capture sees them). Nothing here exits the process: ``--help`` and
    usage errors return 0 and 1 like every other outcome; a closed or broken stdout returns
    ``kube.streams.EXIT_CLOSED_OUTPUT`` (141) without a word.
    """
    stdin = (sys.stdin or io.StringIO()) if stdin is None else stdin  # a closed stdin reads as empty
    out, err = standard_streams(stdout, stderr)
    return guarded(lambda: _run(argv, stdin, out, err), out)  # a closed stdout: EXIT_CLOSED_OUTPUT, quietly


def _run(argv: Sequence[str] | None, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    try:
        with redirect_stdout(stdout), redirect_stderr(stderr):  # argparse prints to sys.stdout/sys.stderr
            args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already printed by _Parser.error
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    handler = configure_logs(args.log_level, stderr)
    try:
        with batch_collection():
            return _command(args, stdin, stdout, stderr)
    except RecursionError:
        stderr.write("dra-migrate: error: the input nests too deeply (a recursive YAML alias?)\n")
        return EXIT_ERROR
    except (MigrateError, TranslateError) as exc:
        stderr.write(f"dra-migrate: error: {escape(str(exc))}\n")  # file names and values the caller gave, escaped
        return EXIT_ERROR
    except BrokenPipeError:
        raise  # a closed stdout: kube.streams.guarded
    except Exception as exc:  # a bug: still one line, never a traceback (the traceback at DEBUG)
        logging.getLogger("dra_bridge.migrate").debug("internal error", exc_info=True)
        stderr.write(
            f"dra-migrate: error: internal error: {type(exc).__name__}: {escape(str(exc))} (a bug: "
            "--log-level DEBUG shows the traceback; please report it)\n"
        )
        return EXIT_ERROR
    finally:  # main runs in process (tests): leave no handler on a stream the caller may close
        logging.getLogger().removeHandler(handler)


def _command(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    if args.command == "convert":
        return convert(args, stdin, stdout, stderr)
    if args.command == "classes":
        return classes(args, stdout)
    if args.command == "report":
        return run_report(args, stdin, stdout, stderr)
    if args.command == "simulate":
        return run_simulate(args.filename, args.node, args.feature_gates, args.output, stdin, stdout, stderr)
    return slices(args, stdout, stderr)


if __name__ == "__main__":
    sys.exit(main())
