"""The admission paths of the real app, driven through aiohttp_client."""

from __future__ import annotations

import base64
import copy
import io
import json
from collections.abc import Awaitable, Callable
from typing import Any

import jsonpatch
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.names import CONVERSION_ANNOTATION, MANAGED_BY_WEBHOOK
from dra_bridge.translate.plan.pod_plan import Options, plan_pod
from tests.factories import make_pod
from tests.webhook.conftest import FakeAudit, FakeEnsurer, body, example, make_admission_review

Client = TestClient[web.Request, web.Application]
ClientFactory = Callable[[web.Application], Awaitable[Client]]


async def post(client: Client, review: Any, mode: str = "enforce") -> tuple[int, dict[str, Any]]:
    resp = await client.post(f"/mutate/{mode}", data=body(review), headers={"Content-Type": "application/json"})
    return resp.status, await resp.json()


def patch_of(answer: dict[str, Any]) -> list[dict[str, Any]]:
    resp = answer["response"]
    if "patch" not in resp:
        return []
    assert resp["patchType"] == "JSONPatch"
    ops: list[dict[str, Any]] = json.loads(base64.b64decode(resp["patch"]))
    return ops


@pytest.fixture
async def client(aiohttp_client: ClientFactory, app: web.Application) -> Client:
    return await aiohttp_client(app)


async def test_legacy_pod_is_patched_into_the_planned_pod_and_its_template_ensured(
    client: Client, ensurer: FakeEnsurer
) -> None:
    pod = example("01-pod-limits-only-toleration.yaml")
    review = make_admission_review(pod, uid="uid-1")
    status, answer = await post(client, review)
    assert status == 200
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    assert answer["response"]["uid"] == "uid-1" and answer["response"]["allowed"] is True
    plan = plan_pod(pod, load_catalog(), Options(managed_by=MANAGED_BY_WEBHOOK), "team-a")
    assert jsonpatch.apply_patch(pod, patch_of(answer)) == plan.pod
    assert [t["metadata"]["name"] for t in ensurer.calls[0][0]] == [plan.templates[0]["metadata"]["name"]]
    assert ensurer.calls[0][1] is False


async def test_patch_paths_escape_slashes_in_resource_names(client: Client) -> None:
    _, answer = await post(client, make_admission_review(make_pod(gpus=2)))
    paths = [op["path"] for op in patch_of(answer)]
    assert any("nvidia.com~1gpu" in p for p in paths) or any(p.endswith("/limits") for p in paths)
    assert all("nvidia.com/gpu" not in p for p in paths)


@pytest.mark.parametrize(
    "pod",
    [
        example("01-pod-limits-only-toleration.yaml"),
        make_pod(gpus="2"),
        make_pod(name=None, gpus=3, generate_name="trainer-7d9f-"),
        make_pod(gpus=1, nodeSelector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}),
        example("09-init-sidecar-app-each-with-gpu.yaml"),
        example("13-helm-two-mig-profiles-one-container.yaml", "Deployment")["spec"]["template"],
    ],
    ids=["example-01", "quoted-count", "generate-name", "gfd-selector", "init-sidecar-app-kept-legacy", "two-mig"],
)
async def test_every_patch_applied_to_the_original_gives_the_migrated_pod(client: Client, pod: dict[str, Any]) -> None:
    _, answer = await post(client, make_admission_review(pod))
    plan = plan_pod(pod, load_catalog(), Options(managed_by=MANAGED_BY_WEBHOOK), "team-a")
    assert jsonpatch.apply_patch(copy.deepcopy(pod), patch_of(answer)) == plan.pod
    assert bool(patch_of(answer)) == plan.changed


async def test_pod_with_only_generate_name_is_patched(client: Client, ensurer: FakeEnsurer) -> None:
    pod = make_pod(name=None, gpus=2, generate_name="web-5d8c7-", namespace="")
    status, answer = await post(client, make_admission_review(pod, namespace="team-b"))
    assert status == 200 and patch_of(answer)
    assert ensurer.calls[0][0][0]["metadata"]["namespace"] == "team-b"


async def test_reinvocation_on_our_own_output_is_a_no_op(client: Client) -> None:
    pod = make_pod(gpus=2)
    _, first = await post(client, make_admission_review(pod))
    migrated = jsonpatch.apply_patch(pod, patch_of(first))
    assert CONVERSION_ANNOTATION in migrated["metadata"]["annotations"]
    status, second = await post(client, make_admission_review(migrated))
    assert status == 200 and second["response"]["allowed"] is True
    assert "patch" not in second["response"] and "patchType" not in second["response"]


