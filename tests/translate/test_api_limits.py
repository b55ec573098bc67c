"""What the plan renders stays within the API server's limits (docs/design.md D33), checked while
it is built: a pod whose selector or template would cross one stays legacy with an
``unsupported`` finding naming the limit, and a pod listing thousands of values costs work up to
the limit, not text many times its own size."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.cel import selector_text as ex
from dra_bridge.translate.errors import OverLimit
from dra_bridge.translate.findings import OVER_API_LIMIT
from dra_bridge.translate.plan import api_limits
from dra_bridge.translate.plan.claim_templates import render_template
from dra_bridge.translate.plan.pod_plan import Plan, plan_pod
from tests.factories import make_container, make_pod

PRODUCT = "nvidia.com/gpu.product"


def products(n: int) -> list[str]:
    return [f"NVIDIA-H100-80GB-HBM3-V{i:05d}" for i in range(n)]


def affinity_pod(values: list[str], key: str = PRODUCT, **spec: Any) -> dict[str, Any]:
    expr = {"key": key, "operator": "In", "values": values}
    term = {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}
    return make_pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": term}}, **spec)


def selectors(plan: Plan) -> list[str]:
    return [
        s["cel"]["expression"]
        for t in plan.templates
        for r in t["spec"]["spec"]["devices"]["requests"]
        for s in r["exactly"].get("selectors", [])
    ]


def over_limit(plan: Plan) -> list[str]:
    return [f.reason for f in plan.findings if f.code == OVER_API_LIMIT]


def test_thirty_product_values_are_refused_naming_the_cel_length_limit(catalog: Catalog) -> None:
    plan = plan_pod(affinity_pod(products(30)), catalog)
    assert not plan.changed and plan.templates == ()
    (reason,) = over_limit(plan)
    assert "CELSelectorExpressionMaxLength" in reason and "10240" in reason
    assert [f.outcome for f in plan.findings if f.code == OVER_API_LIMIT] == ["unsupported"]
    assert plan.findings[-1].outcome == "kept-legacy"


def test_the_longest_accepted_list_is_just_under_the_limit_and_one_more_value_is_refused(catalog: Catalog) -> None:
    n = 1
    while plan_pod(affinity_pod(products(n + 1)), catalog).changed:
        n += 1
    (longest,) = selectors(plan_pod(affinity_pod(products(n)), catalog))
    assert ex.MAX_EXPRESSION_LENGTH - 400 < len(longest) <= ex.MAX_EXPRESSION_LENGTH
    assert over_limit(plan_pod(affinity_pod(products(n + 1)), catalog))


def test_thousands_of_values_stop_at_the_limit_not_at_the_end_of_the_list(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = ex.product_in

    def counted(*args: Any) -> str:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(ex, "product_in", counted)
    pod = affinity_pod(products(90_000))
    assert len(json.dumps(pod)) > 2_500_000
    plan = plan_pod(pod, catalog)
    assert over_limit(plan) and not plan.changed
    assert len(calls) < 40  # the selector stopped at ~27 values, not 90,000
    # the finding lists a few values and counts the rest: no 3 MB warning or table row
    assert max(len(f.legacy) for f in plan.findings) < 600


@pytest.mark.parametrize(
    ("key", "values"),
    [
        ("nvidia.com/gpu.memory", [str(40960 + i) for i in range(2000)]),
        ("nvidia.com/gpu.family", [f"family-{i}" for i in range(5000)]),
        ("nvidia.com/cuda.driver.major", [str(i) for i in range(5000)]),
        ("nvidia.com/cuda.driver-version.full", [f"550.{i}.1" for i in range(2000)]),
    ],
    ids=["memory", "family", "version-part", "version-full"],
)
def test_every_label_shape_is_bounded(catalog: Catalog, key: str, values: list[str]) -> None:
    plan = plan_pod(affinity_pod(values, key), catalog)
    assert not plan.changed
    assert any("CELSelectorExpressionMaxLength" in r for r in over_limit(plan))


def test_many_hami_uuids_are_refused_and_a_few_translated(catalog: Catalog) -> None:
    many = make_pod()
    many["metadata"]["annotations"] = {"nvidia.com/use-gpuuuid": ",".join(f"GPU-{i:036d}" for i in range(400))}
    plan = plan_pod(many, catalog)
    assert not plan.changed and over_limit(plan)
    few = make_pod()
    few["metadata"]["annotations"] = {"nvidia.com/use-gpuuuid": "GPU-1,GPU-2"}
    assert plan_pod(few, catalog).changed


def test_several_terms_each_under_the_limit_but_over_it_together_are_refused(catalog: Catalog) -> None:
    terms = [{"matchExpressions": [{"key": PRODUCT, "operator": "In", "values": products(15)}]} for _ in range(3)]
    pod = make_pod(
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    )
    plan = plan_pod(pod, catalog)
    assert not plan.changed
    (reason,) = over_limit(plan)
    assert "CELSelectorExpressionMaxLength" in reason


def test_a_template_over_one_and_a_half_mib_is_refused_naming_the_object_limit(catalog: Catalog) -> None:
    # 32 containers of one GPU: one claim of 32 requests, each with the pod's five selectors of
    # ~10 KiB (the affinity and four HAMi filters): a template of ~1.8 MB.
    containers = [make_container(f"c{i}", {"nvidia.com/gpu": 1}) for i in range(32)]
    pod = affinity_pod(products(24), containers=containers)
    long_values = ",".join(f"GPU-{i:036d}" for i in range(230))
    types = ",".join(f"model-{i:030d}" for i in range(80))
    pod["metadata"]["annotations"] = {
        "nvidia.com/use-gpuuuid": long_values,
        "nvidia.com/nouse-gpuuuid": long_values,
        "nvidia.com/use-gputype": types,
        "nvidia.com/nouse-gputype": types,
    }
    plan = plan_pod(pod, catalog)
    assert not plan.changed, [len(json.dumps(t)) for t in plan.templates]
    (reason,) = over_limit(plan)
    assert "1536 KiB" in reason and "max-request-bytes" in reason
    # with one container the same selectors fit
    assert plan_pod(affinity_pod(products(24)) | {"metadata": pod["metadata"]}, catalog).changed


def _template(requests: int, selectors: int, expression: str = "true") -> dict[str, Any]:
    internal = {
        "requests": [
            {"name": f"r{i}", "deviceClassName": "gpu.example.com", "count": 1, "selectors": [expression] * selectors}
            for i in range(requests)
        ]
    }
    return render_template(internal, "t", "ns", "resource.k8s.io/v1", "dra-bridge")


def test_template_limits_name_each_limit() -> None:
    assert api_limits.template_problem(_template(32, 32), "p", "l") is None
    too_many_requests = api_limits.template_problem(_template(33, 1), "p", "l")
    assert too_many_requests is not None and "DeviceRequestsMaxSize" in too_many_requests.reason
    too_many_selectors = api_limits.template_problem(_template(1, 33), "p", "l")
    assert too_many_selectors is not None and "DeviceSelectorsMaxSize" in too_many_selectors.reason
    constrained = _template(2, 1)
    constrained["spec"]["spec"]["devices"]["constraints"] = [{"requests": ["r0", "r1"], "matchAttribute": "a/b"}] * 33
    too_many_constraints = api_limits.template_problem(constrained, "p", "l")
    assert too_many_constraints is not None and "DeviceConstraintsMaxSize" in too_many_constraints.reason
    big = api_limits.template_problem(_template(32, 32, "x" * 2000), "p", "l")
    assert big is not None and big.code == OVER_API_LIMIT and big.outcome == "unsupported"


def test_json_size_is_the_compact_json_length_and_stops_past_the_limit() -> None:
    value = {"a": [1, True, None, 'é"q', {"b": 2.5}], "k\n": {}, "l": []}
    assert api_limits.json_size(value) == len(json.dumps(value, separators=(",", ":")))
    shared = "x" * 1000
    assert api_limits.json_size([shared] * 10_000, limit=5000) == 5001


def test_the_cost_bound_at_the_length_limit_is_under_the_cost_limit() -> None:
    # the derivation in translate/cel/selector_text.py: the length limit binds first
    assert ex.COST_PER_CHARACTER * ex.MAX_EXPRESSION_LENGTH <= ex.MAX_EXPRESSION_COST
    ex.checked("x" * ex.MAX_EXPRESSION_LENGTH)
    with pytest.raises(OverLimit) as err:
        ex.checked("x" * (ex.MAX_EXPRESSION_LENGTH + 1))
    assert err.value.limit == "CELSelectorExpressionMaxLength"


@pytest.mark.parametrize(
    "value",
    [
        {1: -12, None: [10**30, False], 2.5: {"é": "\u2028\x00"}, "k": [[], {}, ()]},
        [{"name": "a", "count": 3}, {"name": "a", "count": -0}, 1.5e300, float("inf")],
        {"": "", "x": {"": [True, None, 7]}},
    ],
    ids=["odd-keys", "repeated-keys", "empty-keys"],
)
def test_json_size_counts_keys_numbers_and_escapes_as_json_writes_them(value: Any) -> None:
    assert api_limits.json_size(value) == len(json.dumps(value, separators=(",", ":")))
