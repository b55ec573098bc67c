"""Remedy codes phrased by each front end: dra-migrate's flags, the webhook's policy keys."""

from __future__ import annotations

import pytest

from dra_bridge.migrate.remedies import phrased, remedy_text
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.findings import Finding, Outcome, Remedy
from dra_bridge.translate.plan.pod_plan import plan_pod
from dra_bridge.translate.policy import policy_remedy
from tests.factories import gpu, make_container, make_pod


@pytest.mark.parametrize(
    ("remedy", "subject", "outcome", "flags", "policy"),
    [
        (
            Remedy.DECLARE_DRA_SCHEDULER,
            "volcano",
            "kept-legacy",
            "declare it: --dra-scheduler volcano",
            "declare it: policy draSchedulers",
        ),
        (
            Remedy.HAMI_WHOLE_DEVICES,
            "",
            "unsupported",
            "--hami-slicing whole-devices gives it whole devices",
            "policy hamiSlicing: whole-devices gives it whole devices",
        ),
        (
            Remedy.ADD_MIG_PROFILE_CLASS,
            "9g.999gb",
            "partial",
            "`dra-migrate classes --mig-profile 9g.999gb`",
            "`dra-migrate classes --mig-profile 9g.999gb`",
        ),
        (
            Remedy.INCLUDE_CUSTOM_RESOURCES,
            "RayCluster",
            "left-for-webhook",
            "--include-custom-resources converts it",
            "--include-custom-resources",
        ),
        (
            Remedy.INCLUDE_CUSTOM_RESOURCES,
            "RayCluster",
            "partial",
            "because of --include-custom-resources",
            "--include-custom-resources",
        ),
        (
            Remedy.FAIL_REQUESTS_GREATER_THAN_ONE,
            "",
            "unsupported",
            "because of --fail-requests-greater-than-one",
            "policy failRequestsGreaterThanOne",
        ),
        (
            Remedy.IGNORE_LEGACY_QUOTA,
            "x.deviceclass.resource.k8s.io/devices",
            "kept-legacy",
            "ignoreLegacyQuota: true",
            "policy ignoreLegacyQuota: true converts it anyway",
        ),
        (
            Remedy.IGNORE_LEGACY_QUOTA,
            "x.deviceclass.resource.k8s.io/devices",
            "partial",
            "ignoreLegacyQuota",
            "policy ignoreLegacyQuota",
        ),
        (
            Remedy.ADD_CATALOG_ENTRY,
            "nvidia.com/pgpu",
            "kept-legacy",
            "add {name: nvidia.com/pgpu, kind: ..., deviceClass: ...} to the resources of a user catalog and pass it with --catalog FILE",
            "add an entry for nvidia.com/pgpu to the webhook's user catalog",
        ),
    ],
    ids=lambda v: str(v),
)
def test_each_front_end_phrases_every_remedy_in_its_own_words(
    remedy: Remedy, subject: str, outcome: Outcome, flags: str, policy: str
) -> None:
    finding = Finding("spec", "x", outcome, "why", remedy, subject)
    assert flags in (remedy_text(finding) or "") and policy in (policy_remedy(finding) or "")
    shown = finding.phrased(remedy_text(finding))
    assert shown.reason.startswith("why (") and flags in shown.reason and shown.remedy is None


def test_every_remedy_code_has_a_phrase_in_both_front_ends() -> None:
    for remedy in Remedy:
        finding = Finding("spec", "x", "kept-legacy", "why", remedy, "s")
        assert remedy_text(finding) and policy_remedy(finding)


def test_findings_without_a_remedy_are_shown_as_they_are() -> None:
    finding = Finding("spec", "x", "translated", "why")
    assert phrased([finding]) == [finding] and policy_remedy(finding) is None


def test_dra_migrate_says_the_scheduler_flag_and_the_mig_profile_command(catalog: Catalog) -> None:
    pods = [
        make_pod([make_container("c", gpu(1))], schedulerName="volcano"),
        make_pod([make_container("c", gpu(1, "nvidia.com/mig-9g.999gb"))]),
    ]
    reasons = [f.reason for pod in pods for f in phrased(plan_pod(pod, catalog).findings)]
    assert any("scheduler 'volcano' may not support DRA" in r and "--dra-scheduler volcano" in r for r in reasons)
    assert any(
        "create DeviceClass nvidia-mig-9g.999gb.dra-bridge.io" in r
        and "dra-migrate classes --mig-profile 9g.999gb" in r
        for r in reasons
    )
