"""``dra-migrate report`` over the shipped examples plus node, slice, class, quota and pod dumps."""

from __future__ import annotations

import asyncio
import io
import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from dra_bridge.kube.fake import FakeKube
from dra_bridge.kube.resources import DEPLOYMENTS, DEVICE_CLASSES, NODES, PODS
from dra_bridge.migrate.access import API_CALLS, OPTIONAL_CALLS
from dra_bridge.migrate.cli import main
from dra_bridge.migrate.live import read_cluster

DATA = Path(__file__).resolve().parents[1] / "data"
EXAMPLES = str(DATA / "examples")
CLUSTER = str(DATA / "report")
SCHEMA = json.loads(files("dra_bridge.translate").joinpath("data/report-v2.schema.json").read_text())


def run(*argv: str, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdin=io.StringIO(stdin), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def report(*extra: str) -> dict[str, Any]:
    code, out, err = run("report", "-f", EXAMPLES, "-f", CLUSTER, "-o", "json", *extra)
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    return doc


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{w['kind']}/{w['namespace']}/{w['name']}#{file_of(w)}": w for w in doc["workloads"]}


def file_of(w: dict[str, Any]) -> str:
    """The file name of a row's source (``DIR/FILE#N``)."""
    file, _, position = str(w["source"]).rsplit("/", 1)[-1].rpartition("#")
    assert position.isdigit(), w["source"]
    return file


#: Every workload of the examples and dumps: (outcome, path) on 1.36 with the dumped DeviceClasses.
EXPECTED_136 = {
    "Pod/team-a/gpu-pod#01-pod-limits-only-toleration.yaml": ("translated", "kep-5004"),
    "Deployment/team-a/plugin-test#02-deployment-product-label-shared-suffix.yaml": ("partial", "needs-conversion"),
    "Job/team-a/pytorch-training#06-job-timesliced-gpu-shared-count-10.yaml": ("partial", "needs-conversion"),
    "Pod/team-a/gpu-pod#07-hami-gputype-annotation-two-gpus.yaml": ("translated", "needs-conversion"),
    "Pod/team-a/init-sidecar-app#09-init-sidecar-app-each-with-gpu.yaml": ("unsupported", "blocked"),
    "StatefulSet/team-a/cuda-vectoradd-1#10-mig-statefulset-limits-only.yaml": ("translated", "needs-conversion"),
    "Deployment/team-a/example-ollama#13-helm-two-mig-profiles-one-container.yaml": ("translated", "needs-conversion"),
    "Deployment/team-a/example-ollama#14-helm-already-dra-claim.yaml": ("unchanged", "nothing-to-do"),
    "Deployment/team-a/vllm-qwen7b-deployment-vllm#16-vllm-stack-rendered-recreate-runtimeclass.yaml": (
        "translated",
        "kep-5004",
    ),
    "LeaderWorkerSet/team-a/vllm#19-lws-leader-worker-eight-gpus.yaml": ("left-for-webhook", "kep-5004"),
    "Deployment/team-a/mistral-7b#21-amd-vllm-deployment-requests-limits-hostipc.yaml": (
        "translated",
        "needs-conversion",
    ),
    "Job/team-a/intelgpu-demo-job#22-intel-i915-job.yaml": ("translated", "needs-conversion"),
    "Pod/team-b/trainer-#pods.yaml": ("translated", "kep-5004"),
    "Pod/team-b/pinned#pods.yaml": ("kept-legacy", "blocked"),
    "Pod/team-b/sneaky#pods.yaml": ("unchanged", "nothing-to-do"),
    "Pod/team-b/warmup#pods.yaml": ("translated", "needs-conversion"),
    "Pod/team-b/by-product#pods.yaml": ("translated", "needs-conversion"),
    "RayCluster/team-b/ray#pods.yaml": ("kept-legacy", "kep-5004"),
}


def test_every_workload_has_its_outcome_and_path_on_136() -> None:
    doc = report("--kubernetes-version", "1.36")
    got = {k: (w["outcome"], w["path"]) for k, w in by_name(doc).items()}
    assert got == EXPECTED_136
    assert doc["totals"]["workloads"] == len(EXPECTED_136)
    assert doc["totals"]["paths"] == {
        "nothing-to-do": 2,
        "kep-5004": 5,
        "needs-conversion": 9,
        "not-enrolled": 0,
        "blocked": 2,
    }
    # no Namespace objects in these files: enrolment is not known, and the report says so
    assert doc["inputs"]["enrolment"]["note"].startswith("enrolment not known: no Namespace objects")
    assert {w["enrolment"]["mode"] for w in doc["workloads"]} == {"unknown"}


def test_kep5004_needs_136_and_names_the_newest_class() -> None:
    old = by_name(report())  # default: v1's first release, 1.34
    assert {w["path"] for w in old.values()} == {"nothing-to-do", "needs-conversion", "blocked"}
    why = "served from Kubernetes 1.36 (target 1.34: DRAExtendedResource off by default)"
    assert why in old["Pod/team-b/by-product#pods.yaml"]["pathReason"]
    new = by_name(report("--kubernetes-version", "v1.36.3"))
    served = new["Pod/team-a/gpu-pod#01-pod-limits-only-toleration.yaml"]
    assert "DeviceClass gpu.nvidia.com" in served["pathReason"] and served["via"] == "node hand-over"


@pytest.mark.parametrize(
    ("key", "why"),
    [
        pytest.param("Pod/team-b/warmup#pods.yaml", "createDeviceRequests", id="init-container-counts-differ"),
        pytest.param("Pod/team-b/by-product#pods.yaml", "nodeSelector nvidia.com/gpu.product", id="gfd-selector"),
        pytest.param("Pod/team-a/gpu-pod#07-hami-gputype-annotation-two-gpus.yaml", "HAMi annotation", id="hami"),
        pytest.param(
            "Job/team-a/pytorch-training#06-job-timesliced-gpu-shared-count-10.yaml", "shared name", id="shared-name"
        ),
        pytest.param(
            "StatefulSet/team-a/cuda-vectoradd-1#10-mig-statefulset-limits-only.yaml",
            "no DeviceClass",
            id="mig-without-class",
        ),
        pytest.param("Pod/team-b/pinned#pods.yaml", "spec.nodeName bypasses the scheduler", id="pinned"),
    ],
)
def test_kep5004_does_not_serve_what_the_mapping_loses(key: str, why: str) -> None:
    w = by_name(report("--kubernetes-version", "1.36"))[key]
    assert w["path"] != "kep-5004" and why in w["pathReason"]


def test_pods_grouped_by_owner_and_unnamed_pods_marked() -> None:
    doc = by_name(report())
    assert doc["Deployment/team-a/plugin-test#02-deployment-product-label-shared-suffix.yaml"]["pods"] == [
        "plugin-test-6d4cf56db6-x7k2p",
        "plugin-test-6d4cf56db6-q9wz4",
    ]
    trainer = doc["Pod/team-b/trainer-#pods.yaml"]
    assert trainer["notYetNamed"] and trainer["pods"] == ["trainer-(not yet named)"]
    code, out, _ = run("report", "-f", CLUSTER)
    assert code == 0 and "Pod/team-b/trainer-(not yet named)" in out and "RayCluster/team-b/ray" in out


def test_risks() -> None:
    doc = by_name(report())
    codes = {k: sorted({r["code"] for r in w["risks"]}) for k, w in doc.items() if w["risks"]}
    assert codes == {
        "LeaderWorkerSet/team-a/vllm#19-lws-leader-worker-eight-gpus.yaml": ["operator-reads-limit"],
        "Pod/team-b/trainer-#pods.yaml": ["gpu-count-in-env"],
        "Pod/team-b/pinned#pods.yaml": ["pinned-to-node"],
        "Pod/team-b/sneaky#pods.yaml": ["visible-devices-by-hand"],
        "RayCluster/team-b/ray#pods.yaml": ["operator-reads-limit"],
    }
    trainer = doc["Pod/team-b/trainer-#pods.yaml"]["risks"]
    assert {r["path"] for r in trainer} == {"spec.containers[0].env[0]", "spec.containers[0].env[1]"}


def test_node_pools_and_mixed_allocators() -> None:
    pools = {p["name"]: p for p in report()["nodePools"]}
    h100 = pools["NVIDIA-H100-80GB-HBM3"]
    assert h100["nodes"] == ["h100-a", "h100-b"] and h100["legacyDevices"] == {"nvidia.com/gpu": 8}
    assert h100["draDevices"] == 4 and h100["mixedAllocators"] == {}
    assert pools["NVIDIA-A100-SXM4-40GB"]["mixedAllocators"] == {"a100-a": ["nvidia.com/gpu"]}
    assert h100["paths"]["needs-conversion"] == 1  # plugin-test's pods run on h100-a
    assert (h100["capacity"]["devices"], h100["capacity"]["usedBefore"]) == (12, 0)  # 8 from h100-a's allocatable
    assert pools["NVIDIA-A100-SXM4-40GB"]["capacity"]["legacyAllocatable"] == {"nvidia.com/gpu": 4}


def test_pool_label_option() -> None:
    pools = {p["name"] for p in report("--pool-label", "dra-bridge.io/mode")["nodePools"]}
    assert pools == {"dra", "(any)"}


def test_alignment_lost_without_the_option_and_kept_with_it() -> None:
    key = "Deployment/team-a/vllm-qwen7b-deployment-vllm#16-vllm-stack-rendered-recreate-runtimeclass.yaml"
    assert by_name(report())[key]["alignment"]["status"] == "lost"
    assert by_name(report("--alignment", "pcie"))[key]["alignment"]["status"] == "kept"
    mig = "Deployment/team-a/example-ollama#13-helm-two-mig-profiles-one-container.yaml"
    assert by_name(report("--alignment", "numa"))[mig]["alignment"]["status"] == "partial"
    one = by_name(report())["Deployment/team-a/mistral-7b#21-amd-vllm-deployment-requests-limits-hostipc.yaml"]
    assert one["alignment"] == {
        "multiDevice": False,
        "policy": "none",
        "scope": "container",
        "status": "not-applicable",
        "reason": "one device per container",
    }


def test_json_carries_templates_inputs_and_totals() -> None:
    doc = report()
    vllm = by_name(doc)[
        "Deployment/team-a/vllm-qwen7b-deployment-vllm#16-vllm-stack-rendered-recreate-runtimeclass.yaml"
    ]
    assert vllm["templates"][0]["kind"] == "ResourceClaimTemplate"
    assert doc["inputs"]["objects"]["Node"] == 3 and doc["inputs"]["kubernetesVersion"] == "1.34"
    assert doc["catalog"]["apiVersion"] == "catalog.dra-bridge.io/v1"


@pytest.mark.parametrize(
    ("level", "code"),
    [
        pytest.param("legacy-request", 3, id="legacy-request"),
        pytest.param("unsupported", 3, id="unsupported"),
    ],
)
def test_fail_on(level: str, code: int) -> None:
    assert run("report", "-f", EXAMPLES, "--fail-on", level)[0] == code


def test_legacy_request_ranks_below_every_finding_level(tmp_path: Path) -> None:
    served = tmp_path / "pod.yaml"
    served.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
        "    image: x\n    resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    assert run("report", "-f", str(served), "--fail-on", "left-for-webhook")[0] == 0
    assert run("report", "-f", str(served), "--fail-on", "legacy-request")[0] == 3
    done = tmp_path / "done.yaml"
    done.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x}]\n")
    assert run("report", "-f", str(done), "--fail-on", "legacy-request")[0] == 0


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["report", "-f", "/nonexistent"], id="missing-file"),
        pytest.param(["report", "-f", "-"], id="empty-stdin"),
        pytest.param(["report", "-f", EXAMPLES, "--kubernetes-version", "two"], id="bad-version"),
        pytest.param(["report", "-f", EXAMPLES, "-o", "pdf"], id="bad-format"),
    ],
)
def test_errors_exit_1_with_nothing_on_stdout(argv: list[str]) -> None:
    code, out, err = run(*argv)
    assert code == 1 and out == "" and "error" in err


