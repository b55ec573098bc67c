"""The webhook through a real kube-apiserver, controller-manager and scheduler.

The webhook runs as a subprocess (``python -m webhook.cli serve``) on loopback over TLS
(certificate from ``webhook.certs`` with IP SAN 127.0.0.1), registered by a real
MutatingWebhookConfiguration (url, caBundle, namespaceSelector, NoneOnDryRun, Fail, 10 s).
Two servers run: one writing resource.k8s.io/v1, one told to use v1beta1. Fake nodes carry
ResourceSlices of the bridge driver: a Tesla T4 node and an A100 node.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.names import CONVERSION_ANNOTATION, CONVERTED_LABEL
from dra_bridge.translate.plan.claim_templates import internal_from_template
from tests.e2e.controlplane import REPO_ROOT, ControlPlane
from tests.e2e.kubeapi import (
    KubeClient,
    api_path,
    wait_for,
    wait_for_object,
)
from tests.e2e.webhook_cluster import (
    DS_LABEL,
    V1,
    Cluster,
    legacy_deployment,
    legacy_pod,
    pods_of,
    running_cluster,
    wait_webhook_active,
    webhook_namespace,
)

pytestmark = pytest.mark.e2e

V1BETA1 = "resource.k8s.io/v1beta1"
EXAMPLES = REPO_ROOT / "tests" / "data" / "examples"


@pytest.fixture(scope="module")
def cluster(
    control_plane: ControlPlane, kube: KubeClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    with running_cluster(control_plane, kube, tmp_path_factory.mktemp("webhook-e2e")) as running:
        yield running


def _run_deployment_flow(cluster: Cluster, mode: str, version: str) -> list[dict[str, Any]]:
    kube = cluster.kube
    ns = webhook_namespace(cluster, mode)
    wait_webhook_active(cluster, ns)
    kube.create(api_path("apps/v1", "deployments", ns), legacy_deployment("trainer"))

    def bound() -> list[dict[str, Any]] | None:
        pods = pods_of(kube, ns, "trainer")
        ok = len(pods) == 2 and all(
            p["spec"].get("nodeName") and p["status"].get("resourceClaimStatuses") for p in pods
        )
        return pods if ok else None

    pods = wait_for(
        bound,
        90,
        "2 converted pods bound with claims",
        observe=lambda: [
            (p["metadata"]["name"], p["spec"].get("nodeName"), p["status"]) for p in pods_of(kube, ns, "trainer")
        ],
    )
    for pod in pods:
        assert CONVERSION_ANNOTATION in pod["metadata"]["annotations"]
        assert pod["spec"]["nodeName"] == cluster.a100
        limits = pod["spec"]["containers"][0].get("resources", {}).get("limits", {})
        assert "nvidia.com/gpu" not in limits
        claim_name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        claim = wait_for_object(
            kube, api_path(V1, "resourceclaims", ns, claim_name), lambda c: c.get("status", {}).get("allocation"), 30
        )
        results = claim["status"]["allocation"]["devices"]["results"]
        assert len(results) == 2 and {r["pool"] for r in results} == {cluster.a100}
    template_name = pods[0]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    stored = kube.get(api_path(version, "resourceclaimtemplates", ns, template_name))
    assert stored["apiVersion"] == version
    assert internal_from_template(stored)["requests"][0]["count"] == 2
    return pods


@pytest.mark.server_version
def test_legacy_deployment_pods_get_claims_and_bind_to_the_a100_node(cluster: Cluster) -> None:
    _run_deployment_flow(cluster, "enforce", V1)


@pytest.mark.server_version
def test_webhook_told_to_use_v1beta1_writes_v1beta1_templates(cluster: Cluster) -> None:
    pods = _run_deployment_flow(cluster, "enforce-v1beta1", V1BETA1)
    ns = pods[0]["metadata"]["namespace"]
    name = pods[0]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    stored = cluster.kube.get(api_path(V1BETA1, "resourceclaimtemplates", ns, name))
    assert "exactly" not in stored["spec"]["spec"]["devices"]["requests"][0]  # v1beta1's flat request shape


@pytest.mark.server_version
def test_server_side_dry_run_creates_no_template(cluster: Cluster) -> None:
    ns = webhook_namespace(cluster, "enforce")
    pod = wait_webhook_active(cluster, ns)
    assert pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"].startswith("dra-bridge-")
    assert cluster.kube.list(api_path(V1, "resourceclaimtemplates", ns)) == []


def test_deleted_template_is_recreated_for_the_next_pod(cluster: Cluster) -> None:
    kube = cluster.kube
    ns = webhook_namespace(cluster, "enforce")
    wait_webhook_active(cluster, ns)
    first = kube.create(api_path("v1", "pods", ns), legacy_pod("first", 1))
    name = first["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    kube.delete(api_path(V1, "resourceclaimtemplates", ns, name))
    wait_for(lambda: not kube.exists(api_path(V1, "resourceclaimtemplates", ns, name)), 10, "template deleted")
    time.sleep(1.0)  # let the webhook's template watch deliver the DELETED event
    second = kube.create(api_path("v1", "pods", ns), legacy_pod("second", 1))
    assert second["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == name
    assert kube.exists(api_path(V1, "resourceclaimtemplates", ns, name))


def test_audit_mode_leaves_pods_unchanged_and_an_event_shows_the_plan(cluster: Cluster) -> None:
    kube = cluster.kube
    ns = webhook_namespace(cluster, "audit")
    kube.create(api_path("apps/v1", "deployments", ns), legacy_deployment("audited", 1))
    pods = wait_for(lambda: pods_of(kube, ns, "audited") or None, 30, "the audited pod")
    assert CONVERSION_ANNOTATION not in (pods[0]["metadata"].get("annotations") or {})
    assert pods[0]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"
    events = wait_for(
        lambda: [e for e in kube.list(api_path("v1", "events", ns)) if e.get("reason") == "DRAMigrationPlan"] or None,
        30,
        "the audit Event",
    )
    assert events[0]["involvedObject"]["kind"] == "ReplicaSet"
    assert "would convert nvidia.com/gpu" in events[0]["message"]
    assert kube.list(api_path(V1, "resourceclaimtemplates", ns)) == []


def test_already_dra_workload_is_left_alone(cluster: Cluster) -> None:
    kube = cluster.kube
    ns = webhook_namespace(cluster, "enforce")
    wait_webhook_active(cluster, ns)
    docs = [d for d in yaml.safe_load_all((EXAMPLES / "14-helm-already-dra-claim.yaml").read_text()) if d]
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    for obj in (template, deployment):
        obj["metadata"]["namespace"] = ns
    kube.create(api_path(V1, "resourceclaimtemplates", ns), template)
    kube.create(api_path("apps/v1", "deployments", ns), deployment)
    pods = wait_for(lambda: kube.list(api_path("v1", "pods", ns)) or None, 30, "the ollama pod")
    meta = pods[0]["metadata"]
    assert CONVERSION_ANNOTATION not in (meta.get("annotations") or {})
    assert pods[0]["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "example-ollama"}]
    assert [t["metadata"]["name"] for t in kube.list(api_path(V1, "resourceclaimtemplates", ns))] == ["example-ollama"]


def test_daemonset_pods_are_converted_only_on_nodes_handed_over_to_dra(cluster: Cluster) -> None:
    kube = cluster.kube
    ns = webhook_namespace(cluster, "enforce")
    wait_webhook_active(cluster, ns)
    pod_spec = legacy_pod("agent", 1)["spec"]
    pod_spec["nodeSelector"] = {DS_LABEL: cluster.suffix}
    kube.create(
        api_path("apps/v1", "daemonsets", ns),
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {"metadata": {"labels": {"app": "agent"}}, "spec": pod_spec},
            },
        },
    )
    pods = wait_for(lambda: p if len(p := pods_of(kube, ns, "agent")) == 2 else None, 30, "one agent pod per node")
    by_node = {}
    for pod in pods:
        terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        by_node[terms["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]] = pod
    assert CONVERSION_ANNOTATION in by_node[cluster.a100]["metadata"]["annotations"]
    assert CONVERSION_ANNOTATION not in (by_node[cluster.t4]["metadata"].get("annotations") or {})
    assert by_node[cluster.t4]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"


def test_quota_on_the_legacy_resource_keeps_pods_legacy(cluster: Cluster) -> None:
    kube = cluster.kube
    ns = webhook_namespace(cluster, "enforce")
    wait_webhook_active(cluster, ns)
    kube.create(
        api_path("v1", "resourcequotas", ns),
        {"metadata": {"name": "gpus"}, "spec": {"hard": {"requests.nvidia.com/gpu": "4"}}},
    )

    def legacy() -> dict[str, Any] | None:
        pod = kube.create(api_path("v1", "pods", ns), legacy_pod("probe"), dry_run=True)
        return pod if CONVERTED_LABEL not in (pod["metadata"].get("labels") or {}) else None

    pod = wait_for(legacy, 30, "the webhook's quota cache to see the ResourceQuota")
    assert pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"


def _reconcile(cp: ControlPlane, identity: str, lease_ns: str, grace: float, passes: int = 1) -> list[Any]:
    """Runs ``passes`` reconciler passes in-process against the real API server."""
    import asyncio

    from dra_bridge.kube.api import ApiServer
    from dra_bridge.kube.client import connect
    from dra_bridge.webhook.reconciler import Reconciler

    async def go() -> list[Any]:
        client = await connect(cp.kubeconfig)
        try:
            rec = Reconciler(ApiServer(client), V1, load_catalog, identity, lease_ns, grace=grace, lease_seconds=30)
            return [await rec.run_once() for _ in range(passes)]
        finally:
            await client.close()

    return asyncio.run(go())


def test_reconciler_collects_unused_templates_and_recreates_missing_ones(
    cluster: Cluster, control_plane: ControlPlane
) -> None:
    kube = cluster.kube
    ns = webhook_namespace(cluster, "enforce")
    wait_webhook_active(cluster, ns)
    pod = kube.create(api_path("v1", "pods", ns), legacy_pod("live", 1))
    used = pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    unused = kube.create(api_path("v1", "pods", ns), legacy_pod("short-lived", 2))
    unused_name = unused["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    # grace 0: the scheduler may have bound it to a fake node of another test, where no kubelet
    # would ever confirm its termination (a deletion would then wait forever)
    kube.delete(api_path("v1", "pods", ns, "short-lived") + "?gracePeriodSeconds=0")
    wait_for(lambda: not kube.exists(api_path("v1", "pods", ns, "short-lived")), 30, "pod deleted")
    by_hand = {
        "apiVersion": V1,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "by-convert", "labels": {"app.kubernetes.io/managed-by": "dra-migrate"}},
        "spec": {
            "spec": {
                "devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "nvidia-gpu.dra-bridge.io"}}]}
            }
        },
    }
    kube.create(api_path(V1, "resourceclaimtemplates", ns), by_hand)
    kube.delete(api_path(V1, "resourceclaimtemplates", ns, used))  # the race: a live pod's template vanished
    lease_ns = webhook_namespace(cluster, "lease")

    report = _reconcile(control_plane, "replica-a", lease_ns, grace=0)[0]
    assert report.leader
    assert (ns, unused_name) in report.deleted and (ns, used) in report.recreated
    names = {t["metadata"]["name"] for t in kube.list(api_path(V1, "resourceclaimtemplates", ns))}
    assert used in names and "by-convert" in names and unused_name not in names
    # A second replica does nothing while the first holds the Lease.
    assert _reconcile(control_plane, "replica-b", lease_ns, grace=0)[0].leader is False


@pytest.mark.server_version
def test_discovery_picks_the_newest_served_resource_version(control_plane: ControlPlane) -> None:
    import asyncio

    from dra_bridge.kube.api import ApiServer
    from dra_bridge.kube.client import connect
    from dra_bridge.kube.discovery import discover_resource_version

    async def go() -> str:
        client = await connect(control_plane.kubeconfig)
        try:
            return await discover_resource_version(ApiServer(client))
        finally:
            await client.close()

    assert asyncio.run(go()) == V1


def test_metrics_count_admissions_and_created_templates(cluster: Cluster) -> None:
    ns = webhook_namespace(cluster, "enforce")
    wait_webhook_active(cluster, ns)
    cluster.kube.create(api_path("v1", "pods", ns), legacy_pod("counted", 3))
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # only reading metrics; the certificate is checked by the API server
    with urllib.request.urlopen(f"https://127.0.0.1:{cluster.v1.port}/metrics", context=ctx, timeout=5) as resp:
        text = resp.read().decode()
    created = [line for line in text.splitlines() if line.startswith("dra_webhook_templates_created_total ")]
    assert created and float(created[0].split()[1]) >= 1
    assert 'dra_webhook_requests_total{mode="enforce",outcome="patched"}' in text


def test_a_review_sent_straight_to_the_port_for_a_namespace_not_enrolled_creates_nothing(cluster: Cluster) -> None:
    """No confused deputy (docs/design.md D28): the enforce path, called directly with a pod of an
    audit-only namespace, answers unchanged and creates no template there."""
    ns = webhook_namespace(cluster, "audit")
    wait_for(lambda: cluster.kube.exists(api_path("v1", "namespaces", name=ns)) or None, 10, "the namespace to exist")
    time.sleep(1.0)  # the webhook's Namespace view sees the label
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "deputy-1",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": ns,
            "operation": "CREATE",
            "object": {**legacy_pod("direct"), "metadata": {"name": "direct", "namespace": ns}},
        },
    }
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # the caller is anyone: no trust needed
    req = urllib.request.Request(
        f"https://127.0.0.1:{cluster.v1.port}/mutate/enforce",
        data=json.dumps(review).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
        answer = json.loads(resp.read())["response"]
    assert answer["allowed"] is True and "patch" not in answer
    assert any("not enrolled for /mutate/enforce" in w for w in answer["warnings"]), answer
    assert cluster.kube.list(api_path(V1, "resourceclaimtemplates", ns)) == []
