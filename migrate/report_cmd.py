"""``dra-migrate report``: what every GPU workload would become under DRA, and which path it can take.

    add_parser(subparsers)                       the command's flags
    run_report(args, stdin, stdout, stderr) -> exit code

Inputs: ``-f FILE|DIR|-`` (as ``convert`` reads them: Lists flattened, Helm output; a
``dra-bridge inventory --json`` dump is the devices of the node its file is named after), or,
without ``-f``, the cluster (live mode, :mod:`migrate.live`; ``--kubeconfig``/``--context``,
else ``$KUBECONFIG``, else the in-cluster service account); ``--inventory NODE=FILE`` adds a
node's dump. The capacity check (:mod:`translate.report.capacity`) runs unless
``--no-capacity``. Each row names its source (``FILE#N``: the N-th object of the file, from 1;
``cluster``); a live report lists the GPU workloads and counts the others
(:mod:`translate.report.listing`; ``--all-workloads`` lists every one). The report goes to stdout
(``-o table|wide|markdown|json|html``), logs and the live progress bar to stderr. Exit codes
as ``convert``'s: 0, 1 an error (nothing on stdout), 3 with ``--fail-on LEVEL`` when a
workload reaches LEVEL (``legacy-request``: any legacy device request left, ranks below every
finding level).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
from dataclasses import dataclass
from typing import Any, TextIO

from dra_bridge.kube.api import ApiServer
from dra_bridge.kube.client import connect
from dra_bridge.kube.discovery import newest_served
from dra_bridge.kube.errors import KubeError
from dra_bridge.kube.logs import escape
from dra_bridge.migrate.enrolment_flags import add_enrolment_flags, enrolment_settings
from dra_bridge.migrate.errors import EXIT_FINDINGS, EXIT_OK, InputFileError, UsageError
from dra_bridge.migrate.input_files import read_text
from dra_bridge.migrate.inventory_dumps import (
    grouped,
    inventory_flag,
    inventory_node,
    is_inventory_dump,
    read_dump,
)
from dra_bridge.migrate.live import SOURCE as LIVE_SOURCE
from dra_bridge.migrate.live import read_cluster, read_served
from dra_bridge.migrate.manifests import read_catalog, read_sources, why_empty
from dra_bridge.migrate.option_flags import add_option_flags, option_values
from dra_bridge.migrate.remedies import remedy_text
from dra_bridge.migrate.report_html import render_html
from dra_bridge.migrate.report_text import render_text
from dra_bridge.translate.errors import ApiVersionError
from dra_bridge.translate.names import API_VERSIONS, MINOR_FOR_VERSION, normalize_api_version
from dra_bridge.translate.plan.options import Options
from dra_bridge.translate.policy import Policy, load_policy_file
from dra_bridge.translate.report import DEFAULT_POOL_LABEL, FAIL_LEVELS, Settings, build_report
from dra_bridge.translate.report.capacity import report_capacity
from dra_bridge.translate.report.served import Served, cluster_features

FORMATS = ("table", "wide", "markdown", "json", "html")
#: The oldest release a report judges: resource.k8s.io/v1beta1's first (translate/names.py).
OLDEST_MINOR = min(MINOR_FOR_VERSION.values())
_VERSION = re.compile(r"v?(1)\.(\d+)(?:\.\d+)?(?:[-+].*)?")
#: A --device-domain value: a DNS domain, or one with a resource-name prefix after a slash.


def add_parser(sub: Any) -> None:
    """Register ``report`` on the ``dra-migrate`` subparsers."""
    rep = sub.add_parser(
        "report", help="what every GPU workload would become under DRA, and its path (files, or the cluster without -f)"
    )
    rep.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        metavar="FILE|DIR|-",
        help="manifests, Helm output or kubectl List dumps of pods, workloads, custom resources, nodes, "
        "ResourceSlices, DeviceClasses, ResourceQuotas, Namespaces; repeatable (default: read the cluster)",
    )
    rep.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="live mode: the kubeconfig (default $KUBECONFIG, else the in-cluster service account)",
    )
    rep.add_argument("--context", metavar="NAME", help="live mode: a context of the kubeconfig")
    rep.add_argument(
        "--kubernetes-version",
        metavar="1.N",
        help="the release the paths are judged for (live: the server's; default: the --api-version's "
        "first release, 1.34 for v1)",
    )
    add_option_flags(rep, "report")
    add_enrolment_flags(rep)
    rep.add_argument("--catalog", metavar="FILE", help="a user catalog that adds resources to the shipped one")
    rep.add_argument("-o", "--output", choices=FORMATS, default="table", help="default table")
    rep.add_argument(
        "--pool-label",
        default=DEFAULT_POOL_LABEL,
        metavar="KEY",
        help=f"the node label whose value names a node pool (default {DEFAULT_POOL_LABEL})",
    )
    rep.add_argument(
        "--policy",
        metavar="FILE",
        help="the webhook's policy (its file, or the ConfigMap holding it): judge each workload with "
        "the settings the webhook would apply to its pods",
    )
    rep.add_argument(
        "--inventory",
        action="append",
        default=[],
        metavar="NODE=FILE",
        help="a node's dra-bridge inventory --json dump (its devices for the capacity check); "
        "repeatable. A dump given with -f is the node its file is named after (NODE.json)",
    )
    rep.add_argument(
        "--no-capacity",
        action="store_true",
        help="skip the capacity check (which converted pods fit the cluster's devices)",
    )
    rep.add_argument(
        "--all-workloads",
        action="store_true",
        help="live mode: list every workload, not only the GPU workloads (the others are counted)",
    )
    rep.add_argument(
        "--fail-on",
        choices=FAIL_LEVELS,
        help="exit 3 when a workload reaches this level (legacy-request: any legacy request left)",
    )


def _minor(text: str, given: bool = True) -> int:
    """The minor of ``--kubernetes-version`` (refused below 1.32) or, ``given`` False, of the
    server's ``/version`` (an older server is judged as it is: it serves no DRA, every path blocked)."""
    m = _VERSION.fullmatch(text.strip())
    if not m:
        raise UsageError(f"--kubernetes-version {text!r}: a release like 1.36 or v1.36.3")
    if given and int(m.group(2)) < OLDEST_MINOR:
        raise UsageError(
            f"--kubernetes-version {text}: below 1.{OLDEST_MINOR}, the first release with a resource.k8s.io "
            "version dra-bridge renders (v1beta1): such a cluster has no DRA to migrate to"
        )
    return int(m.group(2))


