"""The image of ``hack/image.sh`` on the real node, its pods talking to the API server as
installed pods do (``podcluster.py``: API server on the host's address, kube-proxy).

- the three entry points run in a pod as the image's non-root user, with a read-only root
  filesystem, every capability dropped and the RuntimeDefault seccomp profile;
- dra-webhook as a Deployment of that image under its own ServiceAccount with exactly the RBAC
  of webhook/access.py, behind a Service that the API server calls (ClusterIP, kube-proxy's
  rules): a legacy pod in an enforced namespace is converted, which needs the webhook to reach
  the API server through the ``kubernetes`` Service (in-cluster configuration); the audit log
  shows it made only calls it declares (observed ⊆ granted ⊆ declared).
"""

from __future__ import annotations

import base64
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dra_bridge.kube.errors import KubeError
from dra_bridge.kube.resources import rbac_rules
from dra_bridge.translate.names import CONVERTED_LABEL
from dra_bridge.webhook.access import API_CALLS
from dra_bridge.webhook.certs import write_certs
from tests.e2e.audit import granted_calls, observed_calls, service_account_user, violations
from tests.e2e.bridge_node import device_classes
from tests.e2e.kubeapi import KubeClient, Obj, api_path, create_namespace, wait_for, wait_for_object
from tests.e2e.node_pods import log_of
from tests.e2e.podcluster import ImageMissing, PodCluster, pod_cluster
from tests.e2e.realnode import NodeBusy, PartsMissing, RealNode
from tests.e2e.serviceproxy import ProxyMissing

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]

RBAC = "/apis/rbac.authorization.k8s.io/v1"
ADMISSION = "admissionregistration.k8s.io/v1"
MODE_LABEL = "dra-bridge-e2e/image"
HARDENED = {"runAsNonRoot": True, "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}


@pytest.fixture(scope="module")
def cluster(_real_node_parts: list[RealNode]) -> Iterator[PodCluster]:
    """The module's own control plane and node (see podcluster.py); the session's node, if one
    runs in this process, is stopped first (one kubelet per machine; the next real_node test
    starts a fresh one)."""
    for node in _real_node_parts:
        if node.running:
            assert not node.stop(), "stopping the session's real node"
    _real_node_parts.clear()
    try:
        with pod_cluster() as c:
            yield c
    except (NodeBusy, ImageMissing, PartsMissing, ProxyMissing) as err:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            raise
        pytest.skip(f"real_node: {err}")


@pytest.fixture
def ns(cluster: PodCluster) -> Iterator[str]:
    kube = cluster.control_plane.client()
    name = f"img-{uuid.uuid4().hex[:6]}"
    create_namespace(kube, name)
    yield name
    kube.delete(api_path("v1", "namespaces", name=name), ignore_missing=True)


def test_entry_points_run_as_the_images_non_root_user(cluster: PodCluster, ns: str) -> None:
    kube = cluster.control_plane.client()
    script = ("id -u; dra-migrate --version; dra-webhook --version; dra-bridge --version; "
              "dra-migrate convert --help >/dev/null && echo convert-help; "
              "touch /probe 2>/dev/null || echo read-only-root")
    kube.create(api_path("v1", "pods", ns), {"metadata": {"name": "entry-points"}, "spec": {
        "restartPolicy": "Never", "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": False,
        "containers": [{"name": "main", "image": cluster.image, "imagePullPolicy": "Never",
                        "command": ["sh", "-c", script], "securityContext": HARDENED}]}})
    pod = wait_for_object(kube, api_path("v1", "pods", ns, "entry-points"),
                          lambda p: p.get("status", {}).get("phase") in ("Succeeded", "Failed"), 60,
                          "pod entry-points done")
    log = log_of(kube, ns, "entry-points")
    assert pod["status"]["phase"] == "Succeeded", log
    assert log.split() == ["65532", "dra-migrate", "0.1.0", "dra-webhook", "0.1.0", "dra-bridge", "0.1.0",
                           "convert-help", "read-only-root"], log


def webhook_objects(cluster: PodCluster, ns: str, certs: Any) -> list[tuple[str, Obj]]:
    """A minimal install of the webhook: (collection path, object) in creation order."""
    sa = [{"kind": "ServiceAccount", "name": "dra-webhook", "namespace": ns}]
    ref = {"apiGroup": "rbac.authorization.k8s.io", "name": f"dra-webhook-{ns}"}
    tls = {k: base64.b64encode(Path(p).read_bytes()).decode() for k, p in
           (("tls.crt", certs.cert), ("tls.key", certs.key), ("ca.crt", certs.ca_cert))}
    labels = {"app": "dra-webhook"}
    args = ["serve", "--tls-cert-file=/certs/tls.crt", "--tls-key-file=/certs/tls.key", "--ca-bundle=/certs/ca.crt",
            f"--service-name=dra-webhook.{ns}.svc", "--api-version=resource.k8s.io/v1"]
    probe = {"httpGet": {"path": "/readyz", "port": 8443, "scheme": "HTTPS"}, "periodSeconds": 1}
    return [
        (api_path("v1", "serviceaccounts", ns), {"metadata": {"name": "dra-webhook"}}),
        (f"{RBAC}/clusterroles", {"metadata": {"name": ref["name"]}, "rules": rbac_rules(API_CALLS)}),
        (f"{RBAC}/clusterrolebindings", {"metadata": {"name": ref["name"]}, "subjects": sa,
                                         "roleRef": {**ref, "kind": "ClusterRole"}}),
        (f"{RBAC}/namespaces/{ns}/roles", {"metadata": {"name": ref["name"]},
                                           "rules": rbac_rules(API_CALLS, "namespace")}),
        (f"{RBAC}/namespaces/{ns}/rolebindings", {"metadata": {"name": ref["name"]}, "subjects": sa,
                                                  "roleRef": {**ref, "kind": "Role"}}),
        (api_path("v1", "secrets", ns), {"metadata": {"name": "dra-webhook-tls"}, "type": "kubernetes.io/tls",
                                         "data": tls}),
        (api_path("apps/v1", "deployments", ns), {"metadata": {"name": "dra-webhook"}, "spec": {
            "replicas": 1, "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {
                "serviceAccountName": "dra-webhook", "terminationGracePeriodSeconds": 1,
                # a Service named dra-webhook would set DRA_WEBHOOK_PORT=tcp://..., the --port twin
                "enableServiceLinks": False,
                "containers": [{"name": "webhook", "image": cluster.image, "imagePullPolicy": "Never",
                                "command": ["dra-webhook"], "args": args, "readinessProbe": probe,
                                "ports": [{"containerPort": 8443, "name": "https"}],
                                "securityContext": HARDENED,
                                "volumeMounts": [{"name": "certs", "mountPath": "/certs", "readOnly": True}]}],
                "volumes": [{"name": "certs", "secret": {"secretName": "dra-webhook-tls"}}]}}}}),
        (api_path("v1", "services", ns), {"metadata": {"name": "dra-webhook"}, "spec": {
            "selector": labels, "ports": [{"port": 443, "targetPort": "https"}]}}),
        (api_path(ADMISSION, "mutatingwebhookconfigurations"), {"metadata": {"name": ref["name"]}, "webhooks": [{
            "name": "enforce.image-e2e.dra-bridge.io", "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"namespace": ns, "name": "dra-webhook", "path": "/mutate/enforce"},
                             "caBundle": tls["ca.crt"]},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"],
                       "scope": "Namespaced"}],
            "namespaceSelector": {"matchLabels": {MODE_LABEL: "enforce"}},
            "sideEffects": "NoneOnDryRun", "failurePolicy": "Fail", "timeoutSeconds": 10}]}),
    ]


