"""A drain refuses nothing, on the real node (issue 26 item 2; docs/design.md D37).

The module's cluster (``podcluster.py``): the control plane on the host's address, a real node,
kube-proxy, so that the API server calls the webhook through its Service's ClusterIP as in a
cluster, and pools its connections there. The chart is installed with two webhook replicas
(no agent). GPU pods are then created in an enforced namespace at 5 a second, through the
``/mutate/enforce`` entry under ``failurePolicy: Fail``, while the webhook Deployment is
restarted (``kubectl rollout restart``: a surge rollout, each old pod sleeping in ``preStop``,
then draining after SIGTERM). Beside them, four clients create GPU pods with ``dryRun=All`` as
fast as they can (the webhook is still called), so that the API server keeps several pooled
connections to each replica and opens new ones through kube-proxy during the rollout: with the
drain off (``webhook.drain`` zeros, which is how the webhook stopped before) this load saw a few
``connection refused`` on this node, at 5 a second alone none. Not one creation may be refused,
and the rollout must have replaced both pods while they were being created.
"""

from __future__ import annotations

import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from dra_bridge.kube.errors import KubeError
from tests.e2e.kubeapi import KubeClient, Obj, api_path, create_namespace, wait_for
from tests.e2e.podcluster import PodCluster
from tests.e2e.test_helm_install_e2e import CHART, NS_LABEL, find_helm, gpu_pod, helm, webhook_deployment

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]

PODS, RATE = 200, 5.0
#: Clients creating dry-run GPU pods beside, as fast as the API server answers.
LOAD_CLIENTS = 4
WEBHOOK = "app.kubernetes.io/component=webhook"


def _webhook_pods(kube: KubeClient, ns: str) -> set[str]:
    return {p["metadata"]["name"] for p in kube.list(api_path("v1", "pods", ns), label_selector=WEBHOOK)}


def _rolled(kube: KubeClient, ns: str, deploy: str, old: set[str]) -> bool:
    d = kube.get(api_path("apps/v1", "deployments", ns, deploy))
    status = d.get("status", {})
    done = (
        status.get("observedGeneration", 0) >= d["metadata"]["generation"]
        and status.get("updatedReplicas") == status.get("readyReplicas") == status.get("replicas") == 2
    )
    return done and not (_webhook_pods(kube, ns) & old)


class DryRunLoad:
    """``LOAD_CLIENTS`` threads creating dry-run GPU pods in ``ns`` until :meth:`stop`."""

    def __init__(self, cluster: PodCluster, ns: str) -> None:
        self.cluster, self.ns = cluster, ns
        self.refused: list[str] = []
        self.sent = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(LOAD_CLIENTS)]
        for t in self._threads:
            t.start()

    def _run(self, i: int) -> None:
        kube, n = self.cluster.control_plane.client(), 0
        while not self._stop.is_set():
            try:
                kube.create(api_path("v1", "pods", self.ns), gpu_pod(self.cluster.node, f"d-{i}-{n}"), dry_run=True)
            except KubeError as err:
                self.refused.append(f"dry-run d-{i}-{n}: {err}")
            n += 1
            self.sent += 1

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)


def test_a_rolling_restart_of_the_webhook_refuses_no_pod(cluster: PodCluster, tmp_path: Path) -> None:
    kube = cluster.control_plane.client()
    find_helm()
    suffix = uuid.uuid4().hex[:6]
    release, rns, work = "dra-bridge", f"dra-system-{suffix}", f"team-{suffix}"
    repository, tag = cluster.image.rsplit(":", 1)
    values = tmp_path / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
                "webhook": {"replicas": 2},
                "agent": {"enabled": False},
            }
        )
    )
    installed = False
    load: DryRunLoad | None = None
    try:
        helm(
            cluster, "install", release, str(CHART), "--namespace", rns, "--create-namespace", "--values", str(values),
            "--wait", "--timeout", "120s",
        )  # fmt: skip
        installed = True
        deploy = webhook_deployment(kube, rns)
        create_namespace(kube, work)
        kube.patch(api_path("v1", "namespaces", name=work), {"metadata": {"labels": {NS_LABEL: "enforce"}}})
        old = _webhook_pods(kube, rns)
        assert len(old) == 2, old

        load = DryRunLoad(cluster, work)
        refused: list[str] = []
        created = 0
        restarted_at: float | None = None
        rolled_at: float | None = None
        began = time.monotonic()
        while created < PODS or rolled_at is None:
            now = time.monotonic() - began
            assert now < 150, f"the rollout did not finish in 150 s ({created} pods created)"
            if restarted_at is None and now >= 2:
                stamp = datetime.now(UTC).isoformat()
                annotation = {"kubectl.kubernetes.io/restartedAt": stamp}
                kube.patch(
                    api_path("apps/v1", "deployments", rns, deploy),
                    {"spec": {"template": {"metadata": {"annotations": annotation}}}},
                )
                restarted_at = now
            if rolled_at is None and restarted_at is not None and _rolled(kube, rns, deploy, old):
                rolled_at = now
            pod: Obj = gpu_pod(cluster.node, f"p-{created:03d}")
            try:
                kube.create(api_path("v1", "pods", work), pod)
            except KubeError as err:
                refused.append(f"{now:.1f}s {pod['metadata']['name']}: {err}")
            created += 1
            time.sleep(max(0.0, created / RATE - (time.monotonic() - began)))
        load.stop()
        print(
            f"\n{created} pods created in {time.monotonic() - began:.1f}s; restart at {restarted_at:.1f}s, "
            f"both webhook pods replaced at {rolled_at:.1f}s; {len(refused)} refused; "
            f"{load.sent} dry-run creations beside, {len(load.refused)} refused"
        )
        assert refused == load.refused == [], "\n".join((refused + load.refused)[:20])
        converted = [
            p for p in kube.list(api_path("v1", "pods", work)) if p["spec"].get("resourceClaims")
        ]  # fmt: skip
        assert len(converted) == created, f"{len(converted)} of {created} pods converted"
    finally:
        if load is not None:
            load.stop()
        kube.delete(api_path("v1", "namespaces", name=work), ignore_missing=True)
        if installed:
            helm(cluster, "uninstall", release, "--namespace", rns, "--wait", "--timeout", "90s")
        kube.delete(api_path("v1", "namespaces", name=rns), ignore_missing=True)
    wait_for(lambda: not _webhook_pods(kube, rns), 60, "the webhook pods gone")
