"""Generated selectors compile, select the right devices, and never fail at runtime (docs/design.md D4)."""

from __future__ import annotations

from typing import Any

import pytest

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.cel import compile_selector
from dra_bridge.translate.plan.gfd_selectors import Requirement, Untranslatable, selector_for
from dra_bridge.translate.plan.placement import place

NV = "gpu.nvidia.com"


def nvidia_device(name: str = "gpu-0", **attrs: Any) -> dict[str, Any]:
    """A vendor-driver device; pass attributes by id (str/int/bool; version via ('version', v))."""
    out: dict[str, Any] = {}
    cap: dict[str, Any] = {}
    for key, value in attrs.items():
        if key == "memory":
            cap[f"{NV}/memory"] = {"value": value}
        elif isinstance(value, tuple):
            out[f"{NV}/{key}"] = {value[0]: value[1]}
        elif isinstance(value, bool):
            out[f"{NV}/{key}"] = {"bool": value}
        elif isinstance(value, int):
            out[f"{NV}/{key}"] = {"int": value}
        else:
            out[f"{NV}/{key}"] = {"string": value}
    return {"name": name, "attributes": out, "capacity": cap}


A100 = nvidia_device(
    type="gpu",
    productName="NVIDIA A100-SXM4-40GB",
    architecture="Ampere",
    cudaComputeCapability=("version", "8.0.0"),
    driverVersion=("version", "550.107.2"),
    cudaDriverVersion=("version", "12.5.0"),
    memory="40960Mi",
    uuid="GPU-aaaa",
)
T4_FROM_LABELS = nvidia_device(
    type="gpu",
    productName="Tesla-T4",
    architecture="turing",
    cudaComputeCapability=("version", "7.5.0"),
    memory="15360Mi",
    uuid="GPU-bbbb",
)
MIG = nvidia_device(type="mig", productName="NVIDIA A100-SXM4-40GB", profile="1g.5gb", parentUUID="GPU-aaaa")
BARE = {"name": "bare", "attributes": {}, "capacity": {}}
ODD_TYPES = nvidia_device(
    type=1,
    productName=7,
    architecture=True,
    profile=3,
    uuid=5,
    cudaComputeCapability="8.0",
    driverVersion=550,
    cudaDriverVersion=True,
)
OTHER_DRIVER = {"name": "nic-0", "attributes": {"model": {"string": "x"}}, "capacity": {}}
DEVICES = {"a100": A100, "t4-labels": T4_FROM_LABELS, "mig": MIG, "bare": BARE, "odd-types": ODD_TYPES}


def matching(expr: str) -> set[str]:
    sel = compile_selector(expr)
    out = {name for name, dev in DEVICES.items() if sel.matches(dev, NV)}
    sel.matches(OTHER_DRIVER, "nic.example.com")  # another driver's device: no error either
    return out


CASES = [
    ("product-vendor-form", "nvidia.com/gpu.product", "In", ["NVIDIA-A100-SXM4-40GB"], {"a100", "mig"}),
    ("product-labels-form", "nvidia.com/gpu.product", "In", ["Tesla-T4"], {"t4-labels"}),
    ("product-shared-suffix", "nvidia.com/gpu.product", "In", ["Tesla-T4-SHARED"], {"t4-labels"}),
    ("product-mig-suffix", "nvidia.com/gpu.product", "In", ["NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"], {"mig"}),
    ("product-mig-other-model", "nvidia.com/gpu.product", "In", ["NVIDIA-A100-SXM4-40GB-MIG-1g.6gb"], set()),
    ("product-notin", "nvidia.com/gpu.product", "NotIn", ["Tesla-T4"], {"a100", "mig", "bare", "odd-types"}),
    ("product-exists", "nvidia.com/gpu.product", "Exists", [], {"a100", "t4-labels", "mig", "odd-types"}),
    (
        "driver-notin",
        "nvidia.com/cuda.driver-version.full",
        "NotIn",
        ["550.107.02"],
        {"t4-labels", "mig", "bare", "odd-types"},
    ),
    ("product-doesnotexist", "nvidia.com/gpu.product", "DoesNotExist", [], {"bare"}),
    ("memory-in-mib", "nvidia.com/gpu.memory", "In", ["15360"], {"t4-labels"}),
    ("memory-gt", "nvidia.com/gpu.memory", "Gt", ["20000"], {"a100"}),
    ("memory-lt", "nvidia.com/gpu.memory", "Lt", ["40960"], {"t4-labels"}),
    ("memory-notin", "nvidia.com/gpu.memory", "NotIn", ["40960"], {"t4-labels", "mig", "bare", "odd-types"}),
    ("family", "nvidia.com/gpu.family", "In", ["ampere"], {"a100"}),
    ("family-label-form", "nvidia.com/gpu.family", "In", ["turing"], {"t4-labels"}),
    ("compute-major-gt", "nvidia.com/gpu.compute.major", "Gt", ["7"], {"a100"}),
    ("compute-minor-in", "nvidia.com/gpu.compute.minor", "In", ["5"], {"t4-labels"}),
    ("driver-full", "nvidia.com/cuda.driver-version.full", "In", ["550.107.02"], {"a100"}),
    ("driver-major-lt", "nvidia.com/cuda.driver-version.major", "Lt", ["560"], {"a100"}),
    ("runtime-full", "nvidia.com/cuda.runtime-version.full", "In", ["12.5"], {"a100"}),
    ("mig-single", "nvidia.com/mig.strategy", "In", ["single"], {"mig"}),
]


