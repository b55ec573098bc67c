"""``dra-migrate`` as a user runs it: stdout, stderr and exit codes.

The tests call ``migrate.cli.main(argv, stdin=, stdout=, stderr=)`` in process (fast, and a
failure shows the traceback); one smoke test runs the installed ``dra-migrate`` console script
as a real process, to prove the entry point and ``python -m`` wiring.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from dra_bridge.migrate import manifests
from dra_bridge.migrate.cli import main
from dra_bridge.migrate.errors import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, InputFileError, MigrateError, UsageError
from dra_bridge.translate.errors import ApiVersionError, CountError, TranslateError
from dra_bridge.translate.names import normalize_api_version
from dra_bridge.translate.plan.device_counts import parse_count

EXAMPLES = Path(__file__).parents[1] / "data" / "examples"


@dataclass(frozen=True)
class Result:
    """What one run of the command line left: its exit code and both streams."""

    returncode: int
    stdout: str
    stderr: str


def run(*args: str, stdin: str | None = None) -> Result:
    """``dra-migrate ARGS`` in process, ``stdin`` as its standard input (empty when None)."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), stdin=io.StringIO(stdin or ""), stdout=out, stderr=err)
    return Result(code, out.getvalue(), err.getvalue())


def test_installed_console_script_converts_stdin_and_exits_with_the_documented_codes() -> None:
    script = shutil.which("dra-migrate", path=str(Path(sys.executable).parent)) or shutil.which("dra-migrate")
    assert script, "the dra-migrate console script is not installed (pip install -e .)"
    pod = (EXAMPLES / "01-pod-limits-only-toleration.yaml").read_text()
    proc = subprocess.run(
        [script, "convert", "-f", "-"], input=pod, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == EXIT_OK, proc.stderr
    assert [d["kind"] for d in yaml.safe_load_all(proc.stdout)] == ["ResourceClaimTemplate", "Pod"]
    assert "translated" in proc.stderr
    proc = subprocess.run([script, "convert", "--bogus"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == EXIT_ERROR and "usage: dra-migrate" in proc.stderr and proc.stdout == ""


def test_help_and_usage_errors_return_instead_of_exiting() -> None:
    helped = run("convert", "--help")
    assert helped.returncode == EXIT_OK and "--fail-on" in helped.stdout and helped.stderr == ""
    wrong = run("convert", "--output", "xml")
    assert wrong.returncode == EXIT_ERROR and "invalid choice: 'xml'" in wrong.stderr and wrong.stdout == ""
    assert run().returncode == EXIT_ERROR


def test_bad_option_values_exit_1_naming_the_option() -> None:
    for args in (
        ("convert", "--api-version", "v2"),
        ("classes", "--api-version", "v1alpha3"),
        ("classes", "--mig-profile", "big"),
    ):
        proc = run(*args)
        assert proc.returncode == EXIT_ERROR and proc.stdout == "", args
        assert proc.stderr.startswith(f"dra-migrate: error: {args[1]}") and "Traceback" not in proc.stderr, proc.stderr


def test_convert_directory_puts_templates_before_their_first_user() -> None:
    proc = run("convert", "-f", str(EXAMPLES))
    assert proc.returncode == 0, proc.stderr
    docs = list(yaml.safe_load_all(proc.stdout))
    seen: set[str] = set()
    for doc in docs:
        if doc["kind"] == "ResourceClaimTemplate":
            seen.add(doc["metadata"]["name"])
        spec = doc.get("spec", {}).get("template", doc).get("spec", {})
        for claim in spec.get("resourceClaims", []) or []:
            if doc["kind"] != "ResourceClaimTemplate" and "resourceClaimTemplateName" in claim:
                name = claim["resourceClaimTemplateName"]
                assert name in seen or name == "example-ollama", f"{name} used before it is defined"
    assert "OUTCOME" in proc.stderr and "translated" in proc.stderr
    assert "OUTCOME" not in proc.stdout


def test_stdin_and_json_output_with_list_objects() -> None:
    pod = yaml.safe_load((EXAMPLES / "01-pod-limits-only-toleration.yaml").read_text())
    proc = run(
        "convert", "-f", "-", "-o", "json", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod]})
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [i["kind"] for i in out["items"]] == ["ResourceClaimTemplate", "Pod"]


def test_fail_on_exits_3_when_a_finding_reaches_the_level() -> None:
    example = str(EXAMPLES / "09-init-sidecar-app-each-with-gpu.yaml")
    assert run("convert", "-f", example, "--fail-on", "unsupported").returncode == EXIT_FINDINGS
    clean = str(EXAMPLES / "01-pod-limits-only-toleration.yaml")
    assert run("convert", "-f", clean, "--fail-on", "partial").returncode == 0


def test_yaml_error_names_file_and_line_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: [unclosed\n")
    proc = run("convert", "-f", str(EXAMPLES / "01-pod-limits-only-toleration.yaml"), "-f", str(bad))
    assert proc.returncode == 1
    assert f"{bad}:" in proc.stderr and "YAML error" in proc.stderr
    assert proc.stdout == ""


def test_missing_file_and_unknown_option_exit_1(tmp_path: Path) -> None:
    proc = run("convert", "-f", str(tmp_path / "nope.yaml"))
    assert proc.returncode == 1 and "no such file" in proc.stderr
    assert run("convert", "--bogus").returncode == 1


def test_bad_user_catalog_exits_1_naming_the_key(tmp_path: Path) -> None:
    cat = tmp_path / "cat.yaml"
    cat.write_text(
        "apiVersion: catalog.dra-bridge.io/v1\nkind: Catalog\nresources:\n  - name: a.com/x\n    kind: odd\n"
    )
    proc = run("convert", "--catalog", str(cat), "-f", str(EXAMPLES / "01-pod-limits-only-toleration.yaml"))
    assert proc.returncode == 1 and "resources[0].kind" in proc.stderr and str(cat) in proc.stderr


def test_daemonset_and_custom_resources_are_left_for_the_webhook() -> None:
    proc = run("convert", "-f", str(EXAMPLES / "19-lws-leader-worker-eight-gpus.yaml"))
    assert proc.returncode == 0
    (doc,) = list(yaml.safe_load_all(proc.stdout))
    assert doc == yaml.safe_load((EXAMPLES / "19-lws-leader-worker-eight-gpus.yaml").read_text())
    assert "left-for-webhook" in proc.stderr
    proc = run("convert", "--include-custom-resources", "-f", str(EXAMPLES / "19-lws-leader-worker-eight-gpus.yaml"))
    kinds = [d["kind"] for d in yaml.safe_load_all(proc.stdout)]
    assert kinds == ["ResourceClaimTemplate", "ResourceClaimTemplate", "LeaderWorkerSet"]  # leader, worker
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "d", "namespace": "n"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}},
    }
    proc = run("convert", "-f", "-", stdin=json.dumps(ds))
    assert list(yaml.safe_load_all(proc.stdout)) == [ds] and "DaemonSet spans" in proc.stderr