def test_markdown_for_a_pull_request() -> None:
    code, out, _ = run("report", "-f", EXAMPLES, "-o", "markdown")
    assert code == 0 and out.startswith("## DRA migration report")
    source = f"{EXAMPLES}/09-init-sidecar-app-each-with-gpu.yaml#1"
    assert f"| `Pod/team-a/init-sidecar-app` | `{source}` | 1 | unsupported | blocked |" in out
    assert "<details><summary><code>Pod/team-a/init-sidecar-app</code>" in out


def test_live_mode_pages_through_the_declared_calls_only() -> None:
    fake = FakeKube(allowed=API_CALLS, served=["resource.k8s.io/v1"])
    for i in range(7):
        fake.put(
            PODS,
            {
                "metadata": {"name": f"p{i}", "namespace": "ns"},
                "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
            },
        )
    fake.put(NODES, {"metadata": {"name": "n1"}})
    fake.put(DEVICE_CLASSES, {"metadata": {"name": "dc"}, "spec": {}})
    seen: list[tuple[str, int]] = []
    import dra_bridge.migrate.live as live

    page, live.PAGE = live.PAGE, 3
    try:
        objects, version = asyncio.run(read_cluster(fake, lambda kind, n: seen.append((kind, n))))
    finally:
        live.PAGE = page
    assert version == "v1.36.3"
    assert [k for k, _ in seen].count("pods") == 3 and ("pods", 7) in seen
    pods = [o for _, o in objects if o["kind"] == "Pod"]
    assert len(pods) == 7 and pods[0]["apiVersion"] == "v1"
    assert {str(c) for c in fake.calls} <= {str(c) for c in API_CALLS}


