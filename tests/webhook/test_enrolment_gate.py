"""The enrolment gate: templates and Events only for a namespace the chart's rule enrols on the
path being served, judged on the Namespace view (docs/design.md D28)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from dra_bridge.translate.enrolment import EnrolmentSettings
from dra_bridge.webhook.cluster import ClusterView
from dra_bridge.webhook.enrolment_gate import LabelsUnknown, gate
from dra_bridge.webhook.errors import WebhookConfigError
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.runtime import Runtime, watch_policy
from dra_bridge.webhook.server import make_app
from dra_bridge.webhook.settings import Settings
from tests.factories import make_pod
from tests.webhook.conftest import FakeAudit, FakeEnsurer, make_admission_review

Client = TestClient[web.Request, web.Application]
MODE, OPT_OUT = "dra-bridge.io/webhook", "dra-bridge.io/webhook-opt-out"
OWN = "gpu-system"
CHART = EnrolmentSettings(release_namespace=OWN)


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **labels}}}


def synced_view(*namespaces: dict[str, Any]) -> ClusterView:
    view = ClusterView()
    view.replace("Namespace", list(namespaces))
    return view


@pytest.mark.parametrize(
    ("labels", "settings", "paths"),
    [
        ({MODE: "enforce"}, CHART, {"enforce"}),
        ({MODE: "audit"}, CHART, {"audit"}),
        ({}, CHART, set()),
        ({MODE: "Enforce"}, CHART, set()),
        ({MODE: "enforce", OPT_OUT: ""}, CHART, set()),
        ({}, EnrolmentSettings(audit_all_namespaces=True), {"audit"}),
        ({OPT_OUT: "x"}, EnrolmentSettings(audit_all_namespaces=True), set()),
        ({MODE: "enforce"}, EnrolmentSettings(enforce=False), set()),
        ({"team/mode": "enforce"}, EnrolmentSettings(mode_label="team/mode"), {"enforce"}),
    ],
    ids=[
        "enforce",
        "audit",
        "unlabelled",
        "wrong-case",
        "opted-out",
        "all-audited",
        "all-but-opted-out",
        "enforce-off",
        "own-label",
    ],
)
def test_the_gate_lets_through_exactly_the_paths_the_rule_enrols(
    labels: dict[str, str], settings: EnrolmentSettings, paths: set[str]
) -> None:
    for mode in ("enforce", "audit"):
        verdict = gate("team-a", mode, labels, settings)
        assert verdict.enrolled is (mode in paths) and verdict.known, (mode, verdict)
        assert verdict.enrolled or f"not enrolled for /mutate/{mode}" in verdict.reason


def test_kube_system_and_the_webhooks_own_namespace_are_never_enrolled() -> None:
    for name in ("kube-system", OWN):
        for mode in ("enforce", "audit"):
            verdict = gate(
                name, mode, {MODE: mode}, EnrolmentSettings(audit_all_namespaces=True, release_namespace=OWN)
            )
            assert not verdict.enrolled and verdict.known


def test_an_unsynced_view_or_a_namespace_it_lacks_is_not_known() -> None:
    assert not gate("team-a", "enforce", LabelsUnknown("not listed yet"), CHART).known
    assert "not listed yet" in gate("team-a", "enforce", LabelsUnknown("not listed yet"), CHART).reason
    assert not gate("team-a", "enforce", None, CHART).known
    assert not synced_view().namespace_labels("team-a")
    assert isinstance(ClusterView().namespace_labels("team-a"), LabelsUnknown)


def test_the_namespace_view_follows_label_changes_and_deletion() -> None:
    view = synced_view(namespace("team-a", **{MODE: "audit"}))
    assert view.namespace_labels("team-a") == {"kubernetes.io/metadata.name": "team-a", MODE: "audit"}
    view.apply("Namespace", "MODIFIED", namespace("team-a", **{MODE: "enforce"}))
    assert view.namespace_labels("team-a") == {"kubernetes.io/metadata.name": "team-a", MODE: "enforce"}
    view.apply("Namespace", "DELETED", namespace("team-a"))
    assert view.namespace_labels("team-a") is None and view.status()["Namespace"] == "synced"


def owned(pod: dict[str, Any]) -> dict[str, Any]:
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u1", "controller": True}
    ]
    return pod


def gated_app(view: ClusterView, ensurer: FakeEnsurer, audit: FakeAudit, policy: Path | None = None) -> web.Application:
    runtime = Runtime(
        "resource.k8s.io/v1",
        policy=watch_policy(policy) if policy else None,
        require_tls=False,
        enrolment=CHART,
        namespace_labels=view.namespace_labels,
    )
    return make_app(runtime, Admitter(runtime.context, ensurer, runtime.metrics, audit))


async def post(client: Client, ns: str, mode: str) -> dict[str, Any]:
    review = make_admission_review(owned(make_pod(namespace=ns)), namespace=ns)
    resp = await client.post(f"/mutate/{mode}", data=json.dumps(review), headers={"Content-Type": "application/json"})
    assert resp.status == 200
    response: dict[str, Any] = (await resp.json())["response"]
    return response


async def test_templates_and_events_only_where_the_path_is_enrolled(aiohttp_client: Any) -> None:
    ensurer, audit = FakeEnsurer(), FakeAudit()
    view = synced_view(
        namespace("enforced", **{MODE: "enforce"}),
        namespace("audited", **{MODE: "audit"}),
        namespace("plain"),
        namespace("opted-out", **{MODE: "enforce", OPT_OUT: "true"}),
    )
    client: Client = await aiohttp_client(gated_app(view, ensurer, audit))
    assert "patch" in await post(client, "enforced", "enforce") and len(ensurer.calls) == 1
    await post(client, "audited", "audit")
    assert len(audit.events) == 1 and audit.events[0][0] == "audited"
    for ns, mode in [
        ("enforced", "audit"),
        ("audited", "enforce"),
        ("plain", "enforce"),
        ("plain", "audit"),
        ("opted-out", "enforce"),
        ("kube-system", "enforce"),
        ("made-up", "enforce"),
    ]:
        resp = await post(client, ns, mode)
        assert resp["allowed"] is True and "patch" not in resp, (ns, mode)
        if ns not in ("kube-system", "made-up"):
            assert any("not enrolled" in w for w in resp["warnings"]), (ns, mode, resp)
    assert len(ensurer.calls) == 1 and len(audit.events) == 1
    metrics = (await (await client.get("/metrics")).read()).decode()
    assert 'dra_webhook_requests_total{mode="enforce",outcome="not-enrolled"} 3.0' in metrics
    # by path: the alert on pods kept legacy watches the enforce path alone (docs/monitoring.md)
    assert 'dra_webhook_kept_legacy_total{mode="enforce",reason="not-enrolled"} 3.0' in metrics
    assert 'dra_webhook_kept_legacy_total{mode="audit",reason="not-enrolled"} 2.0' in metrics


@pytest.mark.parametrize("on_error", ["deny", "admit-unchanged"])
async def test_while_the_view_has_not_synced_on_error_applies(
    aiohttp_client: Any, tmp_path: Path, on_error: str
) -> None:
    ensurer, audit = FakeEnsurer(), FakeAudit()
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"defaults: {{onError: {on_error}}}\n")
    client: Client = await aiohttp_client(gated_app(ClusterView(), ensurer, audit, policy))
    enforce = await post(client, "team-a", "enforce")
    assert "patch" not in enforce
    if on_error == "deny":
        assert enforce["allowed"] is False and "not synced" in enforce["status"]["message"]
    else:
        assert enforce["allowed"] is True and any("cannot tell" in w for w in enforce["warnings"])
    audited = await post(client, "team-a", "audit")  # audit never refuses a pod
    assert audited["allowed"] is True and "patch" not in audited
    assert ensurer.calls == [] and audit.events == []
    metrics = (await (await client.get("/metrics")).read()).decode()
    assert 'dra_webhook_kept_legacy_total{mode="enforce",reason="namespace-view"} 1.0' in metrics
    assert 'dra_webhook_kept_legacy_total{mode="audit",reason="namespace-view"} 1.0' in metrics


def test_the_settings_give_the_rule_the_charts_values() -> None:
    settings = Settings.from_args(
        [
            "--tls-cert-file=c",
            "--tls-key-file=k",
            "--namespace=gpu-system",
            "--namespace-label=team.example/dra",
            "--opt-out-label=team.example/no-dra",
            "--paths=enforce",
            "--audit-all-namespaces=true",
        ],
        {},
    )
    assert settings.enrolment == EnrolmentSettings(
        mode_label="team.example/dra",
        opt_out_label="team.example/no-dra",
        audit=False,
        enforce=True,
        audit_all_namespaces=True,
        release_namespace="gpu-system",
    )
    assert Settings.from_args(["--tls-cert-file=c", "--tls-key-file=k", "--namespace=x"], {}).enrolment == (
        EnrolmentSettings(release_namespace="x")
    )


@pytest.mark.parametrize(
    ("flag", "named"),
    [
        ("--paths=enforce,mutate", "--paths"),
        ("--audit-all-namespaces=yes", "--audit-all-namespaces"),
        ("--namespace-label=a b", "--namespace-label"),
        ("--opt-out-label=", None),
    ],
    ids=["unknown-path", "not-a-boolean", "not-a-label-key", "empty-is-the-default"],
)
def test_a_bad_enrolment_flag_is_one_error_naming_it(flag: str, named: str | None) -> None:
    argv = ["--tls-cert-file=c", "--tls-key-file=k", flag]
    if named is None:
        assert Settings.from_args(argv, {}).opt_out_label == OPT_OUT
        return
    with pytest.raises(WebhookConfigError, match=named):
        Settings.from_args(argv, {})
