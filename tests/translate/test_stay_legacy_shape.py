"""The one shape of stay-legacy rules: facts in, a finding or None out; gates leave the pod
unchanged at the first hit, checks add their findings and the verdict decides."""

from __future__ import annotations

import pytest

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.findings import Finding
from dra_bridge.translate.plan import stay_legacy
from dra_bridge.translate.plan.pod_plan import plan_pod
from dra_bridge.translate.plan.stay_legacy import Facts
from tests.factories import gpu, make_container, make_pod


def _team_b(facts: Facts) -> Finding | None:
    if facts.spec.get("serviceAccountName") != "team-b":
        return None
    return Finding(f"{facts.path}spec.serviceAccountName", "team-b", "kept-legacy", "team b stays legacy")


def _seen(facts: Facts) -> Finding | None:
    assert facts.demands and facts.demands[0].count == 2 and facts.options.api_version
    return None


@pytest.mark.parametrize("where", ["GATES", "CHECKS"])
def test_a_new_rule_is_a_function_and_a_line(catalog: Catalog, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    monkeypatch.setattr(stay_legacy, where, (*getattr(stay_legacy, where), _seen, _team_b))
    pod = make_pod([make_container("c", gpu(2))])
    assert plan_pod(pod, catalog).changed
    pod["spec"]["serviceAccountName"] = "team-b"
    plan = plan_pod(pod, catalog, path="spec.template.")
    assert not plan.changed
    assert ("spec.template.spec.serviceAccountName", "kept-legacy") in [(f.path, f.outcome) for f in plan.findings]
    # a gate stops at once; a check lets the verdict say the pod is kept
    verdicts = [f for f in plan.findings if f.reason.startswith("kept on the device plugin")]
    assert len(verdicts) == (0 if where == "GATES" else 1)


def test_a_request_check_sees_one_request(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    def odd(facts: Facts) -> Finding | None:
        d = facts.demand
        return Finding(d.path, d.legacy, "unsupported", "odd count") if d is not None and d.count % 2 else None

    monkeypatch.setattr(stay_legacy, "REQUEST_CHECKS", (*stay_legacy.REQUEST_CHECKS, odd))
    assert plan_pod(make_pod([make_container("c", gpu(2))]), catalog).changed
    plan = plan_pod(make_pod([make_container("c", gpu(2)), make_container("d", gpu(3))]), catalog)
    assert not plan.changed and [f.reason for f in plan.findings if f.reason == "odd count"] == ["odd count"]
