"""Policy: validation naming the key, rule matching, hot reload keeping the last good file."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from dra_bridge.translate.errors import PolicyError
from dra_bridge.translate.plan.alignment import Alignment
from dra_bridge.translate.policy import Policy, Subject, load_policy
from dra_bridge.webhook.errors import WebhookConfigError
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.runtime import Runtime, watch_policy
from dra_bridge.webhook.server import make_app
from tests.factories import make_pod
from tests.webhook.conftest import FakeEnsurer, body, make_admission_review

Client = TestClient[web.Request, web.Application]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("defaults: {onError: maybe}", "defaults.onError"),
        ("defaults: {keepLegacy: 'yes'}", "defaults.keepLegacy"),
        ("defaults: {hamiSlicing: halves}", "defaults.hamiSlicing"),
        ("defaults: {failRequestsGreaterThanOne: 1}", "defaults.failRequestsGreaterThanOne"),
        ("defaults: {mode: enforce}", "defaults.mode"),
        ("defaults: {alignment: socket}", "defaults.alignment"),
        ("rules: [{match: {}, alignmentScope: node}]", "rules[0].alignmentScope"),
        ("rules: [{name: a}]", "rules[0].match"),
        ("rules: [{match: {namespace: [x]}}]", "rules[0].match.namespace"),
        ("rules: [{match: {podLabels: {a: 1}}}]", "rules[0].match.podLabels"),
        ("rules: [{match: {}, deferToKEP5004: 3}]", "rules[0].deferToKEP5004"),
        ("rules: {}", "rules"),
        ("defaults: {draSchedulers: volcano}", "defaults.draSchedulers"),
        ("rules: [{match: {}, draSchedulers: ['']}]", "rules[0].draSchedulers"),
        ("defaults: {draSchedulers: [' ']}", "defaults.draSchedulers"),
        ("defaults: {keepLegacy: true, keepLegacy: false}", "not valid YAML"),
        ("kind: Policy", "kind"),
        ("apiVersion: policy.dra-bridge.io/v2", "apiVersion"),
        ("extra: 1", "extra"),
        ("[1, 2]", "(top level)"),
        ("defaults: [", "not valid YAML"),
    ],
    ids=lambda v: v if len(v) < 30 else None,
)
def test_invalid_policy_is_refused_naming_the_key(text: str, key: str) -> None:
    with pytest.raises(PolicyError, match=re.escape(f"policy.yaml: {key}")):
        load_policy(text, "policy.yaml")


def test_a_policy_nesting_deeper_than_the_limit_is_refused_naming_the_key() -> None:
    text = "rules: [{match: {namespaces: " + "[" * 30 + "]" * 30 + "}}]"
    with pytest.raises(PolicyError, match=r"policy.yaml: rules\[0\]\.match\.namespaces(\[0\])+: nests deeper than 20"):
        load_policy(text, "policy.yaml")


def test_first_matching_rule_overrides_the_defaults() -> None:
    policy = load_policy(
        """
defaults: {onError: deny}
rules:
  - name: ml-jobs
    match: {namespaces: ["ml-*"], ownerKinds: [Job]}
    keepLegacy: true
  - name: custom-scheduler
    match: {schedulerNames: [volcano]}
    hamiSlicing: whole-devices
    failRequestsGreaterThanOne: true
    alignment: numa
    alignmentScope: pod
  - name: labelled
    match: {podLabels: {tier: gpu}}
    onError: admit-unchanged
