"""Property test: whatever the body, the admission handler never answers 5xx nor raises."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.runtime import Runtime
from tests.factories import make_pod
from tests.webhook.conftest import FakeEnsurer, make_admission_review, response_of

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
keys = st.sampled_from(["uid", "kind", "object", "namespace", "operation", "dryRun", "subResource", "name"])


def _mutated_review(draw: Any) -> dict[str, Any]:
    review = make_admission_review(make_pod(gpus=draw(st.sampled_from([1, "2", 0, -1, "x", None, 1.5]))))
    for _ in range(draw(st.integers(0, 3))):
        review["request"][draw(keys)] = draw(json_values)
    if draw(st.booleans()):
        spec = review["request"].get("object")
        if isinstance(spec, dict):
            spec.setdefault("spec", {})["containers"] = draw(json_values)
    return review


reviews = st.composite(lambda draw: _mutated_review(draw))()
bodies = st.one_of(
    st.binary(max_size=200),
    json_values.map(lambda v: json.dumps(v).encode()),
    reviews.map(lambda r: json.dumps(r).encode()),
)

ADMITTER_RUNTIME = Runtime("resource.k8s.io/v1", require_tls=False)
ADMITTER = Admitter(ADMITTER_RUNTIME.context, FakeEnsurer(), ADMITTER_RUNTIME.metrics)


@pytest.mark.property
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies, mode=st.sampled_from(["enforce", "audit"]))
def test_admission_handler_never_answers_5xx(body: bytes, mode: Any) -> None:
    status, answer = asyncio.run(ADMITTER.handle(body, mode))
    assert status in (200, 400, 413)
    json.dumps(answer)
    if status == 200:
        response = response_of(answer)
        assert isinstance(response["uid"], str) and response["allowed"] in (True, False)
    else:
        assert "error" in answer


docs = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["a", "b", "nvidia.com/gpu"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["a", "b", "c/d", "~"]), inner, max_size=4)
    ),
    max_leaves=25,
)


@pytest.mark.property
@settings(max_examples=400, deadline=None)
@given(
    src=st.dictionaries(st.sampled_from(["metadata", "spec", "x"]), docs, max_size=3),
    dst=st.dictionaries(st.sampled_from(["metadata", "spec", "x"]), docs, max_size=3),
)
def test_pruned_diff_always_turns_the_original_into_the_migrated_document(
    src: dict[str, Any], dst: dict[str, Any]
) -> None:
    import copy

    import jsonpatch

    from dra_bridge.webhook.patch import PatchMemo, diff

    memo = PatchMemo()
    for a, b in ((src, dst), (src, {**src, **dst}), (dst, {**dst, **src})):
        assert jsonpatch.apply_patch(copy.deepcopy(a), diff(a, b)) == b
        for _ in range(2):  # a miss, then a hit
            assert jsonpatch.apply_patch(copy.deepcopy(a), diff(a, b, memo)) == b
