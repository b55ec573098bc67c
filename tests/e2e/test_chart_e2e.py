"""The chart against the real API server of each version CI builds: `helm install` of the
rendered chart is accepted object by object (matchConditions compiled, the
ValidatingAdmissionPolicies' CEL checked), the registration's namespaceSelector and
matchConditions decide which pods reach the webhook, `helm upgrade` keeps the self-signed
pair, and `helm uninstall` leaves no webhook configuration or policy behind.

No node runs the webhook here (the real-node e2e installs it with its image), so an enforced
GPU pod meets the `Fail` policy: the API server's refusal proves it called the webhook; a pod
it lets through proves it did not. Pods are created with dryRun=All (webhooks are still
called: sideEffects NoneOnDryRun)."""

from __future__ import annotations

import base64
import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_bridge.kube.errors import KubeError
from tests.chart.render import CHART, CI_VALUES, REQUIRED, Obj, helm, helm_binaries, template
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubeapi import KubeClient, api_path, create_namespace

pytestmark = pytest.mark.e2e

ADMISSION = "/apis/admissionregistration.k8s.io/v1"


def _paths(obj: Obj) -> str:
    group_version = obj["apiVersion"]
    plural = {
        "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
        "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
        "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
        "DeviceClass": "deviceclasses",
    }[obj["kind"]]
    return f"/apis/{group_version}/{plural}"


def _kube_version(cp: ControlPlane) -> str:
    return cp.version.lstrip("v").split("-")[0]


@pytest.mark.server_version
@pytest.mark.parametrize("values", CI_VALUES, ids=[p.name.removesuffix("-values.yaml") for p in CI_VALUES])
def test_rendered_admission_objects_are_accepted_by_the_api_server(
    control_plane: ControlPlane, kube: KubeClient, values: Path
) -> None:
    if "kube-version" in values.read_text():
        pytest.skip("rendered for another Kubernetes version than this control plane's")
    objs = template(helm_binaries(("4",))["4"], values, kube_version=_kube_version(control_plane))
    checked = [
        o
        for o in objs
        if o["kind"]
        in (
            "MutatingWebhookConfiguration",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
            "DeviceClass",
        )
    ]
    assert any(o["kind"] == "MutatingWebhookConfiguration" for o in checked)
    for obj in checked:
        obj = {**obj, "metadata": {**obj["metadata"], "name": f"{obj['metadata']['name']}-dry"}}
        if obj["kind"] == "ValidatingAdmissionPolicyBinding":
            obj["spec"] = {**obj["spec"], "policyName": obj["spec"]["policyName"] + "-dry"}
        kube.create(_paths(obj), obj, dry_run=True)


@pytest.fixture(params=["4", "3"], ids=["helm4", "helm3"])
def release(request: pytest.FixtureRequest, control_plane: ControlPlane, kube: KubeClient) -> Iterator[dict[str, Any]]:
    major = request.param
    suffix = uuid.uuid4().hex[:6]
    rel: dict[str, Any] = {
        "name": f"chart-{suffix}",
        "namespace": f"chart-{suffix}",
        "helm": helm_binaries((major,))[major],
        "kubeconfig": str(control_plane.kubeconfig),
        "fullname": f"chart-{suffix}-dra-bridge",
    }
    create_namespace(kube, rel["namespace"])
    yield rel
    with contextlib.suppress(AssertionError):
        helm(rel["helm"], "uninstall", rel["name"], "--namespace", rel["namespace"], "--kubeconfig", rel["kubeconfig"])
    kube.delete(api_path("v1", "namespaces", name=rel["namespace"]), ignore_missing=True)


def _helm(rel: dict[str, Any], *args: str) -> str:
    return helm(rel["helm"], *args, "--namespace", rel["namespace"], "--kubeconfig", rel["kubeconfig"])


def _labelled_namespace(kube: KubeClient, mode: str, *extra: tuple[str, str]) -> str:
    name = f"chart-{mode}-{uuid.uuid4().hex[:6]}"
    create_namespace(kube, name)
    labels = {"dra-bridge.io/webhook": mode, **dict(extra)}
    kube.patch(api_path("v1", "namespaces", name=name), {"metadata": {"labels": labels}})
    return name


def _gpu_pod(resource: str = "nvidia.com/gpu") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "p-"},
        "spec": {
            "containers": [{"name": "c", "image": "registry.invalid/x", "resources": {"limits": {resource: "1"}}}]
        },
    }


