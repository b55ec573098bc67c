"""``dra-migrate report``'s enrolment flags: every setting the chart renders into its webhook
registration's selectors, so the report judges each workload as the API server and the webhook
do (translate/enrolment.py; the webhook's flags of the same names, docs/webhook.md).

    add_enrolment_flags(parser)      --release-namespace, --audit-all-namespaces, --namespace-label,
                                     --opt-out-label, --namespace-selector, --object-selector
    enrolment_settings(args)         -> EnrolmentSettings; UsageError naming a bad flag
"""

from __future__ import annotations

import argparse

from dra_bridge.migrate.errors import UsageError
from dra_bridge.translate.enrolment import EnrolmentSettings
from dra_bridge.translate.label_selector import LabelSelector
from dra_bridge.translate.names import WEBHOOK_MODE_LABEL, WEBHOOK_OPT_OUT_LABEL

__all__ = ["add_enrolment_flags", "enrolment_settings"]


def add_enrolment_flags(rep: argparse.ArgumentParser) -> None:
    """Register the enrolment flags on the ``report`` parser."""
    rep.add_argument(
        "--release-namespace",
        metavar="NS",
        help="the chart's release namespace: never sent to the webhook, like kube-system (not-enrolled)",
    )
    rep.add_argument(
        "--audit-all-namespaces",
        action="store_true",
        help="the chart's webhook.audit.allNamespaces is on: every namespace but the excluded is audited",
    )
    rep.add_argument(
        "--namespace-label",
        default=WEBHOOK_MODE_LABEL,
        metavar="KEY",
        help=f"the chart's webhook.namespaceLabel: its value (enforce, audit) enrols a namespace "
        f"(default {WEBHOOK_MODE_LABEL})",
    )
    rep.add_argument(
        "--opt-out-label",
        default=WEBHOOK_OPT_OUT_LABEL,
        metavar="KEY",
        help=f"the chart's webhook.optOutLabel: a namespace with it is never enrolled "
        f"(default {WEBHOOK_OPT_OUT_LABEL})",
    )
    rep.add_argument(
        "--namespace-selector",
        metavar="JSON",
        help="the chart's webhook.namespaceSelector (a LabelSelector as JSON): extra terms a namespace must match",
    )
    rep.add_argument(
        "--object-selector",
        metavar="JSON",
        help="the chart's webhook.objectSelector (a LabelSelector as JSON) on the pod template's labels: "
        "a workload it excludes is not-enrolled",
    )


def _selector(flag: str, text: str | None) -> LabelSelector:
    try:
        return LabelSelector.from_json(text or "")
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def enrolment_settings(args: argparse.Namespace) -> EnrolmentSettings:
    """The enrolment rule's settings from the flags (UsageError naming a bad one)."""
    for flag, value in (("--namespace-label", args.namespace_label), ("--opt-out-label", args.opt_out_label)):
        if not value or any(c.isspace() for c in value):
            raise UsageError(f"{flag} {value!r}: not a label key ([prefix/]name)")
    return EnrolmentSettings(
        mode_label=args.namespace_label,
        opt_out_label=args.opt_out_label,
        audit_all_namespaces=args.audit_all_namespaces,
        release_namespace=args.release_namespace,
        namespace_selector=_selector("--namespace-selector", args.namespace_selector),
        object_selector=_selector("--object-selector", args.object_selector),
    )
