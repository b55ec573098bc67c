"""Startup settings of ``dra-webhook serve`` (docs/design.md D14).

Built only by :meth:`Settings.from_args` (flags; each falls back to its env twin, then to
the default) and :meth:`Settings.from_env`; nothing else reads the environment. The flags,
their help and their twins are the table :data:`webhook.serve_flags.FLAGS` (the kube.flags
convention).

    flag                 env twin                        default
    --host               DRA_WEBHOOK_HOST                0.0.0.0
    --port               DRA_WEBHOOK_PORT                8443
    --tls-cert-file      DRA_WEBHOOK_TLS_CERT_FILE       (required)
    --tls-key-file       DRA_WEBHOOK_TLS_KEY_FILE        (required)
    --ca-bundle          DRA_WEBHOOK_CA_BUNDLE           (not checked) the registration's caBundle
    --service-name       DRA_WEBHOOK_SERVICE_NAME        (not checked) the host the API server calls
    --policy             DRA_WEBHOOK_POLICY              (built-in defaults)
    --catalog            DRA_WEBHOOK_CATALOG             (the shipped catalog only)
    --kubeconfig         DRA_WEBHOOK_KUBECONFIG          (in-cluster config)
    --api-version        DRA_WEBHOOK_API_VERSION         (newest resource.k8s.io version served, by discovery)
    --reload-interval    DRA_WEBHOOK_RELOAD_INTERVAL     2 (seconds between file hash checks)
    --template-deadline  DRA_WEBHOOK_TEMPLATE_DEADLINE   2 (seconds for ensuring templates)
    --namespace          DRA_WEBHOOK_NAMESPACE           the service account's namespace, else dra-bridge
                                                         (the webhook's own: never converted; the Lease)
    --identity           DRA_WEBHOOK_IDENTITY            the host name (the Lease holder; the pod name in a cluster)
    --template-grace     DRA_WEBHOOK_TEMPLATE_GRACE      600 (seconds a managed template may stay unused)
    --reconcile-interval DRA_WEBHOOK_RECONCILE_INTERVAL  30 (seconds between reconciler passes)
    --log-level          DRA_WEBHOOK_LOG_LEVEL           INFO (DEBUG, INFO, WARNING or ERROR, any case; kube.logs)
    --drain-period       DRA_WEBHOOK_DRAIN_PERIOD        0 (seconds serving after SIGTERM, closing connections)
    --namespace-label    DRA_WEBHOOK_NAMESPACE_LABEL     dra-bridge.io/webhook (the chart's webhook.namespaceLabel)
    --opt-out-label      DRA_WEBHOOK_OPT_OUT_LABEL       dra-bridge.io/webhook-opt-out (webhook.optOutLabel)
    --paths              DRA_WEBHOOK_PATHS               audit,enforce (the registration's entries: webhook.*.enabled)
    --audit-all-namespaces DRA_WEBHOOK_AUDIT_ALL_NAMESPACES false (webhook.audit.allNamespaces)
    --namespace-selector DRA_WEBHOOK_NAMESPACE_SELECTOR  {} (JSON LabelSelector: webhook.namespaceSelector)
    --object-selector    DRA_WEBHOOK_OBJECT_SELECTOR     {} (JSON LabelSelector: webhook.objectSelector)
    --client-ca-file     DRA_WEBHOOK_CLIENT_CA_FILE      (any caller) callers must present a certificate it signed

The six before it are the settings the chart renders into each entry's selectors: the
webhook acts only for a namespace (and a pod) they enrol on the path served (``Settings.enrolment``,
``translate/enrolment.py``, docs/design.md D28), so the chart passes them from the same values.

Then ``--metrics-port`` (``DRA_WEBHOOK_METRICS_PORT``; unset: ``/metrics`` on the HTTPS port), a
plain-HTTP port serving ``/metrics`` alone, and the connection limits of webhook.connection_limits
(``--handshake-timeout`` ... ``--max-connections``).
"""

