"""Device identities across drivers (translate/inventory/identity.py)."""

from __future__ import annotations

import pytest

from dra_bridge.translate.inventory.allocatable import DeviceId, InventoryDevice
from dra_bridge.translate.inventory.device_facts import NvmlFacts
from dra_bridge.translate.inventory.identity import keys, matches, pci_address, slice_keys


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("0000:03:00.0", "0000:03:00.0"),
        ("03:00.0", "0000:03:00.0"),
        ("00000000:65:00.0", "0000:65:00.0"),  # NVML's spelling
        ("0000:AF:00.1", "0000:af:00.1"),
        ("GPU-aaaa", None),
        ("card0-0", None),
    ],
)
def test_pci_addresses_in_every_spelling(text: str, want: str | None) -> None:
    assert pci_address(text) == want


def test_slice_keys_read_uuid_and_pci_attributes_of_any_version() -> None:
    v1 = {"devices": [{"name": "a", "attributes": {"gpu.amd.com/pciAddr": {"string": "0000:03:00.0"}}}]}
    v1beta1 = {
        "devices": [
            {"name": "b", "basic": {"attributes": {"resource.kubernetes.io/pciBusID": {"string": "0000:4E:00.0"}}}},
            {"name": "c", "basic": {"attributes": {"uuid": {"string": "GPU-c"}, "productName": {"string": "x"}}}},
        ]
    }
    assert slice_keys(v1) == {"0000:03:00.0"}
    assert slice_keys(v1beta1) == {"0000:4e:00.0", "GPU-c"}


def test_a_replica_and_a_pci_address_map_to_the_recorded_device() -> None:
    recorded = [
        InventoryDevice(resourceName="nvidia.com/gpu.shared", deviceID="GPU-a::0", numaNodes=[]),
        InventoryDevice(resourceName="amd.com/gpu", deviceID="0000:03:00.0", numaNodes=[]),
    ]
    nvml: dict[str, NvmlFacts] = {"GPU-a": {"pciBusID": "00000000:65:00.0"}}
    assert matches("GPU-a", recorded, nvml) == [DeviceId("nvidia.com/gpu.shared", "GPU-a::0")]
    assert matches("0000:65:00.0", recorded, nvml) == [DeviceId("nvidia.com/gpu.shared", "GPU-a::0")]
    assert matches("03:00.0", recorded, nvml, "amd.com/gpu") == [DeviceId("amd.com/gpu", "0000:03:00.0")]
    assert matches("0", recorded, nvml, "nvidia.com/gpu") == [DeviceId("nvidia.com/gpu.shared", "GPU-a::0")]
    assert matches("7", recorded, nvml, "nvidia.com/gpu") == []  # past the recorded GPUs


def test_a_device_known_by_its_index_is_matched_by_the_uuid_its_facts_name() -> None:
    """A fresh node's index-only toolkit spec (docs/design.md D45): device ID ``0``, its UUID from
    NVML in its facts; a device plugin or another driver naming the UUID names that device."""
    recorded = [InventoryDevice(resourceName="nvidia.com/gpu", deviceID="0", numaNodes=[])]
    nvml = {"0": NvmlFacts(uuid="GPU-2222", pciBusID="0000:03:00.0")}
    assert matches("GPU-2222", recorded, nvml) == [DeviceId("nvidia.com/gpu", "0")]
    assert matches("GPU-3333", recorded, nvml) == []
    assert keys(DeviceId("nvidia.com/gpu", "0"), nvml) == {"0", "GPU-2222", "0000:03:00.0"}