def test_resource_quota_gets_the_dra_key_beside_the_legacy_one() -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q", "namespace": "n"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "4", "pods": "10"}},
    }
    proc = run("convert", "-f", "-", stdin=json.dumps(quota))
    (out,) = list(yaml.safe_load_all(proc.stdout))
    assert out["spec"]["hard"] == {
        "requests.nvidia.com/gpu": "4",
        "pods": "10",
        "nvidia-gpu.dra-bridge.io.deviceclass.resource.k8s.io/devices": "4",
    }
    assert "doubled" in proc.stderr


def test_classes_prints_valid_device_classes() -> None:
    proc = run("classes", "--mig-profile", "1g.5gb")
    docs = list(yaml.safe_load_all(proc.stdout))
    assert {d["metadata"]["name"] for d in docs} >= {"nvidia-gpu.dra-bridge.io", "nvidia-mig-1g.5gb.dra-bridge.io"}
    assert all(d["apiVersion"] == "resource.k8s.io/v1" and d["kind"] == "DeviceClass" for d in docs)


def test_non_objects_and_recursive_aliases_are_errors_not_output(tmp_path: Path) -> None:
    for text in ("hello\n", "a: &a [*a]\n", "- 1\n- 2\n"):
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        proc = run("convert", "-f", str(bad))
        assert proc.returncode == 1 and proc.stdout == "" and "Traceback" not in proc.stderr, text
        assert str(bad) in proc.stderr