def legacy_pod(image: str) -> Obj:
    return {"metadata": {"name": "legacy"}, "spec": {"containers": [{
        "name": "cuda", "image": image, "command": ["sleep", "3600"],
        "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}


def test_webhook_pod_behind_its_service_with_least_privilege(cluster: PodCluster, ns: str, tmp_path: Path) -> None:
    began = time.monotonic()
    kube = cluster.control_plane.client()
    certs = write_certs(tmp_path / "certs", ns, "dra-webhook")
    objects = webhook_objects(cluster, ns, certs)
    workload = f"{ns}-work"
    created: list[str] = []
    try:
        with device_classes(kube):
            for path, obj in objects:
                created.append(f"{path}/{kube.create(path, obj)['metadata']['name']}")
            granted = granted_calls(kube, ns, "dra-webhook")
            wait_for(lambda: _ready(kube, ns), 60, "the webhook pod Ready", observe=lambda: _state(kube, ns))
            create_namespace(kube, workload)
            kube.patch(api_path("v1", "namespaces", name=workload), {"metadata": {"labels": {MODE_LABEL: "enforce"}}})
            pod = wait_for(lambda: _converted(kube, workload, cluster.image), 30,
                           "the API server to call the webhook through its Service",
                           observe=lambda: [_state(kube, ns), kube.create(
                               api_path("v1", "pods", workload), legacy_pod(cluster.image), dry_run=True)["metadata"]])
            assert pod["spec"]["resourceClaims"], pod
            # for real: the webhook creates the ResourceClaimTemplate (a dry run has no side effects)
            created_pod = kube.create(api_path("v1", "pods", workload), legacy_pod(cluster.image))
            template = created_pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
            assert kube.exists(api_path("resource.k8s.io/v1", "resourceclaimtemplates", workload, template))
            print(f"\nwebhook pod converting {time.monotonic() - began:.1f}s after the start")
    finally:
        for path in reversed(created):
            kube.delete(path, ignore_missing=True)
        kube.delete(api_path("v1", "namespaces", name=workload), ignore_missing=True)
    user = service_account_user(ns, "dra-webhook")
    observed = observed_calls(cluster.control_plane.audit_log, user)
    assert any(o.resource == "resourceclaimtemplates" and o.verb == "create" for o in observed), observed
    problems = violations(observed, granted, API_CALLS, ns)
    assert not problems, "\n".join(problems)


def _ready(kube: KubeClient, ns: str) -> bool:
    pods = kube.list(api_path("v1", "pods", ns), label_selector="app=dra-webhook")
    return any(c["type"] == "Ready" and c["status"] == "True"
               for p in pods for c in p.get("status", {}).get("conditions", []))


def _state(kube: KubeClient, ns: str) -> list[Any]:
    """The webhook pods' container states and log tails (for a timeout's message)."""
    out: list[Any] = []
    for p in kube.list(api_path("v1", "pods", ns), label_selector="app=dra-webhook"):
        out.append(p.get("status", {}).get("containerStatuses"))
        try:
            out.append(log_of(kube, ns, p["metadata"]["name"])[-3000:])
        except KubeError as err:
            out.append(str(err))
    return out


def _converted(kube: KubeClient, ns: str, image: str) -> Obj | None:
    pod = kube.create(api_path("v1", "pods", ns), legacy_pod(image), dry_run=True)
    return pod if CONVERTED_LABEL in (pod["metadata"].get("labels") or {}) else None
