"""bridge.pci_sysfs and bridge.nvml: the PCIe root and NUMA node of a GPU from sysfs, by NVML's bus ID."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from dra_bridge.bridge.nvml import _collect
from dra_bridge.bridge.pci_sysfs import pci_topology


def _sysfs(tmp_path: Path, bus_id: str, root: str, numa: str | None) -> Path:
    device = tmp_path / "devices" / root / f"{root[3:]}:01.0" / bus_id
    device.mkdir(parents=True)
    if numa is not None:
        (device / "numa_node").write_text(numa + "\n")
    link_dir = tmp_path / "bus" / "pci" / "devices"
    link_dir.mkdir(parents=True, exist_ok=True)
    (link_dir / bus_id).symlink_to(device)
    return tmp_path


def test_a_device_gives_its_root_complex_and_numa_node(tmp_path: Path) -> None:
    sysfs = _sysfs(tmp_path, "0000:65:00.0", "pci0000:64", "1")
    assert pci_topology("0000:65:00.0", sysfs) == ("pci0000:64", 1)


def test_unknown_numa_node_and_missing_devices_give_nothing(tmp_path: Path) -> None:
    sysfs = _sysfs(tmp_path, "0000:65:00.0", "pci0000:64", "-1")
    assert pci_topology("0000:65:00.0", sysfs) == ("pci0000:64", None)
    assert pci_topology("0000:99:00.0", sysfs) == (None, None)
    assert pci_topology("", sysfs) == (None, None)


class _Nvml:
    """The few NVML calls _collect makes: one GPU with one MIG device."""

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)

    nvmlSystemGetDriverVersion = staticmethod(lambda: "580.126.20")
    nvmlSystemGetCudaDriverVersion = staticmethod(lambda: 13000)
    nvmlDeviceGetCount = staticmethod(lambda: 1)
    nvmlDeviceGetHandleByIndex = staticmethod(lambda i: "gpu")
    nvmlDeviceGetUUID = staticmethod(lambda h: "GPU-p" if h == "gpu" else "MIG-1")
    nvmlDeviceGetCudaComputeCapability = staticmethod(lambda h: (9, 0))
    nvmlDeviceGetName = staticmethod(lambda h: "NVIDIA H100" if h == "gpu" else "NVIDIA H100 MIG 1g.10gb")
    nvmlDeviceGetMemoryInfo = staticmethod(lambda h: SimpleNamespace(total=80 << 30 if h == "gpu" else 10 << 30))
    nvmlDeviceGetPciInfo = staticmethod(lambda h: SimpleNamespace(busId=b"00000000:65:00.0"))
    nvmlDeviceGetArchitecture = staticmethod(lambda h: 9)
    nvmlDeviceGetMaxMigDeviceCount = staticmethod(lambda h: 1)
    nvmlDeviceGetMigDeviceHandleByIndex = staticmethod(lambda h, j: "mig")


def test_nvml_facts_carry_the_pcie_root_and_numa_node_and_mig_devices_their_gpus(tmp_path: Path) -> None:
    sysfs = _sysfs(tmp_path, "0000:65:00.0", "pci0000:64", "1")
    facts = _collect(_Nvml(), lambda bus: pci_topology(bus, sysfs))
    assert (facts["GPU-p"]["pcieRoot"], facts["GPU-p"]["numaNode"]) == ("pci0000:64", 1)
    assert (facts["MIG-1"]["pcieRoot"], facts["MIG-1"]["numaNode"]) == ("pci0000:64", 1)
    assert "pciBusID" not in facts["MIG-1"]


def test_without_sysfs_facts_nvml_facts_lack_them(tmp_path: Path) -> None:
    facts = _collect(_Nvml(), lambda bus: pci_topology(bus, tmp_path))
    assert "pcieRoot" not in facts["GPU-p"] and "numaNode" not in facts["GPU-p"]
