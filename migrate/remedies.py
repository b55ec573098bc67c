"""Remedy codes in dra-migrate's words: the flag (or command) that changes a finding's outcome."""

from __future__ import annotations

from collections.abc import Iterable
from typing import assert_never

from dra_bridge.translate.findings import Finding, Remedy


def remedy_text(finding: Finding) -> str | None:
    """A finding's remedy code as dra-migrate's flags say it (None when it has none): what converts
    a pod that stays legacy, or which flag made a partial translation."""
    subject, stays = finding.remedy_subject, finding.severity >= 3
    match finding.remedy:
        case None:
            return None
        case Remedy.DECLARE_DRA_SCHEDULER:
            return f"if it does, declare it: --dra-scheduler {subject}"
        case Remedy.HAMI_WHOLE_DEVICES:
            return "--hami-slicing whole-devices gives it whole devices"
        case Remedy.ADD_MIG_PROFILE_CLASS:
            return f"`dra-migrate classes --mig-profile {subject}` renders it"
        case Remedy.INCLUDE_CUSTOM_RESOURCES:
            return (
                "--include-custom-resources converts it"
                if finding.outcome == "left-for-webhook"
                else "converted because of --include-custom-resources"
            )
        case Remedy.FAIL_REQUESTS_GREATER_THAN_ONE:
            return "because of --fail-requests-greater-than-one"
        case Remedy.CONVERT_HALF_MIGRATED:
            return "--convert-half-migrated converts it anyway" if stays else "because of --convert-half-migrated"
        case Remedy.IGNORE_LEGACY_QUOTA:  # a policy setting only: convert and report read it from --policy
            return (
                "the webhook's policy ignoreLegacyQuota: true (--policy) converts it anyway"
                if stays
                else "the webhook's policy ignoreLegacyQuota"
            )
        case Remedy.ADD_CATALOG_ENTRY:
            return (
                f"add {{name: {subject}, kind: ..., deviceClass: ...}} to the resources of a user catalog "
                "and pass it with --catalog FILE"
            )
        case _:
            assert_never(finding.remedy)


def phrased(findings: Iterable[Finding]) -> list[Finding]:
    """Findings as dra-migrate shows them: each remedy code said in its flags."""
    return [f.phrased(remedy_text(f)) for f in findings]
