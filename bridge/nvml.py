"""Optional NVML facts per UUID (nvidia-ml-py, imported only when present).

:func:`probe` returns ``{uuid: NvmlFacts}`` for every GPU and MIG device NVML sees, or None when
NVML is not installed or not loadable on this node (no driver): the agent then uses GFD labels.
:func:`check_uuids` looks each recorded UUID up (the device health facts, :mod:`bridge.kubeletplugin.device_health`).
The values follow the NVIDIA DRA driver's formats (docs/design.md D5;
https://github.com/NVIDIA/k8s-dra-driver-gpu/blob/main/cmd/gpu-kubelet-plugin/deviceinfo.go): product name as NVML says
it, ``cudaComputeCapability`` ``"8.0"``, ``cudaDriverVersion`` ``"12.5"`` from the NVML integer
(major = v // 1000, minor = (v % 1000) // 10), memory in bytes; a MIG device carries its
parent's product, architecture and versions, its profile and ``parentUUID``. A GPU's PCIe root
and NUMA node come from sysfs by its bus ID (:mod:`bridge.pci_sysfs`); its MIG devices carry
the same.

Where the driver is not on the image's library path (the chart's NVML agent mounts the host's
driver root at ``/driver-root``), :func:`load_library` loads ``libnvidia-ml.so.1`` from the first
of :data:`LIBRARY_DIRS` under ``--nvml-driver-root`` that holds it, once at start: pynvml then
opens ``libnvidia-ml.so.1`` by name, and the dynamic linker answers with the library already
loaded under that SONAME.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from dra_bridge.bridge.errors import NvmlError
from dra_bridge.bridge.pci_sysfs import pci_topology
from dra_bridge.translate.inventory.device_facts import ARCHITECTURES, NvmlFacts

logger = logging.getLogger(__name__)

#: NVML ``nvmlDeviceGetArchitecture`` codes (nvml.h NVML_DEVICE_ARCH_*).
_ARCH_CODES = {
    2: "kepler",
    3: "maxwell",
    4: "pascal",
    5: "volta",
    6: "turing",
    7: "ampere",
    8: "ada-lovelace",
    9: "hopper",
    10: "blackwell",
}


LIBRARY = "libnvidia-ml.so.1"
"""NVML's library by its SONAME, as pynvml opens it."""
LIBRARY_DIRS = (
    "usr/lib64",
    "usr/lib/x86_64-linux-gnu",
    "usr/lib/aarch64-linux-gnu",
    "lib64",
    "lib/x86_64-linux-gnu",
    "lib/aarch64-linux-gnu",
    "usr/lib",
    "lib",
)
"""Where a driver root holds the library: RPM and Debian layouts (a host, the GPU Operator's driver
container at ``/run/nvidia/driver``), ``lib64`` for GKE's ``/home/kubernetes/bin/nvidia``."""


def library_under(driver_root: str | Path) -> Path | None:
    """The first ``libnvidia-ml.so.1`` under ``driver_root`` (:data:`LIBRARY_DIRS`), or None."""
    for directory in LIBRARY_DIRS:
        candidate = Path(driver_root) / directory / LIBRARY
        if candidate.exists():
            return candidate
    return None


def load_library(driver_root: str | Path, load: Callable[[str], object] | None = None) -> Path | None:
    """Load NVML's library from under ``driver_root`` (``load``: how, ``ctypes.CDLL`` global by
    default); the path loaded, or None (logged: the agent then runs without NVML, as on a node
    without the driver). Never raises."""
    found = library_under(driver_root)
    if found is None:
        logger.warning(
            "no %s under the NVML driver root %s (%s): no NVML", LIBRARY, driver_root, ", ".join(LIBRARY_DIRS)
        )
        return None
    try:
        (load or (lambda path: ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)))(str(found))
    except OSError as exc:
        logger.warning("cannot load %s: %s: no NVML", found, exc)
        return None
    logger.info("NVML library loaded from %s", found)
    return found


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@contextlib.contextmanager
def _session(why: str, level: int = logging.INFO) -> Iterator[Any]:
    """The initialised pynvml module, shut down afterwards; None when NVML is not installed or not
    loadable here (``why``: what the agent does then, logged at ``level``)."""
    try:
        import pynvml  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        yield None
        return
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        logger.log(level, "NVML not usable on this node (%s): %s", exc, why)
        yield None
        return
    try:
        yield pynvml
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception as exc:
            logger.debug("nvmlShutdown: %s", exc)