def test_readme_documents_the_live_rbac() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## `dra-migrate report`", 1)[1].split("\n## ", 1)[0]
    rows = {
        tuple(c.strip(" `") for c in line.strip("|").split("|")[:2])
        for line in section.splitlines()
        if line.startswith("| `")
    }
    declared = {(c.group or "core", c.resource) for c in API_CALLS}
    assert {(g, r) for g, r in rows} == declared
    for call in OPTIONAL_CALLS:  # the optional non-resource URL, in words below the table
        assert f"`{call.verb}` on the non-resource URL `{call.resource}`" in section


def test_live_mode_reads_the_custom_resources_the_cluster_serves() -> None:
    from dra_bridge.kube.resources import Resource
    from dra_bridge.translate.report.custom_kinds import KNOWN_CUSTOM_KINDS

    ray = Resource("ray.io", "v1", "rayclusters", "RayCluster", True)
    fake = FakeKube(allowed=API_CALLS, served=["resource.k8s.io/v1", "ray.io/v1"])
    fake.put(
        ray,
        {
            "metadata": {"name": "ray", "namespace": "ml"},
            "spec": {
                "headGroupSpec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "head", "image": "ray", "resources": {"limits": {"nvidia.com/gpu": 1}}}
                            ]
                        }
                    }
                }
            },
        },
    )
    objects, _ = asyncio.run(read_cluster(fake))
    custom = [o for _, o in objects if o["kind"] == "RayCluster"]
    assert len(custom) == 1 and custom[0]["apiVersion"] == "ray.io/v1"
    listed = {c.resource for c in fake.calls if c.verb == "list"}
    assert "rayclusters" in listed and "inferenceservices" not in listed  # not served: not listed
    assert {(k.group, k.plural) for k in KNOWN_CUSTOM_KINDS} <= {(c.group, c.resource) for c in API_CALLS}
    assert {str(c) for c in fake.calls} <= {str(c) for c in API_CALLS}