async def test_pod_without_device_requests_gets_no_patch(client: Client, ensurer: FakeEnsurer) -> None:
    pod = make_pod()
    pod["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1"}}
    _, answer = await post(client, make_admission_review(pod))
    assert "patch" not in answer["response"] and not ensurer.calls


async def test_already_dra_pod_is_left_alone(client: Client) -> None:
    dep = example("14-helm-already-dra-claim.yaml", "Deployment")
    pod = {"apiVersion": "v1", "kind": "Pod", **dep["spec"]["template"]}
    _, answer = await post(client, make_admission_review(pod))
    assert answer["response"]["allowed"] is True and "patch" not in answer["response"]


async def test_audit_mode_admits_unchanged_with_warnings_annotations_and_an_owner_event(
    client: Client, ensurer: FakeEnsurer, audit: FakeAudit
) -> None:
    pod = make_pod(name=None, gpus=2, generate_name="web-")
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8c7", "uid": "rs-uid", "controller": True}
    pod["metadata"]["ownerReferences"] = [owner]
    _, answer = await post(client, make_admission_review(pod), "audit")
    resp = answer["response"]
    assert resp["allowed"] is True and "patch" not in resp
    assert resp["warnings"][0].startswith("dra-bridge (audit): would convert nvidia.com/gpu")
    assert set(resp["auditAnnotations"]) == {"plan"} and len(resp["auditAnnotations"]["plan"]) <= 200
    assert not ensurer.calls
    assert audit.events and audit.events[0][1]["name"] == "web-5d8c7" and "would convert" in audit.events[0][2]


async def test_dry_run_request_is_patched_but_creates_no_template(client: Client, ensurer: FakeEnsurer) -> None:
    _, answer = await post(client, make_admission_review(make_pod(), dry_run=True))
    assert patch_of(answer)
    assert ensurer.calls[0][1] is True and not ensurer.created
    assert any("dry run" in w for w in answer["response"]["warnings"])


async def test_non_pod_object_is_allowed_unchanged_with_a_warning(client: Client) -> None:
    review = make_admission_review({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {}}, kind="Deployment")
    status, answer = await post(client, review)
    assert status == 200 and answer["response"]["allowed"] is True
    assert "patch" not in answer["response"] and "not a Pod" in answer["response"]["warnings"][0]


@pytest.mark.parametrize(
    "obj",
    [
        None,
        "a string",
        {"metadata": "x"},
        {"spec": {"containers": "nope"}},
        {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "many"}}}]}},
    ],
    ids=["null", "string", "bad-metadata", "bad-containers", "bad-quantity"],
)
async def test_odd_pods_are_allowed_unchanged(client: Client, obj: Any) -> None:
    status, answer = await post(client, make_admission_review(obj))
    assert status == 200 and answer["response"]["allowed"] is True and "patch" not in answer["response"]


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{not json", 400),
        (b"[]", 400),
        (
            json.dumps(
                {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "u"}}
            ).encode(),
            400,
        ),
        (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}).encode(), 400),
        (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(), 400),
    ],
    ids=["malformed-json", "not-an-object", "v1beta1", "missing-uid", "missing-request"],
)
async def test_bodies_that_are_not_reviews_get_a_json_error(client: Client, raw: bytes, code: int) -> None:
    resp = await client.post("/mutate/enforce", data=raw, headers={"Content-Type": "application/json"})
    assert resp.status == code
    assert "error" in await resp.json()


@pytest.mark.parametrize(
    "uid", [42, "", None, ["u"], {"u": 1}, True], ids=["int", "empty", "null", "list", "object", "bool"]
)
async def test_a_uid_that_is_not_a_non_empty_string_is_named_in_the_400(client: Client, uid: Any) -> None:
    review = make_admission_review(make_pod())
    review["request"]["uid"] = uid
    resp = await client.post("/mutate/enforce", data=body(review), headers={"Content-Type": "application/json"})
    assert resp.status == 400
    assert (await resp.json())["error"].startswith("request.uid must be a non-empty string, got ")


async def test_body_over_3_mib_is_refused_with_413(client: Client) -> None:
    pod = make_pod()
    pod["metadata"]["annotations"] = {"big": "x" * (3 * 1024 * 1024)}
    # a file-like body: aiohttp warns (ResourceWarning) on raw bytes this large
    resp = await client.post("/mutate/enforce", data=io.BytesIO(body(make_admission_review(pod))))
    assert resp.status == 413 and "error" in await resp.json()