def probe() -> dict[str, NvmlFacts] | None:
    """Facts for every device NVML sees; None without NVML. Raises NvmlError on a failed query."""
    with _session("using GFD labels") as nv:
        if nv is None:
            return None
        try:
            return _collect(nv)
        except Exception as exc:
            raise NvmlError(f"NVML query failed: {exc}") from exc


def check_uuids(uuids: Iterable[str]) -> dict[str, str] | None:
    """Whether NVML finds each UUID (GPU or MIG, ``nvmlDeviceGetHandleByUUID``): UUID -> "" when it
    does, else NVML's error (``NVML_ERROR_GPU_IS_LOST`` reads "GPU is lost"); None without NVML
    (not installed or not loadable: no fact either way). Never raises."""
    with _session("no device health facts", logging.DEBUG) as nv:
        if nv is None:
            return None
        out = {}
        for uuid in uuids:
            try:
                nv.nvmlDeviceGetHandleByUUID(uuid)
                out[uuid] = ""
            except Exception as exc:
                lost = getattr(exc, "value", None) == getattr(nv, "NVML_ERROR_GPU_IS_LOST", 15)
                out[uuid] = "GPU is lost" if lost else f"cannot find the device ({exc})"
        return out


def _collect(nv: Any, topology: Callable[[str], tuple[str | None, int | None]] = pci_topology) -> dict[str, NvmlFacts]:
    out: dict[str, NvmlFacts] = {}
    driver = _text(nv.nvmlSystemGetDriverVersion())
    cuda = int(nv.nvmlSystemGetCudaDriverVersion())
    cuda_text = f"{cuda // 1000}.{(cuda % 1000) // 10}"
    for i in range(int(nv.nvmlDeviceGetCount())):
        handle = nv.nvmlDeviceGetHandleByIndex(i)
        uuid = _text(nv.nvmlDeviceGetUUID(handle))
        major, minor = nv.nvmlDeviceGetCudaComputeCapability(handle)
        facts = NvmlFacts(
            uuid=uuid,
            productName=_text(nv.nvmlDeviceGetName(handle)),
            cudaComputeCapability=f"{major}.{minor}",
            driverVersion=driver,
            cudaDriverVersion=cuda_text,
            memoryBytes=int(nv.nvmlDeviceGetMemoryInfo(handle).total),
            pciBusID=_text(nv.nvmlDeviceGetPciInfo(handle).busId).lower()[-12:],
        )
        arch = ARCHITECTURES.get(_ARCH_CODES.get(int(nv.nvmlDeviceGetArchitecture(handle)), ""))
        if arch:
            facts["architecture"] = arch
        root, node = topology(facts["pciBusID"])
        if root is not None:
            facts["pcieRoot"] = root
        if node is not None:
            facts["numaNode"] = node
        out[uuid] = facts
        try:
            count = int(nv.nvmlDeviceGetMaxMigDeviceCount(handle))
        except Exception:
            count = 0
        for j in range(count):
            try:
                mig = nv.nvmlDeviceGetMigDeviceHandleByIndex(handle, j)
            except Exception:
                continue
            mig_uuid = _text(nv.nvmlDeviceGetUUID(mig))
            mig_facts = NvmlFacts(**{k: v for k, v in facts.items() if k not in ("pciBusID",)})  # type: ignore[typeddict-item]
            mig_facts["uuid"] = mig_uuid
            mig_facts["parentUUID"] = uuid
            mig_facts["memoryBytes"] = int(nv.nvmlDeviceGetMemoryInfo(mig).total)
            name = _text(nv.nvmlDeviceGetName(mig))
            if "MIG " in name:
                mig_facts["migProfile"] = name.split("MIG ", 1)[1].strip()
            out[mig_uuid] = mig_facts
    return out