from __future__ import annotations

import argparse
import os
import re
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dra_bridge.kube.flags import WEBHOOK_PREFIX, Parser, add_version, seconds
from dra_bridge.kube.logs import level_number
from dra_bridge.translate.dns_names import is_dns_label
from dra_bridge.translate.enrolment import EnrolmentSettings
from dra_bridge.translate.label_selector import LabelSelector
from dra_bridge.translate.names import WEBHOOK_MODE_LABEL, WEBHOOK_OPT_OUT_LABEL, normalize_api_version
from dra_bridge.translate.policy import SYSTEM_NAMESPACES
from dra_bridge.webhook.connection_limits import ConnectionLimits, limits_from
from dra_bridge.webhook.errors import WebhookConfigError
from dra_bridge.webhook.serve_flags import FLAGS

ENV_PREFIX = WEBHOOK_PREFIX
#: The pod's namespace, as Kubernetes mounts it with the service account token.
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def _own_namespace() -> str:
    """The service account's namespace (in a cluster), else ``dra-bridge``."""
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text("utf-8").strip() or "dra-bridge"
    except OSError:
        return "dra-bridge"


@dataclass(frozen=True)
class Settings:
    """Validated startup settings (see the module docstring for flags and env twins)."""

    tls_cert_file: Path
    """PEM certificate chain served to the API server; reloaded when its bytes change."""
    tls_key_file: Path
    """PEM private key of ``tls_cert_file``; reloaded with it."""
    ca_bundle: Path | None = None
    """The registration's caBundle (PEM): the certificate in force must chain to it, or the webhook
    is not ready; None: not checked."""
    service_name: str | None = None
    """The host the API server calls (``<service>.<namespace>.svc``, or a URL's host): the
    certificate must cover it, or the webhook is not ready; None: not checked."""
    host: str = "0.0.0.0"
    """Address to listen on."""
    port: int = 8443
    """TCP port of the HTTPS server."""
    policy_file: Path | None = None
    """Policy YAML (translate.policy); None: built-in defaults."""
    catalog_file: Path | None = None
    """User catalog YAML extending the shipped one; None: the shipped catalog."""
    kubeconfig: Path | None = None
    """kubeconfig file; None: in-cluster service-account config."""
    api_version: str | None = None
    """``resource.k8s.io/<version>`` to write; None: discover the newest one served."""
    reload_interval: float = 2.0
    """Seconds between checks of the TLS, policy and catalog files."""
    template_deadline: float = 2.0
    """Seconds allowed for ensuring a pod's templates (under the webhook timeoutSeconds)."""
    namespace: str = "dra-bridge"
    """The webhook's own namespace: its pods are never converted, the reconciler's Lease lives there."""
    identity: str = ""
    """Lease holder identity of this replica; empty: the host name."""
    template_grace: float = 600.0
    """Seconds a managed ResourceClaimTemplate may stay unreferenced before it is deleted."""
    reconcile_interval: float = 30.0
    """Seconds between template reconciler passes."""
    log_level: str = "INFO"
    """The lowest level logged (kube.logs.LEVELS, in any case)."""
    drain_period: float = 0.0
    """Seconds to keep serving after SIGTERM, every answer closing its connection (webhook.drain)."""
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)
    """Timeouts and caps of every listening port (webhook.connection_limits)."""
    metrics_port: int | None = None
    """A plain-HTTP port serving only ``/metrics``; None: ``/metrics`` is on the HTTPS port."""
    namespace_label: str = WEBHOOK_MODE_LABEL
    """The namespace label whose value (``enforce``, ``audit``) enrols a namespace (the chart's
    ``webhook.namespaceLabel``)."""
    opt_out_label: str = WEBHOOK_OPT_OUT_LABEL
    """A namespace with this label is never enrolled (``webhook.optOutLabel``)."""
    paths: frozenset[str] = frozenset({"audit", "enforce"})
    """The registration's entries (``webhook.audit.enabled``, ``webhook.enforce.enabled``)."""
    audit_all_namespaces: bool = False
    """``/mutate/audit`` enrols every namespace but the excluded (``webhook.audit.allNamespaces``)."""
    namespace_selector: LabelSelector = field(default_factory=LabelSelector)
    """Extra terms on the namespace's labels (``webhook.namespaceSelector``)."""
    object_selector: LabelSelector = field(default_factory=LabelSelector)
    """The pods enrolled, by their labels (``webhook.objectSelector``)."""
    client_ca_file: Path | None = None
    """PEM CAs: a caller of the admission paths must present a client certificate one of them
    signed (another CA's fails the TLS handshake, none is answered 403); None: any caller."""

    @property
    def enrolment(self) -> EnrolmentSettings:
        """The enrolment rule's settings, as the chart renders them into its namespaceSelectors
        (the release namespace is :attr:`namespace`)."""
        return EnrolmentSettings(
            mode_label=self.namespace_label,
            opt_out_label=self.opt_out_label,
            audit="audit" in self.paths,
            enforce="enforce" in self.paths,
            audit_all_namespaces=self.audit_all_namespaces,
            release_namespace=self.namespace,
            namespace_selector=self.namespace_selector,
            object_selector=self.object_selector,
        )

    @property
    def exempt_namespaces(self) -> frozenset[str]:
        """Namespaces never converted, whatever the policy: kube-system and :attr:`namespace`."""
        return SYSTEM_NAMESPACES | {self.namespace}

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Settings from environment variables only."""
        return cls.from_args([], env)

    @classmethod
    def from_args(cls, argv: Sequence[str], env: Mapping[str, str] | None = None) -> Settings:
        """Settings from flags, falling back to env twins (``env`` defaults to os.environ)."""
        given = FLAGS.values(build_parser().parse_args(list(argv)), os.environ if env is None else env)

        def pick(name: str) -> str | None:
            value = given.get(name)
            return None if value is None else str(value)

        cert, key = pick("tls_cert_file"), pick("tls_key_file")
        if not cert or not key:
            raise WebhookConfigError(
                "a serving certificate is required: pass --tls-cert-file and --tls-key-file "
                "(or DRA_WEBHOOK_TLS_CERT_FILE / DRA_WEBHOOK_TLS_KEY_FILE); for development, "
                "generate a pair with `dra-webhook certs --namespace NS --service NAME --out DIR`"
            )
        api_version = pick("api_version")
        raw_port = pick("port") or "8443"
        if not raw_port.isdigit():
            link = (
                (
                    " (the kubelet sets <SERVICE>_PORT=tcp://IP:PORT for every Service in the pod's namespace: "
                    "a Service named dra-webhook sets this twin; give the pod enableServiceLinks: false or "
                    "rename the Service)"
                )
                if raw_port.startswith("tcp://")
                else ""
            )
            raise WebhookConfigError(f"{FLAGS.twin('port')} {raw_port!r}: not a port number{link}")
        try:
            port = int(raw_port)
            reload_interval = seconds(pick("reload_interval") or 2.0, FLAGS.twin("reload_interval"))
            deadline = seconds(pick("template_deadline") or 2.0, FLAGS.twin("template_deadline"))
            grace = seconds(pick("template_grace") or 600.0, FLAGS.twin("template_grace"), zero=True)
            reconcile = seconds(pick("reconcile_interval") or 30.0, FLAGS.twin("reconcile_interval"))
            drain = seconds(pick("drain_period") or 0.0, FLAGS.twin("drain_period"), zero=True)
            api_version = normalize_api_version(api_version) if api_version else None
        except ValueError as exc:
            raise WebhookConfigError(str(exc)) from exc
        if not 0 < port < 65536:
            raise WebhookConfigError(f"--port {port}: must be 1..65535")
        metrics_port = _metrics_port(pick("metrics_port"), port)
        connections = limits_from(given)

        log_level = pick("log_level") or "INFO"
        try:
            level_number(log_level)
        except ValueError as exc:
            raise WebhookConfigError(f"{FLAGS.twin('log_level')} {exc}") from None

        def path(name: str) -> Path | None:
            value = pick(name)
            return Path(value) if value else None

        enrolment = _enrolment_values(pick)
        namespace = pick("namespace") or _own_namespace()
        if not is_dns_label(namespace):
            raise WebhookConfigError(
                f"{FLAGS.twin('namespace')} {namespace[:80]!r}: not a namespace name (a DNS label: a-z, 0-9 and '-', "
                "at most 63)"
            )

        return cls(
            tls_cert_file=Path(cert),
            tls_key_file=Path(key),
            ca_bundle=path("ca_bundle"),
            service_name=pick("service_name") or None,
            host=pick("host") or "0.0.0.0",
            port=port,
            policy_file=path("policy"),
            catalog_file=path("catalog"),
            kubeconfig=path("kubeconfig"),
            api_version=api_version,
            reload_interval=reload_interval,
            template_deadline=deadline,
            namespace=namespace,
            identity=pick("identity") or socket.gethostname(),
            template_grace=grace,
            reconcile_interval=reconcile,
            log_level=log_level,
            drain_period=drain,
            client_ca_file=path("client_ca_file"),
            connections=connections,
            metrics_port=metrics_port,
            **enrolment,
        )


_LABEL_KEY = re.compile(r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


def _enrolment_values(pick: Callable[[str], str | None]) -> dict[str, Any]:
    """The enrolment settings, checked (label keys, a list of paths, a boolean, selectors)."""
    out: dict[str, Any] = {}
    for name, default in (("namespace_label", WEBHOOK_MODE_LABEL), ("opt_out_label", WEBHOOK_OPT_OUT_LABEL)):
        value = pick(name) or default
        if not _LABEL_KEY.fullmatch(value) or len(value) > 317:
            raise WebhookConfigError(f"{FLAGS.twin(name)} {value!r}: not a label key ([prefix/]name)")
        out[name] = value
    raw_paths = pick("paths") or "audit,enforce"
    paths = frozenset(p.strip() for p in raw_paths.split(",") if p.strip() and raw_paths != "none")
    if not paths <= {"audit", "enforce"}:
        raise WebhookConfigError(f"{FLAGS.twin('paths')} {pick('paths')!r}: a comma list of audit and enforce")
    out["paths"] = paths
    raw = (pick("audit_all_namespaces") or "false").lower()
    if raw not in ("true", "false"):
        raise WebhookConfigError(f"{FLAGS.twin('audit_all_namespaces')} {raw!r}: true or false")
    out["audit_all_namespaces"] = raw == "true"
    for name in ("namespace_selector", "object_selector"):
        try:
            out[name] = LabelSelector.from_json(pick(name) or "")
        except ValueError as exc:
            raise WebhookConfigError(f"{FLAGS.twin(name)}: {exc}") from None
    return out


def _metrics_port(raw: str | None, port: int) -> int | None:
    if raw is None or raw == "":
        return None
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise WebhookConfigError(f"{FLAGS.twin('metrics_port')} {raw!r}: not a port number (1..65535)")
    if int(raw) == port:
        raise WebhookConfigError(
            f"{FLAGS.twin('metrics_port')} {raw}: the HTTPS port (--port); leave it unset for that"
        )
    return int(raw)


def build_parser() -> argparse.ArgumentParser:
    """The ``serve`` flags; every default is None so env twins can fill them in."""
    p = Parser(
        prog="dra-webhook [serve]",
        description="Serve the dra-bridge mutating webhook (`dra-webhook certs --help`: development certificates).",
    )
    return FLAGS.add_to(add_version(p, "dra-webhook"))
