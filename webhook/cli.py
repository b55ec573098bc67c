"""The ``dra-webhook`` console script.

    dra-webhook [serve] [flags]                       serve the webhook (default; see webhook.settings)
    dra-webhook --version                             the installed version
    dra-webhook certs --namespace NS --service NAME --out DIR [--ip 127.0.0.1 ...] [--days N] [--force]

Exit codes: 0 clean shutdown (certs: files written), 1 a configuration error (one line
naming the setting or flag, e.g. a ``certs --namespace`` that is not a DNS label, an
``--ip`` that is not an address, ``--days`` not a positive integer, a TLS pair that does not
load) or a usage error (an unknown or missing flag: kube.flags.EXIT_USAGE, the same in every
command); 141 when standard output was closed before everything was written (a pipe into
``head``; kube.streams), printing nothing. A policy or catalog file that does not load is not
an exit: ``serve`` logs one line, serves unready (``/readyz`` 503 naming the file and the key)
and re-reads the file until it loads (webhook.runtime).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import functools
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from aiohttp import web

from dra_bridge.kube.api import ApiServer
from dra_bridge.kube.client import Client, connect
from dra_bridge.kube.discovery import discover_resource_version
from dra_bridge.kube.errors import KubeError
from dra_bridge.kube.flags import Parser
from dra_bridge.kube.logs import LEVELS, escape
from dra_bridge.kube.logs import configure as configure_logs
from dra_bridge.kube.observed import ApiHealth, ObservedApi
from dra_bridge.kube.streams import guarded, standard_streams
from dra_bridge.webhook.certs import write_certs
from dra_bridge.webhook.cluster import ClusterView
from dra_bridge.webhook.connection_limits import handler_args
from dra_bridge.webhook.connections import ConnectionCollector, ConnectionTracker, TrackedSite, install
from dra_bridge.webhook.drain import Drain
from dra_bridge.webhook.errors import WebhookConfigError
from dra_bridge.webhook.events import KubeAuditSink
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.malformed_http import RequestLog
from dra_bridge.webhook.metrics import Metrics
from dra_bridge.webhook.reconciler import Reconciler
from dra_bridge.webhook.runtime import Runtime, watch_catalog, watch_policy
from dra_bridge.webhook.server import Background, make_app, make_metrics_app, reload_loop
from dra_bridge.webhook.settings import Settings
from dra_bridge.webhook.templates import KubeTemplateEnsurer
from dra_bridge.webhook.tls import TlsReloader

logger = logging.getLogger("dra_bridge.webhook")


async def _connect(settings: Settings) -> Client:
    try:
        return await connect(settings.kubeconfig)
    except KubeError as exc:
        raise WebhookConfigError(f"{exc} (pass --kubeconfig FILE outside a cluster)") from exc


async def _api_version(settings: Settings, api: ApiServer) -> str:
    if settings.api_version:
        return settings.api_version
    try:
        return await discover_resource_version(api)
    except KubeError as exc:
        raise WebhookConfigError(
            f"API discovery failed: {type(exc).__name__}: {exc}; pass --api-version to force one"
        ) from exc


async def _listen(
    runner: web.AppRunner, settings: Settings, port: int, tls: TlsReloader | None, tracker: ConnectionTracker
) -> None:
    """Start a site whose connections ``tracker`` bounds (TLS with ``tls``); WebhookConfigError
    (one line) when the address cannot be bound."""
    try:
        await TrackedSite(runner, settings.host, port, tracker, tls.context if tls else None).start()
    except OSError as exc:
        why = "already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        flag = "--port" if tls else "--metrics-port"
        twin = flag[2:].replace("-", "_").upper()
        raise WebhookConfigError(
            f"--host/{flag} {settings.host}:{port}: cannot listen: {why} (DRA_WEBHOOK_HOST / DRA_WEBHOOK_{twin})"
        ) from exc


async def serve(settings: Settings, ready: asyncio.Event | None = None) -> None:
    """Serve until SIGTERM/SIGINT (or cancellation); raises WebhookConfigError on bad startup settings."""
    tls = TlsReloader(
        settings.tls_cert_file,
        settings.tls_key_file,
        settings.ca_bundle,
        settings.service_name,
        client_ca=settings.client_ca_file,
    )
    # A bad policy or catalog does not stop the start: the webhook serves unready and re-reads it.
    policy = watch_policy(settings.policy_file, strict=False) if settings.policy_file else None
    catalog = watch_catalog(settings.catalog_file, strict=False) if settings.catalog_file else None
    client = await _connect(settings)
    try:
        api_version = await _api_version(settings, ApiServer(client))
        health = ApiHealth()
        api = ObservedApi(ApiServer(client), health)  # what the API server answers shows in /readyz
        metrics = Metrics()
        view = ClusterView(needs_slices=lambda: runtime.needs_slices())
        runtime = Runtime(
            api_version,
            metrics,
            policy,
            catalog,
            tls,
            kep5004=view.kep5004,
            node_mode=view.node_mode,
            quota_keys=view.quota_keys,
            exempt_namespaces=settings.exempt_namespaces,
            enrolment=settings.enrolment,
            namespace_labels=view.namespace_labels,
        )
        runtime.watch_cluster(view, health)
        runtime.check_files()
        ensurer = KubeTemplateEnsurer(api, api_version, deadline=settings.template_deadline)

        def counted(ok: bool) -> None:
            (metrics.audit_events.inc() if ok else metrics.errors.labels("event").inc())

        admitter = Admitter(runtime.context, ensurer, metrics, KubeAuditSink(api, counted))
        background: list[Background] = [
            functools.partial(reload_loop, runtime, settings.reload_interval),
            ensurer.watch_deletions,
            functools.partial(view.run, api, api_version),
            functools.partial(
                Reconciler(
                    api,
                    api_version,
                    lambda: runtime.context().catalog,
                    settings.identity,
                    settings.namespace,
                    grace=settings.template_grace,
                ).run,
                interval=settings.reconcile_interval,
            ),
        ]
        app = make_app(
            runtime,
            admitter,
            background,
            body_timeout=settings.connections.body_timeout,
            metrics=settings.metrics_port is None,
        )
        drain = Drain()
        drain.install(app)
        runners = [_runner(app, settings)]
        trackers = {"https": ConnectionTracker(settings.connections)}
        if settings.metrics_port is not None:
            runners.append(_runner(make_metrics_app(runtime), settings))
            trackers["metrics"] = ConnectionTracker(settings.connections)
        metrics.registry.register(ConnectionCollector(trackers))
        for runner in runners:
            await runner.setup()
        try:  # the background tasks stop (runner.cleanup) before the client closes
            await _listen(runners[0], settings, settings.port, tls, trackers["https"])
            if settings.metrics_port is not None:
                await _listen(runners[1], settings, settings.metrics_port, None, trackers["metrics"])
                logger.info("serving /metrics on http://%s:%d", settings.host, settings.metrics_port)
            logger.info("serving https://%s:%d (resource.k8s.io version %s)", settings.host, settings.port, api_version)
            stop = asyncio.Event()
            terminated = asyncio.Event()
            loop = asyncio.get_running_loop()

            def on_sigterm() -> None:
                terminated.set()
                stop.set()

            for sig, handler in ((signal.SIGTERM, on_sigterm), (signal.SIGINT, stop.set)):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.add_signal_handler(sig, handler)
            if ready is not None:
                ready.set()
            await stop.wait()
            if terminated.is_set() and settings.drain_period > 0:  # SIGTERM: a pod stopping
                await drain.run(runners[0], settings.drain_period)
        finally:
            for runner in reversed(runners):
                await runner.cleanup()
    finally:
        await client.close()


def _runner(app: web.Application, settings: Settings) -> web.AppRunner:
    """A runner whose request handlers keep the limits' sizes and idle timeout; its middleware
    tells the connection tracker where requests begin and end; a request that does not parse is
    one rate-limited INFO line, not aiohttp's traceback (webhook/malformed_http.py)."""
    install(app)
    args = handler_args(settings.connections)
    return web.AppRunner(app, access_log=None, handle_signals=False, logger=RequestLog(), **args)