""",
        "p",
    )
    job = policy.settings_for(Subject("ml-train", {}, "Job"))
    assert (job.rule, job.keep_legacy_partial, job.on_error) == ("ml-jobs", True, "deny")
    assert policy.settings_for(Subject("ml-train", {}, "ReplicaSet")).rule == ""
    assert policy.settings_for(Subject("x", {}, "", "volcano")).hami_slicing == "whole-devices"
    volcano = policy.settings_for(Subject("x", {}, "", "volcano")).plan_options("resource.k8s.io/v1", {})
    assert volcano.fail_requests_greater_than_one is True
    assert volcano.topology == Alignment("numa", "pod")
    assert Policy().settings_for(Subject("x")).plan_options("resource.k8s.io/v1", {}).topology == Alignment()
    assert (
        Policy().settings_for(Subject("x")).plan_options("resource.k8s.io/v1", {}).fail_requests_greater_than_one
        is False
    )
    assert policy.settings_for(Subject("x", {"tier": "gpu"})).on_error == "admit-unchanged"
    assert policy.settings_for(Subject("x", {"tier": "cpu"})).on_error == "deny"
    assert Policy().settings_for(Subject("x")).on_error == "admit-unchanged"


def test_a_bad_new_file_keeps_the_last_good_policy_and_says_why(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("defaults: {onError: deny}\n")
    runtime = Runtime("resource.k8s.io/v1", policy=watch_policy(path), require_tls=False)
    assert runtime.context().policy.defaults.on_error == "deny"
    path.write_text("defaults: {onError: sometimes}\n")
    runtime.check_files()
    assert runtime.context().policy.defaults.on_error == "deny"
    ready, detail = runtime.readiness()
    assert ready is True and "defaults.onError" in detail["policy"]
    assert detail["policy"].count(str(path)) == 1, detail["policy"]
    assert 'dra_webhook_config_reload_failures_total{file="policy"} 1.0' in runtime.metrics.render().decode()
    assert 'dra_webhook_config_valid{file="policy"} 0.0' in runtime.metrics.render().decode()
    path.write_text("defaults: {onError: admit-unchanged}\n")
    runtime.check_files()
    assert runtime.context().policy.defaults.on_error == "admit-unchanged"
    assert "refused" not in runtime.readiness()[1]["policy"]


def test_a_strict_watch_of_a_bad_policy_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("rules: 3\n")
    with pytest.raises(WebhookConfigError, match="rules: must be a list"):
        watch_policy(path)


MakeClient = Callable[[web.Application], Awaitable[Client]]


async def policy_client(
    aiohttp_client: MakeClient, tmp_path: Path, policy: str, ensurer: FakeEnsurer | None = None, **runtime: Any
) -> Client:
    """A test client of the webhook app serving ``policy`` (YAML text) from a watched file."""
    path = tmp_path / "policy.yaml"
    path.write_text(policy)
    rt = Runtime("resource.k8s.io/v1", policy=watch_policy(path), require_tls=False, **runtime)
    return await aiohttp_client(make_app(rt, Admitter(rt.context, ensurer or FakeEnsurer(), rt.metrics)))


async def enforce(client: Client, pod: dict[str, Any], namespace: str = "team-a") -> dict[str, Any]:
    """The AdmissionReview response to ``pod`` on /mutate/enforce."""
    resp = await client.post("/mutate/enforce", data=body(make_admission_review(pod, namespace=namespace)))
    assert resp.status == 200
    answer: dict[str, Any] = (await resp.json())["response"]
    return answer


async def test_on_error_deny_refuses_the_pod_with_a_clear_message(aiohttp_client: MakeClient, tmp_path: Path) -> None:
    ensurer = FakeEnsurer()
    ensurer.fail = "forbidden by RBAC"
    client = await policy_client(aiohttp_client, tmp_path, "defaults: {onError: deny}\n", ensurer)
    answer = await enforce(client, make_pod())
    assert answer["allowed"] is False and "patch" not in answer
    assert answer["status"]["code"] == 403 and "forbidden by RBAC" in answer["status"]["message"]


async def test_keep_legacy_rule_leaves_partial_translations_alone(aiohttp_client: MakeClient, tmp_path: Path) -> None:
    client = await policy_client(
        aiohttp_client, tmp_path, "rules: [{name: strict, match: {namespaces: [team-a]}, keepLegacy: true}]\n"
    )
    pod = make_pod(priorityClassName="high")  # priority makes the translation partial
    assert "patch" not in await enforce(client, pod)
    assert "patch" in await enforce(client, pod, "team-b")


async def test_defer_to_kep5004_leaves_count_only_pods_to_the_serving_class(
    aiohttp_client: MakeClient, tmp_path: Path
) -> None:
    client = await policy_client(
        aiohttp_client,
        tmp_path,
        "rules: [{name: kep, match: {namespaces: [team-a]}, deferToKEP5004: true}]\n",
        kep5004=lambda: {"nvidia.com/gpu": "gpu.nvidia.com"},
    )
    assert "patch" not in await enforce(client, make_pod())
    assert "patch" in await enforce(client, make_pod(), "team-b")


async def test_ignore_legacy_quota_converts_with_a_warning(aiohttp_client: MakeClient, tmp_path: Path) -> None:
    client = await policy_client(
        aiohttp_client,
        tmp_path,
        "defaults: {ignoreLegacyQuota: true}\n",
        quota_keys=lambda _ns: frozenset({"requests.nvidia.com/gpu"}),
    )
    answer = await enforce(client, make_pod())
    assert "patch" in answer and any("ignoreLegacyQuota" in w for w in answer["warnings"])


async def test_dra_schedulers_lets_pods_of_a_declared_scheduler_convert(
    aiohttp_client: MakeClient, tmp_path: Path
) -> None:
    client = await policy_client(
        aiohttp_client, tmp_path, "rules: [{name: batch, match: {namespaces: [team-a]}, draSchedulers: [volcano]}]\n"
    )
    pod = make_pod(schedulerName="volcano")
    assert "patch" in await enforce(client, pod)
    answer = await enforce(client, pod, "team-b")
    assert "patch" not in answer
    assert any(
        "'volcano'" in w and "policy draSchedulers" in w and "--dra-scheduler" not in w for w in answer["warnings"]
    ), answer["warnings"]


async def test_an_alignment_rule_ensures_templates_with_the_constraint(
    aiohttp_client: MakeClient, tmp_path: Path
) -> None:
    ensurer = FakeEnsurer()
    client = await policy_client(
        aiohttp_client, tmp_path, "rules: [{name: training, match: {namespaces: [team-a]}, alignment: numa}]\n", ensurer
    )
    assert "patch" in await enforce(client, make_pod(gpus=2))
    assert "patch" in await enforce(client, make_pod(gpus=2), "team-b")
    aligned, plain = (calls[0][0]["spec"]["spec"]["devices"] for calls in ensurer.calls)
    assert aligned["constraints"] == [{"requests": ["main-gpu"], "matchAttribute": "resource.kubernetes.io/numaNode"}]
    assert "constraints" not in plain
