"""The chart renders and lints with both pinned Helm versions over every ``ci/*-values.yaml``,
and every object of a built-in kind validates against its Kubernetes version's schema.

kubernetes-validate strict: an unknown field, a wrong type or a missing required field in
any rendered object fails. Kinds that are not built in (cert-manager's) are not validated;
:data:`NOT_VALIDATED` names them.
"""

from __future__ import annotations

import functools
from pathlib import Path

import kubernetes_validate
import pytest

from tests.chart.render import CHART, CI_VALUES, HelmFailed, Obj, helm, helm_binaries, kube_version_of, template

NOT_VALIDATED = {"cert-manager.io/v1": {"Certificate", "Issuer"}}
"""Custom kinds the chart renders: no Kubernetes schema exists for them."""

VALUES_IDS = [p.name.removesuffix("-values.yaml") for p in CI_VALUES]


@functools.cache
def rendered(major: str, values: Path) -> list[Obj]:
    return template(helm_binaries()[major], values)


def test_the_ci_values_files_cover_the_issue_s_cases() -> None:
    assert set(VALUES_IDS) >= {"defaults", "cert-manager", "existing-secret", "agent-off", "enforce", "kube-1.32"}


@pytest.mark.parametrize("major", ["4", "3"])
@pytest.mark.parametrize("values", CI_VALUES, ids=VALUES_IDS)
def test_helm_lint_strict(major: str, values: Path) -> None:
    out = helm(
        helm_binaries()[major],
        "lint",
        "--strict",
        str(CHART),
        "--values",
        str(values),
        "--kube-version",
        kube_version_of(values),
    )
    assert "0 chart(s) failed" in out


@pytest.mark.parametrize("major", ["4", "3"])
@pytest.mark.parametrize("values", CI_VALUES, ids=VALUES_IDS)
def test_every_built_in_object_validates_strictly(major: str, values: Path) -> None:
    objs = rendered(major, values)
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


def test_helm_3_and_helm_4_render_the_same_objects() -> None:
    # Generated certificates differ between renders: all but those. The order differs too: Helm 3
    # does not know the webhook configuration's kind and sorts it among the unknown ones.
    def key(obj: Obj) -> str:
        return f"{obj['kind']}/{obj['metadata']['name']}"

    for values in CI_VALUES:
        four, three = (sorted(_without_generated(rendered(m, values)), key=key) for m in ("4", "3"))
        assert four == three, values.name


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
    kinds = {(o["apiVersion"], o["kind"]) for v in CI_VALUES for o in rendered("4", v)}
    custom = {k for k in kinds if k[0].startswith("cert-manager.io/")}
    assert custom == {("cert-manager.io/v1", "Certificate")}
    assert all(kind in NOT_VALIDATED[api] for api, kind in custom)


def test_an_unknown_value_is_refused_by_the_schema() -> None:
    with pytest.raises(HelmFailed, match=r"webhok|additional properties|additionalProperties"):
        template(helm_binaries()["4"], None, "--set", "webhok.replicas=3")
    with pytest.raises(HelmFailed, match="failurePolicy"):
        template(helm_binaries()["4"], None, "--set", "webhook.enforce.failurePolicy=Sometimes")


@pytest.mark.parametrize("name", ["dra", "dra-bridge"], ids=["short-fullname", "default"])
def test_no_pod_gets_service_link_variables(name: str) -> None:
    # a Service named <x>-webhook makes the kubelet inject <X>_WEBHOOK_PORT=tcp://...: with
    # fullnameOverride=dra that is the webhook's DRA_WEBHOOK_PORT setting, and it would not start
    objs = template(
        helm_binaries(("4",))["4"], CHART / "ci" / "defaults-values.yaml", "--set", f"fullnameOverride={name}"
    )
    pods = {o["kind"]: o["spec"]["template"]["spec"] for o in objs if o["kind"] in ("Deployment", "DaemonSet")}
    assert set(pods) == {"Deployment", "DaemonSet"}
    assert {kind: spec.get("enableServiceLinks") for kind, spec in pods.items()} == {
        "Deployment": False,
        "DaemonSet": False,
    }
