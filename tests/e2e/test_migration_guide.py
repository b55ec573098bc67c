"""MIGRATION.md followed as a new user would, on the real node (issue 13).

Every command the guide gives (``guide.py``: its ````sh`` blocks and the inline commands the
steps tell the operator to run) is either in :data:`RUN`, run in the guide's order against the
module's cluster (``podcluster.py``: control plane, the real node with kube-proxy, the project's
image) with each step's "Verify" checked as written, or in :data:`SKIPPED` with the reason it
cannot run here. ``test_every_command_of_the_guide_is_run_or_skipped`` keeps the two lists in
step with the guide, so a new command is never skipped silently.

Only what a user substitutes is substituted: ``REGISTRY`` (the test image tagged as the guide's
build command names it, ``REGISTRY/dra-bridge:<appVersion>``), ``NODE``, the kubeconfig (through
``KUBECONFIG``), the optional ``[--api-version V]``. What a user's cluster already has is made
first: GPU Feature Discovery's labels on the node, the namespace ``team-a`` with its quota
``gpu`` and a legacy GPU Deployment (also in ``manifests/``), the NVIDIA toolkit's CDI spec, and
the inventory the agent records from the device plugin while the node is legacy (seeded: no
device plugin ever registered here, so there is no 5-minute capacity hold). The one
test-environment argument is ``--values test-node.yaml`` on ``helm install``: where this node
keeps the kubelet's directory, CDI specs and the agent's state, and short agent periods.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_bridge.translate.names import CONVERTED_LABEL
from tests.deviceplugins.toolkit_cdi import write_toolkit_spec
from tests.e2e.bridge_node import V1, our_slices, prepared_claims, published_ids, seed_inventory
from tests.e2e.controlplane import REPO_ROOT
from tests.e2e.guide import GUIDE, GuideShell, guide_commands
from tests.e2e.kubeapi import KubeClient, Obj, api_path, create_namespace, gfd_labels, wait_for
from tests.e2e.node_pods import finished_log, seen_uuids, shows
from tests.e2e.podcluster import PodCluster
from tests.e2e.test_helm_install_e2e import find_helm, pods_state

NS, RELEASE_NS, CHART_VERSION = "team-a", "gpu-system", "0.1.0"
REGISTRY = "registry.example"
PRODUCT = "NVIDIA-A100-SXM4-40GB"
UUIDS = ["GPU-5e1f0000-0000-4000-8000-000000000001", "GPU-5e1f0000-0000-4000-8000-000000000002"]
DRA_KEY = "nvidia-gpu.dra-bridge.io.deviceclass.resource.k8s.io/devices"
PREPARED = (
    'kubectl get node NODE -o jsonpath=\'{range .status.conditions[?(@.type=="DRABridgePreparedClaims")]}'
    '{.status} {.message} {.lastHeartbeatTime}{"\\n"}{end}\''
)
REPORT_CI = "dra-migrate report -f manifests/ --fail-on legacy-request"
INSTALL = (
    "helm install dra-bridge charts/dra-bridge --namespace gpu-system --create-namespace "
    "--set image.repository=REGISTRY/dra-bridge --wait"
)
QUOTA = (
    "kubectl -n team-a patch resourcequota gpu --type merge "
    '-p \'{"spec":{"hard":{"nvidia-gpu.dra-bridge.io.deviceclass.resource.k8s.io/devices":"8"}}}\''
)

UPGRADE = "helm upgrade dra-bridge charts/dra-bridge -n gpu-system --reuse-values --wait"
IGNORE = (
    "helm upgrade dra-bridge charts/dra-bridge -n gpu-system --reuse-values --set webhook.enforce.failurePolicy=Ignore"
)
FAIL = "helm upgrade dra-bridge charts/dra-bridge -n gpu-system --reuse-values --set webhook.enforce.failurePolicy=Fail"
OPT_OUT = "kubectl label namespace team-a dra-bridge.io/webhook-opt-out=true"
CLOUD = "a managed cloud's CLI: no such cloud here; checked against its public documentation only (linked in the guide)"

#: Run, in this order (the roll-backs where they can be seen doing what they say).
RUN = [
    "kubectl create namespace gpu-system",
    "kubectl label namespace gpu-system pod-security.kubernetes.io/enforce=privileged",
    INSTALL,
    "kubectl -n gpu-system get deploy,ds,pdb",
    "kubectl get mutatingwebhookconfiguration dra-bridge -o yaml",
    "kubectl get deviceclasses -l app.kubernetes.io/instance=dra-bridge",
    "dra-migrate report",
    "dra-migrate report -o markdown > migration-report.md",
    "dra-migrate report -f manifests/ -o html > report.html",
    "kubectl -n gpu-system get configmap dra-bridge-webhook-policy -o yaml > policy.yaml",
    "dra-migrate report --policy policy.yaml",
    "kubectl label namespace team-a dra-bridge.io/webhook=audit",
    "kubectl -n team-a get events --field-selector reason=DRAMigrationPlan",
    QUOTA,
    "kubectl -n team-a describe resourcequota gpu",
    "kubectl cordon NODE",
    "kubectl label node -l nvidia.com/gpu.product=NVIDIA-A100-SXM4-40GB dra-bridge.io/mode=dra",
    "kubectl get events -n default --field-selector reason=PublicationStarted",
    "kubectl get resourceslices --field-selector spec.driver=dra-bridge.io,spec.nodeName=NODE",
    "kubectl uncordon NODE",
    "kubectl label namespace team-a dra-bridge.io/webhook=enforce --overwrite",
    "kubectl -n team-a rollout restart deploy",
    "kubectl -n team-a get resourceclaimtemplates,resourceclaims",
    UPGRADE,
    "kubectl -n gpu-system rollout restart daemonset dra-bridge-agent",
    "kubectl -n gpu-system rollout status daemonset dra-bridge-agent",
    OPT_OUT,
    "kubectl label namespace team-a dra-bridge.io/webhook-opt-out-",
    IGNORE,
    FAIL,
    "kubectl label namespace team-a dra-bridge.io/webhook=audit --overwrite",
    "kubectl label node NODE dra-bridge.io/mode-",
    PREPARED,
    REPORT_CI,
    "kubectl get nodes -o custom-columns=NAME:.metadata.name,GPU:.status.capacity.nvidia\\.com/gpu",
    "helm uninstall dra-bridge -n gpu-system",
    "dra-migrate classes [--api-version V] | kubectl apply -f -",
    "dra-migrate convert -f manifests/ > /dev/null",
    "dra-migrate convert -f manifests/ --fail-on partial",
    "dra-migrate convert -f manifests/ > migrated.yaml",
    "kubectl apply -f migrated.yaml",
    "dra-migrate convert -f manifests/ --target vendor > vendor.yaml",
]

#: Not run here, each with its reason.
SKIPPED = {
    "gcloud container node-pools create dra-a100 --cluster CLUSTER --machine-type a2-highgpu-8g --accelerator "
    "type=nvidia-tesla-a100,count=8,gpu-driver-version=latest "
    "--node-labels=dra-bridge.io/mode=dra,gke-no-default-nvidia-gpu-device-plugin=true": CLOUD,
    "eksctl create nodegroup --cluster CLUSTER --name dra-a100 --node-type p4d.24xlarge "
    "--node-labels dra-bridge.io/mode=dra": CLOUD,
    "az aks nodepool add --resource-group RG --cluster-name CLUSTER --name draa100 --node-vm-size "
    "Standard_ND96asr_v4 --labels dra-bridge.io/mode=dra": CLOUD,
    "docker build --build-arg BASE_IMAGE=python:3.11-slim-bookworm@sha256:<digest> -t REGISTRY/dra-bridge:0.1.0 .": (
        "no Docker and no base image here: hack/image.sh builds the equivalent image from the same lock, tagged "
        "REGISTRY/dra-bridge:0.1.0 in the node's containerd instead of pushed"
    ),
    "docker buildx imagetools inspect": "a name in the build step's prose: no registry here to read a digest from",
    "docker push REGISTRY/dra-bridge:0.1.0": "no registry here: the image is in the node's containerd",
    "nvidia-ctk cdi generate": "no GPU and no NVIDIA toolkit here: the toolkit's CDI spec is written by "
    "tests/deviceplugins/toolkit_cdi.py",
    "helm uninstall": "the overview table's short form of step 1's roll-back (run in full)",
    "kubectl describe quota": "the overview table's short form of step 2's verify command (run in full)",
    "dra-migrate convert": "a name in step 2's prose; run in the Reference section",
    "kubectl label node NODE nvidia.com/gpu.deploy.device-plugin=false": "no GPU Operator here; the node never "
    "ran a device plugin",
    "kubectl get resourceslices --field-selector spec.driver=gpu.nvidia.com,spec.nodeName=NODE": "the NVIDIA DRA "
    "driver cannot be installed here (no registry, no GPU)",
    "kubectl -n team-a patch resourcequota gpu --type merge "
    '-p \'{"spec":{"hard":{"gpu.nvidia.com.deviceclass.resource.k8s.io/devices":"8"}}}\'': "step 6's vendor key: the "
    "NVIDIA DRA driver cannot be installed here; the webhook's rule it satisfies is "
    "tests/webhook/test_quota_classes.py",
    "dra-migrate convert --alignment ... --alignment-scope ...": "a form with placeholders, not a command "
    "(the options are covered by the convert tests)",
    "dra-bridge inventory --json": "run on a GPU node against its kubelet; the agent's inventory here is seeded",
    "helm template ...": "a form in prose (render your own chart)",
    "kubectl get -o yaml": "a form in prose",
    "kubectl apply": "a form in prose; `kubectl apply -f migrated.yaml` is run",
    "kubectl get pod -o yaml": "a form in prose (a live pod is kept-legacy: covered by the convert tests)",
}


def test_every_command_of_the_guide_is_run_or_skipped() -> None:
    commands = [c.text for c in guide_commands(GUIDE.read_text())]
    assert len(RUN) == len(set(RUN)) and not set(RUN) & set(SKIPPED)
    assert sorted(set(RUN) | set(SKIPPED)) == sorted(commands), (
        f"new in the guide: {sorted(set(commands) - set(RUN) - set(SKIPPED))}; "
        f"gone from it: {sorted((set(RUN) | set(SKIPPED)) - set(commands))}"
    )


def legacy_deployment(busybox: str) -> Obj:
    labels = {"app": "trainer"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "trainer", "namespace": NS},
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
                            "image": busybox,
                            "imagePullPolicy": "Never",
                            "command": ["sh", "-c", shows()],
                            "resources": {"limits": {"nvidia.com/gpu": 1}},
                        }
                    ],
                },
            },
        },
    }


def gpu_pod(busybox: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "probe", "namespace": NS},
        "spec": {
            "containers": [
                {
                    "name": "cuda",
                    "image": busybox,
                    "command": ["sleep", "1"],
                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                }
            ]
        },
    }


def dry_run(sh: GuideShell, pod_file: Path) -> tuple[Obj, str]:
    """``kubectl create --dry-run=server`` of a GPU pod: (the pod as admitted, kubectl's stderr)."""
    proc = subprocess.run(
        ["/usr/bin/kubectl", "create", "--dry-run=server", "-o", "yaml", "-f", str(pod_file)],
        env={**os.environ, "KUBECONFIG": str(sh.kubeconfig)},
        cwd=sh.cwd,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return yaml.safe_load(proc.stdout), proc.stderr


def trainer_pods(kube: KubeClient) -> list[Obj]:
    return kube.list(api_path("v1", "pods", NS), label_selector="app=trainer")


def until(check: Callable[[], Any], seconds: float, what: str, sh: GuideShell, kube: KubeClient) -> Any:
    return wait_for(
        check,
        seconds,
        what,
        interval=0.5,
        observe=lambda: [sh.transcript[-3:], pods_state(kube, NS), pods_state(kube, RELEASE_NS)],
    )


def audited(sh: GuideShell, kube: KubeClient, every: float = 5.0) -> str:
    """The guide's Event query once the namespace created a pod: its ReplicaSet replaces the
    trainer's pod, again every ``every`` seconds without a plan (the API server applies the
    namespace's new label to webhook selection once its namespace cache has it)."""
    out = sh.run("kubectl -n team-a get events --field-selector reason=DRAMigrationPlan").stdout
    if "DRAMigrationPlan" in out:
        return out
    if time.monotonic() - _replaced[0] >= every:
        _replaced[0] = time.monotonic()
        for pod in trainer_pods(kube):
            kube.delete(api_path("v1", "pods", NS, pod["metadata"]["name"]), ignore_missing=True)
    return ""


_replaced = [0.0]


@pytest.mark.e2e
@pytest.mark.real_node
@pytest.mark.timeout(420)
# MIGRATION.md step by step, each command then its "Verify" in the guide's order: one linear
# script that reads beside the guide; split, the steps would no longer follow it page by page.
def test_migration_guide_commands_run_as_written(cluster: PodCluster, tmp_path: Path) -> None:  # noqa: PLR0915
    began = time.monotonic()
    kube, node = cluster.control_plane.client(), cluster.node
    busybox = node.env["BUSYBOX_IMAGE"]
    helm_dir = find_helm().parent
    commands = {c.text for c in guide_commands(GUIDE.read_text())}
    work = tmp_path / "user"
    (work / "manifests").mkdir(parents=True)
    (work / "charts").symlink_to(REPO_ROOT / "charts")
    sh = GuideShell(
        cwd=work,
        kubeconfig=cluster.control_plane.kubeconfig,
        path=[helm_dir, REPO_ROOT / ".venv" / "bin", Path("/usr/bin")],
        substitutions={"REGISTRY": REGISTRY, "NODE": node.name, "[--api-version V] ": ""},
        known=commands,
    )

    # what the user's cluster already has (see the module docstring)
    node.ctr("images", "tag", cluster.image, f"{REGISTRY}/dra-bridge:{CHART_VERSION}")
    state = tmp_path / "state"
    seed_inventory(state, node.name, [("nvidia.com/gpu", u) for u in UUIDS])
    toolkit = write_toolkit_spec(node.cdi_dir, UUIDS, tmp_path / "identity")
    kube.patch(api_path("v1", "nodes", name=node.name), {"metadata": {"labels": gfd_labels(PRODUCT, len(UUIDS))}})
    create_namespace(kube, NS)
    kube.create(
        api_path("v1", "resourcequotas", NS),
        {"metadata": {"name": "gpu"}, "spec": {"hard": {"requests.nvidia.com/gpu": "8"}}},
    )
    deployment = legacy_deployment(busybox)
    (work / "manifests" / "trainer.yaml").write_text(yaml.safe_dump(deployment))
    kube.create(api_path("apps/v1", "deployments", NS), deployment)
    (tmp_path / "probe.yaml").write_text(yaml.safe_dump(gpu_pod(busybox)))
    values = tmp_path / "test-node.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "agent": {
                    "kubeletDir": str(node.root_dir),
                    "cdiDirs": [str(node.cdi_dir)],
                    "stateDir": str(state),
                    "settlePeriod": 1,
                    "pollInterval": 1,
                }
            }
        )
    )
    installed = False
    try:
        # production: Pod Security admission lets the agent's host paths in the release namespace
        sh.run("kubectl create namespace gpu-system")
        sh.run("kubectl label namespace gpu-system pod-security.kubernetes.io/enforce=privileged")
        labels = kube.get(api_path("v1", "namespaces", name=RELEASE_NS))["metadata"]["labels"]
        assert labels.get("pod-security.kubernetes.io/enforce") == "privileged", labels

        # 1. install in audit mode, read the report
        sh.run(INSTALL, extra=f" --values {values} --timeout 150s")
        installed = True
        print(f"\nhelm install --wait: {time.monotonic() - began:.1f}s after the start")
        out = sh.run("kubectl -n gpu-system get deploy,ds,pdb").stdout
        assert any(line.split()[:2] == ["deployment.apps/dra-bridge-webhook", "2/2"] for line in out.splitlines()), out
        (ds,) = [line.split() for line in out.splitlines() if line.startswith("daemonset.apps/")]
        assert ds[1:4] == ["1", "1", "1"], out  # one agent per GPU node: desired, current, ready
        assert "poddisruptionbudget.policy/dra-bridge-webhook" in out, out
        registration = yaml.safe_load(sh.run("kubectl get mutatingwebhookconfiguration dra-bridge -o yaml").stdout)
        entries = {w["name"]: w["namespaceSelector"]["matchExpressions"] for w in registration["webhooks"]}
        assert sorted(entries) == ["audit.webhook.dra-bridge.io", "enforce.webhook.dra-bridge.io"], entries
        for name, expressions in entries.items():
            excluded = [
                e["values"]
                for e in expressions
                if e["key"] == "kubernetes.io/metadata.name" and e["operator"] == "NotIn"
            ]
            assert excluded and {"kube-system", RELEASE_NS} <= set(excluded[0]), (name, expressions)
        out = sh.run("kubectl get deviceclasses -l app.kubernetes.io/instance=dra-bridge").stdout
        assert "nvidia-gpu.dra-bridge.io" in out.split(), out
        live = sh.run("dra-migrate report").stdout
        assert any("Deployment/team-a/trainer" in line and "blocked" in line for line in live.splitlines()), live
        assert "quota: ResourceQuota/team-a/gpu limits requests.nvidia.com/gpu; lacks " in live, live
        # the quota hole keeps the trainer legacy (no converted pod), and the chart's own pods ask
        # for no device: none is counted as a converted pod
        assert "capacity: 0 of 0 converted pods fit (legacy " in live, live
        sh.run("dra-migrate report -o markdown > migration-report.md")
        assert "trainer" in (work / "migration-report.md").read_text()
        sh.run("dra-migrate report -f manifests/ -o html > report.html")
        html = (work / "report.html").read_text()
        assert html.lstrip().lower().startswith("<!doctype html") and "trainer" in html, html[:300]

        sh.run("kubectl -n gpu-system get configmap dra-bridge-webhook-policy -o yaml > policy.yaml")
        judged = sh.run("dra-migrate report --policy policy.yaml").stdout
        assert any("Deployment/team-a/trainer" in line for line in judged.splitlines()), judged

        sh.run("kubectl label namespace team-a dra-bridge.io/webhook=audit")
        plan = until(lambda: audited(sh, kube), 60, "the plan's Event", sh, kube)
        assert "trainer" in plan, plan
        assert all(CONVERTED_LABEL not in p["metadata"].get("labels", {}) for p in trainer_pods(kube))

        # 2. DRA quotas: until the DRA key exists, an enforced namespace's pods stay legacy
        kube.patch(
            api_path("v1", "namespaces", name=NS), {"metadata": {"labels": {"dra-bridge.io/webhook": "enforce"}}}
        )
        admitted, warnings = until(
            lambda: (r := dry_run(sh, tmp_path / "probe.yaml")) and "Warning" in r[1] and r,
            30,
            "the webhook's answer in the enforced namespace",
            sh,
            kube,
        )
        assert "resourceClaims" not in admitted["spec"], admitted["spec"]
        assert "ResourceQuota limits requests.nvidia.com/gpu" in warnings and DRA_KEY in warnings, warnings
        sh.run(QUOTA)
        out = sh.run("kubectl -n team-a describe resourcequota gpu").stdout
        assert any(line.split() == [DRA_KEY, "0", "8"] for line in out.splitlines()), out
        admitted, warnings = until(
            lambda: (r := dry_run(sh, tmp_path / "probe.yaml")) and "resourceClaims" in r[0]["spec"] and r,
            30,
            "a converted dry-run pod",
            sh,
            kube,
        )
        kube.patch(api_path("v1", "namespaces", name=NS), {"metadata": {"labels": {"dra-bridge.io/webhook": "audit"}}})

        # 3. hand over the node pool
        sh.run("kubectl cordon NODE")
        sh.run("kubectl label node -l nvidia.com/gpu.product=NVIDIA-A100-SXM4-40GB dra-bridge.io/mode=dra")
        out = until(
            lambda: (
                (o := sh.run("kubectl get events -n default --field-selector reason=PublicationStarted").stdout)
                and "PublicationStarted" in o
                and o
            ),
            60,
            "PublicationStarted",
            sh,
            kube,
        )
        assert f"node/{node.name}" in out, out
        out = sh.run("kubectl get resourceslices --field-selector spec.driver=dra-bridge.io,spec.nodeName=NODE").stdout
        assert node.name in out and "dra-bridge.io" in out, out
        published = published_ids(kube, node.name)
        assert sorted(published.values()) == UUIDS
        sh.run("kubectl uncordon NODE")

        # 4. enforce one namespace: a new pod is converted, allocated, prepared, running
        sh.run("kubectl label namespace team-a dra-bridge.io/webhook=enforce --overwrite")
        sh.run("kubectl -n team-a rollout restart deploy")
        pod = until(
            lambda: next((p for p in trainer_pods(kube) if p["status"].get("phase") == "Running"), None),
            90,
            "the restarted Deployment's pod Running",
            sh,
            kube,
        )
        assert pod["metadata"]["labels"].get(CONVERTED_LABEL) == "true" and pod["spec"]["resourceClaims"], pod
        assert pod["spec"]["nodeName"] == node.name
        name = pod["metadata"]["name"]
        log = until(lambda: finished_log(kube, NS, name), 30, "its output", sh, kube)
        assert len(seen_uuids(log)) == 1 and seen_uuids(log)[0] in UUIDS, log
        out = sh.run("kubectl -n team-a get resourceclaimtemplates,resourceclaims").stdout
        assert "resourceclaimtemplate.resource.k8s.io/" in out and "allocated,reserved" in out, out
        print(f"converted pod saw its GPU {time.monotonic() - began:.1f}s after the start")

        # production: upgrading the chart mid-migration restarts the agent and keeps the slices
        before = {s["metadata"]["name"]: s["metadata"]["uid"] for s in our_slices(kube, node.name)}
        sh.run(UPGRADE, extra=" --timeout 150s")
        sh.run("kubectl -n gpu-system rollout restart daemonset dra-bridge-agent")
        sh.run("kubectl -n gpu-system rollout status daemonset dra-bridge-agent", extra=" --timeout=120s")
        after = {s["metadata"]["name"]: s["metadata"]["uid"] for s in our_slices(kube, node.name)}
        assert after == before and before, (before, after)
        assert kube.get(api_path("v1", "pods", NS, name))["status"]["phase"] == "Running"

        # production: break glass; the opt-out label takes the namespace out of the webhook at once
        sh.run(OPT_OUT)
        until(
            lambda: "resourceClaims" not in dry_run(sh, tmp_path / "probe.yaml")[0]["spec"],
            30,
            "an opted-out namespace's pod admitted as it is",
            sh,
            kube,
        )
        sh.run("kubectl label namespace team-a dra-bridge.io/webhook-opt-out-")
        until(
            lambda: "resourceClaims" in dry_run(sh, tmp_path / "probe.yaml")[0]["spec"],
            30,
            "the namespace converted again",
            sh,
            kube,
        )

        def enforce_policy() -> str:
            registration = kube.get(
                api_path("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", name="dra-bridge")
            )
            (entry,) = [w for w in registration["webhooks"] if w["name"] == "enforce.webhook.dra-bridge.io"]
            return str(entry["failurePolicy"])

        sh.run(IGNORE)
        assert enforce_policy() == "Ignore"
        sh.run(FAIL)
        assert enforce_policy() == "Fail"

        # roll back 4: new pods stay legacy, the running pod keeps its claim
        sh.run("kubectl label namespace team-a dra-bridge.io/webhook=audit --overwrite")
        until(
            lambda: "resourceClaims" not in dry_run(sh, tmp_path / "probe.yaml")[0]["spec"],
            30,
            "a new pod left legacy",
            sh,
            kube,
        )
        assert kube.get(api_path("v1", "pods", NS, name))["status"]["phase"] == "Running"

        # roll back 3: slices withdrawn at once, the prepared claim served until its pod ends
        sh.run("kubectl label node NODE dra-bridge.io/mode-")
        until(lambda: not our_slices(kube, node.name), 30, "the slices withdrawn", sh, kube)
        until(
            lambda: sh.run(PREPARED).stdout.startswith("True 1 prepared claim(s) on this node "),
            15,
            "1 prepared claim",
            sh,
            kube,
        )
        kube.patch(api_path("apps/v1", "deployments", NS, "trainer"), {"spec": {"replicas": 0}})  # drain
        until(
            lambda: sh.run(PREPARED).stdout.startswith("False 0 prepared claim(s) on this node "),
            60,
            "0 prepared claims",
            sh,
            kube,
        )
        (condition,) = [
            c
            for c in kube.get(api_path("v1", "nodes", name=node.name))["status"]["conditions"]
            if c["type"] == "DRABridgePreparedClaims"
        ]
        assert condition["status"] == "False", condition
        assert prepared_claims(state) == {}

        # 5. widen: CI fails on a legacy request left in the manifests
        assert sh.run(REPORT_CI, ok=False).returncode == 3

        # 7. no node reports nvidia.com/gpu capacity
        out = sh.run(
            "kubectl get nodes -o custom-columns=NAME:.metadata.name,GPU:.status.capacity.nvidia\\.com/gpu"
        ).stdout
        assert out.split() == ["NAME", "GPU", node.name, "<none>"], out

        # roll back 1: the chart's objects go, no webhook registration is left
        sh.run("helm uninstall dra-bridge -n gpu-system")
        installed = False
        assert kube.list(api_path("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations")) == []
        assert kube.list(api_path(V1, "deviceclasses"), label_selector="app.kubernetes.io/instance=dra-bridge") == []

        # Reference: convert manifests kept in git, without the chart
        sh.run("dra-migrate classes [--api-version V] | kubectl apply -f -")
        assert kube.exists(api_path(V1, "deviceclasses", name="nvidia-gpu.dra-bridge.io"))
        findings = sh.run("dra-migrate convert -f manifests/ > /dev/null").stderr
        assert "trainer" in findings and "translated" in findings, findings
        sh.run("dra-migrate convert -f manifests/ --fail-on partial")
        sh.run("dra-migrate convert -f manifests/ > migrated.yaml")
        sh.run("kubectl apply -f migrated.yaml")
        sh.run("dra-migrate convert -f manifests/ --target vendor > vendor.yaml")  # the end: the vendor's classes
        templates = [
            d for d in yaml.safe_load_all((work / "vendor.yaml").read_text()) if d["kind"] == "ResourceClaimTemplate"
        ]
        classes = {r["exactly"]["deviceClassName"] for t in templates for r in t["spec"]["spec"]["devices"]["requests"]}
        assert classes == {"gpu.nvidia.com"}, classes
        template = kube.get(api_path("apps/v1", "deployments", NS, "trainer"))["spec"]["template"]
        assert template["metadata"]["labels"].get(CONVERTED_LABEL) == "true" and template["spec"]["resourceClaims"]
        assert kube.list(api_path(V1, "resourceclaimtemplates", NS))
        (work / "manifests" / "trainer.yaml").rename(tmp_path / "trainer-legacy.yaml")
        (work / "migrated.yaml").rename(work / "manifests" / "migrated.yaml")
        sh.run(REPORT_CI)  # 5: the manifests kept converted pass CI
        assert list(dict.fromkeys(sh.ran)) == RUN, [c for c in RUN if c not in sh.ran]
        print(f"whole guide {time.monotonic() - began:.1f}s")
    finally:
        print("\n".join(sh.transcript))
        if installed:
            subprocess.run(
                [
                    str(helm_dir / "helm"),
                    "uninstall",
                    "dra-bridge",
                    "-n",
                    RELEASE_NS,
                    "--wait",
                    "--kubeconfig",
                    str(cluster.control_plane.kubeconfig),
                ],
                check=False,
                timeout=90,
            )
        toolkit.unlink(missing_ok=True)
        kube.patch(
            api_path("v1", "nodes", name=node.name),
            {
                "metadata": {"labels": {**dict.fromkeys(gfd_labels(), None), "dra-bridge.io/mode": None}},
                "spec": {"unschedulable": None},
            },
        )
        for ns in (NS, RELEASE_NS):
            kube.delete(api_path("v1", "namespaces", name=ns), ignore_missing=True)
        for s in our_slices(kube, node.name):
            kube.delete(api_path(V1, "resourceslices", name=s["metadata"]["name"]), ignore_missing=True)