async def test_template_failure_admits_unchanged_by_default(client: Client, ensurer: FakeEnsurer) -> None:
    ensurer.fail = "API server unreachable"
    status, answer = await post(client, make_admission_review(make_pod()))
    resp = answer["response"]
    assert status == 200 and resp["allowed"] is True and "patch" not in resp
    assert any("API server unreachable" in w for w in resp["warnings"])
    assert set(resp["auditAnnotations"]) == {"not-applied"}, "the audit log must not claim a conversion"
    assert "API server unreachable" in resp["auditAnnotations"]["not-applied"]
    metrics = await (await client.get("/metrics")).text()
    assert 'dra_webhook_errors_total{kind="template"} 1.0' in metrics
    assert 'dra_webhook_requests_total{mode="enforce",outcome="error-admitted"} 1.0' in metrics


async def test_daemonset_pod_stays_legacy_until_its_node_is_handed_over(client: Client, runtime: Any) -> None:
    pod = make_pod(name=None, gpus=1, generate_name="agent-")
    pod["metadata"]["ownerReferences"] = [
        {"kind": "DaemonSet", "name": "agent", "controller": True, "apiVersion": "apps/v1", "uid": "u"}
    ]
    pod["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]
            }
        }
    }
    _, answer = await post(client, make_admission_review(pod))
    assert "patch" not in answer["response"] and "n1" in answer["response"]["warnings"][0]
    runtime.node_mode = lambda name: "dra" if name == "n1" else None
    runtime._context = None
    _, answer = await post(client, make_admission_review(pod))
    assert patch_of(answer)


async def test_quota_on_the_legacy_resource_only_keeps_the_pod_legacy(client: Client, runtime: Any) -> None:
    runtime.quota_keys = lambda ns: frozenset({"requests.nvidia.com/gpu"}) if ns == "team-a" else frozenset()
    runtime._context = None
    _, answer = await post(client, make_admission_review(make_pod()))
    assert "patch" not in answer["response"] and "ResourceQuota" in answer["response"]["warnings"][0]
    runtime.quota_keys = lambda ns: frozenset(
        {"requests.nvidia.com/gpu", "nvidia-gpu.dra-bridge.io.deviceclass.resource.k8s.io/devices"}
    )
    runtime._context = None
    _, answer = await post(client, make_admission_review(make_pod()))
    assert patch_of(answer) and any("Pending" in w for w in answer["response"]["warnings"])


async def test_audit_of_a_pod_the_cluster_keeps_legacy_still_records_an_owner_event(
    client: Client, runtime: Any, audit: FakeAudit
) -> None:
    """MIGRATION.md step 1: each audited GPU pod's plan is an Event on its owner, also when a
    legacy-only ResourceQuota would keep it legacy (the warnings of a Deployment's pods go to
    the controller-manager, which nobody reads)."""
    runtime.quota_keys = lambda ns: frozenset({"requests.nvidia.com/gpu"})
    runtime._context = None
    pod = make_pod(name=None, generate_name="web-")
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8c7", "uid": "rs-uid", "controller": True}
    ]
    _, answer = await post(client, make_admission_review(pod), "audit")
    assert "patch" not in answer["response"] and "ResourceQuota" in answer["response"]["warnings"][0]
    assert set(answer["response"]["auditAnnotations"]) == {"kept-legacy"}
    ((namespace, owner, message),) = audit.events
    assert namespace == "team-a" and owner["name"] == "web-5d8c7", audit.events
    assert message.startswith(
        "dra-bridge audit: pod web-* stays legacy: (quota) a ResourceQuota limits requests.nvidia.com/gpu"
    ), message
    audit.events.clear()
    _, answer = await post(client, make_admission_review(pod, dry_run=True), "audit")
    assert not audit.events  # a dry run records nothing
    _, answer = await post(client, make_admission_review(pod), "enforce")
    assert not audit.events  # enforce answers with warnings only, as for converted pods


async def test_probes_and_metrics_answer(client: Client) -> None:
    assert (await client.get("/healthz")).status == 200
    ready = await client.get("/readyz")
    assert ready.status == 200 and (await ready.json())["ready"] is True
    await post(client, make_admission_review(make_pod()))
    text = await (await client.get("/metrics")).text()
    assert 'dra_webhook_requests_total{mode="enforce",outcome="patched"} 1.0' in text
    assert "dra_webhook_templates_created_total 1.0" in text
    assert "dra_webhook_request_seconds_bucket" in text
    # buckets up to the longest timeoutSeconds (30): the latency alert compares with the timeout
    assert 'dra_webhook_request_seconds_bucket{le="30.0",mode="enforce"} 1.0' in text


