"""Every device request is accounted for: accelerator resources the catalog does not know, other
extended resources, and pods another GPU controller owns (the plan's side of issue 19, items 1-2)."""

from __future__ import annotations

from typing import Any

import pytest

from dra_bridge.translate.catalog import load_catalog
from dra_bridge.translate.findings import (
    OTHER_EXTENDED_RESOURCE,
    OTHER_GPU_CONTROLLER,
    UNKNOWN_DEVICE_RESOURCE,
    Remedy,
)
from dra_bridge.translate.names import is_accelerator_resource
from dra_bridge.translate.plan.pod_plan import Options, plan_pod
from dra_bridge.translate.plan.workloads import convert_object
from tests.factories import make_container, make_pod

CATALOG = load_catalog()


@pytest.mark.parametrize(
    ("name", "accelerator"),
    [
        ("nvidia.com/pgpu", True),
        ("nvidia.com/gpu-10gb", True),
        ("amd.com/gpu", True),
        ("gpu.intel.com/xe", True),
        ("volcano.sh/vgpu-number", True),
        ("volcano.sh/vgpu-memory", True),
        ("hygon.com/dcunum", True),
        ("cambricon.com/vmlu", True),
        ("org.instaslice/pod-1", True),
        ("volcano.sh/queue", False),
        ("intel.com/intel_sriov_netdevice", False),
        ("rdma/hca_shared_devices_a", False),
        ("devices.kubevirt.io/kvm", False),
        ("github.com/fuse", False),
    ],
)
def test_accelerator_domains(name: str, accelerator: bool) -> None:
    assert is_accelerator_resource(name) is accelerator


def test_a_domain_given_by_the_front_end_counts_as_an_accelerator() -> None:
    assert not is_accelerator_resource("xilinx.com/fpga-u250")
    assert is_accelerator_resource("xilinx.com/fpga-u250", ("xilinx.com",))
    assert is_accelerator_resource("example.org/npu-small", ("example.org/npu-",))
    assert not is_accelerator_resource("example.org/nic", ("example.org/npu-",))


def _codes(findings: Any) -> list[str]:
    return [f.code for f in findings]


@pytest.mark.parametrize("resource", ["nvidia.com/pgpu", "nvidia.com/gpu-10gb", "volcano.sh/vgpu-number"])
def test_an_accelerator_resource_outside_the_catalog_keeps_the_pod_legacy(resource: str) -> None:
    plan = plan_pod(make_pod([make_container("main", {resource: 1})]), CATALOG)
    (finding,) = plan.findings
    assert not plan.changed
    assert finding.code == UNKNOWN_DEVICE_RESOURCE and finding.severity == 3
    assert finding.remedy is Remedy.ADD_CATALOG_ENTRY and finding.remedy_subject == resource
    assert finding.path == f"spec.containers[0].resources.limits[{resource}]"


def test_a_pod_with_a_known_and_an_unknown_accelerator_is_not_half_converted() -> None:
    plan = plan_pod(make_pod([make_container("main", {"nvidia.com/gpu": 1, "nvidia.com/pgpu": 1})]), CATALOG)
    assert not plan.changed and UNKNOWN_DEVICE_RESOURCE in _codes(plan.findings)


def test_a_device_domain_option_makes_its_resources_accelerators() -> None:
    pod = make_pod([make_container("main", {"xilinx.com/fpga-u250": 1})])
    assert _codes(plan_pod(pod, CATALOG).findings) == [OTHER_EXTENDED_RESOURCE]
    assert _codes(plan_pod(pod, CATALOG, Options(device_domains=("xilinx.com",))).findings) == [UNKNOWN_DEVICE_RESOURCE]


