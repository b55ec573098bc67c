"""The template reconciler's decisions: what is garbage, what is missing, what to re-create."""

from __future__ import annotations

from typing import Any

import pytest

from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.names import MANAGED_BY_WEBHOOK
from dra_bridge.translate.plan.pod_plan import Options, plan_pod
from dra_bridge.webhook.reconcile_rules import Key, garbage, missing, repair
from tests.factories import make_pod
from tests.webhook.conftest import example


def tpl(
    name: str, managed_by: str = "dra-bridge-webhook", ns: str = "a", created: str = "2026-01-01T00:00:00Z", **meta: Any
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "creationTimestamp": created,
            "labels": {"app.kubernetes.io/managed-by": managed_by},
            **meta,
        }
    }


def pod_using(*names: str, ns: str = "a", converted: bool = True) -> dict[str, Any]:
    labels = {"dra-bridge.io/converted": "true"} if converted else {}
    return {
        "metadata": {"name": "p", "namespace": ns, "labels": labels},
        "spec": {"resourceClaims": [{"name": f"c{i}", "resourceClaimTemplateName": n} for i, n in enumerate(names)]},
    }


T0 = 1767225600.0  # 2026-01-01T00:00:00Z


def test_unused_managed_templates_become_garbage_only_after_the_grace_period() -> None:
    seen: dict[Key, float] = {}
    templates = [tpl("used"), tpl("unused"), tpl("by-convert", managed_by="dra-migrate"), tpl("by-hand", "")]
    assert garbage(templates, [pod_using("used")], T0 + 100, 600, seen) == []
    assert garbage(templates, [pod_using("used")], T0 + 650, 600, seen) == []  # first seen unused at +100
    assert garbage(templates, [pod_using("used")], T0 + 700, 600, seen) == [("a", "unused")]


def test_a_template_referenced_again_restarts_its_grace_period() -> None:
    seen: dict[Key, float] = {}
    garbage([tpl("t")], [], T0 + 10, 60, seen)
    garbage([tpl("t")], [pod_using("t")], T0 + 50, 60, seen)
    assert garbage([tpl("t")], [], T0 + 80, 60, seen) == []
    assert garbage([tpl("t")], [], T0 + 140, 60, seen) == [("a", "t")]


def test_recently_created_templates_are_kept_for_admissions_in_flight() -> None:
    fresh = tpl("fresh", created="2026-01-01T00:10:00Z")
    assert garbage([fresh], [], T0 + 620, 600, {}) == []


def test_live_converted_pods_naming_absent_templates_are_missing() -> None:
    pods = [
        pod_using("gone", "there"),
        pod_using("other", converted=False),
        {**pod_using("done"), "status": {"phase": "Succeeded"}},
    ]
    assert [(p["metadata"]["name"], names) for p, names in missing([tpl("there")], pods)] == [("p", ["gone"])]
    assert [names for _, names in missing([tpl("gone", deletionTimestamp="x"), tpl("there")], pods)] == [["gone"]]


def names_of(templates: tuple[dict[str, Any], ...]) -> list[str]:
    return [t["metadata"]["name"] for t in templates]


@pytest.mark.parametrize(
    "pod",
    [
        example("01-pod-limits-only-toleration.yaml"),
        make_pod(gpus=2, nodeSelector={"nvidia.com/gpu.product": "Tesla-T4", "zone": "a"}),
        example("13-helm-two-mig-profiles-one-container.yaml", "Deployment")["spec"]["template"],
    ],
    ids=["example-01", "gfd-selector", "two-mig"],
)
def test_a_missing_template_is_planned_again_from_the_record(pod: dict[str, Any]) -> None:
    pod = {**pod, "metadata": {**pod["metadata"], "namespace": "team-a"}}  # as listed from the API
    plan = plan_pod(pod, load_catalog(), Options(managed_by=MANAGED_BY_WEBHOOK), "team-a")
    wanted = names_of(plan.templates)
    fix = repair(plan.pod, [*wanted, "dra-bridge-other"], load_catalog(), "resource.k8s.io/v1")
    assert fix.create == plan.templates
    assert len(fix.problems) == 1 and "dra-bridge-other, which its conversion record no longer plans" in fix.problems[0]


def test_a_missing_template_is_planned_with_the_recorded_options_not_the_catalog_in_force() -> None:
    pod = make_pod(gpus=1, schedulerName="volcano")
    options = Options(managed_by=MANAGED_BY_WEBHOOK, dra_schedulers=("volcano",))
    plan = plan_pod(pod, load_catalog().with_target("vendor"), options, "team-a")
    fix = repair(plan.pod, names_of(plan.templates), load_catalog(), "resource.k8s.io/v1beta2")
    assert names_of(fix.create) == names_of(plan.templates) and fix.problems == ()
    assert fix.create[0]["apiVersion"] == "resource.k8s.io/v1beta2"  # rendered in the version served now


@pytest.mark.parametrize(
    ("annotation", "problem"),
    [
        ("{garbage", "Pod team-a/gpu-pod: annotation dra-bridge.io/conversion: not JSON"),
        (None, "pod team-a/gpu-pod has no conversion record"),
        ('{"plan":"x","templates":["t"],"options":{"managedBy":"dra-migrate"}}', "converted by dra-migrate"),
    ],
    ids=["malformed", "absent", "by-dra-migrate"],
)
def test_a_pod_whose_record_cannot_be_replayed_is_a_problem_not_an_exception(
    annotation: str | None, problem: str
) -> None:
    pod = make_pod()
    if annotation is not None:
        pod["metadata"]["annotations"] = {"dra-bridge.io/conversion": annotation}
    fix = repair(pod, ["t"], load_catalog(), "resource.k8s.io/v1")
    assert fix.create == () and len(fix.problems) == 1 and problem in fix.problems[0], fix.problems