GPU_POD = {"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": 1}}}


def _enrolment_input(tmp_path: Path, namespaces: bool) -> Path:
    def pod(ns: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": ns},
            "spec": {"containers": [GPU_POD]},
        }

    def namespace(name: str, labels: dict[str, str]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}

    docs = [pod(ns) for ns in ("kube-system", "gpu-system", "plain", "opted", "enforced", "audited")]
    if namespaces:
        docs += [
            namespace("plain", {}),
            namespace("opted", {"dra-bridge.io/webhook": "enforce", "dra-bridge.io/webhook-opt-out": "true"}),
            namespace("enforced", {"dra-bridge.io/webhook": "enforce"}),
            namespace("audited", {"dra-bridge.io/webhook": "audit"}),
        ]
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _paths(path: Path, *extra: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    code, out, err = run("report", "-f", str(path), "-o", "json", "--kubernetes-version", "1.34", *extra)
    assert code == 0, err
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    return doc, {w["namespace"]: w for w in doc["workloads"]}


def test_pods_the_webhook_never_sees_are_not_enrolled(tmp_path: Path) -> None:
    doc, by_ns = _paths(_enrolment_input(tmp_path, namespaces=True), "--release-namespace", "gpu-system")
    got = {ns: (w["path"], w["enrolment"]["mode"]) for ns, w in by_ns.items()}
    assert got == {
        "kube-system": ("not-enrolled", "none"),
        "gpu-system": ("not-enrolled", "none"),
        "plain": ("not-enrolled", "none"),
        "opted": ("not-enrolled", "none"),
        "enforced": ("needs-conversion", "enforce"),
        "audited": ("needs-conversion", "audit"),
    }
    assert "label it dra-bridge.io/webhook=enforce to enrol it" in by_ns["plain"]["pathReason"]
    assert by_ns["opted"]["enrolment"]["enrolWith"] == "remove the label dra-bridge.io/webhook-opt-out"
    assert by_ns["kube-system"]["enrolment"]["enrolWith"] == ""
    assert doc["totals"]["paths"]["not-enrolled"] == 4 and doc["inputs"]["enrolment"]["note"] == ""
    # audit.allNamespaces: the unlabelled namespace is seen (audited), the excluded still are not
    _, every = _paths(_enrolment_input(tmp_path, namespaces=True), "--audit-all-namespaces")
    assert (every["plain"]["path"], every["plain"]["enrolment"]["mode"]) == ("needs-conversion", "audit")
    assert every["kube-system"]["path"] == "not-enrolled" and every["gpu-system"]["path"] == "needs-conversion"


def test_a_quota_hole_blocks_a_workload_before_its_enrolment_is_judged(tmp_path: Path) -> None:
    """The plan's own verdict comes first: a legacy-only ResourceQuota keeps the pods legacy
    whether or not the webhook sees the namespace; the enrolment still says how to enrol it."""
    path = _enrolment_input(tmp_path, namespaces=True)
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpu", "namespace": "plain"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "4"}},
    }
    path.write_text(path.read_text() + "---\n" + yaml.safe_dump(quota))
    _, by_ns = _paths(path)
    plain = by_ns["plain"]
    assert (plain["path"], plain["enrolment"]["mode"]) == ("blocked", "none")
    assert any(f["code"] == "legacy-quota-only" for f in plain["findings"])
    assert plain["enrolment"]["enrolWith"] == "label it dra-bridge.io/webhook=enforce"


