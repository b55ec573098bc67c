"""The template reconciler against the shared in-memory API (kube.fake, allowed exactly
webhook/access.py): what it re-creates.

A pod converted by the webhook under a policy rule keeps naming its template; when the
template is deleted, the reconciler must re-create it from the pod's conversion record,
with the options the webhook used, not the defaults.
"""

from __future__ import annotations

import json
from typing import Any

import jsonpatch
import pytest

from dra_bridge.kube.fake import FakeKube
from dra_bridge.kube.resources import PODS, RESOURCE_CLAIM_TEMPLATES
from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.policy import parse_policy
from dra_bridge.webhook import Context, evaluate
from dra_bridge.webhook.access import API_CALLS
from dra_bridge.webhook.reconciler import Reconciler
from tests.factories import make_pod
from tests.webhook.conftest import make_admission_review

V1 = "resource.k8s.io/v1"


def converted(pod: dict[str, Any], policy: str) -> dict[str, Any]:
    """``pod`` as the webhook stored it under ``policy`` (enforce), then scheduled and running."""
    ctx = Context(load_catalog(), parse_policy(json.loads(policy), "test"), V1)
    decision = evaluate(make_admission_review(pod)["request"], "enforce", ctx)
    assert decision.log.outcome == "patched", decision
    stored: dict[str, Any] = jsonpatch.apply_patch(pod, list(decision.answer.patch))
    stored["metadata"].update(uid="3f1c", resourceVersion="7", creationTimestamp="2026-01-01T00:00:00Z")
    stored["spec"]["nodeName"] = "node-a"
    stored["status"] = {"phase": "Running"}
    return stored


def _gpumem_pod() -> dict[str, Any]:
    pod = make_pod(gpus=1)
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"] = 4000
    return pod


@pytest.mark.parametrize(
    ("pod", "policy"),
    [
        (make_pod(gpus=2), "{}"),
        (make_pod(gpus=1, schedulerName="volcano"), '{"defaults": {"draSchedulers": ["volcano"]}}'),
        (_gpumem_pod(), '{"rules": [{"name": "hami", "match": {}, "hamiSlicing": "whole-devices"}]}'),
    ],
    ids=["defaults", "dra-schedulers", "hami-whole-devices"],
)
async def test_a_deleted_template_is_recreated_with_the_options_that_converted_the_pod(
    pod: dict[str, Any], policy: str
) -> None:
    fake = FakeKube(allowed=API_CALLS)
    stored = converted(pod, policy)
    fake.put(PODS, stored)
    names = [c["resourceClaimTemplateName"] for c in stored["spec"]["resourceClaims"]]

    report = await Reconciler(fake, V1, load_catalog, "replica-0", "dra-bridge").run_once()

    assert report.leader
    assert report.recreated == [("team-a", n) for n in names]
    created = fake.items(RESOURCE_CLAIM_TEMPLATES)
    assert sorted(t["metadata"]["name"] for t in created) == sorted(names)
    assert all(t["metadata"]["namespace"] == "team-a" for t in created)
