"""The plan's memos (issue 25: convert's own cost): each remembers a pure function's answers by
exactly its input, so a plan made with warm memos is the plan made afresh, a changed input is a
miss, what a caller gets can be changed without touching what is kept, and each is bounded."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from dra_bridge.translate import dns_names
from dra_bridge.translate.catalog import Catalog, load_catalog
from dra_bridge.translate.plan import claim_plan
from dra_bridge.translate.plan.pod_plan import Options, Plan, plan_pod
from dra_bridge.translate.plan.record import RECORD_API_VERSION, ConversionRecord, RecordedOptions
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


def test_a_layout_of_much_text_is_not_kept(catalog: Catalog) -> None:
    claim_plan._laid.cache_clear()
    long_name = "c" * (claim_plan.MEMO_TEXT + 1)
    pod = make_pod([make_container(long_name, gpu(1))])
    plan = plan_pod(pod, catalog, Options(), "team-a")
    assert plan.changed and claim_plan._laid.cache_info().currsize == 0
    assert plan == _afresh(pod, catalog, Options())


def _reference_digest(value: object, length: int) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return base64.b32encode(hashlib.sha256(text.encode()).digest()).decode().lower()[:length]


@pytest.mark.parametrize("length", [8, 10, 12])
def test_digests_are_remembered_by_their_text_and_bounded(length: int) -> None:
    dns_names._digest_text.cache_clear()
    values: list[object] = [{"a": 1}, {"a": 2}, {"a": True}, {"a": "1"}, ["é"], "x" * (dns_names.DIGEST_MEMO_TEXT + 1)]
    for value in values * 2:
        assert dns_names.digest(value, length) == _reference_digest(value, length)
    info = dns_names._digest_text.cache_info()
    assert (info.currsize, info.hits, info.maxsize) == (len(values) - 1, len(values) - 1, dns_names.DIGEST_MEMO_SIZE)
    for n in range(dns_names.DIGEST_MEMO_SIZE + 10):
        dns_names.digest(n)
    assert dns_names._digest_text.cache_info().currsize == dns_names.DIGEST_MEMO_SIZE


@pytest.mark.parametrize(
    "options",
    [
        RecordedOptions(),
        RecordedOptions("m", 34, "bridge", "unsupported", (), False),
        RecordedOptions("m", 34, "bridge", "unsupported", (), 0),  # type: ignore[arg-type]  # 0 is not False
        RecordedOptions("m", 35, "vendor", "whole-devices", ("s",), True, "numa", "pod", True),
    ],
    ids=["unrecorded", "false", "zero", "all-set"],
)
def test_the_record_json_is_its_canonical_json_whatever_the_options_memo_holds(options: RecordedOptions) -> None:
    for warm in RecordedOptions("m", 34, "bridge", "unsupported", (), False), options:
        ConversionRecord("p", ("t",), {}, warm).to_json()
    record = ConversionRecord("p", ("t", "u"), {"containers": {"c": {"limits": {"x/y": "é"}}}}, options)
    doc = {
        "apiVersion": RECORD_API_VERSION,
        "options": options.to_wire(),
        "original": record.original,
        "plan": "p",
        "templates": ["t", "u"],
    }
    assert record.to_json() == json.dumps(doc, sort_keys=True, separators=(",", ":"))


def test_the_recorded_options_are_remembered_on_the_frozen_options(catalog: Catalog) -> None:
    options = Options(alignment="numa")
    first = RecordedOptions.of(options, catalog)
    assert RecordedOptions.of(options, catalog) is first
    assert RecordedOptions.of(options, catalog.with_target("vendor")).target == "vendor"
    assert RecordedOptions.of(replace(options, alignment="pcie"), catalog).alignment == "pcie"
    listed = Options(dra_schedulers=["a"])  # type: ignore[arg-type]  # a list is not remembered
    assert RecordedOptions.of(listed, catalog) is not RecordedOptions.of(listed, catalog)


@pytest.mark.parametrize(
    "value", ["1", "é", "\x7f", "a\nb", '"q"', "\u2028"], ids=["plain", "accent", "del", "newline", "quote", "ls"]
)
def test_the_record_reuses_the_original_text_only_where_it_is_the_same(value: str) -> None:
    original: Any = {"containers": {"c": {"limits": {"x/y": value}}}, "annotations": {"k": value}}
    record = ConversionRecord("p", ("t",), original, RecordedOptions())
    expected = json.dumps(
        {"apiVersion": RECORD_API_VERSION, "options": {}, "original": original, "plan": "p", "templates": ["t"]},
        sort_keys=True,
        separators=(",", ":"),
    )
    assert record.to_json(dns_names.canonical_json(original)) == record.to_json() == expected


@pytest.mark.parametrize("namespace", [["a", "list"], 5, {"a": 1}], ids=["list", "int", "mapping"])
def test_a_namespace_that_is_no_string_is_laid_out_without_the_memo(namespace: Any, catalog: Catalog) -> None:
    claim_plan._laid.cache_clear()
    pod = make_pod()
    pod["metadata"]["namespace"] = namespace
    plan = plan_pod(pod, catalog, Options(), namespace)
    assert plan.changed and plan.templates[0]["metadata"]["namespace"] == namespace
    assert claim_plan._laid.cache_info().currsize == 0
