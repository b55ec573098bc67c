"""Whether the webhook may act for a namespace on the path being served (no I/O).

    gate(namespace, mode, labels, settings, pod_labels) -> Verdict(enrolled, known, reason)

The API server sends a pod to ``/mutate/enforce`` or ``/mutate/audit`` only when the
registration's namespaceSelector of that entry selects its namespace (docs/design.md D25), but
anyone who reaches the port can send any review. Templates are created and Events posted with
the webhook's own permissions, so it acts only where the same rule, ``translate/enrolment.py``
(from the settings the chart renders into each entry's namespaceSelector, passed as flags),
enrols the namespace for that path, judged on the Namespace's labels as the watch-fed view
(:class:`webhook.cluster.ClusterView`) reads them, and the pod's labels (from the review's object)
for the registration's objectSelector (docs/design.md D28):

- enrolled for the path: ``enrolled``;
- not enrolled (no mode label, another mode, opted out, kube-system, the webhook's own
  namespace, a namespace the extra namespaceSelector terms exclude, a pod the objectSelector
  excludes): ``known`` and not enrolled; the pod is admitted unchanged with a warning;
- the view has not synced (:class:`LabelsUnknown`), or has no such Namespace (created an instant
  ago, or made up): not ``known``; the policy's ``onError`` decides, as for a template failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from dra_bridge.translate.enrolment import EnrolmentSettings, enrolment

Path = Literal["enforce", "audit"]


@dataclass(frozen=True)
class LabelsUnknown:
    """The Namespace view cannot say yet: ``cause`` in a few words (not listed yet, a missing
    permission, no answer for N s, the last error)."""

    cause: str


#: A Namespace's labels as the view reads them: the labels, None (no such Namespace in a synced
#: view) or LabelsUnknown (the view has not synced).
NamespaceLabels = Mapping[str, str] | None | LabelsUnknown


@dataclass(frozen=True)
class Verdict:
    """``enrolled``: the webhook may act; ``known``: the view could tell (False: onError
    applies); ``reason``: why not, in words (empty when enrolled)."""

    enrolled: bool
    known: bool
    reason: str = ""


def gate(
    namespace: str,
    mode: Path,
    labels: NamespaceLabels,
    settings: EnrolmentSettings,
    pod_labels: Mapping[str, str] | None = None,
) -> Verdict:
    """See the module docstring (``pod_labels`` None: the objectSelector is not judged)."""
    if isinstance(labels, LabelsUnknown):
        return Verdict(False, False, f"the Namespace view has not synced ({labels.cause})")
    rule = enrolment(namespace, labels, settings, pod_labels)
    if mode in rule.paths:
        return Verdict(True, True)
    if labels is None and rule.reason.endswith("(no Namespace object)"):
        return Verdict(False, False, f"namespace {namespace} is not in the Namespace view")
    return Verdict(False, True, f"{rule.reason}; not enrolled for /mutate/{mode}")
