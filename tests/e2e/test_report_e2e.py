"""``dra-migrate report`` in live mode against the real control plane, as a ServiceAccount granted
exactly the documented read-only RBAC (``migrate/access.py``), not cluster-admin."""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from dra_bridge.kube.resources import ApiCall, rbac_rules
from dra_bridge.migrate.access import API_CALLS, OPTIONAL_CALLS
from dra_bridge.migrate.cli import main
from dra_bridge.translate.alloc import release_defaults
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kubeapi import KubeClient, api_path, create_fake_node, wait_for
from tests.e2e.webhook_cluster import RBAC, token_kubeconfig

pytestmark = pytest.mark.e2e
NS_LABEL = "dra-bridge.io/webhook"  # the chart's webhook.namespaceLabel default


def _read_only_kubeconfig(
    cp: ControlPlane, kube: KubeClient, namespace: str, path: Path, calls: tuple[ApiCall, ...] = API_CALLS
) -> Path:
    name = f"report-{uuid.uuid4().hex[:6]}"
    kube.create(api_path("v1", "serviceaccounts", namespace), {"metadata": {"name": name}})
    kube.create(f"{RBAC}/clusterroles", {"metadata": {"name": name}, "rules": rbac_rules(calls)})
    kube.create(
        f"{RBAC}/clusterrolebindings",
        {
            "metadata": {"name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        },
    )
    return token_kubeconfig(kube, path, namespace, name, cp.server, cp.ca_file)


@pytest.mark.server_version
def test_live_report_reads_the_cluster_read_only(
    control_plane: ControlPlane, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    node = f"gpu-{uuid.uuid4().hex[:6]}"
    # enrolled for conversion: the report reads the Namespace's labels (translate/enrolment.py)
    kube.patch(api_path("v1", "namespaces", name=namespace), {"metadata": {"labels": {NS_LABEL: "enforce"}}})
    create_fake_node(
        kube,
        node,
        labels={"nvidia.com/gpu.product": "NVIDIA-L4"},
        capacity={"nvidia.com/gpu": "2"},
        allocatable={"nvidia.com/gpu": "2"},
    )
    container = {"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "2"}}}
    kube.create(
        api_path("apps/v1", "deployments", namespace),
        {
            "metadata": {"name": "trainer"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "trainer"}},
                "template": {"metadata": {"labels": {"app": "trainer"}}, "spec": {"containers": [container]}},
            },
        },
    )
    kube.create(
        api_path("v1", "pods", namespace),
        {"metadata": {"name": "pinned"}, "spec": {"nodeName": node, "containers": [container]}},
    )
    kube.create(
        api_path("v1", "pods", namespace),
        {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}},
    )
    kubeconfig = _read_only_kubeconfig(control_plane, kube, namespace, tmp_path / "report.kubeconfig")

    def grouped(*extra: str) -> tuple[dict[str, Any], dict[str, Any], str] | None:
        out, err = io.StringIO(), io.StringIO()
        argv = ["report", "--kubeconfig", str(kubeconfig), "-o", "json", *extra]
        assert main(argv, stdout=out, stderr=err) == 0, err.getvalue()
        doc = json.loads(out.getvalue())
        mine = {f"{w['kind']}/{w['name']}": w for w in doc["workloads"] if w["namespace"] == namespace}
        return (doc, mine, err.getvalue()) if len(mine["Deployment/trainer"]["pods"]) == 2 else None

    doc, mine, err = wait_for(grouped, 30, "the Deployment's two pods grouped under it")
    assert mine["Deployment/trainer"]["path"] == "needs-conversion"
    assert mine["Deployment/trainer"]["enrolment"]["mode"] == "enforce"
    assert doc["inputs"]["enrolment"]["namespaces"] >= 4 and doc["inputs"]["enrolment"]["note"] == ""
    assert mine["Deployment/trainer"]["alignment"]["status"] == "lost"
    assert mine["Pod/pinned"]["path"] == "blocked"
    assert [r["code"] for r in mine["Pod/pinned"]["risks"]] == ["pinned-to-node"]
    assert doc["inputs"]["live"] and doc["inputs"]["kubernetesVersion"].startswith("1.")
    pools = {p["name"]: p for p in doc["nodePools"]}
    assert node in pools["NVIDIA-L4"]["nodes"]
    assert "read" in err and "\x1b" not in err  # no progress bar off a terminal
    # The GPU workloads are listed, the others counted; --all-workloads lists every one.
    assert "Pod/web" not in mine and doc["totals"]["notListed"] >= 1
    assert {w["source"] for w in doc["workloads"]} == {"cluster"}
    every = grouped("--all-workloads")
    assert every is not None and "Pod/web" in every[1] and every[0]["totals"]["notListed"] == 0
    # what the cluster serves: discovery, and the gates by the release's defaults (no /metrics grant)
    served = doc["inputs"]["servedApiVersions"]
    assert "resource.k8s.io/v1" in served and doc["options"]["apiVersion"] == "resource.k8s.io/v1"
    features = doc["inputs"]["features"]
    assert features["source"] == "defaults" and "/metrics not read (403 Forbidden)" in features["note"]


def test_live_report_reads_the_feature_metric_where_granted(
    control_plane: ControlPlane, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    calls = (*API_CALLS, *OPTIONAL_CALLS)
    kubeconfig = _read_only_kubeconfig(control_plane, kube, namespace, tmp_path / "report.kubeconfig", calls)
    out, err = io.StringIO(), io.StringIO()
    assert main(["report", "--kubeconfig", str(kubeconfig), "-o", "json"], stdout=out, stderr=err) == 0, err.getvalue()
    features = json.loads(out.getvalue())["inputs"]["features"]
    assert (features["source"], features["note"]) == ("metrics", "")
    minor = int(features["kubernetesVersion"].split(".")[1])
    # the control plane runs its release's defaults: the metric agrees with the documented table
    assert features["gates"] == {g: release_defaults(minor)[g] for g in features["gates"]}
    text = io.StringIO()
    assert main(["report", "--kubeconfig", str(kubeconfig)], stdout=text, stderr=io.StringIO()) == 0
    assert "(the API server's kubernetes_feature_enabled)" in text.getvalue()


CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _install_raycluster_crd(kube: KubeClient) -> None:
    """A RayCluster CRD (ray.io/v1, schema left open) as KubeRay installs one; kept across tests."""
    if not kube.exists(f"{CRD}/rayclusters.ray.io"):
        kube.create(
            CRD,
            {
                "metadata": {"name": "rayclusters.ray.io"},
                "spec": {
                    "group": "ray.io",
                    "scope": "Namespaced",
                    "names": {
                        "plural": "rayclusters",
                        "singular": "raycluster",
                        "kind": "RayCluster",
                        "listKind": "RayClusterList",
                    },
                    "versions": [
                        {
                            "name": "v1",
                            "served": True,
                            "storage": True,
                            "schema": {
                                "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                            },
                        }
                    ],
                },
            },
        )
    wait_for(
        lambda: any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in (kube.get(f"{CRD}/rayclusters.ray.io").get("status") or {}).get("conditions") or []
        ),
        30,
        "the RayCluster CRD established",
    )


def test_live_report_lists_a_served_custom_resource(
    control_plane: ControlPlane, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    _install_raycluster_crd(kube)
    worker = {"name": "worker", "image": "rayproject/ray", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    wait_for(
        lambda: kube.create(
            api_path("ray.io/v1", "rayclusters", namespace),
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayCluster",
                "metadata": {"name": "ray"},
                "spec": {
                    "workerGroupSpecs": [
                        {"groupName": "gpu", "replicas": 1, "template": {"spec": {"containers": [worker]}}}
                    ]
                },
            },
        ),
        30,
        "the RayCluster created (the new API served)",
    )
    kubeconfig = _read_only_kubeconfig(control_plane, kube, namespace, tmp_path / "report.kubeconfig")
    out, err = io.StringIO(), io.StringIO()
    assert main(["report", "--kubeconfig", str(kubeconfig), "-o", "json"], stdout=out, stderr=err) == 0, err.getvalue()
    mine = {
        f"{w['kind']}/{w['name']}": w for w in json.loads(out.getvalue())["workloads"] if w["namespace"] == namespace
    }
    ray = mine["RayCluster/ray"]
    # the test's namespace carries no dra-bridge.io/webhook label: the webhook never sees its pods
    assert ray["path"] == "not-enrolled" and ray["enrolment"]["mode"] == "none"
    assert f"namespace {namespace} is not enrolled" in ray["pathReason"] and "(the plan: " in ray["pathReason"]
    assert ray["legacy"] == [{"container": "worker", "resource": "nvidia.com/gpu", "count": 1, "kind": "gpu"}]
