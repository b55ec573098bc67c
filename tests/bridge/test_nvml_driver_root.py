"""NVML where the agent runs: ``--nvml-driver-root`` (the chart's NVML agent mounts the host's
driver root at /driver-root) makes the agent load ``libnvidia-ml.so.1`` from under it, so that
pynvml's ``CDLL("libnvidia-ml.so.1")`` finds it; without one, or without the library, the agent
runs as before (no NVML)."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dra_bridge.bridge.errors import SettingsError
from dra_bridge.bridge.nvml import LIBRARY, LIBRARY_DIRS, library_under, load_library
from dra_bridge.bridge.settings import Settings


def _library(root: Path, directory: str) -> Path:
    path = root / directory / LIBRARY
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


@pytest.mark.parametrize(
    ("layout", "found"),
    [
        (["usr/lib/x86_64-linux-gnu"], "usr/lib/x86_64-linux-gnu"),  # Debian, the GPU Operator's driver container
        (["usr/lib64"], "usr/lib64"),  # RPM
        (["lib64"], "lib64"),  # GKE's /home/kubernetes/bin/nvidia
        (["lib", "usr/lib64"], "usr/lib64"),  # the first of LIBRARY_DIRS wins
    ],
    ids=["debian", "rpm", "gke", "first-wins"],
)
def test_the_library_is_found_under_the_driver_root(tmp_path: Path, layout: list[str], found: str) -> None:
    for directory in layout:
        _library(tmp_path, directory)
    assert library_under(tmp_path) == tmp_path / found / LIBRARY


def test_it_is_loaded_globally_and_a_missing_one_is_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    loaded: list[str] = []
    assert load_library(tmp_path, loaded.append) is None and not loaded
    assert "no NVML" in caplog.text and all(d in caplog.text for d in LIBRARY_DIRS)
    path = _library(tmp_path, "usr/lib64")
    assert load_library(tmp_path, loaded.append) == path and loaded == [str(path)]

    def broken(_: str) -> object:
        raise OSError("invalid ELF header")

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert load_library(tmp_path, broken) is None
    assert "invalid ELF header" in caplog.text


STUB = "int dra_bridge_stub(void) { return 42; }\n"
PROBE = """
import ctypes, sys
from dra_bridge.bridge.nvml import LIBRARY, load_library
try:
    ctypes.CDLL(LIBRARY)
    sys.exit("found without the driver root: the test proves nothing here")
except OSError:
    pass
assert load_library(sys.argv[1]) is not None
print(ctypes.CDLL(LIBRARY).dra_bridge_stub())  # by SONAME, as pynvml opens it
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler to build a stand-in library")
def test_pynvml_s_dlopen_by_name_finds_the_library_loaded_from_the_driver_root(tmp_path: Path) -> None:
    source = tmp_path / "stub.c"
    source.write_text(STUB)
    lib = tmp_path / "driver" / "usr/lib64" / LIBRARY
    lib.parent.mkdir(parents=True)
    subprocess.run(
        ["cc", "-shared", "-fPIC", f"-Wl,-soname,{LIBRARY}", "-o", str(lib), str(source)], check=True, timeout=60
    )
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "driver")], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "42"


def test_the_setting_is_an_absolute_directory() -> None:
    assert Settings.from_env({"DRA_BRIDGE_NVML_DRIVER_ROOT": "/driver-root"}).validate(False).nvml_driver_root == (
        "/driver-root"
    )
    with pytest.raises(SettingsError, match="DRA_BRIDGE_NVML_DRIVER_ROOT"):
        Settings.from_args(["--nvml-driver-root", "driver-root"], {}).validate(False)