def test_alias_bombs_and_malformed_lists_are_refused(tmp_path: Path) -> None:
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdefg", "bcdefgh", strict=True):
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(levels) + "\nkind: Pod\nmetadata: {name: bomb}\n")
    proc = run("convert", "-f", str(bomb))
    assert proc.returncode == 1 and proc.stdout == "" and "expands to more than" in proc.stderr
    lst = tmp_path / "list.yaml"
    lst.write_text("apiVersion: v1\nkind: List\nitems: 5\n")
    proc = run("convert", "-f", str(lst))
    assert proc.returncode == 1 and "items must be a list" in proc.stderr


def test_odd_metadata_types_do_not_crash_the_table() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": 5},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"example.com/x": 1}}}]},
    }
    proc = run("convert", "-f", "-", stdin=json.dumps(pod))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr and "Pod/5/p" in proc.stderr


def _gpu_pod(name: str, **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "n"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}], **spec},
    }


def test_concatenated_json_objects_and_nested_lists_are_read(tmp_path: Path) -> None:
    stream = tmp_path / "all.json"
    stream.write_text(json.dumps(_gpu_pod("a"), indent=2) + "\n" + json.dumps(_gpu_pod("b"), indent=2) + "\n")
    proc = run("convert", "-f", str(stream))
    assert proc.returncode == 0, proc.stderr
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(proc.stdout) if d["kind"] == "Pod"] == ["a", "b"]
    nested = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [{"apiVersion": "v1", "kind": "List", "items": [_gpu_pod("c")]}],
    }
    proc = run("convert", "-f", "-", stdin=json.dumps(nested))
    assert [d["kind"] for d in yaml.safe_load_all(proc.stdout)] == ["ResourceClaimTemplate", "Pod"]


def test_duplicate_keys_are_refused_like_kubectl_does(tmp_path: Path) -> None:
    dup = tmp_path / "dup.yaml"
    dup.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers: []\n  containers: []\n")
    proc = run("convert", "-f", str(dup))
    assert proc.returncode == 1 and f"{dup}:6:3" in proc.stderr and "duplicate key" in proc.stderr


def test_declared_dra_schedulers_are_converted() -> None:
    pod = json.dumps(_gpu_pod("a", schedulerName="volcano"))
    proc = run("convert", "-f", "-", stdin=pod)
    assert "--dra-scheduler volcano" in proc.stderr and "ResourceClaimTemplate" not in proc.stdout
    proc = run("convert", "--dra-scheduler", "volcano", "-f", "-", stdin=pod)
    assert "ResourceClaimTemplate" in proc.stdout


def test_fail_requests_greater_than_one_keeps_shared_requests_over_one_on_the_plugin() -> None:
    pod = json.dumps(
        {
            **_gpu_pod("a"),
            "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu.shared": 2}}}]},
        }
    )
    assert "ResourceClaimTemplate" in run("convert", "-f", "-", stdin=pod).stdout
    proc = run("convert", "--fail-requests-greater-than-one", "--fail-on", "unsupported", "-f", "-", stdin=pod)
    assert proc.returncode == 3 and "ResourceClaimTemplate" not in proc.stdout
    assert "because of --fail-requests-greater-than-one" in proc.stderr


