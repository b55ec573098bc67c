"""`helm install` of charts/dra-bridge as a user installs it, on the real node (issue 13).

The module's cluster (``podcluster.py``): control plane on the host's address with an audit
log, a real node on which no device plugin ever registered, kube-proxy, the image of
``hack/image.sh`` in the node's containerd. Helm is ``hack/helm.sh``'s. The release's values
only say where this node keeps things (kubelet root, CDI directory, state directory), the
image, and short agent periods. Then: the webhook and the agent run as pods of the image under
the chart's ServiceAccounts and RBAC; a legacy Deployment in an enforced namespace is
converted, its claim allocated on the agent's slices and prepared by the agent, its container
sees the GPU; with the webhook scaled to 0 a GPU pod in kube-system and one in the release
namespace are created (never sent to the webhook), one in the enforced namespace is refused
with the API server's message under ``Fail`` and created under ``Ignore``; ``helm uninstall``
leaves no webhook configuration; the audit log shows observed ⊆ granted ⊆ declared for both
ServiceAccounts.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_bridge.bridge.access import API_CALLS as BRIDGE_CALLS
from dra_bridge.kube.errors import KubeError
from dra_bridge.kube.resources import ApiCall
from dra_bridge.translate.names import CONVERTED_LABEL
from dra_bridge.webhook.access import API_CALLS as WEBHOOK_CALLS
from tests.deviceplugins.toolkit_cdi import write_toolkit_spec
from tests.e2e.audit import granted_calls, observed_calls, service_account_user, violations
from tests.e2e.bridge_node import (
    DRIVER,
    V1,
    claim_of,
    our_slices,
    prepared_claims,
    published_ids,
    seed_inventory,
    set_mode,
)
from tests.e2e.controlplane import REPO_ROOT
from tests.e2e.kubeapi import KubeClient, Obj, api_path, create_namespace, wait_for
from tests.e2e.node_pods import finished_log, log_of, seen_uuids, shows
from tests.e2e.podcluster import PodCluster
from tests.e2e.realnode import RealNode

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]

CHART = REPO_ROOT / "charts" / "dra-bridge"
HELM_SCRIPT = REPO_ROOT / "hack" / "helm.sh"
NS_LABEL = "dra-bridge.io/webhook"  # the chart's webhook.namespaceLabel default
GPU_LABEL = "nvidia.com/gpu.present"  # one of the agent's default node affinity terms
UUIDS = ["GPU-7a8b9c0d-0000-4000-8000-000000000001", "GPU-7a8b9c0d-0000-4000-8000-000000000002"]
ADMISSION = "admissionregistration.k8s.io/v1"


def find_helm() -> Path:
    if not CHART.is_dir():
        pytest.skip(f"{CHART.relative_to(REPO_ROOT)} is not in this tree")
    proc = subprocess.run(["bash", str(HELM_SCRIPT), "env"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail(f"Helm is not built: run `hack/helm.sh build`: {proc.stderr.strip()}", pytrace=False)
    return Path(proc.stdout.strip()) / "helm"


def helm(cluster: PodCluster, *args: str) -> str:
    proc = subprocess.run(
        [str(find_helm()), *args, "--kubeconfig", str(cluster.control_plane.kubeconfig)],
        capture_output=True,
        text=True,
        check=False,
        timeout=150,
    )
    assert proc.returncode == 0, f"helm {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def release_values(cluster: PodCluster, state: Path) -> dict[str, Any]:
    repository, tag = cluster.image.rsplit(":", 1)
    node = cluster.node
    return {
        "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
        "webhook": {"replicas": 1},
        "agent": {
            "kubeletDir": str(node.root_dir),
            "cdiDirs": [str(node.cdi_dir)],
            "stateDir": str(state),
            "settlePeriod": 1,
            "pollInterval": 1,
        },
    }


def legacy_deployment(node: RealNode, name: str) -> Obj:
    labels = {"app": name}
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "cuda",
                            "image": node.env["BUSYBOX_IMAGE"],
                            "imagePullPolicy": "Never",
                            "command": ["sh", "-c", shows()],
                            "resources": {"limits": {"nvidia.com/gpu": 1}},
                        }
                    ],
                },
            },
        },
    }


def gpu_pod(node: RealNode, name: str) -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "cuda",
                    "image": node.env["BUSYBOX_IMAGE"],
                    "imagePullPolicy": "Never",
                    "command": ["sleep", "3600"],
                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                }
            ],
        },
    }


def running_pod(kube: KubeClient, ns: str, app: str) -> Obj | None:
    return next(
        (
            p
            for p in kube.list(api_path("v1", "pods", ns), label_selector=f"app={app}")
            if p.get("status", {}).get("phase") == "Running"
        ),
        None,
    )


def pods_state(kube: KubeClient, ns: str) -> list[Any]:
    out: list[Any] = []
    for p in kube.list(api_path("v1", "pods", ns)):
        out.append(
            [p["metadata"]["name"], p.get("status", {}).get("phase"), p.get("status", {}).get("containerStatuses")]
        )
        try:
            out.append(log_of(kube, ns, p["metadata"]["name"])[-2000:])
        except KubeError as err:
            out.append(str(err))
    return out


def webhook_deployment(kube: KubeClient, ns: str) -> str:
    (deploy,) = [
        d["metadata"]["name"]
        for d in kube.list(api_path("apps/v1", "deployments", ns))
        if d["metadata"]["name"].endswith("-webhook")
    ]
    return str(deploy)


def upgrade(cluster: PodCluster, release: str, ns: str, *settings: str) -> None:
    """``helm upgrade --reuse-values --set ...`` (the way a user scales or changes a release)."""
    args = [a for s in settings for a in ("--set", s)]
    helm(cluster, "upgrade", release, str(CHART), "--namespace", ns, "--reuse-values", *args)


def no_webhook_pods(kube: KubeClient, ns: str) -> bool:
    return not kube.list(api_path("v1", "pods", ns), label_selector="app.kubernetes.io/component=webhook")


def refusal(kube: KubeClient, ns: str, pod: Obj) -> str:
    try:
        kube.create(api_path("v1", "pods", ns), pod, dry_run=True)
    except KubeError as err:
        return str(err)
    return ""


# One release's life in order (install, hand-over, a converted Deployment running, the webhook
# at 0 replicas, uninstall), each step on what the one before left: a linear scenario whose
# sections are commented; split, each part would need the whole state passed along.
def test_helm_install_converts_prepares_and_uninstalls_cleanly(cluster: PodCluster, tmp_path: Path) -> None:  # noqa: PLR0915
    began = time.monotonic()
    revoked: datetime | None = None
    kube, node = cluster.control_plane.client(), cluster.node
    find_helm()
    suffix = uuid.uuid4().hex[:6]
    release, rns, work = "dra-bridge", f"dra-system-{suffix}", f"team-{suffix}"
    state = tmp_path / "state"
    seed_inventory(state, node.name, [("nvidia.com/gpu", u) for u in UUIDS])
    toolkit = write_toolkit_spec(node.cdi_dir, UUIDS, tmp_path / "identity")
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(release_values(cluster, state)))
    kube.patch(api_path("v1", "nodes", name=node.name), {"metadata": {"labels": {GPU_LABEL: "true"}}})
    installed = False
    granted: dict[str, set[ApiCall]] = {}
    accounts: dict[str, str] = {}
    try:
        helm(
            cluster,
            "install",
            release,
            str(CHART),
            "--namespace",
            rns,
            "--create-namespace",
            "--values",
            str(values),
            "--wait",
            "--timeout",
            "120s",
        )
        installed = True
        print(f"\nhelm install --wait {time.monotonic() - began:.1f}s after the start")
        for sa in kube.list(api_path("v1", "serviceaccounts", rns)):
            name = sa["metadata"]["name"]
            if name != "default":
                accounts[name] = "webhook" if name.endswith("-webhook") else "agent"
        assert sorted(accounts.values()) == ["agent", "webhook"], accounts
        granted = {name: granted_calls(kube, rns, name) for name in accounts}

        # the hand-over of this node: the agent publishes the recorded inventory
        set_mode(kube, node.name, "dra")
        published = wait_for(
            lambda: published_ids(kube, node.name), 60, "the agent's slices", observe=lambda: pods_state(kube, rns)
        )
        assert sorted(published.values()) == UUIDS

        # a legacy Deployment in an enforced namespace: converted, allocated, prepared, running
        create_namespace(kube, work)
        kube.patch(api_path("v1", "namespaces", name=work), {"metadata": {"labels": {NS_LABEL: "enforce"}}})
        kube.create(api_path("apps/v1", "deployments", work), legacy_deployment(node, "trainer"))
        pod = wait_for(
            lambda: running_pod(kube, work, "trainer"),
            90,
            "the converted Deployment's pod Running",
            observe=lambda: [pods_state(kube, work), pods_state(kube, rns)],
        )
        assert CONVERTED_LABEL in pod["metadata"]["labels"], pod["metadata"]
        claim = claim_of(kube, work, pod, pod["spec"]["resourceClaims"][0]["name"])
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert result["driver"] == DRIVER and result["pool"] == node.name, result
        name = pod["metadata"]["name"]
        log = wait_for(lambda: finished_log(kube, work, name), 30, "its output")
        assert seen_uuids(log) == [published[result["device"]]], log
        assert claim["metadata"]["uid"] in prepared_claims(state)
        print(f"converted pod saw its GPU {time.monotonic() - began:.1f}s after the start")
        kube.delete(api_path("apps/v1", "deployments", work, "trainer"))
        wait_for(lambda: not kube.list(api_path("v1", "pods", work)), 60, "the Deployment's pods gone")
        wait_for(lambda: prepared_claims(state) == {}, 30, "the agent's NodeUnprepareResources")

        # the webhook at 0 replicas: kube-system and the release namespace never reach it
        deploy = webhook_deployment(kube, rns)
        upgrade(cluster, release, rns, "webhook.replicas=0")
        wait_for(lambda: no_webhook_pods(kube, rns), 60, "no webhook pod")
        for ns in ("kube-system", rns):
            assert refusal(kube, ns, gpu_pod(node, "not-sent")) == "", f"a GPU pod in {ns} was sent to the webhook"
        message = refusal(kube, work, gpu_pod(node, "refused"))
        assert "failed calling webhook" in message and deploy in message, message
        upgrade(cluster, release, rns, "webhook.enforce.failurePolicy=Ignore")
        wait_for(lambda: refusal(kube, work, gpu_pod(node, "ignored")) == "", 30, "pod creation going on under Ignore")

        # helm deletes the RBAC and the pods together: calls after this are refused for a
        # revoked grant, not for an undeclared one, and are left out of the check below.
        revoked = datetime.now(UTC)
        helm(cluster, "uninstall", release, "--namespace", rns, "--wait", "--timeout", "60s")
        installed = False
        left = [w["metadata"]["name"] for w in kube.list(api_path(ADMISSION, "mutatingwebhookconfigurations"))]
        assert left == [], f"helm uninstall left webhook configurations: {left}"
        assert kube.create(api_path("v1", "pods", work), gpu_pod(node, "after"), dry_run=True)
        print(f"whole test {time.monotonic() - began:.1f}s")
    finally:
        revoked = revoked or datetime.now(UTC)
        if installed:
            subprocess.run(
                [
                    str(find_helm()),
                    "uninstall",
                    release,
                    "--namespace",
                    rns,
                    "--wait",
                    "--kubeconfig",
                    str(cluster.control_plane.kubeconfig),
                ],
                check=False,
                timeout=90,
            )
        toolkit.unlink(missing_ok=True)
        set_mode(kube, node.name, None)
        kube.patch(api_path("v1", "nodes", name=node.name), {"metadata": {"labels": {GPU_LABEL: None}}})
        for ns in (work, rns):
            kube.delete(api_path("v1", "namespaces", name=ns), ignore_missing=True)
        for s in our_slices(kube, node.name):
            kube.delete(api_path(V1, "resourceslices", name=s["metadata"]["name"]), ignore_missing=True)
    for name, role in accounts.items():
        declared = WEBHOOK_CALLS if role == "webhook" else BRIDGE_CALLS
        observed = observed_calls(cluster.control_plane.audit_log, service_account_user(rns, name), until=revoked)
        assert observed, f"no call of {name} in the audit log"
        problems = violations(observed, granted[name], declared, rns)
        assert not problems, f"{name}:\n" + "\n".join(problems)
