"""dra_bridge.translate.inventory: inventory -> ResourceSlices (pure, table-driven)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from dra_bridge.translate.catalog import Catalog
from dra_bridge.translate.dns_names import is_dns_label, is_dns_subdomain
from dra_bridge.translate.errors import InventoryError
from dra_bridge.translate.inventory.allocatable import InventoryDevice, group_allocatable
from dra_bridge.translate.inventory.api_rules import binary_quantity, check_attribute, semver
from dra_bridge.translate.inventory.device_facts import NvmlFacts, vendor_profile
from dra_bridge.translate.inventory.pool import internal_form, pool_slices, render_slice, slice_name
from dra_bridge.translate.inventory.slices import build_slices, device_uuids

A100_LABELS = {
    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
    "nvidia.com/gpu.family": "ampere",
    "nvidia.com/gpu.compute.major": "8",
    "nvidia.com/gpu.compute.minor": "0",
    "nvidia.com/cuda.driver-version.full": "535.104.05",
    "nvidia.com/cuda.runtime-version.full": "12.2",
    "nvidia.com/gpu.memory": "40960",
    "nvidia.com/mig-1g.5gb.memory": "4864",
    "nvidia.com/mig-1g.10gb.me.memory": "9856",
}
L4_LABELS = {
    "nvidia.com/gpu.product": "NVIDIA-L4-SHARED",
    "nvidia.com/gpu.family": "ada-lovelace",
    "nvidia.com/gpu.compute.major": "8",
    "nvidia.com/gpu.compute.minor": "9",
    "nvidia.com/cuda.driver-version.major": "550",
    "nvidia.com/cuda.driver-version.minor": "54",
    "nvidia.com/cuda.driver-version.revision": "15",
    "nvidia.com/cuda.runtime-version.major": "12",
    "nvidia.com/cuda.runtime-version.minor": "4",
    "nvidia.com/gpu.memory": "23034",
}


Entry = Callable[..., dict[str, Any]]
OnlyDevice = Callable[..., dict[str, Any]]


@pytest.fixture
def make_entry() -> Entry:
    """Makes one AllocatableResourcesResponse entry in the protobuf JSON mapping (ID 0 omitted)."""

    def entry(resource: str, device_id: str, numa: int | None = 0) -> dict[str, Any]:
        out: dict[str, Any] = {"resourceName": resource, "deviceIds": [device_id]}
        if numa is not None:
            out["topology"] = {"nodes": [{"ID": str(numa)} if numa else {}]}
        return out

    return entry


def make_inventory(*items: tuple[str, str, list[int]]) -> list[InventoryDevice]:
    return [InventoryDevice(resourceName=r, deviceID=d, numaNodes=n) for r, d, n in items]


@pytest.fixture
def only_device(catalog: Catalog) -> OnlyDevice:
    """Builds the slices of one inventory (shipped catalog) and returns its one device."""

    def build(
        inventory: list[InventoryDevice], labels: dict[str, str] | None = None, nvml: dict[str, NvmlFacts] | None = None
    ) -> dict[str, Any]:
        devices = build_slices("node-a", inventory, catalog, labels, nvml).slices[0]["spec"]["devices"]
        assert len(devices) == 1
        return dict(devices[0])

    return build


def attr(device: dict[str, Any], name: str) -> Any:
    return device["attributes"].get(name)


# --- grouping ---------------------------------------------------------------------------


def test_numa_duplicates_are_grouped_into_one_device_with_both_nodes(make_entry: Entry) -> None:
    response = {
        "devices": [
            make_entry("nvidia.com/gpu", "GPU-a", 0),
            make_entry("nvidia.com/gpu", "GPU-a", 1),
            make_entry("nvidia.com/gpu", "GPU-b", None),
        ]
    }
    assert group_allocatable(response) == make_inventory(
        ("nvidia.com/gpu", "GPU-a", [0, 1]), ("nvidia.com/gpu", "GPU-b", [])
    )


def test_proto_field_names_and_numeric_ids_are_accepted() -> None:
    response = {
        "devices": [
            {"resource_name": "amd.com/gpu", "device_ids": ["0000:03:00.0"], "topology": {"nodes": [{"ID": 3}]}}
        ]
    }
    assert group_allocatable(response) == make_inventory(("amd.com/gpu", "0000:03:00.0", [3]))


def test_replicas_sort_numerically(make_entry: Entry) -> None:
    response = {"devices": [make_entry("nvidia.com/gpu.shared", f"GPU-a::{n}") for n in (10, 2, 0)]}
    assert [d["deviceID"] for d in group_allocatable(response)] == ["GPU-a::0", "GPU-a::2", "GPU-a::10"]


@pytest.mark.parametrize(
    ("response", "field"),
    [
        ({"devices": {}}, "devices"),
        ({"devices": [{"deviceIds": ["x"]}]}, "devices[0].resourceName"),
        ({"devices": [{"resourceName": "nvidia.com/gpu", "deviceIds": "GPU-a"}]}, "devices[0].deviceIds"),
        (
            {"devices": [{"resourceName": "nvidia.com/gpu", "deviceIds": ["a"], "topology": {"nodes": [{"ID": "x"}]}}]},
            "devices[0].topology.nodes[0].ID",
        ),
    ],
    ids=["devices-not-list", "no-resource-name", "ids-not-list", "numa-not-int"],
)
def test_malformed_inventory_names_the_field(response: dict[str, Any], field: str) -> None:
    with pytest.raises(InventoryError, match=field.replace("[", r"\[").replace("]", r"\]")):
        group_allocatable(response)


# --- attribute formats --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("8.0", "8.0.0"),
        ("550.107.02", "550.107.2"),
        ("12", "12.0.0"),
        ("535.104.05", "535.104.5"),
        ("1.2.3.4", None),
        ("v1.2", None),
        ("", None),
    ],
    ids=lambda v: str(v),
)
def test_versions_are_normalised_to_semver(raw: str, want: str | None) -> None:
    assert semver(raw) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (0, "0"),
        (1000, "1000"),
        (1024, "1Ki"),
        (40960 * 1024 * 1024, "40Gi"),
        (4864 * 1024 * 1024, "4864Mi"),
        (1024 * 1024 + 1, "1048577"),
    ],
    ids=lambda v: str(v),
)
def test_memory_is_a_canonical_binary_quantity(value: int, want: str) -> None:
    assert binary_quantity(value) == want


@pytest.mark.parametrize(
    ("name", "value", "ok"),
    [
        ("gpu.nvidia.com/uuid", {"string": "x" * 64}, True),
        ("gpu.nvidia.com/uuid", {"string": "x" * 65}, False),
        ("gpu.nvidia.com/driverVersion", {"version": "535.104.05"}, False),
        ("gpu.nvidia.com/driverVersion", {"version": "535.104.5"}, True),
        ("bad name/x", {"int": 1}, False),
        ("a" * 33, {"int": 1}, False),
        ("gpu.nvidia.com/x", {"int": 1, "bool": True}, False),
    ],
    ids=["string-64", "string-65", "leading-zero", "semver", "bad-domain", "long-id", "two-kinds"],
)
def test_attribute_rules(name: str, value: Any, ok: bool) -> None:
    assert (check_attribute(name, value) is None) == ok


def test_full_gpu_from_labels_carries_the_vendor_attributes(only_device: OnlyDevice) -> None:
    dev = only_device(make_inventory(("nvidia.com/gpu", "GPU-a", [1])), A100_LABELS)
    assert attr(dev, "gpu.nvidia.com/type") == {"string": "gpu"}
    assert attr(dev, "gpu.nvidia.com/uuid") == {"string": "GPU-a"}
    assert attr(dev, "gpu.nvidia.com/productName") == {"string": "NVIDIA-A100-SXM4-40GB"}
    assert attr(dev, "gpu.nvidia.com/architecture") == {"string": "Ampere"}
    assert attr(dev, "gpu.nvidia.com/cudaComputeCapability") == {"version": "8.0.0"}
    assert attr(dev, "gpu.nvidia.com/driverVersion") == {"version": "535.104.5"}
    assert attr(dev, "gpu.nvidia.com/cudaDriverVersion") == {"version": "12.2.0"}
    assert dev["capacity"]["gpu.nvidia.com/memory"] == {"value": "40Gi"}
    assert attr(dev, "resource.kubernetes.io/numaNode") == {"int": 1}
    assert attr(dev, "dra-bridge.io/resourceName") == {"string": "nvidia.com/gpu"}
    assert attr(dev, "dra-bridge.io/deviceID") == {"string": "GPU-a"}
    assert attr(dev, "dra-bridge.io/numaNode") == {"int": 1}
    assert attr(dev, "dra-bridge.io/source") == {"string": "labels"}


def test_split_version_labels_and_ada_architecture(only_device: OnlyDevice) -> None:
    dev = only_device(make_inventory(("nvidia.com/gpu", "GPU-l4", [])), L4_LABELS)
    assert attr(dev, "gpu.nvidia.com/architecture") == {"string": "Ada Lovelace"}
    assert attr(dev, "gpu.nvidia.com/productName") == {"string": "NVIDIA-L4"}
    assert attr(dev, "gpu.nvidia.com/driverVersion") == {"version": "550.54.15"}
    assert attr(dev, "gpu.nvidia.com/cudaDriverVersion") == {"version": "12.4.0"}
    assert "resource.kubernetes.io/numaNode" not in dev["attributes"]


def test_nvml_facts_win_over_labels(only_device: OnlyDevice) -> None:
    facts: NvmlFacts = {
        "productName": "NVIDIA A100-SXM4-40GB",
        "architecture": "Ampere",
        "cudaComputeCapability": "8.0",
        "driverVersion": "580.126.20",
        "cudaDriverVersion": "13.0",
        "memoryBytes": 40536 << 20,
        "pciBusID": "0000:65:00.0",
        "pcieRoot": "pci0000:64",
        "numaNode": 0,
    }
    dev = only_device(make_inventory(("nvidia.com/gpu", "GPU-a", [0])), A100_LABELS, {"GPU-a": facts})
    assert attr(dev, "gpu.nvidia.com/productName") == {"string": "NVIDIA A100-SXM4-40GB"}
    assert attr(dev, "resource.kubernetes.io/pciBusID") == {"string": "0000:65:00.0"}
    assert attr(dev, "resource.kubernetes.io/pcieRoot") == {"string": "pci0000:64"}
    assert dev["capacity"]["gpu.nvidia.com/memory"] == {"value": "40536Mi"}
    assert attr(dev, "dra-bridge.io/source") == {"string": "nvml"}


@pytest.mark.parametrize(
    ("resource", "device_id", "labels", "profile", "memory"),
    [
        ("nvidia.com/mig-1g.5gb", "MIG-1", A100_LABELS, "1g.5gb", "4864Mi"),
        ("nvidia.com/mig-1g.10gb.me", "MIG-2", A100_LABELS, "1g.10gb+me", "9856Mi"),
        (
            "nvidia.com/gpu",
            "MIG-3",
            {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "nvidia.com/gpu.memory": "4864"},
            "1g.5gb",
            "4864Mi",
        ),
    ],
    ids=["mixed", "mixed-me", "single-strategy"],
)
def test_mig_devices_carry_type_profile_and_memory(
    only_device: OnlyDevice, resource: str, device_id: str, labels: dict[str, str], profile: str, memory: str
) -> None:
    dev = only_device(make_inventory((resource, device_id, [0])), labels)
    assert attr(dev, "gpu.nvidia.com/type") == {"string": "mig"}
    assert attr(dev, "gpu.nvidia.com/profile") == {"string": profile}
    assert attr(dev, "gpu.nvidia.com/productName") == {"string": "NVIDIA-A100-SXM4-40GB"}
    assert dev["capacity"]["gpu.nvidia.com/memory"] == {"value": memory}


def test_mig_parent_uuid_comes_from_nvml(only_device: OnlyDevice) -> None:
    facts: NvmlFacts = {"migProfile": "1g.5gb", "parentUUID": "GPU-p", "memoryBytes": 4864 << 20}
    dev = only_device(make_inventory(("nvidia.com/mig-1g.5gb", "MIG-1", [])), None, {"MIG-1": facts})
    assert attr(dev, "gpu.nvidia.com/parentUUID") == {"string": "GPU-p"}


def test_time_slicing_replicas_become_one_device_each_with_the_gpu_uuid(catalog: Catalog) -> None:
    inv = make_inventory(*[("nvidia.com/gpu.shared", f"GPU-a::{n}", [0]) for n in range(4)])
    build = build_slices("node-a", inv, catalog, L4_LABELS)
    devices = build.slices[0]["spec"]["devices"]
    assert len(devices) == 4
    assert {d["attributes"]["gpu.nvidia.com/uuid"]["string"] for d in devices} == {"GPU-a"}
    assert [d["attributes"]["dra-bridge.io/replica"]["int"] for d in devices] == [0, 1, 2, 3]
    assert len({d["name"] for d in devices}) == 4


def test_unknown_and_slicing_resources_are_left_out_with_a_warning(catalog: Catalog) -> None:
    inv = make_inventory(("example.com/fpga", "f0", []), ("nvidia.com/gpumem", "m0", []), ("amd.com/gpu", "a0", []))
    build = build_slices("node-a", inv, catalog)
    assert [d["attributes"]["dra-bridge.io/deviceID"]["string"] for d in build.slices[0]["spec"]["devices"]] == ["a0"]
    assert any("example.com/fpga" in w for w in build.warnings)
    assert any("nvidia.com/gpumem" in w for w in build.warnings)


def test_non_nvidia_devices_have_only_bridge_attributes_and_their_numa_node(only_device: OnlyDevice) -> None:
    dev = only_device(make_inventory(("amd.com/gpu", "0000:03:00.0", [0])))
    assert all(k.startswith("dra-bridge.io/") for k in dev["attributes"] if k != "resource.kubernetes.io/numaNode")
    assert attr(dev, "resource.kubernetes.io/numaNode") == {"int": 0}
    assert attr(dev, "dra-bridge.io/source") == {"string": "kubelet"}


def test_overlong_optional_value_is_left_out_with_a_warning(catalog: Catalog) -> None:
    labels = dict(A100_LABELS, **{"nvidia.com/gpu.product": "X" * 80})
    build = build_slices("node-a", make_inventory(("nvidia.com/gpu", "GPU-a", [])), catalog, labels)
    dev = build.slices[0]["spec"]["devices"][0]
    assert "gpu.nvidia.com/productName" not in dev["attributes"]
    assert any("productName" in w for w in build.warnings)


def test_overlong_device_id_is_an_error(catalog: Catalog) -> None:
    with pytest.raises(InventoryError, match="deviceID"):
        build_slices("node-a", make_inventory(("nvidia.com/gpu", "G" * 70, [])), catalog)


def test_attribute_count_limit_is_enforced() -> None:
    device = {
        "name": "d",
        "attributes": {f"x.io/a{i}": {"int": i} for i in range(32)},
        "capacity": {"x.io/c": {"value": "1"}},
    }
    with pytest.raises(InventoryError, match="32"):
        pool_slices("node-a", "dra-bridge.io", [device])  # type: ignore[list-item]


# --- pool, names, split, versions -----------------------------------------------------------


def test_more_than_128_devices_split_into_several_slices_of_one_pool(catalog: Catalog) -> None:
    inv = make_inventory(*[("nvidia.com/gpu.shared", f"GPU-{g}::{n}", [0]) for g in range(3) for n in range(100)])
    slices = build_slices("node-a", inv, catalog, L4_LABELS, generation=4).slices
    assert [len(s["spec"]["devices"]) for s in slices] == [128, 128, 44]
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in slices} == {3}
    assert {s["spec"]["pool"]["name"] for s in slices} == {"node-a"}
    assert {s["spec"]["pool"]["generation"] for s in slices} == {4}
    assert [s["metadata"]["name"] for s in slices] == [f"node-a-dra-bridge-io-{i}" for i in range(3)]


def test_empty_inventory_is_one_empty_slice_with_node_name_and_no_all_nodes(catalog: Catalog) -> None:
    (only,) = build_slices("node-a", [], catalog).slices
    assert only["spec"]["devices"] == []
    assert only["spec"]["nodeName"] == "node-a"
    assert "allNodes" not in only["spec"]


def test_output_is_deterministic_and_device_names_are_stable_when_others_leave(catalog: Catalog) -> None:
    inv = make_inventory(("nvidia.com/gpu", "GPU-a", [0]), ("nvidia.com/gpu", "GPU-b", [1]))
    first = build_slices("node-a", inv, catalog, A100_LABELS).slices
    assert first == build_slices("node-a", list(reversed(inv)), catalog, A100_LABELS).slices
    names = {d["attributes"]["dra-bridge.io/deviceID"]["string"]: d["name"] for d in first[0]["spec"]["devices"]}
    after = build_slices("node-a", inv[1:], catalog, A100_LABELS).slices[0]["spec"]["devices"]
    assert after[0]["name"] == names["GPU-b"]
    assert all(is_dns_label(n) for n in names.values())


def test_inputs_are_not_mutated(catalog: Catalog) -> None:
    inv = make_inventory(("nvidia.com/gpu", "GPU-a", [1, 0]))
    labels = dict(A100_LABELS)
    before = (copy.deepcopy(inv), dict(labels))
    build_slices("node-a", inv, catalog, labels)
    assert (inv, labels) == before


def test_long_node_names_give_valid_distinct_slice_names() -> None:
    a, b = "n" * 250 + ".a", "n" * 250 + ".b"
    assert is_dns_subdomain(slice_name(a, "dra-bridge.io", 0))
    assert slice_name(a, "dra-bridge.io", 0) != slice_name(b, "dra-bridge.io", 0)


@pytest.mark.parametrize("node", ["", "Node_A"], ids=["empty", "invalid"])
def test_invalid_node_name_is_refused(catalog: Catalog, node: str) -> None:
    with pytest.raises(InventoryError, match="node name"):
        build_slices(node, [], catalog)


def test_v1beta1_wraps_device_fields_in_basic_and_round_trips(catalog: Catalog) -> None:
    internal = build_slices("node-a", make_inventory(("nvidia.com/gpu", "GPU-a", [0])), catalog, A100_LABELS).slices[0]
    beta1 = render_slice(internal, "resource.k8s.io/v1beta1")
    device = beta1["spec"]["devices"][0]
    assert set(device) == {"name", "basic"}
    assert set(device["basic"]) == {"attributes", "capacity"}
    assert internal_form(beta1) == internal


@pytest.mark.parametrize("version", ["resource.k8s.io/v1", "resource.k8s.io/v1beta2"])
def test_v1_and_v1beta2_have_devices_flat(catalog: Catalog, version: str) -> None:
    internal = build_slices("node-a", make_inventory(("nvidia.com/gpu", "GPU-a", [0])), catalog).slices[0]
    rendered = render_slice(internal, version)
    assert rendered["apiVersion"] == version and rendered["kind"] == "ResourceSlice"
    assert "attributes" in rendered["spec"]["devices"][0]


def test_unknown_api_version_is_refused() -> None:
    with pytest.raises(InventoryError, match="v2"):
        render_slice({}, "resource.k8s.io/v2")


def test_device_uuids_reads_any_version(catalog: Catalog) -> None:
    internal = build_slices("node-a", make_inventory(("nvidia.com/gpu", "GPU-a", [0])), catalog).slices[0]
    assert device_uuids(render_slice(internal, "resource.k8s.io/v1beta1")["spec"]) == {"GPU-a"}
    assert device_uuids({"devices": [{"name": "x", "attributes": {"uuid": {"string": "GPU-z"}}}]}) == {"GPU-z"}


@pytest.mark.parametrize(("plugin", "vendor"), [("1g.10gb.me", "1g.10gb+me"), ("3g.20gb", "3g.20gb")])
def test_vendor_profile_spelling(plugin: str, vendor: str) -> None:
    assert vendor_profile(plugin) == vendor
