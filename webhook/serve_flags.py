"""The flags of ``dra-webhook serve``: each one's help, default shown and metavar, and its
``DRA_WEBHOOK_`` env twin (the kube.flags convention; the list with the defaults is
:mod:`webhook.settings`, which reads and checks them).

The connection limits' rows are webhook.connection_limits' (``CONNECTION_FLAGS``).
"""

from __future__ import annotations

from dra_bridge.kube.flags import WEBHOOK_PREFIX, Flag, FlagTable
from dra_bridge.translate.names import WEBHOOK_MODE_LABEL, WEBHOOK_OPT_OUT_LABEL
from dra_bridge.webhook.connection_limits import CONNECTION_FLAGS

__all__ = ["FLAGS"]

FLAGS = FlagTable(
    WEBHOOK_PREFIX,
    (
        Flag("host", "address to listen on", "0.0.0.0"),
        Flag("port", "HTTPS port", "8443"),
        Flag("tls_cert_file", "PEM certificate chain, reloaded when it changes (required)", metavar="FILE"),
        Flag("tls_key_file", "PEM private key of the certificate (required)", metavar="FILE"),
        Flag(
            "ca_bundle",
            "the registration's caBundle (PEM): the certificate must chain to it, or /readyz is 503",
            "not checked",
            "FILE",
        ),
        Flag(
            "service_name",
            "the host the API server calls (SVC.NS.svc): the certificate must cover it, or /readyz "
            "is 503; leave unset for a url registration on loopback",
            "not checked",
            "NAME",
        ),
        Flag(
            "client_ca_file",
            "PEM CAs: callers of /mutate/* must present a client certificate one of them signed (the API "
            "server's AdmissionConfiguration kubeConfigFile): another CA's fails the TLS handshake, none "
            "is answered 403 (the probes answer); reloaded with the pair",
            "any caller",
            "FILE",
        ),
        Flag("policy", "policy YAML, hot-reloaded", "built-in defaults", "FILE"),
        Flag("catalog", "user catalog YAML extending the shipped one", "the shipped catalog only", "FILE"),
        Flag("kubeconfig", "kubeconfig file", "in-cluster service account", "FILE"),
        Flag("api_version", "resource.k8s.io version to write: v1, v1beta2 or v1beta1", "discovered"),
        Flag("reload_interval", "seconds between checks of the TLS, policy and catalog files", "2", "SECONDS"),
        Flag("template_deadline", "seconds allowed for ensuring a pod's templates", "2", "SECONDS"),
        Flag(
            "namespace",
            "the webhook's own namespace: its pods are never converted; the reconciler's Lease lives there",
            "the service account's namespace, else dra-bridge",
        ),
        Flag("identity", "Lease holder identity of this replica", "the host name"),
        Flag("template_grace", "seconds a managed template may stay unreferenced before deletion", "600", "SECONDS"),
        Flag("reconcile_interval", "seconds between template reconciler passes", "30", "SECONDS"),
        Flag(
            "log_level",
            "lowest level logged: DEBUG, INFO, WARNING or ERROR, in any case; logs go to stderr",
            "INFO",
            "LEVEL",
        ),
        Flag(
            "drain_period",
            "seconds to keep serving after SIGTERM, each answer closing its connection and idle "
            "connections closed, so the API server's pooled connections move to other replicas",
            "0",
            "SECONDS",
        ),
        Flag(
            "namespace_label",
            "the namespace label whose value (enforce, audit) enrols a namespace, as the registration's "
            "namespaceSelectors (chart: webhook.namespaceLabel)",
            WEBHOOK_MODE_LABEL,
            "KEY",
        ),
        Flag(
            "opt_out_label",
            "a namespace with this label is never enrolled (chart: webhook.optOutLabel)",
            WEBHOOK_OPT_OUT_LABEL,
            "KEY",
        ),
        Flag(
            "paths",
            "the registration's entries, a comma list of audit and enforce, or none (chart: "
            "webhook.audit.enabled, webhook.enforce.enabled); the webhook acts on no other path",
            "audit,enforce",
            "LIST",
        ),
        Flag(
            "audit_all_namespaces",
            "true: /mutate/audit enrols every namespace but the excluded (chart: webhook.audit.allNamespaces)",
            "false",
            "BOOL",
        ),
        Flag(
            "namespace_selector",
            "extra terms (a LabelSelector as JSON) a namespace must match, as both entries' "
            "namespaceSelector (chart: webhook.namespaceSelector)",
            "{}",
            "JSON",
        ),
        Flag(
            "object_selector",
            "a LabelSelector as JSON the pod's labels must match, as both entries' objectSelector "
            "(chart: webhook.objectSelector)",
            "{}",
            "JSON",
        ),
        Flag(
            "metrics_port",
            "a plain-HTTP port serving only /metrics, which the HTTPS port then no longer serves",
            "unset: /metrics on the HTTPS port",
            "PORT",
        ),
        *CONNECTION_FLAGS,
    ),
)
"""The ``serve`` flags and their ``DRA_WEBHOOK_`` twins (kube.flags)."""
