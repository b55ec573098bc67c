"""Quota safety fails closed, through a real kube-apiserver (issue 10, items 1 and 2).

Two ``dra-webhook serve`` subprocesses run under a real service account (token auth) with the
RBAC derived from webhook/access.py:

- ``no-list``: the ClusterRole lacks ``list resourcequotas`` (RBAC refuses it);
- ``stalled``: full RBAC, but its kubeconfig points at a loopback proxy
  (tests/e2e/stall_proxy.py) that forwards every request to the API server except the
  ResourceQuota list, which it never answers (a network fault, not the API).

Each is routed one namespace label by its own MutatingWebhookConfiguration. A legacy pod
there, in a namespace with no quota at all, would convert; with the quota view unknown it
stays legacy as a whole, with a warning naming the cause, and /readyz stays 200 while its
detail and the metrics say what is missing.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import ssl
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dra_bridge.kube.errors import AlreadyExists
from dra_bridge.kube.resources import ApiCall
from dra_bridge.translate.names import CONVERTED_LABEL
from dra_bridge.webhook.access import API_CALLS
from dra_bridge.webhook.certs import write_certs
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubeapi import KubeClient, api_path, create_namespace, wait_for
from tests.e2e.stall_proxy import StallingProxy
from tests.e2e.webhook_cluster import (
    LEASE_NAMESPACE,
    RBAC,
    Webhook,
    grant,
    legacy_pod,
    mode_label_for,
    start_webhook,
    token_kubeconfig,
    webhook_entry,
)

pytestmark = pytest.mark.e2e

LIST_QUOTAS = ApiCall("list", "", "resourcequotas")


@dataclass
class Setup:
    kube: KubeClient
    cp: ControlPlane
    ca: Path
    hooks: dict[str, Webhook]
    proxy: StallingProxy
    namespaces: list[str]
    suffix: str


def quota_list(method: str, target: str) -> bool:
    url = urllib.parse.urlsplit(target)
    return method == "GET" and url.path == "/api/v1/resourcequotas" and "watch=" not in url.query


@pytest.fixture(scope="module")
def setup(control_plane: ControlPlane, kube: KubeClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    work = tmp_path_factory.mktemp("webhook-quota-e2e")
    suffix = uuid.uuid4().hex[:6]
    sa_ns = f"whq-sa-{suffix}"
    create_namespace(kube, sa_ns)
    with contextlib.suppress(AlreadyExists):
        create_namespace(kube, LEASE_NAMESPACE)
    certs = write_certs(work / "certs", "dra-bridge", "dra-bridge-webhook", ("127.0.0.1",))
    no_list, full = f"whq-no-list-{suffix}", f"whq-full-{suffix}"
    grant(kube, no_list, sa_ns, [c for c in API_CALLS if c != LIST_QUOTAS])
    grant(kube, full, sa_ns, list(API_CALLS))
    proxy = StallingProxy(control_plane.server, control_plane.ca_file, certs.cert, certs.key, quota_list)
    mwc = f"dra-bridge-e2e-quota-{suffix}"
    setup = Setup(kube, control_plane, certs.ca_cert, {}, proxy, [sa_ns], suffix)
    try:
        setup.hooks["no-list"] = start_webhook(
            control_plane,
            certs,
            work,
            "resource.k8s.io/v1",
            name="no-list",
            mode_label=mode_label_for(f"quota-no-list-{suffix}"),
            kubeconfig=token_kubeconfig(
                kube, work / "no-list.kubeconfig", sa_ns, no_list, control_plane.server, control_plane.ca_file
            ),
        )
        setup.hooks["stalled"] = start_webhook(
            control_plane,
            certs,
            work,
            "resource.k8s.io/v1",
            name="stalled",
            mode_label=mode_label_for(f"quota-stalled-{suffix}"),
            kubeconfig=token_kubeconfig(kube, work / "stalled.kubeconfig", sa_ns, full, proxy.url, certs.ca_cert),
        )
        ca = certs.ca_cert.read_bytes()
        kube.create(
            api_path("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations"),
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": mwc},
                "webhooks": [
                    webhook_entry(
                        f"{label}.quota.dra-bridge.io",
                        hook.port,
                        "/mutate/enforce",
                        ca,
                        mode_label_for(f"quota-{label}-{suffix}"),
                    )
                    for label, hook in setup.hooks.items()
                ],
            },
        )
        yield setup
    finally:
        kube.delete(
            api_path("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", name=mwc), ignore_missing=True
        )
        for hook in setup.hooks.values():
            hook.stop()
        proxy.stop()
        for name in (no_list, full):
            kube.delete(f"{RBAC}/clusterrolebindings/{name}", ignore_missing=True)
            kube.delete(f"{RBAC}/clusterroles/{name}", ignore_missing=True)
            kube.delete(f"{RBAC}/namespaces/{LEASE_NAMESPACE}/rolebindings/{name}", ignore_missing=True)
            kube.delete(f"{RBAC}/namespaces/{LEASE_NAMESPACE}/roles/{name}", ignore_missing=True)
        for ns in setup.namespaces:
            kube.delete(api_path("v1", "namespaces", name=ns), ignore_missing=True)


def routed_namespace(setup: Setup, label: str) -> str:
    """A fresh namespace (no ResourceQuota) that the ``label`` webhook admits pods of."""
    ns = f"whq-{label}-{uuid.uuid4().hex[:6]}"
    create_namespace(setup.kube, ns)
    setup.namespaces.append(ns)
    setup.kube.patch(
        api_path("v1", "namespaces", name=ns),
        {"metadata": {"labels": {mode_label_for(f"quota-{label}-{setup.suffix}"): "enforce"}}},
    )
    return ns


def dry_run_create(setup: Setup, ns: str, pod: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A dry-run create as cluster-admin: the pod the API server would store and its Warning headers."""
    url = urllib.parse.urlsplit(setup.cp.server)
    ctx = ssl.create_default_context(cafile=str(setup.cp.ca_file))
    ctx.load_cert_chain(str(setup.cp.client_cert), str(setup.cp.client_key))
    conn = http.client.HTTPSConnection(url.hostname or "127.0.0.1", url.port or 443, context=ctx, timeout=30)
    try:
        conn.request(
            "POST",
            api_path("v1", "pods", ns) + "?dryRun=All",
            body=json.dumps(pod),
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        resp = conn.getresponse()
        body = json.loads(resp.read())
        warnings = resp.headers.get_all("Warning") or []
    finally:
        conn.close()
    assert resp.status == 201, body
    return body, warnings


def kept_legacy_with_warning(setup: Setup, ns: str, cause: str) -> tuple[dict[str, Any], list[str]]:
    """Dry-run creates until the webhook answers (its warning appears): the pod and warnings."""

    def answered() -> tuple[dict[str, Any], list[str]] | None:
        pod, warnings = dry_run_create(setup, ns, legacy_pod("probe"))
        return (pod, warnings) if any("quota-view" in w for w in warnings) else None

    pod, warnings = wait_for(answered, 30, "the API server to call the webhook")
    assert CONVERTED_LABEL not in (pod["metadata"].get("labels") or {})
    assert pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert "resourceClaims" not in pod["spec"]
    assert any(cause in w and "kept-legacy" in w for w in warnings), warnings
    return pod, warnings


def get(setup: Setup, hook: Webhook, path: str) -> tuple[int, str]:
    ctx = ssl.create_default_context(cafile=str(setup.ca))
    with urllib.request.urlopen(f"https://127.0.0.1:{hook.port}{path}", context=ctx, timeout=5) as resp:
        return resp.status, resp.read().decode()


def test_without_list_resourcequotas_pods_stay_legacy_and_readyz_names_the_permission(setup: Setup) -> None:
    hook = setup.hooks["no-list"]
    ns = routed_namespace(setup, "no-list")
    kept_legacy_with_warning(setup, ns, "missing permission list core/resourcequotas")
    status, text = get(setup, hook, "/readyz")
    detail = json.loads(text)
    assert status == 200 and detail["ready"] is True
    cluster = detail["cluster"]
    assert cluster["missingPermissions"] == ["list core/resourcequotas"], cluster
    assert cluster["views"]["Node"] == "synced" and cluster["views"]["ResourceQuota"].startswith("not synced")
    assert cluster["apiServer"] == "answering"
    _, metrics = get(setup, hook, "/metrics")
    assert 'dra_webhook_permission_missing{permission="list core/resourcequotas"} 1.0' in metrics
    assert 'dra_webhook_view_synced{view="ResourceQuota"} 0.0' in metrics
    assert "dra_webhook_api_server_up 1.0" in metrics
    assert 'dra_webhook_kept_legacy_total{mode="enforce",reason="quota-view"}' in metrics
    naming = [
        line for line in hook.log.read_text().splitlines() if "missing permission list core/resourcequotas" in line
    ]
    assert len(naming) == 1 and " ERROR " in naming[0], naming


def test_a_quota_list_that_never_answers_keeps_pods_legacy_while_readyz_stays_ready(setup: Setup) -> None:
    hook = setup.hooks["stalled"]
    ns = routed_namespace(setup, "stalled")
    kept_legacy_with_warning(setup, ns, "no answer")
    assert any(s.startswith("GET /api/v1/resourcequotas") for s in setup.proxy.stalled)
    status, text = get(setup, hook, "/readyz")
    detail = json.loads(text)
    assert status == 200 and detail["ready"] is True
    cluster = detail["cluster"]
    assert cluster["views"]["Node"] == "synced", cluster  # every other call goes through the proxy
    assert cluster["views"]["ResourceQuota"].startswith("not synced: the list has had no answer"), cluster
    assert any(p.startswith("list core/resourcequotas for ") for p in cluster["pending"]), cluster
    assert cluster["missingPermissions"] == [] and cluster["apiServer"] == "answering"