def _certs_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("certs", help="generate a CA and a serving certificate")
    p.add_argument(
        "--namespace",
        required=True,
        help="namespace of the webhook Service, a DNS label (RFC 1123); part of the DNS SANs",
    )
    p.add_argument(
        "--service",
        required=True,
        help="name of the webhook Service, a DNS label (RFC 1123); the SANs are SVC, SVC.NS, "
        "SVC.NS.svc and SVC.NS.svc.cluster.local",
    )
    p.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="directory for ca.crt, ca.key, tls.crt and tls.key (created if missing; keys mode 0600)",
    )
    p.add_argument(
        "--ip",
        action="append",
        default=[],
        metavar="ADDRESS",
        help="an IPv4 or IPv6 address SAN, e.g. 127.0.0.1 for a webhook called by url (repeatable)",
    )
    p.add_argument(
        "--log-level",
        default="INFO",
        metavar="|".join(LEVELS),
        help="lowest level logged, in any case (default INFO), as serve's",
    )
    p.add_argument(
        "--days",
        default="365",
        metavar="N",
        help="days both certificates stay valid, a positive integer (default: 365)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing DIR/ca.key (refused otherwise: the caBundle and every pair it signed change)",
    )


def _certs(ns: argparse.Namespace, out: TextIO) -> int:
    try:
        try:
            configure_logs(ns.log_level)
        except ValueError as exc:
            raise WebhookConfigError(f"--log-level {exc}") from None
        try:
            days = int(ns.days)
        except ValueError:
            raise WebhookConfigError(
                f"--days {ns.days!r} must be a positive integer (days the certificates stay valid)"
            ) from None
        try:
            paths = write_certs(Path(ns.out), ns.namespace, ns.service, tuple(ns.ip), days, replace_ca=ns.force)
        except OSError as exc:
            raise WebhookConfigError(f"--out {ns.out}: cannot write the certificates: {exc.strerror or exc}") from exc
    except WebhookConfigError as exc:
        sys.stderr.write(f"dra-webhook certs: error: {escape(str(exc))}\n")
        return 1
    out.write(
        f"wrote {paths.ca_cert} (the caBundle) {paths.cert} {paths.key} (serving pair) "
        f"{paths.ca_key} (the CA key: keep it private)\n"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (a closed or broken stdout: kube.streams.EXIT_CLOSED_OUTPUT)."""
    args = list(sys.argv[1:] if argv is None else argv)
    out, _ = standard_streams(None, None)
    return guarded(lambda: _main(args, out), out)


def _main(args: list[str], out: TextIO) -> int:
    configure_logs("INFO")  # until the settings say otherwise: a configuration error is logged
    if args[:1] == ["certs"]:
        parser: argparse.ArgumentParser = Parser(prog="dra-webhook")
        _certs_parser(parser.add_subparsers(dest="command"))
        return _certs(parser.parse_args(args), out)
    if args[:1] == ["serve"]:
        args = args[1:]
    try:
        settings = Settings.from_args(args)
        configure_logs(settings.log_level)
        asyncio.run(serve(settings))
    except WebhookConfigError as exc:
        logger.error("%s", exc)
        return 1
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:
        raise  # a closed stdout: kube.streams.guarded
    except Exception as exc:  # a bug: still one line, never a traceback (the traceback at DEBUG)
        logger.debug("internal error", exc_info=True)
        logger.error("internal error: %s: %s (a bug: --log-level DEBUG shows the traceback)", type(exc).__name__, exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