@pytest.mark.parametrize(("key", "op", "values", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gfd_requirement_selects_the_right_devices_and_never_errors(
    catalog: Catalog, key: str, op: str, values: list[str], expected: set[str]
) -> None:
    expr = selector_for(Requirement(key, op, tuple(values)), 34, catalog.aliases)
    assert expr is not None
    assert matching(expr) == expected


@pytest.mark.parametrize(
    "key",
    [
        "nvidia.com/gpu.count",
        "nvidia.com/gpu.machine",
        "kubernetes.io/hostname",
        "nvidia.com/gpu.replicas",
        "nvidia.com/mig.capable",
    ],
)
def test_labels_without_device_meaning_give_no_selector(catalog: Catalog, key: str) -> None:
    assert selector_for(Requirement(key, "In", ("x",)), 34, catalog.aliases) is None


def test_version_selectors_are_unsupported_before_kubernetes_1_34(catalog: Catalog) -> None:
    with pytest.raises(Untranslatable, match="semver"):
        selector_for(Requirement("nvidia.com/cuda.driver-version.full", "In", ("550.1.2",)), 33, catalog.aliases)


def test_invalid_mig_product_is_untranslatable(catalog: Catalog) -> None:
    with pytest.raises(Untranslatable, match="invalid"):
        selector_for(Requirement("nvidia.com/gpu.product", "In", ("NVIDIA-A100-MIG-INVALID",)), 34, catalog.aliases)


def test_hami_gputype_is_a_case_insensitive_substring_of_the_product(catalog: Catalog) -> None:
    placed = place({}, {"nvidia.com/use-gputype": "a100,V100"}, "", 34, catalog.aliases)
    assert matching(placed.selectors[0]) == {"a100", "mig"}
    placed = place({}, {"nvidia.com/nouse-gputype": "A100"}, "", 34, catalog.aliases)
    assert matching(placed.selectors[0]) == {"t4-labels", "bare", "odd-types"}
    placed = place({}, {"nvidia.com/use-gpuuuid": "GPU-bbbb"}, "", 34, catalog.aliases)
    assert matching(placed.selectors[0]) == {"t4-labels"}


def test_affinity_terms_with_equal_non_gpu_parts_collapse_into_one_or_selector(catalog: Catalog) -> None:
    host = {"key": "pool", "operator": "In", "values": ["gpu"]}
    terms = [
        {"matchExpressions": [host, {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["Tesla-T4"]}]},
        {"matchExpressions": [host, {"key": "nvidia.com/gpu.family", "operator": "In", "values": ["ampere"]}]},
    ]
    spec = {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    }
    placed = place(spec, {}, "", 34, catalog.aliases)
    assert matching(placed.selectors[0]) == {"a100", "t4-labels"}
    assert placed.affinity == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [host]}]}
        }
    }


def test_affinity_terms_that_differ_outside_gpu_labels_are_kept_with_a_finding(catalog: Catalog) -> None:
    terms = [
        {
            "matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["a"]},
                {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["Tesla-T4"]},
            ]
        },
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
    ]
    spec = {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    }
    placed = place(spec, {}, "", 34, catalog.aliases)
    assert placed.selectors == []
    assert placed.affinity == spec["affinity"]
    assert any(f.outcome == "partial" and "OR-ed" in f.reason for f in placed.findings)