def test_without_namespace_objects_only_what_the_name_decides_applies(tmp_path: Path) -> None:
    doc, by_ns = _paths(_enrolment_input(tmp_path, namespaces=False), "--release-namespace", "gpu-system")
    assert {ns: w["path"] for ns, w in by_ns.items() if w["path"] == "not-enrolled"}.keys() == {
        "kube-system",
        "gpu-system",
    }
    assert {by_ns[ns]["enrolment"]["mode"] for ns in ("plain", "opted", "enforced", "audited")} == {"unknown"}
    assert doc["inputs"]["enrolment"]["note"].startswith("enrolment not known: no Namespace objects")
    code, out, _ = run("report", "-f", str(tmp_path / "in.yaml"))
    assert code == 0 and "enrolment not known: no Namespace objects" in out


def test_live_mode_reads_the_namespaces_and_judges_enrolment_from_their_labels() -> None:
    from dra_bridge.kube.resources import NAMESPACES
    from dra_bridge.translate.catalog import load_catalog
    from dra_bridge.translate.report import build_report

    fake = FakeKube(allowed=API_CALLS, served=["resource.k8s.io/v1"])
    for ns, labels in (("plain", {}), ("enforced", {"dra-bridge.io/webhook": "enforce"})):
        fake.put(NAMESPACES, {"metadata": {"name": ns, "labels": labels}})
        template = {"metadata": {"labels": {"app": "p"}}, "spec": {"containers": [GPU_POD]}}
        fake.put(DEPLOYMENTS, {"metadata": {"name": "p", "namespace": ns}, "spec": {"template": template}})
    objects, _ = asyncio.run(read_cluster(fake))
    assert {o["metadata"]["name"] for _, o in objects if o["kind"] == "Namespace"} == {"plain", "enforced"}
    assert {str(c) for c in fake.calls} <= {str(c) for c in API_CALLS}
    paths = {w.unit.namespace: w.path.path for w in build_report(objects, load_catalog()).workloads}
    assert paths == {"plain": "not-enrolled", "enforced": "needs-conversion"}


