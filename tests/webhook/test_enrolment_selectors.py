"""The enrolment gate knows the chart's extra namespaceSelector terms and its objectSelector
(``--namespace-selector``, ``--object-selector``): it refuses to act where the registration would
never have sent the pod (docs/design.md D28)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from dra_bridge.translate.enrolment import EnrolmentSettings
from dra_bridge.translate.label_selector import LabelSelector, Requirement
from dra_bridge.webhook.cli import main
from dra_bridge.webhook.cluster import ClusterView
from dra_bridge.webhook.enrolment_gate import gate
from dra_bridge.webhook.errors import WebhookConfigError
from dra_bridge.webhook.handler import Admitter
from dra_bridge.webhook.runtime import Runtime
from dra_bridge.webhook.server import make_app
from dra_bridge.webhook.settings import Settings
from tests.factories import make_pod
from tests.webhook.conftest import FakeAudit, FakeEnsurer, make_admission_review

Client = TestClient[web.Request, web.Application]
MODE = "dra-bridge.io/webhook"
CERTS = ["--tls-cert-file=c", "--tls-key-file=k", "--namespace=gpu-system"]
TEAMS = '{"matchExpressions": [{"key": "team", "operator": "In", "values": ["ml"]}]}'
GPU_PODS = '{"matchLabels": {"gpu": "yes"}}'
SELECTED = EnrolmentSettings(
    release_namespace="gpu-system",
    namespace_selector=LabelSelector((), (Requirement("team", "In", ("ml",)),)),
    object_selector=LabelSelector((("gpu", "yes"),)),
)


def test_the_selector_flags_and_their_twins_reach_the_rule() -> None:
    flags = Settings.from_args([*CERTS, f"--namespace-selector={TEAMS}", f"--object-selector={GPU_PODS}"], {})
    assert flags.enrolment == SELECTED
    env = {"DRA_WEBHOOK_NAMESPACE_SELECTOR": TEAMS, "DRA_WEBHOOK_OBJECT_SELECTOR": GPU_PODS}
    assert Settings.from_args(CERTS, env).enrolment == SELECTED
    assert Settings.from_args([*CERTS, "--namespace-selector={}", "--object-selector="], {}).enrolment == (
        EnrolmentSettings(release_namespace="gpu-system")
    )


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("{team: ml}", "not JSON"),
        ('["team"]', "not a label selector"),
        ('{"matchLabel": {"a": "b"}}', "unknown field 'matchLabel'"),
        ('{"matchLabels": {"a": 1}}', "matchLabels"),
        ('{"matchExpressions": [{"key": "a", "operator": "Has"}]}', "unknown operator 'Has'"),
        ('{"matchExpressions": [{"key": "a", "operator": "In"}]}', "In needs values"),
        ('{"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}', "Exists takes no values"),
        ('{"matchExpressions": [{"operator": "Exists"}]}', "needs a key"),
    ],
    ids=[
        "not-json",
        "not-an-object",
        "unknown-field",
        "value-not-a-string",
        "operator",
        "in-empty",
        "exists-values",
        "no-key",
    ],
)
@pytest.mark.parametrize("flag", ["--namespace-selector", "--object-selector"])
def test_a_bad_selector_is_one_line_naming_the_flag_and_exit_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str, value: str, says: str
) -> None:
    with pytest.raises(WebhookConfigError, match=flag):
        Settings.from_args([*CERTS, f"{flag}={value}"], {})
    pem = tmp_path / "x.pem"
    pem.write_text("")
    assert main([f"--tls-cert-file={pem}", f"--tls-key-file={pem}", f"{flag}={value}"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and flag in err and says in err and "Traceback" not in err, err


def test_a_namespace_the_extra_terms_exclude_is_not_enrolled() -> None:
    ml, web_team = {MODE: "enforce", "team": "ml"}, {MODE: "enforce", "team": "web"}
    assert gate("team-a", "enforce", ml, SELECTED, {"gpu": "yes"}).enrolled
    verdict = gate("team-b", "enforce", web_team, SELECTED, {"gpu": "yes"})
    assert not verdict.enrolled and verdict.known and "namespaceSelector" in verdict.reason


def test_a_pod_the_object_selector_excludes_is_not_enrolled() -> None:
    ml = {MODE: "enforce", "team": "ml"}
    verdict = gate("team-a", "enforce", ml, SELECTED, {"gpu": "no"})
    assert not verdict.enrolled and verdict.known and "objectSelector" in verdict.reason
    assert not gate("team-a", "enforce", ml, SELECTED, {}).enrolled


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **labels}}}


async def post(client: Client, ns: str, labels: dict[str, str]) -> dict[str, Any]:
    pod = make_pod(namespace=ns)
    pod["metadata"]["labels"] = labels
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u1", "controller": True}
    ]
    review = make_admission_review(pod, namespace=ns)
    resp = await client.post("/mutate/enforce", data=json.dumps(review), headers={"Content-Type": "application/json"})
    assert resp.status == 200
    response: dict[str, Any] = (await resp.json())["response"]
    return response


async def test_the_webhook_judges_the_reviews_pod_labels_and_the_extra_terms(aiohttp_client: Any) -> None:
    ensurer, audit = FakeEnsurer(), FakeAudit()
    view = ClusterView()
    view.replace(
        "Namespace", [namespace("ml", **{MODE: "enforce", "team": "ml"}), namespace("web", **{MODE: "enforce"})]
    )
    runtime = Runtime(
        "resource.k8s.io/v1", require_tls=False, enrolment=SELECTED, namespace_labels=view.namespace_labels
    )
    client: Client = await aiohttp_client(make_app(runtime, Admitter(runtime.context, ensurer, runtime.metrics, audit)))
    assert "patch" in await post(client, "ml", {"gpu": "yes"}) and len(ensurer.calls) == 1
    for ns, labels in [("ml", {"gpu": "no"}), ("web", {"gpu": "yes"})]:
        resp = await post(client, ns, labels)
        assert resp["allowed"] is True and "patch" not in resp, (ns, labels)
        assert any("not enrolled" in w for w in resp["warnings"]), (ns, labels, resp)
    assert len(ensurer.calls) == 1