def test_alignment_writes_constraints_and_a_bad_value_is_a_usage_error() -> None:
    pod = json.dumps(
        {**_gpu_pod("a"), "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 2}}}]}}
    )
    assert "constraints" not in run("convert", "-f", "-", stdin=pod).stdout
    proc = run("convert", "--alignment", "pcie", "--alignment-scope", "pod", "-f", "-", stdin=pod)
    assert proc.returncode == 0
    template = next(d for d in yaml.safe_load_all(proc.stdout) if d["kind"] == "ResourceClaimTemplate")
    assert template["spec"]["spec"]["devices"]["constraints"] == [
        {"requests": ["c-gpu"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}
    ]
    bad = run("convert", "--alignment", "socket", "-f", "-", stdin=pod)
    assert bad.returncode == 1 and "--alignment" in bad.stderr and not bad.stdout


def test_mig_profiles_given_to_classes_add_to_the_catalog_list() -> None:
    base = {d["metadata"]["name"] for d in yaml.safe_load_all(run("classes").stdout)}
    more = {d["metadata"]["name"] for d in yaml.safe_load_all(run("classes", "--mig-profile", "1g.99gb").stdout)}
    assert more - base == {"nvidia-mig-1g.99gb.dra-bridge.io", "nvidia-mig-1g.99gb-shared.dra-bridge.io"}


def test_live_objects_lose_server_fields_and_live_pods_are_left_to_their_owner() -> None:
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "d",
            "namespace": "n",
            "uid": "u",
            "resourceVersion": "7",
            "generation": 2,
            "managedFields": [{"manager": "kubectl"}],
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"template": {"spec": _gpu_pod("x")["spec"]}},
        "status": {"replicas": 1},
    }
    (_template, out) = list(yaml.safe_load_all(run("convert", "-f", "-", stdin=json.dumps(deploy)).stdout))
    assert set(out["metadata"]) == {"name", "namespace"} and "status" not in out
    live = _gpu_pod("p")
    live["metadata"]["uid"] = "u"  # type: ignore[index]
    proc = run("convert", "-f", "-", stdin=json.dumps(live))
    assert list(yaml.safe_load_all(proc.stdout)) == [live] and "convert its owner" in proc.stderr


def test_vendor_target_quota_sums_legacy_keys_sharing_one_class() -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q", "namespace": "n"},
        "spec": {"hard": {"requests.nvidia.com/mig-1g.10gb": "4", "requests.nvidia.com/mig-3g.40gb": "2"}},
    }
    proc = run("convert", "--target", "vendor", "-f", "-", stdin=json.dumps(quota))
    (out,) = list(yaml.safe_load_all(proc.stdout))
    assert out["spec"]["hard"]["mig.nvidia.com.deviceclass.resource.k8s.io/devices"] == "6"
    assert "per-resource limits become one limit" in proc.stderr


def test_converting_custom_resources_on_request_keeps_a_warning() -> None:
    proc = run("convert", "--include-custom-resources", "-f", str(EXAMPLES / "19-lws-leader-worker-eight-gpus.yaml"))
    assert "partial" in proc.stderr and "derive settings" in proc.stderr


def test_errors_form_one_tree_and_translate_value_errors_are_named() -> None:
    assert issubclass(InputFileError, MigrateError) and issubclass(UsageError, MigrateError)
    with pytest.raises(ApiVersionError) as version:
        normalize_api_version("v2")
    with pytest.raises(CountError) as count:
        parse_count("1.5")
    for exc in (version.value, count.value):  # named translate errors, still ValueErrors for older callers
        assert isinstance(exc, TranslateError) and isinstance(exc, ValueError)


def _quota(hard: dict[str, str]) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpu", "namespace": "team-a"},
        "spec": {"hard": hard},
    }


BRIDGE_KEY = "nvidia-gpu.dra-bridge.io.deviceclass.resource.k8s.io/devices"
VENDOR_KEY = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"


def test_a_quota_counting_only_our_class_keeps_workloads_legacy_under_the_vendor_target() -> None:
    """docs/design.md D27, as the webhook: the quota of the input (as convert writes it) decides."""
    pod = _gpu_pod("p")
    pod["metadata"]["namespace"] = "team-a"  # type: ignore[index]
    stdin = yaml.safe_dump_all([pod, _quota({BRIDGE_KEY: "8"})])
    proc = run("convert", "--target", "vendor", "--fail-on", "unsupported", "-f", "-", stdin=stdin)
    out = list(yaml.safe_load_all(proc.stdout))
    assert out[0] == pod and proc.returncode == EXIT_FINDINGS, proc.stdout
    assert VENDOR_KEY in proc.stderr and "ignoreLegacyQuota: true (--policy)" in proc.stderr
    counted = run(
        "convert",
        "--target",
        "vendor",
        "-f",
        "-",
        stdin=yaml.safe_dump_all([pod, _quota({BRIDGE_KEY: "8", VENDOR_KEY: "8"})]),
    )
    assert [o["kind"] for o in yaml.safe_load_all(counted.stdout)] == ["ResourceClaimTemplate", "Pod", "ResourceQuota"]


