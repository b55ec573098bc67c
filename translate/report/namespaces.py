"""The namespaces a report judges enrolment in (docs/design.md D25; the rule: translate/enrolment.py).

    namespace_labels(namespaces) -> {name: labels}       of the Namespace objects read
    pod_labels(pods, selector) -> labels | None          what the objectSelector is judged on
    enrolment_json(enrolment) -> {mode, reason, enrolWith}           a workload's ``enrolment``
    enrolment_inputs(settings, count) -> {..., note}                 the document's ``inputs.enrolment``

Without Namespace objects (a file report without them) only the name decides (kube-system, the
release namespace) and ``note`` says so: :data:`ENROLMENT_NOT_KNOWN`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dra_bridge.translate.enrolment import Enrolment, EnrolmentSettings
from dra_bridge.translate.label_selector import LabelSelector
from dra_bridge.translate.report.grouping import meta

#: Said when the input has no Namespace objects: only kube-system and the release namespace are judged.
ENROLMENT_NOT_KNOWN = (
    "enrolment not known: no Namespace objects (kube-system and --release-namespace are judged by name; "
    "add the Namespaces, e.g. kubectl get ns -o yaml, to judge the others)"
)


def namespace_labels(namespaces: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, str]]:
    """Namespace name -> its labels, of the Namespace objects read."""
    out: dict[str, Mapping[str, str]] = {}
    for ns in namespaces:
        labels = meta(ns).get("labels")
        out[str(meta(ns).get("name") or "")] = (
            {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}
        )
    return out


def pod_labels(pods: Iterable[Mapping[str, Any]], selector: LabelSelector) -> Mapping[str, str] | None:
    """The labels a workload's pods are created with, from its pod templates (or pods): those of
    the first the objectSelector ``selector`` selects (some of its pods are sent to the webhook),
    else the first's; None without a pod (the objectSelector is not judged)."""
    every = []
    for pod in pods:
        labels = meta(pod).get("labels")
        every.append({str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {})
    return next((labels for labels in every if selector.selects(labels)), every[0] if every else None)


def enrolment_json(enrolment: Enrolment) -> dict[str, str]:
    """A workload's ``enrolment``: ``mode`` (enforce, audit, none, unknown), ``reason``, ``enrolWith``."""
    return {"mode": enrolment.mode, "reason": enrolment.reason, "enrolWith": enrolment.enrol_with}


def enrolment_inputs(settings: EnrolmentSettings, count: int) -> dict[str, Any]:
    """What enrolment was judged from: the chart settings, how many Namespace objects were read,
    and ``note`` (non-empty when enrolment is not known: none were)."""
    return {
        "modeLabel": settings.mode_label,
        "optOutLabel": settings.opt_out_label,
        "auditAllNamespaces": settings.audit_all_namespaces,
        "namespaceSelector": settings.namespace_selector.as_mapping(),
        "objectSelector": settings.object_selector.as_mapping(),
        "releaseNamespace": settings.release_namespace,
        "namespaces": count,
        "note": "" if count else ENROLMENT_NOT_KNOWN,
    }