def read_policy(path: str | None) -> Policy | None:
    """The webhook policy in ``path`` (a policy file or a ConfigMap manifest holding one);
    None without a path. InputFileError when unreadable; PolicyError names the key."""
    if path is None:
        return None
    return load_policy_file(read_text(path), path)


def _read_files(sources: list[str], stdin: TextIO, dumps: dict[str, tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Objects of ``sources``; inventory dumps go to ``dumps`` (node -> (file, dump))."""
    objects: list[tuple[str, Any]] = []
    for source in sources:
        docs = list(read_sources([source], stdin))
        if not docs:
            raise InputFileError(f"{source}: no Kubernetes objects ({why_empty(source)})")
        for doc in docs:
            if is_inventory_dump(doc.obj):
                if doc.source == "-":
                    raise InputFileError(
                        "-: an inventory dump on stdin names no node: give it as --inventory NODE=FILE"
                    )
                node = inventory_node(doc.source)
                if node in dumps:
                    raise InputFileError(
                        f"{doc.source}: a second inventory dump for node {node} (the first: {dumps[node][0]})"
                    )
                dumps[node] = (doc.source, doc.obj)
                continue
            if not isinstance(doc.obj, dict) or not isinstance(doc.obj.get("kind"), str):
                raise InputFileError(
                    f"{doc.source}: document {doc.index + 1} is not a Kubernetes object "
                    "(a mapping with a kind) nor a dra-bridge inventory --json dump"
                )
            objects.append((f"{doc.source}#{doc.index + 1}", doc.obj))  # FILE#N: the row's source
    return objects


@dataclass
class LiveRead:
    """What live mode read: the objects, the server's version, the ``resource.k8s.io`` versions it
    serves, its ``/metrics`` text (None when refused) and why not."""

    objects: list[tuple[str, Any]]
    version: str
    served: tuple[str, ...]
    metrics: str | None
    why: str


def _read_live(args: argparse.Namespace, err: TextIO) -> LiveRead:
    bar = err.isatty()

    def progress(kind: str, count: int) -> None:
        if bar:
            err.write(f"\r\x1b[Kreading {kind}: {count}")
            err.flush()

    # The read is handed out through ``held``, not as the coroutine's result: returned through
    # asyncio.run, the objects of a 5,000-node cluster cost a transient ~70 MB more peak RSS (and
    # ~30 MB more afterwards), measured on the scale test cluster (docs/design.md D51).
    held: list[LiveRead] = []

    async def read() -> None:
        client = await connect(args.kubeconfig or os.environ.get("KUBECONFIG") or None, args.context)
        try:
            api = ApiServer(client)
            objects, version = await read_cluster(api, progress)
            held.append(LiveRead(objects, version, *await read_served(api)))
        finally:
            await client.close()

    try:
        asyncio.run(read())
        got = held[0]
    except KubeError as exc:
        raise InputFileError(f"live mode: {exc}") from exc
    finally:
        if bar:
            err.write("\r\x1b[K")
    err.write(f"dra-migrate: read {len(got.objects)} objects from the cluster (Kubernetes {escape(got.version)})\n")
    return got


def _api_version(given: str | None, live: LiveRead | None) -> str:
    """The templates' version: ``--api-version``, else (live) the newest the cluster serves, else v1;
    a given version the cluster does not serve is refused."""
    if live is None or not any(v in API_VERSIONS for v in live.served):
        return given or "v1"
    newest = newest_served(live.served)
    if given is None:
        return newest
    try:
        full = normalize_api_version(given)
    except ApiVersionError as exc:
        raise UsageError(f"--api-version {given!r}: {exc}") from exc
    if full not in live.served:
        raise UsageError(
            f"--api-version {given}: the cluster does not serve {full} (it serves {', '.join(live.served)}): "
            "its templates would be refused"
        )
    return full


def _served(live: LiveRead | None, minor: int) -> Served:
    """What the paths are judged against: live, the served versions and the gates from /metrics
    (else the release's defaults, saying why); from files, the release's defaults."""
    if live is None:
        return Served(cluster_features(minor, None, f"files: the documented defaults of Kubernetes 1.{minor}"))
    return Served(cluster_features(minor, live.metrics, live.why), live.served)


def run_report(args: argparse.Namespace, stdin: TextIO, out: TextIO, err: TextIO) -> int:
    """Run ``report`` (see the module docstring)."""
    chosen = option_values(args, "report")
    catalog = read_catalog(args.catalog, chosen.get("target"))
    policy = read_policy(args.policy)  # before a live read: a wrong path fails at once
    enrolment = enrolment_settings(args)
    explicit_minor = _minor(args.kubernetes_version) if args.kubernetes_version else None
    live = not args.filename
    if (
        live
        and (args.kubernetes_version is None)
        and not (args.kubeconfig or os.environ.get("KUBECONFIG") or os.environ.get("KUBERNETES_SERVICE_HOST"))
    ):
        raise UsageError("report: give -f FILE|DIR|- or a cluster (--kubeconfig, $KUBECONFIG)")
    dumps: dict[str, tuple[str, Any]] = {}
    read = _read_live(args, err) if live else None
    objects = read.objects if read is not None else _read_files(args.filename, stdin, dumps)
    server = read.version if read is not None else ""
    for given in args.inventory:
        node, path = inventory_flag(given)
        dumps[node] = (path, read_dump(path))
    minor = explicit_minor if args.kubernetes_version else (_minor(server, given=False) if server else None)
    try:
        options = Options(**(chosen | {"kubernetes_minor": minor, "api_version": _api_version(args.api_version, read)}))
        shown = f"1.{options.minor}"
    except (KeyError, ValueError) as exc:
        raise UsageError(f"--api-version {args.api_version!r}: {exc}") from exc
    settings = Settings(
        options=options,
        pool_label=args.pool_label,
        kubernetes_version=shown,
        sources=tuple(args.filename) or (LIVE_SOURCE,),
        live=live,
        list_all=not live or args.all_workloads,
        user_catalog=args.catalog,
        policy=policy,
        remedy_text=remedy_text,
        served=_served(read, options.minor),
        enrolment=enrolment,
    )
    gc.freeze()  # the input lives to the end: full collections need not walk it (speed, issue 12)
    report = build_report(objects, catalog, settings)
    report.inventories = {node: path for node, (path, _) in sorted(dumps.items())}
    if not args.no_capacity:
        report_capacity(report, catalog, grouped(dumps), settings.cluster.features.allocator(), objects=objects)
    elif dumps:
        err.write("dra-migrate: --no-capacity: the inventory dumps are not used\n")
    if args.output == "json":
        out.write(json.dumps(report.as_json(), indent=2) + "\n")
    elif args.output == "html":
        out.write(render_html(report))
    else:
        out.write(render_text(report, args.output))
    if args.fail_on and report.fails(args.fail_on):
        err.write(f"dra-migrate: a workload reaches --fail-on {args.fail_on}\n")
        return EXIT_FINDINGS
    return EXIT_OK