def test_the_policy_waiver_of_quota_holes_applies_to_convert(tmp_path: Path) -> None:
    pod = _gpu_pod("p")
    pod["metadata"]["namespace"] = "team-a"  # type: ignore[index]
    policy = tmp_path / "policy.yaml"
    policy.write_text("defaults: {ignoreLegacyQuota: true}\n")
    stdin = yaml.safe_dump_all([pod, _quota({BRIDGE_KEY: "8"})])
    proc = run("convert", "--target", "vendor", "--policy", str(policy), "-f", "-", stdin=stdin)
    assert [o["kind"] for o in yaml.safe_load_all(proc.stdout)] == ["ResourceClaimTemplate", "Pod", "ResourceQuota"]


def test_a_legacy_only_quota_keeps_workloads_legacy_unless_this_run_converts_it() -> None:
    pod = _gpu_pod("p")
    pod["metadata"]["namespace"] = "team-a"  # type: ignore[index]
    legacy_only = _quota({"requests.nvidia.com/gpu": "8"})
    # the quota converted in the same run gets the class key beside the legacy one: no hole left
    both = run("convert", "-f", "-", stdin=yaml.safe_dump_all([pod, legacy_only]))
    assert [o["kind"] for o in yaml.safe_load_all(both.stdout)] == ["ResourceClaimTemplate", "Pod", "ResourceQuota"]
    slicing = _quota({"requests.nvidia.com/gpu": "8", "requests.nvidia.com/gpumem": "100"})
    assert "ResourceClaimTemplate" in run("convert", "-f", "-", stdin=yaml.safe_dump_all([pod, slicing])).stdout


def _ray_cluster(worker_params: dict[str, str]) -> dict[str, object]:
    def template(gpus: int) -> dict[str, object]:
        limits = {"nvidia.com/gpu": gpus} if gpus else {"cpu": "1"}
        return {"spec": {"containers": [{"name": "ray", "image": "ray", "resources": {"limits": limits}}]}}

    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "ray", "namespace": "team-a"},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": template(0)},
            "workerGroupSpecs": [
                {"groupName": "gpu", "replicas": 2, "rayStartParams": worker_params, "template": template(2)},
                {"groupName": "big", "replicas": 1, "template": template(4)},
            ],
        },
    }


def test_converted_ray_groups_keep_their_gpu_count_in_ray_start_params() -> None:
    """KubeRay derives ray start --num-gpus from the Ray container's GPU limit, which the claim replaces."""
    proc = run("convert", "--include-custom-resources", "-f", "-", stdin=json.dumps(_ray_cluster({})))
    (ray,) = [o for o in yaml.safe_load_all(proc.stdout) if o["kind"] == "RayCluster"]
    spec = ray["spec"]
    assert spec["headGroupSpec"]["rayStartParams"] == {}
    assert [g["rayStartParams"] for g in spec["workerGroupSpecs"]] == [{"num-gpus": "2"}, {"num-gpus": "4"}]
    assert spec["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["resources"].get("limits", {}) == {}
    assert "spec.workerGroupSpecs[0].rayStartParams[num-gpus]" in proc.stderr
    kept = run("convert", "--include-custom-resources", "-f", "-", stdin=json.dumps(_ray_cluster({"num-gpus": "1"})))
    (ray,) = [o for o in yaml.safe_load_all(kept.stdout) if o["kind"] == "RayCluster"]
    assert ray["spec"]["workerGroupSpecs"][0]["rayStartParams"] == {"num-gpus": "1"}  # the user's own value stays


def test_standard_input_is_copied_only_up_to_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """``convert -f - < /dev/zero`` once filled the disk: stdin is copied to a temporary file to
    be read twice, with no bound. Past MAX_STDIN_BYTES it is refused, before any output."""
    monkeypatch.setattr(manifests, "MAX_STDIN_BYTES", 4096)
    pod = json.dumps(_gpu_pod("a"))
    fits = run("convert", "-f", "-", stdin=pod)
    assert fits.returncode == 0 and "ResourceClaimTemplate" in fits.stdout
    over = run("convert", "-f", "-", stdin=pod + "\n# padding" * 1000)
    assert over.returncode == EXIT_ERROR and over.stdout == ""
    assert "-: standard input is over 4096 bytes" in over.stderr and "-f PATH" in over.stderr, over.stderr
