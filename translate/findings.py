"""Findings: what the migration did, or could not do, with each legacy value.

A finding names the source path in the object (JSON-pointer-like, e.g.
``spec.containers[0].resources.limits[nvidia.com/gpu]``), the legacy value, the outcome and
a reason a person can act on. Outcomes and their severity (docs/design.md D1):

    translated, ignored        0
    left-for-webhook           1
    partial                    2
    kept-legacy, unsupported   3

``--fail-on LEVEL`` fails when any finding's severity is at or above LEVEL's.

A finding whose outcome a setting of the front end changes carries a :class:`Remedy` code
(and the ``remedy_subject`` it applies to, e.g. a scheduler's name). translate never names
the setting: each front end phrases the code in its own words (``dra-migrate`` with its flag
names, the webhook with its policy keys) and appends that to the reason with
:meth:`Finding.phrased`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Literal

Outcome = Literal["translated", "ignored", "left-for-webhook", "partial", "kept-legacy", "unsupported"]

SEVERITY: dict[str, int] = {
    "translated": 0,
    "ignored": 0,
    "left-for-webhook": 1,
    "partial": 2,
    "kept-legacy": 3,
    "unsupported": 3,
}


class Remedy(StrEnum):
    """The front-end setting that changes a finding's outcome (each front end phrases it).

    On a finding that keeps a pod legacy (or leaves it to the webhook, or asks for a class)
    it says what would convert it; on a ``partial`` finding a setting caused, which setting
    that was.
    """

    #: The pod's scheduler supports DRA: declare it (``remedy_subject``: the scheduler's name).
    DECLARE_DRA_SCHEDULER = "declare-dra-scheduler"
    #: HAMi memory/core slicing may be converted to whole devices.
    HAMI_WHOLE_DEVICES = "hami-whole-devices"
    #: Render the DeviceClass of a MIG profile the catalog does not list (subject: the profile).
    ADD_MIG_PROFILE_CLASS = "add-mig-profile-class"
    #: Convert pod templates inside custom resources too (subject: the kind).
    INCLUDE_CUSTOM_RESOURCES = "include-custom-resources"
    #: Convert although a ResourceQuota limits only the legacy resource (subject: the DRA key).
    IGNORE_LEGACY_QUOTA = "ignore-legacy-quota"
    #: The device plugin fails shared requests greater than one (its failRequestsGreaterThanOne),
    #: so such a pod stays legacy: the setting that said so.
    FAIL_REQUESTS_GREATER_THAN_ONE = "fail-requests-greater-than-one"
    #: The pod already has DRA claims beside a legacy request (half-migrated by hand): converting
    #: it anyway gives the legacy request a claim of its own.
    CONVERT_HALF_MIGRATED = "convert-half-migrated"
    #: An accelerator resource the catalog does not know: a catalog entry for it (subject: the
    #: resource name) lets the migration account for it.
    ADD_CATALOG_ENTRY = "add-catalog-entry"


#: ``Finding.code``: an extended resource of an accelerator domain
#: (:func:`translate.names.is_accelerator_resource`) that the catalog does not know: the pod
#: stays on its device plugin (``kept-legacy``) and its path is ``blocked``.
UNKNOWN_DEVICE_RESOURCE = "unknown-device-resource"
#: ``Finding.code``: an extended resource of any other domain (SR-IOV, RDMA, KubeVirt, fuse):
#: not a device the migration moves, one informational (``ignored``) line.
OTHER_EXTENDED_RESOURCE = "other-extended-resource"
#: ``Finding.code``: another GPU controller owns the pod (a slicing controller's gate or per-pod
#: resource, the GPU Operator's validation pods): it stays as it is (``kept-legacy``).
OTHER_GPU_CONTROLLER = "other-gpu-controller"
#: The codes of findings about devices and pods that are not the migration's, which block a
#: workload whatever else it asks for.
FOREIGN_CODES: tuple[str, ...] = (UNKNOWN_DEVICE_RESOURCE, OTHER_GPU_CONTROLLER)


#: ``Finding.code``: what the pod would be rendered as crosses a limit the API server enforces
#: (a CEL selector's length or cost, selectors per request, requests per claim, an object's size):
#: the pod stays legacy (``unsupported``) and the reason names the limit (docs/design.md D33).
OVER_API_LIMIT = "over-api-limit"


#: :attr:`Finding.code` of a finding that keeps a pod legacy because a ResourceQuota in its
#: namespace counts our bridge class but not the class the target writes (docs/design.md D27).
QUOTA_CLASS_NOT_COUNTED = "quota-class-not-counted"


@dataclass(frozen=True)
class Finding:
    """One observation about one legacy value: ``path`` in the object, the ``legacy`` value
    as text, the ``outcome`` and the ``reason``; ``remedy`` (with ``remedy_subject``) names
    the setting that changes the outcome, for a front end to phrase; ``code`` (not compared,
    not in the JSON form) lets a consumer select findings of one kind without reading the
    reason (e.g. :data:`translate.plan.alignment.NOT_WRITTEN`)."""

    path: str
    legacy: str
    outcome: Outcome
    reason: str
    remedy: Remedy | None = None
    remedy_subject: str = ""
    code: str = field(default="", compare=False)

    @property
    def severity(self) -> int:
        """0 (fine) .. 3 (the value stays on the device plugin or cannot move)."""
        return SEVERITY[self.outcome]

    def phrased(self, remedy_text: str | None) -> Finding:
        """This finding as a front end shows it: its remedy, in that front end's words, appended
        to the reason in parentheses. The result carries no remedy code (it is phrased)."""
        if self.remedy is None:
            return self
        reason = f"{self.reason} ({remedy_text})" if remedy_text else self.reason
        return replace(self, reason=reason, remedy=None, remedy_subject="")

    def as_dict(self) -> dict[str, str]:
        """JSON form: ``{"path", "legacy", "outcome", "reason"}``."""
        return {"path": self.path, "legacy": self.legacy, "outcome": self.outcome, "reason": self.reason}


def worst(findings: Iterable[Finding]) -> int:
    """The highest severity among findings (0 when there are none)."""
    return max((f.severity for f in findings), default=0)


def blocks_conversion(findings: Iterable[Finding]) -> bool:
    """True when a finding forbids rewriting the pod (kept-legacy or unsupported)."""
    return worst(findings) >= 3
