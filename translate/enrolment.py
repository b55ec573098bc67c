"""Which webhook paths the API server sends a namespace's pods to: the chart's namespaceSelectors
as one rule (docs/design.md D25). Pure.

    EnrolmentSettings(mode_label, opt_out_label, audit, enforce, audit_all_namespaces, release_namespace,
                      namespace_selector, object_selector)
    enrolment(namespace, labels, settings, pod_labels=None) -> Enrolment(paths, known, reason, enrol_with)

The chart (charts/dra-bridge/templates/webhook-registration.yaml) registers one entry per
mode, each with its own namespaceSelector, and the API server calls every entry whose
selector matches (the MutatingWebhookConfiguration's ``namespaceSelector``):

- never ``kube-system`` nor the release namespace (``kubernetes.io/metadata.name NotIn``), nor a
  namespace carrying the opt-out label with any value (``DoesNotExist``);
- ``/mutate/enforce`` (when ``webhook.enforce.enabled``): namespaces labelled
  ``<mode label>=enforce``;
- ``/mutate/audit`` (when ``webhook.audit.enabled``): namespaces labelled ``<mode label>=audit``,
  or every namespace with ``webhook.audit.allNamespaces``;
- both entries: only namespaces that ``webhook.namespaceSelector``'s extra terms select, and only
  pods that ``webhook.objectSelector`` selects (judged when ``pod_labels`` is given).

A namespace no entry selects is not enrolled: its pods are created as they are and stay on
the device plugin, whatever the policy says. ``labels`` None means the Namespace object is not
known (a file without it): only what the name decides is applied (kube-system, the release
namespace); anything else is ``known=False``. An empty ``namespace`` (a manifest without
``metadata.namespace``) is not known either: it depends on where the manifest is applied.
``tests/chart/test_chart_enrolment.py`` checks this rule against the rendered chart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from dra_bridge.translate.label_selector import LabelSelector
from dra_bridge.translate.names import NAMESPACE_NAME_LABEL, WEBHOOK_MODE_LABEL, WEBHOOK_OPT_OUT_LABEL

__all__ = ["ALWAYS_EXCLUDED", "Enrolment", "EnrolmentSettings", "WebhookPath", "enrolment"]

WebhookPath = Literal["audit", "enforce"]
#: Namespaces the chart always excludes besides the release namespace.
ALWAYS_EXCLUDED = ("kube-system",)


@dataclass(frozen=True)
class EnrolmentSettings:
    """The chart values its namespaceSelectors are rendered from: ``webhook.namespaceLabel``
    (``mode_label``), ``webhook.optOutLabel``, ``webhook.audit.enabled``,
    ``webhook.enforce.enabled``, ``webhook.audit.allNamespaces``, the release namespace
    (None: not known, so not excluded by name), ``webhook.namespaceSelector`` (extra terms on the
    namespace's labels) and ``webhook.objectSelector`` (on the pod's labels)."""

    mode_label: str = WEBHOOK_MODE_LABEL
    opt_out_label: str = WEBHOOK_OPT_OUT_LABEL
    audit: bool = True
    enforce: bool = True
    audit_all_namespaces: bool = False
    release_namespace: str | None = None
    namespace_selector: LabelSelector = field(default_factory=LabelSelector)
    object_selector: LabelSelector = field(default_factory=LabelSelector)


@dataclass(frozen=True)
class Enrolment:
    """``paths``: the webhook paths that see the namespace's pods (empty: not enrolled);
    ``known``: False when the namespace's labels (or its name) are not known; ``reason``: why,
    in words; ``enrol_with``: what would enrol it (a label to set or remove; empty when
    nothing can, or when it is enrolled for enforce)."""

    paths: tuple[WebhookPath, ...]
    known: bool
    reason: str
    enrol_with: str = ""

    @property
    def enrolled(self) -> bool:
        """True when some webhook path sees the namespace's pods."""
        return bool(self.paths)

    @property
    def mode(self) -> str:
        """``enforce`` (converted), ``audit`` (seen, admitted unchanged), ``none`` or ``unknown``."""
        if not self.known:
            return "unknown"
        return "enforce" if "enforce" in self.paths else ("audit" if self.paths else "none")


def _excluded_by_name(namespace: str, settings: EnrolmentSettings) -> str:
    if namespace in ALWAYS_EXCLUDED:
        return f"{namespace} is never sent to the webhook (the chart excludes it: its pods must start without it)"
    if settings.release_namespace is not None and namespace == settings.release_namespace:
        return f"{namespace} is the chart's release namespace, never sent to the webhook"
    return ""


def enrolment(
    namespace: str,
    labels: Mapping[str, str] | None,
    settings: EnrolmentSettings,
    pod_labels: Mapping[str, str] | None = None,
) -> Enrolment:
    """Which webhook paths see pods of ``namespace`` with ``labels`` (see the module docstring);
    with ``pod_labels``, of such a pod (the objectSelector judged too)."""
    if not namespace:
        return Enrolment((), False, "no namespace in the manifest: enrolment depends on where it is applied")
    excluded = _excluded_by_name(namespace, settings)
    if excluded:
        return Enrolment((), True, excluded)
    if labels is None:
        return Enrolment((), False, f"namespace {namespace}: enrolment not known (no Namespace object)")
    enforce_label = f"{settings.mode_label}=enforce"
    if settings.opt_out_label in labels:
        return Enrolment(
            (),
            True,
            f"namespace {namespace} has the opt-out label {settings.opt_out_label}",
            f"remove the label {settings.opt_out_label}",
        )
    if not settings.namespace_selector.selects({NAMESPACE_NAME_LABEL: namespace, **labels}):
        return Enrolment(
            (),
            True,
            f"namespace {namespace} does not match the webhook's extra namespaceSelector terms",
            "label it to match webhook.namespaceSelector",
        )
    if pod_labels is not None and not settings.object_selector.selects(pod_labels):
        return Enrolment(
            (), True, "the pod's labels do not match the webhook's objectSelector", "match webhook.objectSelector"
        )
    mode = labels.get(settings.mode_label)
    paths: list[WebhookPath] = []
    if settings.audit and (settings.audit_all_namespaces or mode == "audit"):
        paths.append("audit")
    if settings.enforce and mode == "enforce":
        paths.append("enforce")
    if "enforce" in paths:
        return Enrolment(tuple(paths), True, f"namespace {namespace} is labelled {enforce_label}")
    hint = f"label it {enforce_label}" if settings.enforce else "enable webhook.enforce"
    if paths:
        why = "every namespace is audited" if mode != "audit" else f"it is labelled {settings.mode_label}=audit"
        return Enrolment(
            tuple(paths), True, f"namespace {namespace}: audit only ({why}): pods admitted unchanged", hint
        )
    shown = f"{settings.mode_label}={mode}" if mode is not None else f"no {settings.mode_label} label"
    return Enrolment((), True, f"namespace {namespace} is not enrolled in the webhook ({shown})", hint)
