"""The plan's limits on what it renders, against the real API server (docs/design.md D33).

For the densest selector shapes we write (the product-name test with its ten ``replace`` calls,
and a list of one-letter family names), the longest list the plan still translates gives a
template the API server accepts: it compiles the selector and estimates its cost, so the cost
bound of translate/cel/selector_text.py holds where it matters. One value more is what the plan
refuses, and the API server refuses that template too (rendered here with our limit lifted).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dra_bridge.kube.errors import KubeError
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.cel import selector_text as ex
from dra_bridge.translate.findings import OVER_API_LIMIT
from dra_bridge.translate.plan.pod_plan import Options, Plan, plan_pod
from tests.e2e.kubeapi import KubeClient, api_path
from tests.factories import make_pod

pytestmark = pytest.mark.e2e

V1 = "resource.k8s.io/v1"


def _pod(key: str, values: list[str]) -> dict[str, Any]:
    expr = {"key": key, "operator": "In", "values": values}
    term = {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}
    return make_pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": term}})


def _products(n: int) -> list[str]:
    return [f"NVIDIA-H100-80GB-HBM3-V{i:05d}" for i in range(n)]


def _families(n: int) -> list[str]:
    return [f"f{i}" for i in range(n)]  # the shortest names: the most list elements per character


SHAPES: dict[str, tuple[str, Callable[[int], list[str]]]] = {
    "product": ("nvidia.com/gpu.product", _products),
    "family": ("nvidia.com/gpu.family", _families),
}


def _plan(catalog: Catalog, shape: str, n: int, namespace: str) -> Plan:
    key, values = SHAPES[shape]
    return plan_pod(_pod(key, values(n)), catalog, Options(api_version=V1), namespace)


def _longest(catalog: Catalog, shape: str, namespace: str) -> int:
    """The most values the plan still translates (binary search)."""
    lo, hi = 1, 8192
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _plan(catalog, shape, mid, namespace).changed else (lo, mid)
    return lo


def _selector(plan: Plan) -> str:
    (template,) = plan.templates
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    (selector,) = request["exactly"]["selectors"]
    return str(selector["cel"]["expression"])


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_selector_just_under_our_limit_is_accepted_and_one_past_it_is_refused_by_both(
    catalog: Catalog, kube: KubeClient, namespace: str, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = _longest(catalog, shape, namespace)
    accepted = _plan(catalog, shape, n, namespace)
    assert ex.MAX_EXPRESSION_LENGTH - 400 < len(_selector(accepted)) <= ex.MAX_EXPRESSION_LENGTH
    (template,) = accepted.templates
    kube.create(api_path(V1, "resourceclaimtemplates", namespace), template)
    back = kube.get(api_path(V1, "resourceclaimtemplates", namespace, template["metadata"]["name"]))
    assert _selector_of(back) == _selector(accepted)

    refused = _plan(catalog, shape, n + 1, namespace)
    assert not refused.changed and any(f.code == OVER_API_LIMIT for f in refused.findings)
    monkeypatch.setattr(ex, "MAX_EXPRESSION_LENGTH", 10**9)  # render what the limit refuses
    over = _plan(catalog, shape, n + 1, namespace)
    assert len(_selector(over)) > 10240
    with pytest.raises(KubeError) as err:
        kube.create(api_path(V1, "resourceclaimtemplates", namespace), over.templates[0])
    assert "expression" in str(err.value) and "10240" in str(err.value)


def _selector_of(template: dict[str, Any]) -> str:
    return str(template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"])