@pytest.mark.parametrize("version", ["1.31", "v1.30.2", "1.0"])
def test_a_kubernetes_version_below_132_is_refused(version: str) -> None:
    code, out, err = run("report", "-f", EXAMPLES, "--kubernetes-version", version)
    assert (code, out) == (1, "") and "below 1.32" in err and "no DRA to migrate to" in err
    from dra_bridge.migrate.report_cmd import _minor

    assert _minor("v1.31.4-eks.2", given=False) == 31  # a live server that old is judged, not refused


def test_live_mode_reads_the_served_versions_and_the_feature_metric_where_granted() -> None:
    from dra_bridge.migrate.access import OPTIONAL_CALLS
    from dra_bridge.migrate.live import read_served

    fake = FakeKube(allowed=API_CALLS, served=["resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"])
    fake.metrics = 'kubernetes_feature_enabled{name="DRAExtendedResource",stage="ALPHA"} 1\n'
    served, metrics, why = asyncio.run(read_served(fake))
    assert served == ("resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1")
    assert metrics is None and why == "the API server's /metrics not read (403 Forbidden)"  # no grant: falls back
    fake.allowed = frozenset((*API_CALLS, *OPTIONAL_CALLS))
    assert asyncio.run(read_served(fake))[1:] == (fake.metrics, "")
    assert {str(c) for c in fake.calls} == {str(c) for c in (*API_CALLS, *OPTIONAL_CALLS)} & {
        str(c) for c in fake.calls
    }


def test_templates_are_rendered_for_the_version_the_cluster_serves() -> None:
    from dra_bridge.migrate.errors import UsageError
    from dra_bridge.migrate.report_cmd import LiveRead, _api_version

    beta = LiveRead([], "v1.33.1", ("resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"), None, "")
    assert _api_version(None, beta) == "resource.k8s.io/v1beta2"
    assert _api_version("v1beta1", beta) == "resource.k8s.io/v1beta1"
    with pytest.raises(UsageError, match=r"the cluster does not serve resource\.k8s\.io/v1 "):
        _api_version("v1", beta)
    assert _api_version(None, None) == "v1"  # files: v1 unless given
