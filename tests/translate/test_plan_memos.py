"""The plan's memos (issue 25: convert's own cost): each remembers a pure function's answers by
exactly its input, so a plan made with warm memos is the plan made afresh, a changed input is a
miss, what a caller gets can be changed without touching what is kept, and each is bounded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dra_bridge.translate.catalog import Catalog, load_catalog
from dra_bridge.translate.plan import claim_plan
from dra_bridge.translate.plan.pod_plan import Options, Plan, plan_pod
from tests.factories import gpu, make_container, make_pod


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def _base() -> dict[str, Any]:
    return make_pod([make_container("app", gpu(2)), make_container("side", gpu(1))], nodeSelector={"x": "y"})


#: Each changes one thing the claim layout reads.
VARIANTS: dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any]], Options]] = {
    "same": (lambda p: p, Options()),
    "count": (lambda p: make_pod([make_container("app", gpu(3)), make_container("side", gpu(1))]), Options()),
    "container-name": (lambda p: make_pod([make_container("main", gpu(2)), make_container("side", gpu(1))]), Options()),
    "resource": (lambda p: make_pod([make_container("app", gpu(1, "nvidia.com/mig-1g.10gb"))]), Options()),
    "namespace": (lambda p: {**p, "metadata": {**p["metadata"], "namespace": "team-b"}}, Options()),
    "gpu-selector": (
        lambda p: {**p, "spec": {**p["spec"], "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}},
        Options(),
    ),
    "own-claims": (
        lambda p: {**p, "spec": {**p["spec"], "resourceClaims": [{"name": "gpu", "resourceClaimName": "nic"}]}},
        Options(convert_half_migrated=True),
    ),
    "api-version": (lambda p: p, Options(api_version="v1beta1")),
    "managed-by": (lambda p: p, Options(managed_by="someone-else")),
    "alignment": (lambda p: p, Options(alignment="pcie")),
    "alignment-scope": (lambda p: p, Options(alignment="numa", alignment_scope="pod")),
}


def _afresh(pod: dict[str, Any], catalog: Catalog, options: Options) -> Plan:
    claim_plan._laid.cache_clear()
    return plan_pod(pod, catalog, options, pod["metadata"]["namespace"])


@pytest.mark.parametrize("variant", VARIANTS, ids=list(VARIANTS))
def test_a_plan_with_warm_memos_is_the_plan_made_afresh(variant: str, catalog: Catalog) -> None:
    change, options = VARIANTS[variant]
    pod = change(_base())
    expected = _afresh(pod, catalog, options)
    claim_plan._laid.cache_clear()
    plan_pod(_base(), catalog, Options(), "team-a")  # the memo now holds the base pod's layout
    for _ in range(2):
        got = plan_pod(pod, catalog, options, pod["metadata"]["namespace"])
        assert got == expected
        assert [f.code for f in got.findings] == [f.code for f in expected.findings]


def test_a_changed_input_is_a_miss(catalog: Catalog) -> None:
    claim_plan._laid.cache_clear()
    plan_pod(_base(), catalog)
    plan_pod(_base(), catalog)
    assert claim_plan._laid.cache_info().hits == 1
    templates = set()
    for variant, (change, options) in VARIANTS.items():
        if variant == "same":
            continue
        before = claim_plan._laid.cache_info().misses
        pod = change(_base())
        templates.add(repr(plan_pod(pod, catalog, options, pod["metadata"]["namespace"]).templates))
        assert claim_plan._laid.cache_info().misses == before + 1, variant
    assert len(templates) == len(VARIANTS) - 1


def test_templates_handed_out_are_the_callers_own(catalog: Catalog) -> None:
    first = plan_pod(_base(), catalog, Options(), "team-a")
    expected = _afresh(_base(), catalog, Options())
    first.templates[0]["spec"]["spec"]["devices"]["requests"].clear()
    first.templates[0]["metadata"]["labels"]["x"] = "y"
    assert plan_pod(_base(), catalog, Options(), "team-a").templates == expected.templates


def test_the_claim_layout_memo_is_bounded(catalog: Catalog) -> None:
    claim_plan._laid.cache_clear()
    assert claim_plan._laid.cache_info().maxsize == claim_plan.MEMO_SIZE
    for n in range(claim_plan.MEMO_SIZE + 20):
        plan_pod(make_pod(namespace=f"ns-{n}"), catalog, Options(), f"ns-{n}")
    assert claim_plan._laid.cache_info().currsize == claim_plan.MEMO_SIZE