def test_single_term_loses_only_its_gpu_expressions(catalog: Catalog) -> None:
    spec = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["Tesla-T4"]}
                            ]
                        }
                    ]
                }
            }
        }
    }
    placed = place(spec, {}, "", 34, catalog.aliases)
    assert placed.affinity is None
    assert matching(placed.selectors[0]) == {"t4-labels"}


BRIDGE = "dra-bridge.io"
NVIDIA_GPU_CLASSES = {"nvidia-gpu.dra-bridge.io", "nvidia-gpu-shared.dra-bridge.io"}
MIG_1G_5GB_CLASSES = {"nvidia-mig-1g.5gb.dra-bridge.io", "nvidia-mig-1g.5gb-shared.dra-bridge.io"}


def bridge_device(**attributes: dict[str, Any]) -> dict[str, Any]:
    return {"name": "bridge-0", "attributes": attributes, "capacity": {}}


#: Devices, the driver that publishes each, and the DeviceClasses each must match: every other
#: class must not match it, and no class may fail on it (a CEL runtime error is SelectorError).
ODD_DEVICES: dict[str, tuple[dict[str, Any], str, set[str]]] = {
    "vendor-gpu": (A100, NV, NVIDIA_GPU_CLASSES),
    "vendor-gpu-label-values": (T4_FROM_LABELS, NV, NVIDIA_GPU_CLASSES),
    "vendor-mig": (MIG, NV, MIG_1G_5GB_CLASSES),
    "vendor-without-attributes": (BARE, NV, set()),
    "vendor-wrong-types": (ODD_TYPES, NV, set()),
    "bridge-without-attributes": (BARE, BRIDGE, set()),
    "bridge-with-only-vendor-attributes": (A100, BRIDGE, set()),
    "bridge-gpu": (bridge_device(resourceName={"string": "nvidia.com/gpu"}), BRIDGE, {"nvidia-gpu.dra-bridge.io"}),
    "bridge-resource-name-an-int": (bridge_device(resourceName={"int": 3}), BRIDGE, set()),
    "bridge-without-resource-name": (bridge_device(deviceID={"string": "GPU-x"}), BRIDGE, set()),
    "bridge-gpu-vendor-type-an-int": (
        bridge_device(resourceName={"string": "nvidia.com/gpu"}, **{f"{NV}/type": {"int": 1}}),
        BRIDGE,
        {"nvidia-gpu.dra-bridge.io"},
    ),
    "another-driver": (OTHER_DRIVER, "nic.example.com", set()),
}


def test_device_class_selectors_compile_and_survive_odd_devices(catalog: Catalog) -> None:
    classes = {c["metadata"]["name"]: c for c in catalog.device_classes()}
    assert set().union(*(want for _, _, want in ODD_DEVICES.values())) <= set(classes)
    wrong = []
    for name, cls in sorted(classes.items()):
        selectors = [compile_selector(s["cel"]["expression"]) for s in cls["spec"]["selectors"]]
        assert selectors, name
        for label, (device, driver, want) in ODD_DEVICES.items():
            matched = all(sel.matches(device, driver) for sel in selectors)
            if matched != (name in want):
                wrong.append(f"{name} on {label}: {matched}, expected {name in want}")
    assert wrong == []
    assert len(classes) == len(catalog.device_classes())  # unique names: no class left out


def test_our_gpu_class_selects_bridge_devices_by_resource_name_and_vendor_devices_by_type(catalog: Catalog) -> None:
    expr = catalog.lookup("nvidia.com/gpu").class_selector  # type: ignore[union-attr]
    sel = compile_selector(expr)
    bridge_gpu = {"name": "g", "attributes": {"resourceName": {"string": "nvidia.com/gpu"}}, "capacity": {}}
    bridge_shared = {"name": "s", "attributes": {"resourceName": {"string": "nvidia.com/gpu.shared"}}, "capacity": {}}
    assert sel.matches(bridge_gpu, "dra-bridge.io")
    assert not sel.matches(bridge_shared, "dra-bridge.io")
    assert sel.matches(A100, NV)
    assert not sel.matches(MIG, NV)
    assert not sel.matches(bridge_gpu, "other.example.com")
