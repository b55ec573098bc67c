"""No review blocks the others (docs/design.md D33): a review is decoded and decided off the event
loop, so the probes and other reviews are answered meanwhile, and a maximal review (3 MB of node
affinity values) is answered quickly, left on the device plugin with the limit it crosses named."""

from __future__ import annotations

import asyncio
import io
import json
import time
from dataclasses import replace
from typing import Any

from aiohttp.test_utils import TestClient

from dra_bridge.translate.plan.cluster_state import QuotaKeys
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.review import MAX_BODY_BYTES, MAX_JSON_VALUES
from dra_bridge.webhook.runtime import Runtime
from dra_bridge.webhook.server import make_app
from tests.factories import make_pod
from tests.webhook.conftest import FakeEnsurer, make_admission_review

AiohttpClient = Any  # pytest-aiohttp's fixture factory


def maximal_pod(values: int = 95_000) -> dict[str, Any]:
    """A pod whose required node affinity lists ``values`` GPU products: a ~3 MB review."""
    expr = {
        "key": "nvidia.com/gpu.product",
        "operator": "In",
        "values": [f"NVIDIA-H100-80GB-HBM3-{i:06d}" for i in range(values)],
    }
    term = {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}
    return make_pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": term}})


async def _timed_get(client: TestClient[Any, Any], path: str) -> float:
    start = time.perf_counter()
    resp = await client.get(path)
    assert resp.status == 200
    return time.perf_counter() - start


async def test_a_slow_decision_does_not_hold_up_the_probes(aiohttp_client: AiohttpClient) -> None:
    runtime = Runtime("resource.k8s.io/v1", require_tls=False)

    def slow_quota(_namespace: str) -> QuotaKeys:
        time.sleep(0.8)  # a decision that takes long (the GIL is free, as in any wait)
        return frozenset()

    admitter = Admitter(lambda: replace(runtime.context(), quota_keys=slow_quota), FakeEnsurer(), runtime.metrics)
    client = await aiohttp_client(make_app(runtime, admitter))
    review = asyncio.ensure_future(client.post("/mutate/enforce", json=make_admission_review(make_pod())))
    await asyncio.sleep(0.1)  # the review is being decided (on the event loop, this sleep waits for it)
    await _timed_get(client, "/healthz")
    probe_answered = time.perf_counter()
    resp = await review
    assert resp.status == 200 and (await resp.json())["response"]["allowed"] is True
    assert probe_answered < time.perf_counter() - 0.3  # the probe did not wait for the decision


async def test_a_maximal_review_is_answered_quickly_and_stays_legacy_naming_the_limit(
    aiohttp_client: AiohttpClient,
) -> None:
    runtime = Runtime("resource.k8s.io/v1", require_tls=False)
    ensurer = FakeEnsurer()
    client = await aiohttp_client(make_app(runtime, Admitter(runtime.context, ensurer, runtime.metrics)))
    payload = json.dumps(make_admission_review(maximal_pod())).encode()
    assert 2_500_000 < len(payload) <= MAX_BODY_BYTES
    stalls: list[float] = []
    done = asyncio.Event()

    async def watch_loop() -> None:  # how late a 10 ms sleep wakes: the event loop's stall
        while not done.is_set():
            start = time.perf_counter()
            await asyncio.sleep(0.01)
            stalls.append(time.perf_counter() - start - 0.01)

    watcher = asyncio.ensure_future(watch_loop())
    cpu = time.process_time()
    resp = await client.post("/mutate/enforce", data=io.BytesIO(payload), headers={"Content-Type": "application/json"})
    cpu = time.process_time() - cpu
    done.set()
    await watcher
    answer = (await resp.json())["response"]
    assert answer["allowed"] is True and "patch" not in answer and ensurer.calls == []
    assert any("CELSelectorExpressionMaxLength" in w for w in answer["warnings"])
    assert cpu < 1.0  # the plan stops at the limit: today it built 35 MB of selector text
    assert max(stalls) < 0.25  # the bench holds it to 100 ms on an idle machine


async def test_a_body_of_too_many_json_values_is_refused_before_it_is_decoded(aiohttp_client: AiohttpClient) -> None:
    # 3 MiB of small values takes json.loads (holding the GIL, so stalling the loop whatever the
    # thread) hundreds of milliseconds: the count is bounded before decoding
    runtime = Runtime("resource.k8s.io/v1", require_tls=False)
    client = await aiohttp_client(make_app(runtime, Admitter(runtime.context, FakeEnsurer(), runtime.metrics)))
    review = make_admission_review(make_pod())
    review["request"]["object"]["metadata"]["annotations"] = {str(i): "" for i in range(MAX_JSON_VALUES)}
    payload = json.dumps(review).encode()
    assert len(payload) <= MAX_BODY_BYTES
    resp = await client.post("/mutate/enforce", data=io.BytesIO(payload), headers={"Content-Type": "application/json"})
    assert resp.status == 413 and "JSON values" in (await resp.json())["error"]
    # a pod at the size of the maximal review, in few values, is decoded and answered
    resp = await client.post(
        "/mutate/enforce", data=io.BytesIO(json.dumps(make_admission_review(maximal_pod())).encode())
    )
    assert resp.status == 200
