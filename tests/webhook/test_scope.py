"""Scopes the webhook leaves alone: policy ``convert: false`` for what a rule matches, and always
kube-system and the webhook's own namespace (defence in depth behind the registration)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from dra_bridge.translate.errors import PolicyError
from dra_bridge.translate.policy import Policy, Subject, load_policy
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.runtime import Runtime
from dra_bridge.webhook.server import make_app
from dra_bridge.webhook.settings import Settings
from tests.factories import make_pod
from tests.webhook.conftest import FakeEnsurer, body, make_admission_review

Client = TestClient[web.Request, web.Application]
ClientFactory = Callable[[web.Application], Awaitable[Client]]

OFF_RULES = """
rules:
  - name: legacy-namespaces
    match: {namespaces: ["legacy-*"]}
    convert: false
  - name: opted-out-pods
    match: {podLabels: {dra-bridge.io/skip: "true"}}
    convert: false
  - name: daemons
    match: {ownerKinds: [DaemonSet]}
    convert: false
  - name: batch-scheduler
    match: {schedulerNames: [volcano]}
    convert: false
"""


def _policy_runtime(text: str, *, exempt: frozenset[str] | None = None) -> Runtime:
    from dra_bridge.webhook.reload import Watched

    watched: Watched[Policy] = Watched(Path("policy.yaml"), load_policy, load_policy(text, "policy.yaml"))
    if exempt is None:
        return Runtime("resource.k8s.io/v1", policy=watched, require_tls=False)
    return Runtime("resource.k8s.io/v1", policy=watched, require_tls=False, exempt_namespaces=exempt)


async def _client(aiohttp_client: ClientFactory, runtime: Runtime, ensurer: FakeEnsurer) -> Client:
    return await aiohttp_client(make_app(runtime, Admitter(runtime.context, ensurer, runtime.metrics)))


async def _answer(client: Client, pod: dict[str, Any], namespace: str, mode: str = "enforce") -> dict[str, Any]:
    resp = await client.post(
        f"/mutate/{mode}",
        data=body(make_admission_review(pod, namespace=namespace)),
        headers={"Content-Type": "application/json"},
    )
    assert resp.status == 200
    answer: dict[str, Any] = (await resp.json())["response"]
    return answer


def test_a_rule_can_switch_conversion_off() -> None:
    policy = load_policy(OFF_RULES, "policy.yaml")
    assert policy.settings_for(Subject("legacy-a")).convert is False
    assert policy.settings_for(Subject("team-a")).convert is True
    assert policy.defaults.convert is True


@pytest.mark.parametrize(
    "text", ["defaults: {convert: 'no'}", "rules: [{match: {}, convert: 0}]"], ids=["defaults-string", "rule-number"]
)
def test_convert_must_be_a_boolean(text: str) -> None:
    key = "defaults.convert" if text.startswith("defaults") else "rules[0].convert"
    with pytest.raises(PolicyError, match=re.escape(f"policy.yaml: {key}: must be true or false")):
        load_policy(text, "policy.yaml")


@pytest.mark.parametrize(
    ("pod", "namespace"),
    [
        (make_pod(namespace="legacy-a"), "legacy-a"),
        (make_pod(), "team-a"),
        (make_pod(), "team-a"),
        (make_pod(schedulerName="volcano"), "team-a"),
    ],
    ids=["namespace-pattern", "pod-label", "owner-kind", "scheduler-name"],
)
@pytest.mark.parametrize("mode", ["enforce", "audit"])
async def test_pods_a_convert_false_rule_matches_are_admitted_untouched(
    aiohttp_client: ClientFactory, pod: dict[str, Any], namespace: str, mode: str, request: pytest.FixtureRequest
) -> None:
    case = request.node.callspec.id
    if "pod-label" in case:
        pod["metadata"]["labels"] = {"dra-bridge.io/skip": "true"}
    if "owner-kind" in case:
        pod["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "u", "controller": True}
        ]
    ensurer = FakeEnsurer()
    runtime = _policy_runtime(OFF_RULES)
    client = await _client(aiohttp_client, runtime, ensurer)
    answer = await _answer(client, pod, namespace, mode)
    assert answer["allowed"] is True and "patch" not in answer and "warnings" not in answer, answer
    assert "auditAnnotations" not in answer and ensurer.calls == []
    assert f'dra_webhook_requests_total{{mode="{mode}",outcome="off"}} 1.0' in runtime.metrics.render().decode()


async def test_a_pod_no_off_rule_matches_is_still_converted(aiohttp_client: ClientFactory) -> None:
    client = await _client(aiohttp_client, _policy_runtime(OFF_RULES), FakeEnsurer())
    assert "patch" in await _answer(client, make_pod(), "team-a")


async def test_conversion_can_be_opt_in_with_defaults_off(aiohttp_client: ClientFactory) -> None:
    text = "defaults: {convert: false}\nrules: [{name: pilot, match: {namespaces: [pilot]}, convert: true}]"
    client = await _client(aiohttp_client, _policy_runtime(text), FakeEnsurer())
    assert "patch" in await _answer(client, make_pod(namespace="pilot"), "pilot")
    assert "patch" not in await _answer(client, make_pod(), "team-a")


@pytest.mark.parametrize("namespace", ["kube-system", "gpu-system"], ids=["kube-system", "own-namespace"])
async def test_kube_system_and_the_webhooks_own_namespace_are_never_converted(
    aiohttp_client: ClientFactory, namespace: str
) -> None:
    ensurer = FakeEnsurer()
    runtime = _policy_runtime(
        "rules: [{name: all, match: {}, convert: true}]", exempt=frozenset({"kube-system", "gpu-system"})
    )
    client = await _client(aiohttp_client, runtime, ensurer)
    answer = await _answer(client, make_pod(namespace=namespace), namespace)
    assert "patch" not in answer and "warnings" not in answer and ensurer.calls == []
    assert "patch" in await _answer(client, make_pod(), "team-a")


async def test_kube_system_is_left_alone_by_default(aiohttp_client: ClientFactory) -> None:
    runtime = Runtime("resource.k8s.io/v1", require_tls=False)
    client = await _client(aiohttp_client, runtime, FakeEnsurer())
    assert "patch" not in await _answer(client, make_pod(namespace="kube-system"), "kube-system")


def test_the_own_namespace_comes_from_the_flag_else_the_service_account_else_dra_bridge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dra_bridge.webhook.settings as settings_module

    pair = ["--tls-cert-file", "c", "--tls-key-file", "k"]
    monkeypatch.setattr(settings_module, "SERVICE_ACCOUNT_NAMESPACE", tmp_path / "missing")
    assert Settings.from_args(pair, {}).namespace == "dra-bridge"
    (tmp_path / "namespace").write_text("gpu-system\n")
    monkeypatch.setattr(settings_module, "SERVICE_ACCOUNT_NAMESPACE", tmp_path / "namespace")
    assert Settings.from_args(pair, {}).namespace == "gpu-system"
    assert Settings.from_args(pair, {"DRA_WEBHOOK_NAMESPACE": "env-ns"}).namespace == "env-ns"
    assert Settings.from_args([*pair, "--namespace", "flag-ns"], {}).namespace == "flag-ns"
    assert Settings.from_args(pair, {}).exempt_namespaces == frozenset({"kube-system", "gpu-system"})
