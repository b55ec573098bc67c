"""The webhook under test: two ``dra-webhook serve`` subprocesses on loopback over TLS, fake
GPU nodes with bridge ResourceSlices, and the MutatingWebhookConfiguration that routes
labelled namespaces to them (see test_webhook_e2e.py)."""

from __future__ import annotations

import base64
import contextlib
import os
import ssl
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dra_bridge.kube.errors import AlreadyExists
from dra_bridge.kube.resources import ApiCall, rbac_rules
from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.names import CONVERTED_LABEL, NODE_MODE_LABEL
from dra_bridge.webhook.access import API_CALLS
from dra_bridge.webhook.certs import write_certs
from tests.e2e.controlplane import REPO_ROOT, ControlPlane
from tests.e2e.kubeapi import KubeClient, api_path, create_fake_node, create_namespace, wait_for
from tests.e2e.processes import free_port

V1 = "resource.k8s.io/v1"
DRIVER = "dra-bridge.io"
MODE_LABEL = "dra-bridge-e2e/webhook"
DS_LABEL = "dra-bridge-e2e/daemonset"
A100_PRODUCT = "NVIDIA A100-SXM4-40GB"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
LEASE_NAMESPACE = "dra-bridge"  # the webhook's --namespace default: its reconciler's Lease