@pytest.mark.parametrize(
    "pod",
    [
        example("01-pod-limits-only-toleration.yaml"),
        make_pod(
            name=None, gpus=3, generate_name="g-", nodeSelector={"nvidia.com/gpu.product": "Tesla-T4", "zone": "a"}
        ),
        example("13-helm-two-mig-profiles-one-container.yaml", "Deployment")["spec"]["template"],
    ],
    ids=["example-01", "gfd-and-other-selector", "two-mig"],
)
def test_pruned_diff_equals_the_full_document_diff(pod: dict[str, Any]) -> None:
    from dra_bridge.webhook.patch import PatchMemo, diff

    migrated = plan_pod(pod, load_catalog(), Options(managed_by=MANAGED_BY_WEBHOOK), "team-a").pod
    full = jsonpatch.JsonPatch.from_diff(pod, migrated, optimization=False).patch
    memo = PatchMemo()
    assert list(diff(pod, migrated)) == full
    assert list(diff(pod, migrated, memo)) == full and (memo.hits, memo.misses) == (0, 1)
    assert list(diff(pod, migrated, memo)) == full and (memo.hits, memo.misses) == (1, 1)


def test_patch_memo_serves_pods_of_one_workload_and_keeps_workloads_apart() -> None:
    from dra_bridge.webhook.patch import PatchMemo, diff

    memo = PatchMemo(size=2)
    catalog, options = load_catalog(), Options(managed_by=MANAGED_BY_WEBHOOK)

    def replica(name: str, gpus: int, container: str = "cuda") -> tuple[dict[str, Any], dict[str, Any]]:
        pod = make_pod(name=name, gpus=gpus)
        pod["metadata"]["uid"] = f"uid-{name}"
        pod["spec"]["containers"][0]["name"] = container
        return pod, plan_pod(pod, catalog, options, "team-a").pod

    for name in ("web-1", "web-2", "web-3"):
        pod, migrated = replica(name, 2)
        assert jsonpatch.apply_patch(pod, diff(pod, migrated, memo)) == migrated
    assert (memo.hits, memo.misses) == (2, 1)
    for gpus, container in ((3, "cuda"), (2, "other"), (2, "cuda")):  # each differs in what changes
        pod, migrated = replica("x", gpus, container)
        assert jsonpatch.apply_patch(pod, diff(pod, migrated, memo)) == migrated
    assert (memo.hits, memo.misses) == (2, 4), "size 2: the first pair was forgotten"


def test_patch_memo_skips_large_pairs() -> None:
    from dra_bridge.webhook.patch import PatchMemo, diff

    memo = PatchMemo(max_key_chars=4096)
    pod = make_pod(name="big", tolerations=[{"key": f"k{i}", "operator": "Exists"} for i in range(500)])
    migrated = plan_pod(pod, load_catalog(), Options(managed_by=MANAGED_BY_WEBHOOK), "team-a").pod
    for _ in range(2):
        assert jsonpatch.apply_patch(pod, diff(pod, migrated, memo)) == migrated
    assert len(memo) == 0 and memo.hits == 0