def test_other_extended_resources_are_one_informational_line_each_and_never_block() -> None:
    limits = {"intel.com/intel_sriov_netdevice": "1", "rdma/hca_shared_devices_a": 1, "nvidia.com/gpu": 1}
    plan = plan_pod(make_pod([make_container("main", limits, {"cpu": "1", "hugepages-2Mi": "1Gi"})]), CATALOG)
    assert plan.changed
    other = [f for f in plan.findings if f.code == OTHER_EXTENDED_RESOURCE]
    assert [f.legacy.split(":")[0] for f in other] == ["intel.com/intel_sriov_netdevice", "rdma/hca_shared_devices_a"]
    assert all(f.severity == 0 for f in other)


def _instaslice_gated() -> dict[str, Any]:
    pod = make_pod([make_container("main", {"nvidia.com/mig-1g.5gb": 1})])
    pod["spec"]["schedulingGates"] = [{"name": "org.instaslice/accelarator"}]
    return pod


def test_a_pod_gated_by_another_slicing_controller_stays_as_it_is() -> None:
    plan = plan_pod(_instaslice_gated(), CATALOG)
    assert not plan.changed
    (finding,) = plan.findings
    assert finding.code == OTHER_GPU_CONTROLLER and finding.severity == 3
    assert finding.path == "spec.schedulingGates[0]" and "instaslice" in finding.reason


def test_a_per_pod_resource_of_another_slicing_controller_is_that_controllers() -> None:
    plan = plan_pod(make_pod([make_container("main", {"org.instaslice/gpu-pod": 1})]), CATALOG)
    assert _codes(plan.findings) == [OTHER_GPU_CONTROLLER] and not plan.changed


@pytest.mark.parametrize(
    ("labels", "account"),
    [
        pytest.param({"app": "nvidia-device-plugin-validator"}, "nvidia-operator-validator", id="plugin-validator"),
        pytest.param({"app": "nvidia-operator-validator"}, "", id="operator-validator"),
        pytest.param({}, "nvidia-operator-validator", id="service-account"),
    ],
)
def test_the_gpu_operators_validator_pods_stay_on_the_device_plugin(labels: dict[str, str], account: str) -> None:
    pod = make_pod([make_container("main")], init=[make_container("plugin-validation", {"nvidia.com/gpu": 1})])
    pod["metadata"]["labels"] = labels
    if account:
        pod["spec"]["serviceAccountName"] = account
    plan = plan_pod(pod, CATALOG)
    assert not plan.changed and _codes(plan.findings) == [OTHER_GPU_CONTROLLER]
    assert "validat" in plan.findings[0].reason


def test_a_validator_label_on_a_pod_without_devices_is_nothing() -> None:
    pod = make_pod([make_container("main")])
    pod["metadata"]["labels"] = {"app": "nvidia-cuda-validator"}
    assert plan_pod(pod, CATALOG).findings == ()


def _volcano_job(scheduler: str | None) -> dict[str, Any]:
    template = {"spec": {"containers": [make_container("worker", {"nvidia.com/gpu": 1})]}}
    spec: dict[str, Any] = {"minAvailable": 1, "tasks": [{"name": "worker", "replicas": 2, "template": template}]}
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"}, "spec": spec}


@pytest.mark.parametrize("scheduler", [None, "volcano"])
def test_a_volcano_jobs_pods_run_under_its_scheduler(scheduler: str | None) -> None:
    done = convert_object(_volcano_job(scheduler), CATALOG, include_custom_resources=True)
    assert not done.templates
    held = [f for f in done.findings if f.severity == 3]
    assert held and held[0].path == "spec.schedulerName" and held[0].legacy == "volcano"
    assert held[0].remedy is Remedy.DECLARE_DRA_SCHEDULER


def test_a_volcano_job_under_a_declared_dra_scheduler_converts() -> None:
    done = convert_object(
        _volcano_job(None), CATALOG, Options(dra_schedulers=("volcano",)), include_custom_resources=True
    )
    assert done.templates and "schedulerName" not in done.obj["spec"]["tasks"][0]["template"]["spec"]