@dataclass
class Webhook:
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s; waits for it either way (no zombie, no open handle)."""
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def mode_label_for(label: str) -> str:
    """The namespace label (key) one test webhook enrols by: ``<key>=enforce`` sends a namespace
    to it (its ``--namespace-label``, as the chart passes ``webhook.namespaceLabel``)."""
    return f"dra-bridge-e2e/wh-{label}"


def start_webhook(  # noqa: PLR0913 (each keyword is one optional flag of the webhook under test)
    cp: ControlPlane,
    certs: Any,
    workdir: Path,
    api_version: str,
    *,
    kubeconfig: Path | None = None,
    name: str = "",
    mode_label: str = MODE_LABEL,
    client_auth: tuple[Path, Path, Path] | None = None,
    extra_args: tuple[str, ...] = (),
) -> Webhook:
    """A ``dra-webhook serve`` subprocess, once its /readyz answers 200 (cluster-admin unless
    ``kubeconfig`` names another identity; ``name`` tells its log apart; it acts for namespaces
    labelled ``<mode_label>=enforce`` or ``=audit``, as its registration's selectors must say;
    ``client_auth``: (CA, certificate, key): the webhook gets ``--client-ca-file CA``, and its
    readiness is asked with the certificate; ``extra_args``: more flags)."""
    port = free_port()
    log = workdir / f"webhook-{name or api_version.rsplit('/', 1)[-1]}.log"
    fh = log.open("wb")  # the child holds its own copy: ours closes below
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dra_bridge.webhook.cli",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--tls-cert-file",
            str(certs.cert),
            "--tls-key-file",
            str(certs.key),
            "--kubeconfig",
            str(kubeconfig or cp.kubeconfig),
            "--api-version",
            api_version,
            "--reload-interval",
            "0.5",
            # the registration's caBundle and the host it calls: ready only if the pair fits both
            "--ca-bundle",
            str(certs.ca_cert),
            "--service-name",
            "127.0.0.1",
            "--namespace-label",
            mode_label,
            *(("--client-ca-file", str(client_auth[0])) if client_auth else ()),
            *extra_args,
        ],
        cwd=REPO_ROOT,
        stdout=fh,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    fh.close()
    ctx = ssl.create_default_context(cafile=str(certs.ca_cert))
    if client_auth is not None:
        ctx.load_cert_chain(str(client_auth[1]), str(client_auth[2]))
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=ctx, timeout=2) as resp:
                if resp.status == 200:
                    return Webhook(proc, port, log)
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait(5)
            raise RuntimeError(f"webhook did not become ready:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.1)


def grant(kube: KubeClient, name: str, sa_ns: str, calls: list[ApiCall]) -> None:
    """A service account ``name`` in ``sa_ns`` with a ClusterRole and a Role (in LEASE_NAMESPACE)
    granting exactly ``calls``."""
    kube.create(api_path("v1", "serviceaccounts", sa_ns), {"metadata": {"name": name}})
    subject = [{"kind": "ServiceAccount", "name": name, "namespace": sa_ns}]
    kube.create(f"{RBAC}/clusterroles", {"metadata": {"name": name}, "rules": rbac_rules(calls)})
    kube.create(
        f"{RBAC}/clusterrolebindings",
        {
            "metadata": {"name": name},
            "subjects": subject,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        },
    )
    kube.create(
        f"{RBAC}/namespaces/{LEASE_NAMESPACE}/roles",
        {"metadata": {"name": name}, "rules": rbac_rules(calls, "namespace")},
    )
    kube.create(
        f"{RBAC}/namespaces/{LEASE_NAMESPACE}/rolebindings",
        {
            "metadata": {"name": name},
            "subjects": subject,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        },
    )


def token_kubeconfig(kube: KubeClient, path: Path, sa_ns: str, name: str, server: str, ca: Path) -> Path:
    token = kube.create(
        f"/api/v1/namespaces/{sa_ns}/serviceaccounts/{name}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
    )["status"]["token"]
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "sa",
                "clusters": [{"name": "c", "cluster": {"server": server, "certificate-authority": str(ca)}}],
                "users": [{"name": name, "user": {"token": token}}],
                "contexts": [{"name": "sa", "context": {"cluster": "c", "user": name}}],
            }
        )
    )
    return path


def webhook_entry(name: str, port: int, path: str, ca: bytes, mode_label: str, mode: str = "") -> dict[str, Any]:
    """One registration entry calling ``path`` for namespaces labelled ``<mode_label>=<mode>``
    (``mode``: the path's own, enforce or audit, by default)."""
    mode = mode or path.rsplit("/", 1)[-1]
    return {
        "name": name,
        "clientConfig": {"url": f"https://127.0.0.1:{port}{path}", "caBundle": base64.b64encode(ca).decode()},
        "rules": [
            {
                "operations": ["CREATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
                "scope": "Namespaced",
            }
        ],
        "namespaceSelector": {"matchLabels": {mode_label: mode}},
        "sideEffects": "NoneOnDryRun",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Fail",
        "timeoutSeconds": 10,
        "reinvocationPolicy": "IfNeeded",
    }


@dataclass
class Cluster:
    kube: KubeClient
    v1: Webhook
    v1beta1: Webhook
    a100: str
    t4: str
    namespaces: list[str]
    suffix: str


def bridge_device(i: int, product: str) -> dict[str, Any]:
    return {
        "name": f"gpu-{i}",
        "attributes": {
            "resourceName": {"string": "nvidia.com/gpu"},
            "gpu.nvidia.com/productName": {"string": product},
            "gpu.nvidia.com/type": {"string": "gpu"},
        },
    }


@contextlib.contextmanager
def running_cluster(control_plane: ControlPlane, kube: KubeClient, workdir: Path) -> Iterator[Cluster]:
    """Our DeviceClasses, a T4 and an A100 node with bridge slices, two webhook servers (v1
    and v1beta1) and the MutatingWebhookConfiguration; all removed on exit."""
    certs = write_certs(workdir / "certs", "dra-bridge", "dra-bridge-webhook", ("127.0.0.1",))
    for cls in load_catalog().device_classes():
        with contextlib.suppress(AlreadyExists):
            kube.create(api_path(V1, "deviceclasses"), {"apiVersion": V1, **cls})
    suffix = uuid.uuid4().hex[:6]
    nodes = {f"t4-{suffix}": "Tesla T4", f"a100-{suffix}": A100_PRODUCT}
    for node, product in nodes.items():
        labels = {"nvidia.com/gpu.product": product.replace(" ", "-"), DS_LABEL: suffix}
        if product == A100_PRODUCT:
            labels[NODE_MODE_LABEL] = "dra"  # handed over to DRA: DaemonSet pods there are converted
        create_fake_node(kube, node, labels=labels)
        kube.create(
            api_path(V1, "resourceslices"),
            {
                "apiVersion": V1,
                "kind": "ResourceSlice",
                "metadata": {"name": f"{node}-{DRIVER}"},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": node,
                    "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                    "devices": [bridge_device(i, product) for i in range(16)],
                },
            },
        )
    v1 = start_webhook(control_plane, certs, workdir, "v1")
    v1beta1 = start_webhook(control_plane, certs, workdir, "v1beta1", mode_label=mode_label_for("v1beta1"))
    ca = certs.ca_cert.read_bytes()
    mwc_name = f"dra-bridge-e2e-{suffix}"
    kube.create(
        api_path("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations"),
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": mwc_name},
            "webhooks": [
                webhook_entry("enforce.v1.dra-bridge.io", v1.port, "/mutate/enforce", ca, MODE_LABEL),
                webhook_entry("audit.v1.dra-bridge.io", v1.port, "/mutate/audit", ca, MODE_LABEL),
                webhook_entry(
                    "enforce.v1beta1.dra-bridge.io", v1beta1.port, "/mutate/enforce", ca, mode_label_for("v1beta1")
                ),
            ],
        },
    )
    try:
        cluster = Cluster(kube, v1, v1beta1, f"a100-{suffix}", f"t4-{suffix}", [], suffix)
        yield cluster
    finally:
        kube.delete(
            api_path("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", name=mwc_name),
            ignore_missing=True,
        )
        for hook in (v1, v1beta1):
            hook.stop()
            if os.environ.get("DRA_BRIDGE_KEEP_LOGS") == "1":
                print(hook.tail())
        for node in nodes:
            kube.delete(api_path(V1, "resourceslices", name=f"{node}-{DRIVER}"), ignore_missing=True)
            kube.delete(api_path("v1", "nodes", name=node), ignore_missing=True)
        for ns in cluster.namespaces if "cluster" in locals() else []:
            kube.delete(api_path("v1", "namespaces", name=ns), ignore_missing=True)


