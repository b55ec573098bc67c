"""Caller authentication through a real kube-apiserver (docs/webhook.md, "Caller authentication").

A second control plane, its API server started with ``--admission-control-config-file``: an
AdmissionConfiguration whose ``WebhookAdmissionConfiguration.kubeConfigFile`` gives it a client
certificate for every webhook (user ``*``). The webhook, given that certificate's CA with
``--client-ca-file``, mutates the pods this API server sends it, refuses the TLS handshake of a
caller that presents another CA's certificate, and answers a caller that presents none 403 on the
admission paths (the kubelet's probes still answered). Runs in the main (1.36) pass only.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_bridge.translate.names import CONVERTED_LABEL
from dra_bridge.webhook.certs import write_certs
from tests.e2e.certs import CertificateAuthority, KeyPair
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubeapi import KubeClient, api_path, create_namespace, wait_for
from tests.e2e.webhook_cluster import MODE_LABEL, Webhook, legacy_pod, start_webhook, webhook_entry

pytestmark = pytest.mark.e2e


def admission_config(directory: Path, caller: KeyPair) -> Path:
    """The API server's AdmissionConfiguration: its webhook calls present ``caller``."""
    kubeconfig = directory / "webhook-callers.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "users": [
                    {"name": "*", "user": {"client-certificate": str(caller.cert), "client-key": str(caller.key)}}
                ],
            }
        )
    )
    webhook = {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "WebhookAdmissionConfiguration",
        "kubeConfigFile": str(kubeconfig),
    }
    config = directory / "admission.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "apiserver.config.k8s.io/v1",
                "kind": "AdmissionConfiguration",
                "plugins": [{"name": "MutatingAdmissionWebhook", "configuration": webhook}],
            }
        )
    )
    return config


@pytest.fixture(scope="module")
def authenticating(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ControlPlane, Webhook, Any, CertificateAuthority]]:
    work = tmp_path_factory.mktemp("client-auth")
    callers = CertificateAuthority(work / "callers", "webhook-callers-ca")
    apiserver = callers.issue("apiserver", "kube-apiserver", client=True)
    cp = ControlPlane(
        bin_dir=control_plane.bin_dir,
        runtime_config=control_plane.runtime_config,
        extra_apiserver_args=[f"--admission-control-config-file={admission_config(work, apiserver)}"],
    )
    cp.start()
    try:
        certs = write_certs(work / "serving", "dra-bridge", "dra-bridge-webhook", ("127.0.0.1",))
        hook = start_webhook(
            cp,
            certs,
            work,
            "resource.k8s.io/v1",
            name="client-auth",
            client_auth=(callers.cert_file, apiserver.cert, apiserver.key),
        )
        try:
            yield cp, hook, certs, callers
        finally:
            hook.stop()
    finally:
        cp.stop()


def test_the_api_server_presents_its_certificate_and_the_pod_is_mutated(
    authenticating: tuple[ControlPlane, Webhook, Any, CertificateAuthority],
) -> None:
    cp, hook, certs, _ = authenticating
    kube: KubeClient = cp.client()
    kube.create(
        api_path("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations"),
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "dra-bridge-e2e-client-auth"},
            "webhooks": [
                webhook_entry(
                    "enforce.client-auth.dra-bridge.io",
                    hook.port,
                    "/mutate/enforce",
                    certs.ca_cert.read_bytes(),
                    MODE_LABEL,
                )
            ],
        },
    )
    create_namespace(kube, "client-auth")
    kube.patch(api_path("v1", "namespaces", name="client-auth"), {"metadata": {"labels": {MODE_LABEL: "enforce"}}})

    def converted() -> dict[str, Any] | None:
        pod = kube.create(api_path("v1", "pods", "client-auth"), legacy_pod("probe"), dry_run=True)
        return pod if CONVERTED_LABEL in (pod["metadata"].get("labels") or {}) else None

    pod = wait_for(converted, 30, "the API server's authenticated call to mutate the pod")
    assert pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"].startswith("dra-bridge-")
    assert "admission uid=" in hook.log.read_text(errors="replace")


def test_a_caller_with_another_cas_certificate_is_refused_in_the_handshake(
    authenticating: tuple[ControlPlane, Webhook, Any, CertificateAuthority], tmp_path: Path
) -> None:
    _, hook, certs, _ = authenticating
    ctx = ssl.create_default_context(cafile=str(certs.ca_cert))
    stranger = CertificateAuthority(tmp_path / "other", "other-ca").issue("stranger", "kube-apiserver", client=True)
    ctx.load_cert_chain(str(stranger.cert), str(stranger.key))
    with pytest.raises(OSError) as refused:  # ssl.SSLError, or urllib's URLError around it
        urllib.request.urlopen(f"https://127.0.0.1:{hook.port}/healthz", context=ctx, timeout=5)
    assert "certificate" in str(refused.value).lower() or isinstance(refused.value, ConnectionResetError), refused


def test_a_caller_without_a_certificate_gets_403_on_the_admission_path_and_the_probe_answers(
    authenticating: tuple[ControlPlane, Webhook, Any, CertificateAuthority],
) -> None:
    _, hook, certs, _ = authenticating
    ctx = ssl.create_default_context(cafile=str(certs.ca_cert))
    with urllib.request.urlopen(f"https://127.0.0.1:{hook.port}/healthz", context=ctx, timeout=5) as probe:
        assert probe.status == 200
    review = urllib.request.Request(
        f"https://127.0.0.1:{hook.port}/mutate/enforce",
        data=b"{}",
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(review, context=ctx, timeout=5)
    refused.value.close()  # the error holds the response's socket
    assert refused.value.code == 403