def _refused_by_webhook(kube: KubeClient, namespace: str, pod: Obj) -> str:
    try:
        kube.create(api_path("v1", "pods", namespace), pod, dry_run=True)
    except KubeError as err:
        return str(err)
    return ""


@pytest.mark.server_version
def test_install_scope_upgrade_and_uninstall(kube: KubeClient, release: dict[str, Any]) -> None:
    _helm(release, "install", release["name"], str(CHART), *REQUIRED)  # the one value without a default
    full, ns = release["fullname"], release["namespace"]
    reg = kube.get(f"{ADMISSION}/mutatingwebhookconfigurations/{full}")
    assert [h["name"] for h in reg["webhooks"]] == ["audit.webhook.dra-bridge.io", "enforce.webhook.dra-bridge.io"]

    enforced = _labelled_namespace(kube, "enforce")
    opted_out = _labelled_namespace(kube, "enforce", ("dra-bridge.io/webhook-opt-out", "true"))
    try:
        # matchConditions true, no webhook answering, failurePolicy Fail: refused by the API server.
        message = _refused_by_webhook(kube, enforced, _gpu_pod())
        assert 'failed calling webhook "enforce.webhook.dra-bridge.io"' in message, message
        assert "failed calling webhook" in _refused_by_webhook(kube, enforced, _gpu_pod("nvidia.com/mig-1g.10gb"))
        # matchConditions false: the webhook is never called.
        assert _refused_by_webhook(kube, enforced, _gpu_pod("nvidia.com/gpu-10gb")) == ""
        assert (
            _refused_by_webhook(
                kube, enforced, {**_gpu_pod(), "spec": {"containers": [{"name": "c", "image": "registry.invalid/x"}]}}
            )
            == ""
        )
        # namespaceSelector: never kube-system, the release namespace or an opted-out namespace.
        for excluded in ("kube-system", ns, opted_out):
            assert _refused_by_webhook(kube, excluded, _gpu_pod()) == "", excluded
        # audit: failurePolicy Ignore, so a missing webhook never blocks.
        audited = _labelled_namespace(kube, "audit")
        assert _refused_by_webhook(kube, audited, _gpu_pod()) == ""
        kube.delete(api_path("v1", "namespaces", name=audited), ignore_missing=True)
    finally:
        for name in (enforced, opted_out):
            kube.delete(api_path("v1", "namespaces", name=name), ignore_missing=True)

    secret = kube.get(api_path("v1", "secrets", ns, f"{full}-webhook-tls"))
    assert base64.b64decode(reg["webhooks"][0]["clientConfig"]["caBundle"]) == base64.b64decode(
        secret["data"]["ca.crt"]
    )
    _helm(release, "upgrade", release["name"], str(CHART), *REQUIRED, "--set", "webhook.enforce.failurePolicy=Ignore")
    after = kube.get(api_path("v1", "secrets", ns, f"{full}-webhook-tls"))
    assert after["data"] == secret["data"], "helm upgrade generated a new pair instead of reusing it (lookup)"
    reg = kube.get(f"{ADMISSION}/mutatingwebhookconfigurations/{full}")
    assert [h["failurePolicy"] for h in reg["webhooks"]] == ["Ignore", "Ignore"]
    assert reg["webhooks"][0]["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]

    manifest = [d for d in yaml.safe_load_all(_helm(release, "get", "manifest", release["name"])) if d]
    cluster_scoped = [
        d
        for d in manifest
        if d["kind"]
        in (
            "MutatingWebhookConfiguration",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
            "ClusterRole",
            "ClusterRoleBinding",
        )
    ]
    assert {d["kind"] for d in cluster_scoped} >= {"MutatingWebhookConfiguration", "ValidatingAdmissionPolicy"}
    _helm(release, "uninstall", release["name"], "--wait")
    assert not kube.exists(f"{ADMISSION}/mutatingwebhookconfigurations/{full}")
    assert not [h for h in kube.list(f"{ADMISSION}/mutatingwebhookconfigurations") if h["metadata"]["name"] == full]
    for d in cluster_scoped:
        kind = d["kind"]
        path = {
            "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        }.get(kind) or _paths(d)
        assert not kube.exists(f"{path}/{d['metadata']['name']}"), f"{kind} {d['metadata']['name']} left behind"