async def test_each_admission_logs_one_structured_line(client: Client, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    caplog.set_level(logging.INFO, logger="dra_bridge.webhook.handler")
    await post(client, make_admission_review(make_pod(name=None, gpus=2, generate_name="web-"), uid="u-42"))
    lines = [r.getMessage() for r in caplog.records if r.name == "dra_bridge.webhook.handler"]
    assert len(lines) == 1
    assert all(
        f in lines[0]
        for f in (
            "uid=u-42",
            "namespace=team-a",
            "name=web-*",
            "mode=enforce",
            "outcome=patched",
            "translated=nvidia.com/gpu",
            "duration_ms=",
        )
    )


@pytest.mark.parametrize(
    "settings",
    [{}, {"keepLegacy": True}, {"hamiSlicing": "whole-devices"}],
    ids=["defaults", "keep-legacy", "hami-whole-devices"],
)
def test_no_warning_for_the_examples_is_clipped(settings: dict[str, Any]) -> None:
    """Warnings are clipped at MAX_WARNING_CHARS (the API server may cut longer ones): the
    findings the shipped examples produce must fit whole, advice included."""
    from pathlib import Path

    import yaml

    from dra_bridge.translate.plan.custom_resources import get_path as _get
    from dra_bridge.translate.plan.workloads import find_pod_templates
    from dra_bridge.translate.policy import parse_policy
    from dra_bridge.webhook.decision import Context, evaluate
    from dra_bridge.webhook.review import MAX_WARNING_CHARS

    ctx = Context(load_catalog(), parse_policy({"defaults": settings}, "test"), "resource.k8s.io/v1")
    seen = 0
    for path in sorted((Path(__file__).parents[1] / "data" / "examples").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            pods = [doc] if (doc or {}).get("kind") == "Pod" else [_get(doc, w) for w in find_pod_templates(doc or {})]
            for pod in pods:
                for mode in ("enforce", "audit"):
                    review = make_admission_review({"apiVersion": "v1", "kind": "Pod", **pod})
                    for w in evaluate(review["request"], mode, ctx).answer.warnings:
                        seen += 1
                        assert len(w) < MAX_WARNING_CHARS and not w.endswith("..."), (path.name, w)
    assert seen > 10


async def test_replicas_are_answered_from_the_patch_memo_and_counted(client: Client) -> None:
    answers = []
    for name in ("web-1", "web-2", "web-3"):
        pod = make_pod(name=name, gpus=2)
        pod["metadata"]["uid"] = f"uid-{name}"
        _, answer = await post(client, make_admission_review(pod))
        answers.append(answer["response"]["patch"])
    assert answers[0] == answers[1] == answers[2]
    text = await (await client.get("/metrics")).text()
    assert 'dra_webhook_patch_memo_total{result="hit"} 2.0' in text
    assert 'dra_webhook_patch_memo_total{result="miss"} 1.0' in text


def test_long_paths_are_shortened_so_the_advice_stays_whole() -> None:
    from dra_bridge.translate.findings import Finding
    from dra_bridge.webhook.decision import _warning
    from dra_bridge.webhook.review import MAX_WARNING_CHARS

    reason = (
        "HAMi memory slicing (percent per container) has no DRA equivalent: the pod stays legacy "
        "(policy hamiSlicing: whole-devices gives it whole devices)"
    )
    path = "spec.initContainers[12].resources.limits[example.vendor.io/gpumem-percentage-per-container]"
    text = _warning(Finding(path, "50", "unsupported", reason))
    assert len(text) <= MAX_WARNING_CHARS and text.endswith(reason) and "..." in text, text
    assert text.startswith("dra-bridge: spec.initCont") and "-per-container]: unsupported: " in text
    assert _warning(Finding(".", "", "kept-legacy", "kept")) == "dra-bridge: kept-legacy: kept"


async def test_zero_count_requests_are_removed_and_no_template_is_ensured(client: Client, ensurer: FakeEnsurer) -> None:
    pod = make_pod(gpus="0")
    _, answer = await post(client, make_admission_review(pod))
    patched = jsonpatch.apply_patch(pod, patch_of(answer))
    assert answer["response"]["allowed"] is True
    assert "nvidia.com/gpu" not in (patched["spec"]["containers"][0].get("resources") or {}).get("limits", {})
    assert "resourceClaims" not in patched["spec"] and not any(templates for templates, _ in ensurer.calls)
    assert answer["response"]["auditAnnotations"]["plan"] == "drop the zero-count requests of nvidia.com/gpu"


@pytest.mark.parametrize(
    "limits",
    [
        pytest.param({"nvidia.com/pgpu": 1}, id="unknown-accelerator"),
        pytest.param({"nvidia.com/gpu": 1, "volcano.sh/vgpu-number": 1}, id="known-beside-unknown"),
    ],
)
async def test_a_pod_with_an_accelerator_outside_the_catalog_is_admitted_unchanged_with_a_warning(
    client: Client, limits: dict[str, Any]
) -> None:
    pod = make_pod([{"name": "c", "image": "cuda", "resources": {"limits": limits}}])
    _, answer = await post(client, make_admission_review(pod))
    resp = answer["response"]
    assert resp["allowed"] is True and "patch" not in resp
    assert any("catalog does not know" in w for w in resp["warnings"])


async def test_other_extended_resources_stay_beside_the_converted_claim(client: Client) -> None:
    pod = make_pod([{"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": 1, "rdma/hca": 1}}}])
    _, answer = await post(client, make_admission_review(pod))
    migrated = jsonpatch.apply_patch(pod, patch_of(answer))
    assert migrated["spec"]["containers"][0]["resources"]["limits"] == {"rdma/hca": 1}
