"""The image of ``hack/image.sh`` on the real node, its pods talking to the API server as
installed pods do (``podcluster.py``: API server on the host's address, kube-proxy).

- the three entry points run in a pod as the image's non-root user, with a read-only root
  filesystem, every capability dropped and the RuntimeDefault seccomp profile;
- dra-webhook (a Deployment behind its Service, which the API server calls through kube-proxy's
  rules) and the dra-bridge agent (a pod with the node's kubelet, CDI and state directories),
  from the image, each under its own ServiceAccount with exactly the RBAC of its access.py
  (``manifests.py``), reaching the API server through the ``kubernetes`` Service (in-cluster
  configuration): a legacy Deployment in an enforced namespace is converted, its claim
  allocated on the agent's slices and prepared by the agent, its container sees the GPU; the
  audit log shows each account made only calls it declares (observed ⊆ granted ⊆ declared).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dra_bridge.bridge.access import API_CALLS as BRIDGE_CALLS
from dra_bridge.kube.errors import KubeError
from dra_bridge.kube.resources import ApiCall
from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.names import CONVERTED_LABEL
from dra_bridge.webhook.access import API_CALLS as WEBHOOK_CALLS
from dra_bridge.webhook.certs import write_certs
from tests.deviceplugins.toolkit_cdi import write_toolkit_spec
from tests.e2e import manifests
from tests.e2e.audit import granted_calls, observed_calls, service_account_user, violations, workloads_first
from tests.e2e.bridge_node import (
    DRIVER,
    V1,
    claim_of,
    device_classes,
    our_slices,
    prepared_claims,
    published_ids,
    seed_inventory,
    set_mode,
)
from tests.e2e.kubeapi import KubeClient, Obj, api_path, create_namespace, wait_for, wait_for_object
from tests.e2e.manifests import HARDENED
from tests.e2e.node_pods import cleanup, finished_log, log_of, seen_uuids, shows
from tests.e2e.podcluster import PodCluster
from tests.e2e.realnode import RealNode

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]

MODE_LABEL = "dra-bridge-e2e/image"
UUIDS = ["GPU-1d2e3f4a-0000-4000-8000-000000000001", "GPU-1d2e3f4a-0000-4000-8000-000000000002"]


@pytest.fixture
def ns(cluster: PodCluster) -> Iterator[str]:
    kube = cluster.control_plane.client()
    name = f"img-{uuid.uuid4().hex[:6]}"
    create_namespace(kube, name)
    yield name
    kube.delete(api_path("v1", "namespaces", name=name), ignore_missing=True)


def test_entry_points_run_as_the_images_non_root_user(cluster: PodCluster, ns: str) -> None:
    kube = cluster.control_plane.client()
    script = (
        "id -u; dra-migrate --version; dra-webhook --version; dra-bridge --version; "
        "dra-migrate convert --help >/dev/null && echo convert-help; "
        "touch /probe 2>/dev/null || echo read-only-root"
    )
    kube.create(
        api_path("v1", "pods", ns),
        {
            "metadata": {"name": "entry-points"},
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 0,
                "automountServiceAccountToken": False,
                "containers": [
                    {
                        "name": "main",
                        "image": cluster.image,
                        "imagePullPolicy": "Never",
                        "command": ["sh", "-c", script],
                        "securityContext": HARDENED,
                    }
                ],
            },
        },
    )
    pod = wait_for_object(
        kube,
        api_path("v1", "pods", ns, "entry-points"),
        lambda p: p.get("status", {}).get("phase") in ("Succeeded", "Failed"),
        60,
        "pod entry-points done",
    )
    log = log_of(kube, ns, "entry-points")
    assert pod["status"]["phase"] == "Succeeded", log
    assert log.split() == [
        "65532",
        "dra-migrate",
        "0.1.0",
        "dra-webhook",
        "0.1.0",
        "dra-bridge",
        "0.1.0",
        "convert-help",
        "read-only-root",
    ], log


def legacy_pod(image: str) -> Obj:
    """A one-GPU pod (for dry runs: the webhook converts it, nothing runs it)."""
    return {
        "metadata": {"name": "legacy"},
        "spec": {
            "containers": [
                {
                    "name": "cuda",
                    "image": image,
                    "command": ["sleep", "3600"],
                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                }
            ]
        },
    }


def legacy_deployment(node: RealNode, name: str) -> Obj:
    """A one-GPU Deployment as a user wrote it for the device plugin: the container shows its GPUs."""
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


def test_legacy_deployment_converted_and_prepared_by_pods_of_the_image(
    catalog: Catalog, cluster: PodCluster, ns: str, tmp_path: Path
) -> None:
    """The webhook (Deployment behind its Service) and the agent (a pod with the node's
    directories) from the image, each under its own least-privilege ServiceAccount: a legacy
    Deployment in an enforced namespace is converted, its claim allocated on the agent's slices,
    prepared by the agent, and its container sees the GPU; the audit log shows each account made
    only calls it declares."""
    began = time.monotonic()
    kube, node = cluster.control_plane.client(), cluster.node
    state = tmp_path / "state"
    seed_inventory(state, node.name, [("nvidia.com/gpu", u) for u in UUIDS])
    toolkit = write_toolkit_spec(node.cdi_dir, UUIDS, tmp_path / "identity")
    certs = write_certs(tmp_path / "certs", ns, "dra-webhook")
    objects = [
        *manifests.webhook(cluster.image, ns, certs, {MODE_LABEL: "enforce"}),
        *manifests.agent(cluster.image, ns, node, state),
    ]
    workload = f"{ns}-work"
    created: list[str] = []
    granted: dict[str, set[ApiCall]] = {}
    try:
        with device_classes(kube, catalog):
            for path, obj in objects:
                created.append(f"{path}/{kube.create(path, obj)['metadata']['name']}")
            granted = {sa: granted_calls(kube, ns, sa) for sa in ("dra-webhook", "dra-bridge")}
            wait_for(
                lambda: _ready(kube, ns, "dra-webhook"), 60, "the webhook pod Ready", observe=lambda: _state(kube, ns)
            )
            set_mode(kube, node.name, "dra")
            published = wait_for(
                lambda: published_ids(kube, node.name),
                60,
                "the agent pod's slices",
                observe=lambda: _state(kube, ns, "dra-bridge"),
            )
            assert sorted(published.values()) == UUIDS
            create_namespace(kube, workload)
            kube.patch(api_path("v1", "namespaces", name=workload), {"metadata": {"labels": {MODE_LABEL: "enforce"}}})
            wait_for(
                lambda: _converted(kube, workload, cluster.image),
                30,
                "the API server to call the webhook through its Service",
            )
            kube.create(api_path("apps/v1", "deployments", workload), legacy_deployment(node, "trainer"))
            pod = wait_for(
                lambda: next(
                    (
                        p
                        for p in kube.list(api_path("v1", "pods", workload), label_selector="app=trainer")
                        if p.get("status", {}).get("phase") == "Running"
                    ),
                    None,
                ),
                90,
                "the converted Deployment's pod Running",
                observe=lambda: [kube.list(api_path("v1", "pods", workload)), _state(kube, ns, "dra-bridge")],
            )
            assert CONVERTED_LABEL in pod["metadata"]["labels"], pod["metadata"]
            name = pod["metadata"]["name"]
            claim = claim_of(kube, workload, pod, pod["spec"]["resourceClaims"][0]["name"])
            (result,) = claim["status"]["allocation"]["devices"]["results"]
            assert result["driver"] == DRIVER and result["pool"] == node.name, result
            log = wait_for(lambda: finished_log(kube, workload, name), 30, "its output")
            assert seen_uuids(log) == [published[result["device"]]], log
            assert claim["metadata"]["uid"] in prepared_claims(state)
            print(f"\nconverted Deployment's container saw its GPU {time.monotonic() - began:.1f}s after the start")
            cleanup(kube, node, workload, None, toolkit)
            wait_for(lambda: prepared_claims(state) == {}, 30, "the agent's NodeUnprepareResources")
    finally:
        toolkit.unlink(missing_ok=True)
        set_mode(kube, node.name, None)
        kube.delete(api_path("v1", "namespaces", name=workload), ignore_missing=True)
        # The services' pods go first and are waited out: every call they make, their shutdown
        # and their answer to leaving DRA mode included, is made under the grants checked below.
        workloads, rest = workloads_first(created)
        for path in workloads:
            kube.delete(path, ignore_missing=True)
        try:
            wait_for(lambda: not kube.list(api_path("v1", "pods", ns)), 60, "the services' pods gone")
        finally:  # never leave the grants behind, even when the pods outlive the wait
            for path in rest:
                kube.delete(path, ignore_missing=True)
        for s in our_slices(kube, node.name):
            kube.delete(api_path(V1, "resourceslices", name=s["metadata"]["name"]), ignore_missing=True)
    for sa, declared in (("dra-webhook", WEBHOOK_CALLS), ("dra-bridge", BRIDGE_CALLS)):
        observed = observed_calls(cluster.control_plane.audit_log, service_account_user(ns, sa))
        assert observed, f"no call of {sa} in the audit log"
        problems = violations(observed, granted[sa], declared, ns)
        assert not problems, f"{sa}:\n" + "\n".join(problems)


def _ready(kube: KubeClient, ns: str, app: str) -> bool:
    pods = kube.list(api_path("v1", "pods", ns), label_selector=f"app={app}")
    return any(
        c["type"] == "Ready" and c["status"] == "True" for p in pods for c in p.get("status", {}).get("conditions", [])
    )


def _state(kube: KubeClient, ns: str, app: str = "dra-webhook") -> list[Any]:
    """The pods' container states and log tails (for a timeout's message)."""
    out: list[Any] = []
    for p in kube.list(api_path("v1", "pods", ns), label_selector=f"app={app}"):
        out.append(p.get("status", {}).get("containerStatuses"))
        try:
            out.append(log_of(kube, ns, p["metadata"]["name"])[-3000:])
        except KubeError as err:
            out.append(str(err))
    return out


def _converted(kube: KubeClient, ns: str, image: str) -> Obj | None:
    pod = kube.create(api_path("v1", "pods", ns), legacy_pod(image), dry_run=True)
    return pod if CONVERTED_LABEL in (pod["metadata"].get("labels") or {}) else None
