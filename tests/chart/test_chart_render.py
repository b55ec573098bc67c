"""The chart lints with the pinned Helm 4 over every ``ci/*-values.yaml``, every object of a
built-in kind Helm 4 renders validates against its Kubernetes version's schema, and Helm 3
renders the same objects as Helm 4 in every scenario the tests render (render.SCENARIOS; a
scenario Helm 4 refuses, Helm 3 refuses too). Helm 3 is thereby checked without running each
validation twice.

kubernetes-validate strict: an unknown field, a wrong type or a missing required field in
any rendered object fails. Kinds that are not built in (cert-manager's) are not validated;
:data:`NOT_VALIDATED` names them.
"""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest

from tests.chart.render import (
    CHART,
    CI_VALUES,
    SCENARIOS,
    HelmFailed,
    Obj,
    Scenario,
    helm,
    helm_binaries,
    kube_version_of,
    render,
)

NOT_VALIDATED = {
    "cert-manager.io/v1": {"Certificate", "Issuer"},
    "monitoring.coreos.com/v1": {"ServiceMonitor", "PodMonitor", "PrometheusRule"},
}
"""Custom kinds the chart renders: no Kubernetes schema exists for them (the operator's CRDs
check the monitoring ones: tests/e2e/test_monitoring_e2e.py)."""

VALUES_IDS = [p.name.removesuffix("-values.yaml") for p in CI_VALUES]


def test_the_ci_values_files_cover_the_issue_s_cases() -> None:
    assert set(VALUES_IDS) >= {"defaults", "cert-manager", "existing-secret", "agent-off", "enforce", "kube-1.32"}


@pytest.mark.parametrize("values", CI_VALUES, ids=VALUES_IDS)
def test_helm_lint_strict(values: Path) -> None:
    out = helm(
        helm_binaries(("4",))["4"],
        "lint",
        "--strict",
        str(CHART),
        "--values",
        str(values),
        "--kube-version",
        kube_version_of(values),
    )
    assert "0 chart(s) failed" in out


@pytest.mark.parametrize("values", CI_VALUES, ids=VALUES_IDS)
def test_every_built_in_object_validates_strictly(values: Path) -> None:
    objs = render(values.name.removesuffix("-values.yaml"))
    assert objs
    minor = ".".join(kube_version_of(values).split(".")[:2])
    for obj in objs:
        if obj["kind"] in NOT_VALIDATED.get(obj["apiVersion"], set()):
            continue
        try:
            kubernetes_validate.validate(obj, minor, strict=True)
        except kubernetes_validate.ValidationError as err:
            pytest.fail(
                f"{values.name}: {obj['kind']} {obj['metadata']['name']}: {err.message} at "
                f"{'.'.join(map(str, err.path))}"
            )


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_helm_3_renders_the_objects_helm_4_renders(scenario: Scenario) -> None:
    # Generated certificates differ between renders: all but those. The order differs too: Helm 3
    # does not know the webhook configuration's kind and sorts it among the unknown ones.
    three = helm_binaries(("3",))["3"]
    try:
        four = render(scenario.values, *scenario.extra, kube_version=scenario.kube_version)
    except HelmFailed:
        with pytest.raises(HelmFailed):
            scenario.template(three)
        return
    by_four, by_three = (_by_name(_without_generated(objs)) for objs in (four, scenario.template(three)))
    assert sorted(by_three) == sorted(by_four)
    for name, obj in by_four.items():
        assert by_three[name] == obj, name


def test_a_render_outside_the_scenarios_is_refused() -> None:
    with pytest.raises(AssertionError, match="SCENARIOS"):
        render("defaults", "--set", "webhook.replicas=5")


def _by_name(objs: list[Obj]) -> dict[str, Obj]:
    out = {
        f"{o['apiVersion']} {o['kind']} {o['metadata'].get('namespace', '')}/{o['metadata']['name']}": o for o in objs
    }
    assert len(out) == len(objs), "two objects of one kind and name"
    return out


def _without_generated(objs: list[Obj]) -> list[Obj]:
    out = []
    for obj in objs:
        if obj["kind"] == "Secret":
            continue
        if obj["kind"] == "MutatingWebhookConfiguration":
            obj = {
                **obj,
                "webhooks": [{**w, "clientConfig": {**w["clientConfig"], "caBundle": None}} for w in obj["webhooks"]],
            }
        out.append(obj)
    return out


def test_only_the_named_custom_kinds_are_rendered() -> None:
    kinds = {(o["apiVersion"], o["kind"]) for v in VALUES_IDS for o in render(v)}
    custom = {k for k in kinds if k[0].startswith(("cert-manager.io/", "monitoring.coreos.com/"))}
    assert custom == {
        ("cert-manager.io/v1", "Certificate"),
        *(("monitoring.coreos.com/v1", kind) for kind in ("ServiceMonitor", "PodMonitor", "PrometheusRule")),
    }
    assert all(kind in NOT_VALIDATED[api] for api, kind in custom)


def test_an_unknown_value_is_refused_by_the_schema() -> None:
    with pytest.raises(HelmFailed, match=r"webhok|additional properties|additionalProperties"):
        render(None, "--set", "webhok.replicas=3")
    with pytest.raises(HelmFailed, match="failurePolicy"):
        render(None, "--set", "webhook.enforce.failurePolicy=Sometimes")


@pytest.mark.parametrize("name", ["dra", "dra-bridge"], ids=["short-fullname", "default"])
def test_no_pod_gets_service_link_variables(name: str) -> None:
    # a Service named <x>-webhook makes the kubelet inject <X>_WEBHOOK_PORT=tcp://...: with
    # fullnameOverride=dra that is the webhook's DRA_WEBHOOK_PORT setting, and it would not start
    objs = render("defaults", "--set", f"fullnameOverride={name}")
    pods = {o["kind"]: o["spec"]["template"]["spec"] for o in objs if o["kind"] in ("Deployment", "DaemonSet")}
    assert set(pods) == {"Deployment", "DaemonSet"}
    assert {kind: spec.get("enableServiceLinks") for kind, spec in pods.items()} == {
        "Deployment": False,
        "DaemonSet": False,
    }
