"""``dra-migrate report`` and ``convert`` account for every device request: accelerator resources
outside the catalog, other extended resources, pods another GPU controller owns (issue 19, items 1-2)."""

from __future__ import annotations

import io
import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dra_bridge.migrate.cli import main
from dra_bridge.translate.findings import OTHER_EXTENDED_RESOURCE, OTHER_GPU_CONTROLLER, UNKNOWN_DEVICE_RESOURCE

FOREIGN = Path(__file__).resolve().parents[1] / "data" / "foreign"
UNKNOWN = str(FOREIGN / "unknown-accelerators.yaml")
OTHER = str(FOREIGN / "other-extended.yaml")
CONTROLLERS = str(FOREIGN / "other-controllers.yaml")
SCHEMA = json.loads(files("dra_bridge.translate").joinpath("data/report-v2.schema.json").read_text())
FPGA_POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: fpga, namespace: team-c}\nspec:\n  containers:\n"
    "  - name: c\n    image: x\n    resources: {limits: {xilinx.com/fpga-xilinx_u250: 1}}\n"
)


def run(*argv: str, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdin=io.StringIO(stdin), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def report(*argv: str, stdin: str = "") -> dict[str, dict[str, Any]]:
    code, out, err = run("report", *argv, "-o", "json", stdin=stdin)
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    return {f"{w['kind']}/{w['name']}": w for w in doc["workloads"]}


def codes(workload: dict[str, Any]) -> list[str]:
    return [f["code"] for f in workload["findings"]]


def test_accelerator_resources_outside_the_catalog_are_blocked_with_the_catalog_entry_to_add() -> None:
    got = report("-f", UNKNOWN)
    assert {k: w["path"] for k, w in got.items()} == {
        "Pod/pgpu": "blocked",
        "Deployment/small-slices": "blocked",
        "Pod/podvgpu": "blocked",
        "Pod/gpu-and-pgpu": "blocked",
    }
    for w in got.values():
        assert UNKNOWN_DEVICE_RESOURCE in codes(w)
        assert "catalog does not know" in w["pathReason"] and "--catalog FILE" in w["pathReason"]
    assert "nvidia.com/gpu-10gb" in got["Deployment/small-slices"]["pathReason"]
    assert not got["Pod/gpu-and-pgpu"]["templates"]  # not half converted


@pytest.mark.parametrize("level", ["legacy-request", "left-for-webhook", "partial", "unsupported"])
def test_fail_on_counts_unknown_accelerators_and_never_other_extended_resources(level: str) -> None:
    assert run("report", "-f", UNKNOWN, "--fail-on", level)[0] == 3
    assert run("report", "-f", OTHER, "--fail-on", level)[0] == 0


def test_other_extended_resources_are_one_informational_line_each() -> None:
    got = report("-f", OTHER)
    assert {k: w["path"] for k, w in got.items()} == {
        "Pod/sriov-rdma": "nothing-to-do",
        "Pod/virt-launcher": "nothing-to-do",
    }
    assert codes(got["Pod/sriov-rdma"]) == [OTHER_EXTENDED_RESOURCE] * 2
    assert [f["legacy"].split(":")[0] for f in got["Pod/virt-launcher"]["findings"]] == [
        "devices.kubevirt.io/kvm",
        "devices.kubevirt.io/tun",
        "github.com/fuse",
    ]
    assert all(f["outcome"] == "ignored" for w in got.values() for f in w["findings"])


def test_a_user_catalog_entry_accounts_for_the_resource(tmp_path: Path) -> None:
    cat = tmp_path / "cat.yaml"
    cat.write_text(
        "apiVersion: catalog.dra-bridge.io/v1\nkind: Catalog\nresources:\n  - name: nvidia.com/pgpu\n"
        "    kind: gpu\n    deviceClass: nvidia-pgpu.example.com\n"
    )
    got = report("-f", UNKNOWN, "--catalog", str(cat))
    assert got["Pod/pgpu"]["path"] == "needs-conversion"
    assert got["Pod/podvgpu"]["path"] == "blocked"


def test_device_domain_adds_an_accelerator_domain_to_report_and_convert() -> None:
    assert report("-f", "-", stdin=FPGA_POD)["Pod/fpga"]["path"] == "nothing-to-do"
    blocked = report("-f", "-", "--device-domain", "xilinx.com", stdin=FPGA_POD)["Pod/fpga"]
    assert blocked["path"] == "blocked" and codes(blocked) == [UNKNOWN_DEVICE_RESOURCE]
    code, _out, err = run(
        "convert", "-f", "-", "--device-domain", "xilinx.com", "--fail-on", "unsupported", stdin=FPGA_POD
    )
    assert code == 3 and "xilinx.com/fpga-xilinx_u250" in err and "--catalog FILE" in err
    assert run("convert", "-f", "-", "--fail-on", "unsupported", stdin=FPGA_POD)[0] == 0


@pytest.mark.parametrize("command", ["report", "convert"])
def test_a_device_domain_that_is_not_a_domain_is_a_usage_error(command: str) -> None:
    code, out, err = run(command, "-f", "-", "--device-domain", "not a domain", stdin=FPGA_POD)
    assert code == 1 and not out and "--device-domain" in err


def test_pods_another_gpu_controller_owns_are_blocked() -> None:
    got = report("-f", CONTROLLERS)
    assert {k: (w["path"], w["pathReason"].split(":")[0]) for k, w in got.items()} == {
        "Pod/vectoradd-gated": (
            "blocked",
            "another slicing controller (org.instaslice, instaslice) owns this pod's GPUs",
        ),
        "Pod/vectoradd-sliced": (
            "blocked",
            "another slicing controller (org.instaslice, instaslice) owns this pod's GPUs",
        ),
        "Job/tf-training": ("blocked", "the Job's pods run under scheduler 'volcano', which may not support DRA"),
        "Pod/nvidia-device-plugin-validator-x7k2p": ("blocked", "a GPU Operator validation pod"),
        "Deployment/volcano-scheduled": ("blocked", "scheduler 'volcano' may not support DRA"),
    }
    assert codes(got["Pod/nvidia-device-plugin-validator-x7k2p"]) == [OTHER_GPU_CONTROLLER]
    assert "--dra-scheduler volcano" in got["Job/tf-training"]["pathReason"]


def test_a_declared_dra_scheduler_lets_the_volcano_job_through() -> None:
    got = report("-f", CONTROLLERS, "--dra-scheduler", "volcano")
    assert got["Job/tf-training"]["path"] == "needs-conversion"
    assert got["Deployment/volcano-scheduled"]["path"] == "needs-conversion"


def test_convert_leaves_other_controllers_pods_as_they_are() -> None:
    code, out, err = run("convert", "-f", CONTROLLERS, "--include-custom-resources")
    assert code == 0
    assert "ResourceClaimTemplate" not in out and "resourceClaims" not in out
    assert err.count("kept-legacy") >= 5


def test_a_live_pod_with_an_unknown_accelerator_is_still_blocked_for_it() -> None:
    live = FPGA_POD.replace("{name: fpga, namespace: team-c}", "{name: pgpu, namespace: team-c, uid: u-1}").replace(
        "xilinx.com/fpga-xilinx_u250", "nvidia.com/pgpu"
    )
    got = report("-f", "-", stdin=live)["Pod/pgpu"]
    assert got["path"] == "blocked" and UNKNOWN_DEVICE_RESOURCE in codes(got)