def webhook_namespace(cluster: Cluster, mode: str) -> str:
    """A fresh namespace for ``mode``: enforce or audit (the v1 webhook), enforce-v1beta1 (the
    v1beta1 one), anything else (labelled so, enrolled nowhere)."""
    name = f"wh-{mode}-{uuid.uuid4().hex[:6]}"
    create_namespace(cluster.kube, name)
    cluster.namespaces.append(name)
    labels = {mode_label_for("v1beta1"): "enforce"} if mode == "enforce-v1beta1" else {MODE_LABEL: mode}
    cluster.kube.patch(api_path("v1", "namespaces", name=name), {"metadata": {"labels": labels}})
    return name


def legacy_pod(name: str, gpus: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"},
            "containers": [
                {
                    "name": "cuda",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"limits": {"nvidia.com/gpu": gpus}},
                }
            ],
        },
    }


def legacy_deployment(name: str, replicas: int = 2) -> dict[str, Any]:
    pod = legacy_pod(name)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod["spec"]},
        },
    }


def wait_webhook_active(cluster: Cluster, ns: str) -> dict[str, Any]:
    """Dry-run creates until the API server calls the webhook (it learns of the MWC asynchronously)."""

    def converted() -> dict[str, Any] | None:
        pod = cluster.kube.create(api_path("v1", "pods", ns), legacy_pod("probe"), dry_run=True)
        return pod if CONVERTED_LABEL in (pod["metadata"].get("labels") or {}) else None

    return wait_for(converted, 30, "the API server to call the webhook")


def pods_of(kube: KubeClient, ns: str, app: str) -> list[dict[str, Any]]:
    return kube.list(api_path("v1", "pods", ns), label_selector=f"app={app}")


@contextlib.contextmanager
def least_privilege_webhook(cp: ControlPlane, kube: KubeClient, workdir: Path, label: str) -> Iterator[Webhook]:
    """One ``dra-webhook serve`` (resource.k8s.io/v1) as ServiceAccount ``dra-webhook-<label>``
    with exactly the RBAC of webhook/access.py, called in enforce mode for namespaces labelled
    ``mode_label_for(label)=enforce`` (its own MutatingWebhookConfiguration); all removed on exit."""
    sa_ns, name = f"wh-sa-{label}", f"dra-webhook-{label}"
    create_namespace(kube, sa_ns)
    with contextlib.suppress(AlreadyExists):
        create_namespace(kube, LEASE_NAMESPACE)
    certs = write_certs(workdir / "certs", "dra-bridge", "dra-bridge-webhook", ("127.0.0.1",))
    mwc = f"dra-bridge-e2e-{label}"
    hook = None
    try:
        grant(kube, name, sa_ns, list(API_CALLS))
        kubeconfig = token_kubeconfig(kube, workdir / f"{name}.kubeconfig", sa_ns, name, cp.server, cp.ca_file)
        hook = start_webhook(
            cp,
            certs,
            workdir,
            "resource.k8s.io/v1",
            kubeconfig=kubeconfig,
            name=label,
            mode_label=mode_label_for(label),
        )
        kube.create(
            api_path("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations"),
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": mwc},
                "webhooks": [
                    webhook_entry(
                        f"enforce.{label}.dra-bridge.io",
                        hook.port,
                        "/mutate/enforce",
                        certs.ca_cert.read_bytes(),
                        mode_label_for(label),
                    )
                ],
            },
        )
        yield hook
    finally:
        kube.delete(
            api_path("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", name=mwc), ignore_missing=True
        )
        if hook is not None:
            hook.stop()
        for path in (
            f"{RBAC}/clusterrolebindings/{name}",
            f"{RBAC}/clusterroles/{name}",
            f"{RBAC}/namespaces/{LEASE_NAMESPACE}/rolebindings/{name}",
            f"{RBAC}/namespaces/{LEASE_NAMESPACE}/roles/{name}",
        ):
            kube.delete(path, ignore_missing=True)
        kube.delete(api_path("v1", "namespaces", name=sa_ns), ignore_missing=True)
